"""The policy's ``answers`` block: which capabilities' answers are reused, how, for how long.

Defaults are what a careful caller expects: deterministic answers (classification, embeddings,
question answering and summaries, which the backends run at temperature 0) are reused when the
inputs are exactly the same; a chat only when it asks for temperature 0 (or the request says
``cache: reuse``); nothing semantically unless the policy turns it on for a capability, since a
semantic hit answers a question that was not asked in those words.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Reuse = Literal["off", "exact", "semantic"]

SEMANTIC_THRESHOLD = 0.84
"""Cosine similarity of MiniLM prompt embeddings a semantic hit needs by default, with the
signature guard (``answers/signature.py``); chosen on ``bench/prompts/answer-pairs.yaml``
(``bench/answercache.py``)."""

TEXT_CAPABILITIES = frozenset({"chat", "question-answering", "summarization"})
"""Capabilities whose prompt may be matched semantically; others are always exact."""

GENERATIONS = frozenset({"chat"})
"""Capabilities whose answer depends on sampling: reused only at temperature 0 (or on request)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CapabilityReuse(_Strict):
    """How one capability's answers are reused."""

    mode: Reuse = Field("exact", description="off, exact (same inputs) or semantic (text only)")
    threshold: float = Field(
        SEMANTIC_THRESHOLD, gt=0.0, le=1.0, description="cosine a semantic hit needs"
    )
    ttl_s: float = Field(3600.0, gt=0.0, le=30 * 86400.0, description="how long an answer lives")
    across_tiers: bool = Field(
        False,
        description="an answer serves a request routed to another tier (same model version)",
    )


def _defaults() -> dict[str, CapabilityReuse]:
    day = 86400.0
    return {
        "text-classification": CapabilityReuse(ttl_s=day),
        "image-classification": CapabilityReuse(ttl_s=day),
        "embedding": CapabilityReuse(ttl_s=day),
        "question-answering": CapabilityReuse(),
        "summarization": CapabilityReuse(),
        "chat": CapabilityReuse(),
    }


class AnswersPolicy(_Strict):
    """Answer reuse per capability; a capability not listed is never reused."""

    enabled: bool = True
    capabilities: dict[str, CapabilityReuse] = Field(default_factory=_defaults)

    @model_validator(mode="after")
    def _semantic_needs_text(self) -> AnswersPolicy:
        wrong = [
            name
            for name, reuse in self.capabilities.items()
            if reuse.mode == "semantic" and name not in TEXT_CAPABILITIES
        ]
        if wrong:
            allowed = ", ".join(sorted(TEXT_CAPABILITIES))
            raise ValueError(f"semantic reuse is for {allowed} only, not {', '.join(wrong)}")
        return self

    def reuse(self, capability: str) -> CapabilityReuse | None:
        """The capability's settings, None when its answers are not reused."""
        if not self.enabled:
            return None
        found = self.capabilities.get(capability)
        return None if found is None or found.mode == "off" else found
