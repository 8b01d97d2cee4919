"""The policy's ``learning:`` block: where a bounded online learner may reorder candidates.

Off by default. When on, the learner only ever chooses among the candidates the hard rules
left (privacy, budget, health, degrade switches, a forced tier), never for a subtask a policy
rule placed, and keeps public-zone picks within the policy's ``target_cloud_share`` when the
policy sets one (``learning/``, ``docs/learning.md``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

MAX_EXPLORE = 0.2
"""No policy may spend more than this share of decisions exploring."""


class LearningPolicy(BaseModel):
    """How much the learner may explore, when it trusts itself, and how it weighs outcomes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(False, description="off by default: decisions are the static policy's")
    capabilities: list[str] = Field(
        default_factory=list, description="capabilities it learns for; empty: every capability"
    )
    explore: float = Field(
        0.0,
        ge=0.0,
        le=MAX_EXPLORE,
        description="share of decisions that try a uniformly drawn allowed candidate",
    )
    min_samples: int = Field(
        20,
        ge=0,
        le=100_000,
        description="effective observations every allowed candidate needs before the "
        "learner's estimate may override the static order",
    )
    half_life: int = Field(
        300,
        ge=10,
        le=1_000_000,
        description="outcomes of a capability after which an observation counts half: how "
        "fast the learner forgets a world that changed",
    )
    optimism: float = Field(
        0.0,
        ge=0.0,
        le=2.0,
        description="LinUCB's bonus: this many standard errors added to each estimate",
    )
    feedback_window_s: float = Field(
        10.0,
        ge=0.0,
        le=3600.0,
        description="explicit feedback within this time of a request replaces its implicit "
        "outcome; the learner applies an outcome only once the window has passed",
    )
    max_key_share: float = Field(
        0.5,
        gt=0.0,
        le=1.0,
        description="one key's share of a capability's recent outcomes above which its "
        "outcomes weigh less (so one tenant cannot steer everyone's routing)",
    )
    latency_scale_ms: float = Field(
        1000.0, gt=0.0, description="latency at which the latency reward reaches 0"
    )
    cost_scale: float = Field(0.01, gt=0.0, description="cost at which the cost reward reaches 0")

    def covers(self, capability: str) -> bool:
        """Whether the learner decides for this capability under this policy."""
        return self.enabled and (not self.capabilities or capability in self.capabilities)
