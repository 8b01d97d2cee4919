"""Routing policies: versioned YAML an operator can read, validated before they apply.

A policy holds the scoring weights per ``prefer`` mode, ordered rules (a CEL condition and an
action), cascade settings per task, degrade switches and the cloud budget. Rules are read top
to bottom; the first whose condition holds decides the subtask's placement action:

- ``local`` / ``edge`` / ``cloud``: candidates on that tier rank first; the others stay as
  fallbacks (a policy never turns capacity into an error);
- ``private``: candidates in the private zone rank first;
- ``deny``: the subtask is refused (403 ``policy_denied``).

A rule may also set ``cascade: false`` to stop escalation for the subtasks it matches.
Privacy (``sensitive`` stays private) and degrade switches are hard filters, whatever the rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import phonenumbers
from pydantic import BaseModel, ConfigDict, Field, model_validator

from hybridinfer.core.schemas import Prefer
from hybridinfer.errors import ConfigError
from hybridinfer.policy.answers import AnswersPolicy
from hybridinfer.policy.expressions import Condition, ExpressionError
from hybridinfer.policy.guard import Guard
from hybridinfer.policy.learning import LearningPolicy
from hybridinfer.policy.privacymodes import PrivacyModes
from hybridinfer.privacy.phones import DEFAULT_REGIONS
from hybridinfer.yamlfile import line_of, parse_document_with_lines

Action = Literal["local", "edge", "cloud", "private", "deny"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Weights(_Strict):
    """How much each goal counts when candidates are scored (each goal scores 0..1)."""

    latency: float = Field(default=1.0, ge=0.0)
    cost: float = Field(default=1.0, ge=0.0)
    quality: float = Field(default=1.0, ge=0.0)


class Rule(_Strict):
    """When ``when`` holds for a subtask, ``action`` decides where it should run."""

    name: str = Field(min_length=1, max_length=100)
    when: str = Field(min_length=1, max_length=2000, description="A CEL condition.")
    action: Action
    cascade: bool | None = Field(None, description="false stops escalation for these subtasks")
    description: str = ""


class CascadeRule(_Strict):
    """Run the cheapest deployment first; escalate when its calibrated confidence is low.

    Give exactly one knob: ``threshold`` (raw confidence), or in user terms
    ``target_cloud_share`` (fraction of calls escalated) or ``max_quality_drop`` (accuracy
    points you accept to lose against always escalating). The user-term knobs are turned into
    a threshold from the local model's calibration split when the policy is applied.
    """

    threshold: float | None = Field(None, ge=0.0, le=1.0)
    target_cloud_share: float | None = Field(None, ge=0.0, le=1.0)
    max_quality_drop: float | None = Field(None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _one_knob(self) -> CascadeRule:
        given = [self.threshold, self.target_cloud_share, self.max_quality_drop]
        if sum(value is not None for value in given) != 1:
            raise ValueError("give exactly one of threshold, target_cloud_share, max_quality_drop")
        return self


class Degrade(_Strict):
    """Switch whole tiers off (``cloud: off``) without a restart."""

    local: bool = True
    edge: bool = True
    cloud: bool = True


class BudgetPolicy(_Strict):
    """Cloud spend allowed per period, globally and per API key."""

    period: Literal["minute", "hour", "day", "month"] = "day"
    global_limit: float | None = Field(None, ge=0.0)
    per_key_limit: float | None = Field(None, ge=0.0)
    when_exhausted: Literal["local", "reject"] = Field(
        "local", description="local: fall back to free tiers; reject: 429 budget_exhausted"
    )


class PromoteWhen(_Strict):
    """When a model rollout decides by itself: both versions have answered ``min_requests``
    times; the candidate wins if its median latency is at most ``max_latency_ratio`` times the
    baseline's and its mean confidence is at least ``min_quality_delta`` above it."""

    min_requests: int = Field(200, ge=1)
    max_latency_ratio: float = Field(1.2, gt=0.0)
    min_quality_delta: float = Field(0.0, ge=-1.0, le=1.0)


class ModelRollout(_Strict):
    """Send a share of a task's traffic for ``model`` to its ``candidate`` version: a fixed
    ``percent``, or, with a ``guard:`` block, the guard's steps walked one by one."""

    task: str = Field(min_length=1, max_length=200)
    model: str = Field(min_length=1, max_length=200)
    candidate: str = Field(min_length=1, max_length=100, description="the new model version")
    percent: float | None = Field(
        None, gt=0.0, le=100.0, description="the candidate's share (not with a guard)"
    )
    promote_when: PromoteWhen | None = Field(
        None, description="decide automatically; without it an operator edits the policy"
    )
    guard: Guard | None = Field(
        None, description="walk the guard's steps, judged on the guard metrics of all replicas"
    )

    @model_validator(mode="after")
    def _one_way_to_move(self) -> ModelRollout:
        if self.guard is None:
            if self.percent is None:
                raise ValueError("a rollout needs a percent, or a guard whose steps it walks")
            return self
        if self.percent is not None:
            raise ValueError(
                "a guarded rollout walks its guard's steps: give guard.steps, not percent"
            )
        if self.promote_when is not None:
            raise ValueError("a rollout is decided by promote_when or by a guard, not both")
        return self

    @property
    def id(self) -> str:
        return f"{self.task}/{self.model}:{self.candidate}"

    @property
    def start_percent(self) -> float:
        """The candidate's share before anything moved it: ``percent``, or the first step."""
        if self.percent is not None:
            return self.percent
        assert self.guard is not None  # one of the two, by the validator
        return self.guard.steps[0]


DEFAULT_WEIGHTS: dict[Prefer, Weights] = {
    "balanced": Weights(),
    "latency": Weights(latency=1.0, cost=0.25, quality=0.25),
    "cost": Weights(latency=0.25, cost=1.0, quality=0.25),
    "quality": Weights(latency=0.25, cost=0.25, quality=1.0),
}


class PrivacyPolicy(_Strict):
    """How personal data is looked for before a subtask may leave the private zone."""

    names: bool = Field(
        True,
        description="read the inputs for names and places (NER) before any call to a "
        "public-zone deployment; without the model installed, such calls are refused",
    )
    names_timeout_ms: float = Field(1000.0, gt=0.0, le=60_000.0)
    on_detector_failure: Literal["sensitive", "internal"] = Field(
        "sensitive",
        description="a detector that errs, times out or is missing: the data counts as "
        "personal (sensitive, the default) or the subtask keeps its label (internal)",
    )
    phone_regions: list[str] = Field(
        default_factory=lambda: list(DEFAULT_REGIONS),
        min_length=1,
        description="regions whose national phone formats are recognised, tried in order "
        "(international formats are recognised for every region)",
    )

    @model_validator(mode="after")
    def _known_regions(self) -> PrivacyPolicy:
        unknown = [r for r in self.phone_regions if r not in phonenumbers.SUPPORTED_REGIONS]
        if unknown:
            raise ValueError(f"unknown phone regions: {', '.join(unknown)}")
        return self


Signal = Literal["complexity", "learned", "words"]


def _complexity_only() -> dict[Signal, float]:
    return {"complexity": 1.0}


class DifficultyKnob(_Strict):
    """Where prompts of one capability go by their difficulty; give exactly one of:

    - ``max_quality_drop``: the largest chance, per prompt, that staying local gives a worse
      answer than the cloud would, accepted to save the cloud call: a prompt whose difficulty
      (the head's probability that it needs the strong tier) is at or above it goes to the
      cloud. It means the same on any mix of traffic.
    - ``target_cloud_share``: the share of the capability's prompts that should reach the
      cloud, turned into a difficulty threshold from this replica's recent prompts (or the
      head's reference quantiles until enough are seen)."""

    max_quality_drop: float | None = Field(None, ge=0.0, le=1.0)
    target_cloud_share: float | None = Field(None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _exactly_one(self) -> DifficultyKnob:
        if (self.max_quality_drop is None) == (self.target_cloud_share is None):
            raise ValueError("give exactly one of max_quality_drop, target_cloud_share")
        return self


class RouterPolicy(_Strict):
    """The prompt's difficulty as a routing signal (``subtask.difficulty`` in conditions).

    A subtask of a listed capability is scored only when routing is left to the router with
    ``prefer: balanced`` and candidates on more than one tier survive the filters; no rule
    matched → difficulty at or above the threshold prefers the cloud tier, below it the
    local one. ``enabled: false`` gives the decisions of a policy without it.
    """

    enabled: bool = True
    capabilities: dict[str, DifficultyKnob] = Field(
        default_factory=lambda: {"chat": DifficultyKnob(max_quality_drop=0.5)}
    )
    weights: dict[Signal, float] = Field(
        default_factory=_complexity_only,
        description="how the signals combine into the difficulty: complexity (the chat "
        "difficulty head's probability), learned (the MMLU router's rank), words (the length's "
        "rank); ranks are read against the MMLU router's training prompts",
    )
    timeout_ms: float = Field(
        250.0,
        gt=0.0,
        le=10_000.0,
        description="how long a decision waits for the score; one that waits longer is "
        "placed without it (docs/routing.md has the measured cost)",
    )
    calibration: Literal["live", "reference"] = Field(
        "live",
        description="for target_cloud_share: read the threshold among this replica's recent "
        "prompts of the capability (live, once 200 are seen) or among the reference quantiles",
    )

    @model_validator(mode="after")
    def _some_weight(self) -> RouterPolicy:
        if not any(weight > 0 for weight in self.weights.values()):
            raise ValueError("router.weights needs at least one positive weight")
        return self


class Policy(_Strict):
    """One version of the routing policy."""

    version: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._-]+$")
    description: str = ""
    prefer: dict[Prefer, Weights] = Field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    rules: list[Rule] = Field(default_factory=list)
    cascade: dict[str, CascadeRule] = Field(
        default_factory=dict, description="Task (e.g. sentiment) → cascade settings."
    )
    degrade: Degrade = Field(default_factory=Degrade)
    budget: BudgetPolicy = Field(default_factory=BudgetPolicy)
    rollouts: list[ModelRollout] = Field(
        default_factory=list, description="Model versions rolled out to a share of traffic."
    )
    privacy: PrivacyPolicy = Field(default_factory=PrivacyPolicy)
    router: RouterPolicy = Field(default_factory=RouterPolicy)
    privacy_modes: PrivacyModes = Field(default_factory=PrivacyModes)
    learning: LearningPolicy = Field(default_factory=LearningPolicy)
    guard: Guard = Field(default_factory=Guard, description="How a guarded canary walks.")
    answers: AnswersPolicy = Field(default_factory=AnswersPolicy)

    def weights(self, prefer: Prefer) -> Weights:
        return self.prefer.get(prefer) or Weights()


@dataclass(frozen=True, slots=True)
class CompiledRule:
    rule: Rule
    condition: Condition
    per_subtask: bool
    """False when the condition reads only ``request.*``/``budget.*``: then it is evaluated
    once per request; ``subtask``, ``node`` and ``network`` depend on the subtask."""


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """A validated policy with its conditions compiled and its cascade thresholds resolved."""

    policy: Policy
    rules: tuple[CompiledRule, ...]
    thresholds: dict[str, float]
    text: str
    disabled_tiers: frozenset[str] = frozenset()

    @property
    def version(self) -> str:
        return self.policy.version


SAMPLE_SIGNALS = {
    "subtask": {
        "id": "s",
        "capability": "text-classification",
        "task": "sentiment",
        "privacy": "internal",
        "size": 10,
        "complexity": 0.5,
        "difficulty": 0.5,
        "priority": 0,
        "latency_sensitive": False,
    },
    "request": {"task": "sentiment", "prefer": "balanced", "route": "auto", "key_id": "k"},
    "node": {
        tier: {"load": 0.0, "in_flight": 0, "ready": True, "count": 1}
        for tier in ("local", "edge", "cloud")
    },
    "network": {
        tier: {"rtt_ms": 0.0, "error_rate": 0.0, "p95_ms": 0.0, "slow_share": 0.0}
        for tier in ("local", "edge", "cloud")
    },
    "budget": {"spent": 0.0, "limit": 0.0, "remaining": 0.0, "fraction": 0.0},
}
"""The documented signals with representative values; conditions are test-run on them."""


def _reads_subtask_signals(condition: str) -> bool:
    return any(name in condition for name in ("subtask", "node", "network"))


def compile_policy(
    text: str, source: str = "policy.yaml", thresholds: dict[str, float] | None = None
) -> CompiledPolicy:
    """Validate a policy document (schema and CEL); a ConfigError names each problem's line."""
    policy, lines = parse_document_with_lines(Policy, text, source)
    compiled: list[CompiledRule] = []
    problems: list[str] = []
    for index, rule in enumerate(policy.rules):
        try:
            condition = Condition(rule.when)
            condition.check(SAMPLE_SIGNALS)
        except ExpressionError as exc:
            line = line_of(lines, ("rules", index, "when"))
            problems.append(f"{source}:{line}: rules.{index}.when ({rule.name}): {exc}")
            continue
        compiled.append(CompiledRule(rule, condition, _reads_subtask_signals(rule.when)))
    if problems:
        raise ConfigError("; ".join(problems))
    resolved = {
        task: rule.threshold for task, rule in policy.cascade.items() if rule.threshold is not None
    }
    resolved.update(thresholds or {})
    degrade = policy.degrade
    disabled = frozenset(t for t in ("local", "edge", "cloud") if not getattr(degrade, t))
    return CompiledPolicy(policy, tuple(compiled), resolved, text, disabled)


def load_policy(path: Path) -> CompiledPolicy:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read policy {path}: {exc.strerror}") from None
    return compile_policy(text, str(path))


def default_policy_path() -> Path:
    return Path(__file__).resolve().parent.parent / "defaults" / "policy.yaml"
