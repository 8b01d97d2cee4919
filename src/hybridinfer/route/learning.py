"""The learner's turn in a decision: after the hard filters, the policy's rules and the
static order, it may put another surviving candidate first (``docs/learning.md``).

Order of authority: the hard filters leave the candidates; a matching policy rule places the
subtask (the learner only logs that choice, propensity 1); the policy's
``target_cloud_share`` holds back public-zone candidates once the learner's cloud share
reached it; then the learner chooses among what is left. Every decision it sees logs its
propensity in the trace (``decision.learning``), whoever chose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hybridinfer.core.decision import Candidate, Cascade
from hybridinfer.core.plan import Subtask
from hybridinfer.core.topology import Zone
from hybridinfer.learning.bandit import Bounds, Choice
from hybridinfer.learning.engine import Learners
from hybridinfer.learning.features import context_of
from hybridinfer.policy.document import CompiledPolicy, CompiledRule
from hybridinfer.route.context import RouteContext
from hybridinfer.route.reasons import where


@dataclass(slots=True)
class Learned:
    """The learner's say on one decision."""

    ranked: list[Candidate]
    moved: bool
    """It put another candidate first than the static policy did."""
    record: dict[str, Any]
    """What the trace keeps as ``decision.learning``."""
    sentence: str = ""
    """The reason's opening when it moved or confirmed the choice; empty when static."""

    def prefixed(self, reason: str) -> str:
        """The decision's reason, opened by the learner's sentence when it has one."""
        return f"{self.sentence}. {reason}" if self.sentence else reason


def moved(
    learned: Learned | None, ranked: list[Candidate], cascade: Cascade | None
) -> tuple[list[Candidate], Cascade | None]:
    """The order and cascade that run: the learner's pick runs first and alone (no cheaper
    candidate before it), or the static ones."""
    if learned is None or not learned.moved:
        return ranked, cascade
    return learned.ranked, None


def cloud_target(policy: CompiledPolicy, subtask: Subtask) -> float | None:
    """The policy's ``target_cloud_share`` for this subtask's capability or task, if any."""
    knob = policy.policy.router.capabilities.get(subtask.capability)
    if knob is not None and knob.target_cloud_share is not None:
        return knob.target_cloud_share
    cascade = policy.policy.cascade.get(subtask.task or subtask.capability)
    return None if cascade is None else cascade.target_cloud_share


def consult(
    learners: Learners,
    subtask: Subtask,
    context: RouteContext,
    policy: CompiledPolicy,
    rule: CompiledRule | None,
    ranked: list[Candidate],
) -> Learned | None:
    """The learner's choice among ``ranked`` (the static order), or None when it does not
    cover this capability."""
    block = policy.policy.learning
    if not block.covers(subtask.capability):
        return None
    features = context_of(subtask)
    weights = policy.policy.weights(context.options.prefer)
    arms = [(c.deployment.id, c.node.zone is not Zone.PRIVATE) for c in ranked]
    if rule is not None or len(ranked) < 2:
        choice = None
    else:
        bounds = Bounds(
            explore=block.explore,
            min_samples=block.min_samples,
            optimism=block.optimism,
            cloud_share=cloud_target(policy, subtask),
        )
        triple = (weights.quality, weights.latency, weights.cost)
        choice = learners.choose(subtask.capability, arms, features, triple, bounds)
    index = 0 if choice is None else choice.index
    chosen = ranked[index]
    order = [chosen, *(c for c in ranked if c is not chosen)]
    record = _record(subtask, context, ranked, features, choice, rule, index)
    return Learned(order, index != 0, record, _sentence(ranked, choice, context))


def _record(
    subtask: Subtask,
    context: RouteContext,
    ranked: list[Candidate],
    features: tuple[float, ...],
    choice: Choice | None,
    rule: CompiledRule | None,
    index: int,
) -> dict[str, Any]:
    chosen = ranked[index]
    mode = ("rule" if rule is not None else "static") if choice is None else choice.mode
    record: dict[str, Any] = {
        "capability": subtask.capability,
        "arm": chosen.deployment.id,
        "mode": mode,
        "propensity": 1.0 if choice is None else choice.propensity,
        "context": list(features),
        "candidates": [c.deployment.id for c in ranked],
        "public": chosen.node.zone is not Zone.PRIVATE,
        "prefer": context.options.prefer,
        "max_latency_ms": context.options.max_latency_ms,
        "quality": chosen.deployment.quality
        if chosen.expected_quality is None
        else chosen.expected_quality,
        "costs": {c.deployment.id: c.deployment.cost_per_call for c in ranked},
    }
    if choice is not None:
        record["estimates"] = {
            c.deployment.id: {"reward": e.mean, "samples": e.samples}
            for c, e in zip(ranked, choice.estimates, strict=True)
        }
        record["constrained"] = choice.constrained
    return record


def _sentence(ranked: list[Candidate], choice: Choice | None, context: RouteContext) -> str:
    if choice is None or choice.mode == "static":
        return ""
    chosen, static = ranked[choice.index], ranked[0]
    mine = choice.estimates[choice.index]
    prefer = f"prefer={context.options.prefer}"
    if choice.mode == "explore":
        return (
            f"Explored (probability {choice.propensity:.3g}): {where(chosen)}, estimated "
            f"reward {mine.mean:.3f} from {mine.samples:.0f} outcomes"
        )
    if choice.index == 0:
        return (
            f"Learned: {where(chosen)} estimated best, reward {mine.mean:.3f} for {prefer} "
            f"from {mine.samples:.0f} outcomes"
        )
    theirs = choice.estimates[0]
    return (
        f"Learned: {where(chosen)} estimated reward {mine.mean:.3f} against "
        f"{theirs.mean:.3f} for the static choice {where(static)} ({prefer}, "
        f"{mine.samples:.0f} and {theirs.samples:.0f} outcomes)"
    )
