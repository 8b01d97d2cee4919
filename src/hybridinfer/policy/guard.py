"""The ``guard:`` block of a policy: how a canary walks, and how much worse than the baseline
it may be before it is rolled back.

A guarded walk (``control/canarywalk.py``) raises the canary through ``steps`` and at each
step compares the canary's requests with the baseline's over the same window; a what-if
replay (``control/replay.py``) checks the same guards on predicted figures. The comparison is
pure, here, so both read one definition of "worse".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Guard(BaseModel):
    """Steps, dwell and the tolerances of a guarded canary (each against the baseline)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: tuple[float, ...] = Field(
        (5.0, 20.0, 50.0, 100.0), description="Canary percentages walked, ending at 100."
    )
    dwell_s: float = Field(60.0, gt=0.0, le=86_400.0, description="Least time spent per step.")
    min_requests: int = Field(
        50, ge=1, description="Canary (and baseline) requests a step needs before it is judged."
    )
    max_error_rate_increase: float = Field(
        0.02, ge=0.0, le=1.0, description="Error share the canary may add (absolute)."
    )
    max_p99_ratio: float = Field(1.5, gt=0.0, description="Canary p99 over baseline p99.")
    p99_slack_ms: float = Field(
        20.0,
        ge=0.0,
        description="Added to the allowed p99, so noise on fast paths is not a breach.",
    )
    max_cloud_share_increase: float = Field(
        0.1, ge=0.0, le=1.0, description="Cloud-call share the canary may add (absolute)."
    )
    max_spend_ratio: float = Field(1.25, ge=0.0, description="Canary spend per request / baseline.")
    spend_slack: float = Field(
        0.0, ge=0.0, description="Spend per request allowed above the ratio (a free baseline)."
    )

    @field_validator("steps")
    @classmethod
    def _rising_to_100(cls, steps: tuple[float, ...]) -> tuple[float, ...]:
        if len(steps) < 2 or steps[-1] != 100.0:
            raise ValueError("steps must end at 100, after at least one step below it")
        if any(not 0.0 < step <= 100.0 for step in steps):
            raise ValueError("each step must be above 0 and at most 100")
        if list(steps) != sorted(set(steps)):
            raise ValueError("steps must rise")
        return steps


@dataclass(frozen=True, slots=True)
class Figures:
    """One side's requests over a window, as the guards compare them."""

    requests: int
    error_rate: float
    p99_ms: float
    cloud_share: float
    spend_per_request: float

    def describe(self) -> dict[str, float]:
        return {
            "requests": self.requests,
            "error_rate": round(self.error_rate, 4),
            "p99_ms": round(self.p99_ms, 3),
            "cloud_share": round(self.cloud_share, 4),
            "spend_per_request": round(self.spend_per_request, 8),
        }


EMPTY = Figures(0, 0.0, 0.0, 0.0, 0.0)


def p99(values: list[float]) -> float:
    """The nearest-rank 99th percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


@dataclass(frozen=True, slots=True)
class Breach:
    """A guard the canary broke: its name, the two figures and the limit."""

    guard: str
    canary: float
    baseline: float
    limit: float

    def sentence(self) -> str:
        return (
            f"{self.guard}: canary {self.canary:.6g} > limit {self.limit:.6g} "
            f"(baseline {self.baseline:.6g})"
        )

    def describe(self) -> dict[str, object]:
        return {
            "guard": self.guard,
            "canary": self.canary,
            "baseline": self.baseline,
            "limit": self.limit,
            "sentence": self.sentence(),
        }


def breaches(guard: Guard, canary: Figures, baseline: Figures) -> list[Breach]:
    """Every guard ``canary`` breaks against ``baseline`` (empty: it passes)."""
    limits = {
        "error_rate": (
            canary.error_rate,
            baseline.error_rate,
            baseline.error_rate + guard.max_error_rate_increase,
        ),
        "p99_latency": (
            canary.p99_ms,
            baseline.p99_ms,
            baseline.p99_ms * guard.max_p99_ratio + guard.p99_slack_ms,
        ),
        "cloud_share": (
            canary.cloud_share,
            baseline.cloud_share,
            baseline.cloud_share + guard.max_cloud_share_increase,
        ),
        "spend_per_request": (
            canary.spend_per_request,
            baseline.spend_per_request,
            baseline.spend_per_request * guard.max_spend_ratio + guard.spend_slack,
        ),
    }
    return [
        Breach(name, value, base, limit)
        for name, (value, base, limit) in limits.items()
        if value > limit + 1e-12
    ]
