"""Routing policies: versioned YAML documents an operator can read and validate."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hybridinfer.yamlfile import parse_document

Prefer = Literal["balanced", "latency", "cost", "quality"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Weights(_Strict):
    """How much each goal counts when candidates are scored (each goal scores 0..1)."""

    latency: float = Field(default=1.0, ge=0.0)
    cost: float = Field(default=1.0, ge=0.0)
    quality: float = Field(default=1.0, ge=0.0)


class CascadeRule(_Strict):
    """Run the cheapest deployment first; escalate below this calibrated confidence."""

    threshold: float = Field(ge=0.0, le=1.0)


DEFAULT_WEIGHTS: dict[Prefer, Weights] = {
    "balanced": Weights(),
    "latency": Weights(latency=1.0, cost=0.25, quality=0.25),
    "cost": Weights(latency=0.25, cost=1.0, quality=0.25),
    "quality": Weights(latency=0.25, cost=0.25, quality=1.0),
}


class Policy(_Strict):
    """One version of the routing policy."""

    version: str = Field(min_length=1)
    description: str = ""
    prefer: dict[Prefer, Weights] = Field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    cascade: dict[str, CascadeRule] = Field(
        default_factory=dict, description="Task (e.g. sentiment) → cascade rule."
    )

    def weights(self, prefer: Prefer) -> Weights:
        return self.prefer.get(prefer) or Weights()


def parse_policy(text: str, source: str = "policy.yaml") -> Policy:
    """Validate a policy document; a ConfigError names the line of each problem."""
    return parse_document(Policy, text, source)


def load_policy(path: Path) -> Policy:
    return parse_policy(path.read_text(encoding="utf-8"), str(path))


def default_policy_path() -> Path:
    return Path(__file__).resolve().parent.parent / "defaults" / "policy.yaml"
