"""Filter → score → choose, per subtask (design §5): every candidate is kept with its score or
the rule that rejected it, and the decision carries one sentence saying why."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hybridinfer.core.decision import Candidate, Cascade, Decision, Verdict
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.core.topology import Zone
from hybridinfer.errors import (
    BudgetExhausted,
    NoCapacity,
    PolicyDenied,
    PrivacyViolation,
)
from hybridinfer.learning.engine import Learners
from hybridinfer.policy.document import CompiledPolicy, CompiledRule, ModelRollout, Weights
from hybridinfer.policy.expressions import Prepared
from hybridinfer.route.context import RouteContext, RouteOptions
from hybridinfer.route.learning import consult, moved
from hybridinfer.route.reasons import explain
from hybridinfer.route.rolloutsplit import keep_side
from hybridinfer.route.snapshot import (
    DecisionSnapshots,
    Outcome,
    Shared,
    outcome_key,
    rule_key,
)
from hybridinfer.signals.breaker import Breakers
from hybridinfer.signals.budget import Ledger, MemoryLedger
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store.snapshots import SignalSnapshots

# Differences below these are noise: candidates within them score the same on that goal.
_LATENCY_TOLERANCE_MS = 1.0
_COST_TOLERANCE = 1e-9
_QUALITY_TOLERANCE = 0.002
PASSING_REJECTIONS = frozenset({"breaker", "health", "ejected"})
"""Rejections that pass by themselves (a breaker's cool-down, a node's next good probe, an
ejection's period): a request nothing could take for these reasons is answered 503 with
``Retry-After``."""
RETRY_AFTER_S = 1.0
"""The breaker's first open period and the probe interval, by default."""


def _filter(
    subtask: Subtask,
    context: RouteContext,
    policy: CompiledPolicy,
    candidate: Candidate,
    health: tuple[str, str] | None,
) -> None:
    node, deployment = candidate.node, candidate.deployment
    route = context.options.route
    pseudonymised = subtask.privacy_mode == "pseudonymise"
    if subtask.privacy is Privacy.SENSITIVE and node.zone is not Zone.PRIVATE and not pseudonymised:
        candidate.rejected_by = "privacy"
        candidate.detail = "sensitive data never leaves the private zone (privacy mode private)"
    elif node.tier in policy.disabled_tiers:
        candidate.rejected_by = "degrade"
        candidate.detail = f"the {node.tier} tier is switched off by the policy"
    elif route != "auto" and node.tier != route:
        candidate.rejected_by = "route"
        candidate.detail = f"options.route is {route}"
    elif health is not None:
        candidate.rejected_by, candidate.detail = health
    elif subtask.size > deployment.max_input:
        candidate.rejected_by = "input_limit"
        candidate.detail = f"input size {subtask.size} > limit {deployment.max_input}"


def _goodness(values: Sequence[float], tolerance: float, higher_is_better: bool) -> list[float]:
    """Min-max scale to 0..1 (1 = best); spreads within ``tolerance`` count as equal."""
    low, high = min(values), max(values)
    if high - low <= tolerance:
        return [1.0] * len(values)
    if higher_is_better:
        return [(value - low) / (high - low) for value in values]
    return [(high - value) / (high - low) for value in values]


def expected_quality(quality: float, best: float, difficulty: float) -> float:
    """A deployment's expected quality on one prompt of known difficulty: its registered
    figure on a hard prompt (1), the best candidate's on an easy one (0: any of them answers
    it well), linear between — the gap to the best grows with the chance the prompt needs it."""
    return best - (best - quality) * difficulty


def _score(candidates: list[Candidate], weights: Weights, difficulty: float | None) -> None:
    latency = _goodness([c.expected_latency_ms for c in candidates], _LATENCY_TOLERANCE_MS, False)
    cost = _goodness([c.deployment.cost_per_call for c in candidates], _COST_TOLERANCE, False)
    if difficulty is not None:
        best = max(c.deployment.quality for c in candidates)
        for candidate in candidates:
            candidate.expected_quality = expected_quality(
                candidate.deployment.quality, best, difficulty
            )
    qualities = [
        c.deployment.quality if c.expected_quality is None else c.expected_quality
        for c in candidates
    ]
    quality = _goodness(qualities, _QUALITY_TOLERANCE, True)
    for index, candidate in enumerate(candidates):
        candidate.score = (
            weights.latency * latency[index]
            + weights.cost * cost[index]
            + weights.quality * quality[index]
        )


def _tie_break(candidate: Candidate) -> tuple[float, float]:
    return candidate.expected_latency_ms, candidate.deployment.cost_per_call


def _eject_outliers(candidates: list[Candidate], ejected: list[bool]) -> None:
    """Reject the ejected outliers among the candidates left, unless none would be left:
    ejection moves work, it never refuses it (Envoy's panic threshold)."""
    alive = [c for c in candidates if c.rejected_by is None]
    out = [c for c, flag in zip(candidates, ejected, strict=True) if flag and c.rejected_by is None]
    if len(out) == len(alive):
        return
    for candidate in out:
        candidate.rejected_by = "ejected"
        candidate.detail = (
            f"{candidate.deployment.id} ejected as an outlier against its own record "
            "(recent failures or latency)"
        )


def _prefers(action: str, candidate: Candidate) -> bool:
    if action == "private":
        return candidate.node.zone is Zone.PRIVATE
    return candidate.node.tier == action


class Router:
    """Places subtasks on deployments under the current policy."""

    def __init__(
        self,
        registry: NodeRegistry,
        signals: Signals,
        policy: Callable[[], CompiledPolicy],
        ledger: Ledger | None = None,
        breakers: Breakers | None = None,
        choose_policy: Callable[[str], CompiledPolicy] | None = None,
        rollout_percent: Callable[[ModelRollout], float] | None = None,
        learners: Learners | None = None,
    ) -> None:
        """``choose_policy`` picks the version for a routing key (a canary split); without
        it every request gets ``policy()``. ``rollout_percent`` gives a model rollout's
        share now (decided rollouts move to 100 or 0); without it, the policy's percent.
        ``learners``: the online learner a policy's ``learning`` block turns on."""
        self._registry = registry
        self._signals = signals
        self._policy = policy
        self._choose_policy = choose_policy
        self._rollout_percent = rollout_percent
        self.ledger = ledger or MemoryLedger()
        self._breakers = breakers or Breakers()
        self._learners = learners
        self.decisions = DecisionSnapshots(registry, signals, self._breakers)
        """What decisions share for up to 50 ms (``route/snapshot.py``)."""
        self.snapshots: SignalSnapshots | None = None
        """Where decisions note the signals of their second, for replay (None: not kept)."""
        self.explains = True
        """Whether decisions carry their sentence (a replay reads outcomes, not reasons)."""

    def context(
        self,
        options: RouteOptions,
        task: str = "",
        key_id: str | None = None,
        routing_key: str = "",
    ) -> RouteContext:
        """A snapshot of the live signals, and the policy version, for one request."""
        choose = self._choose_policy
        policy = choose(routing_key) if choose is not None else self._policy()
        budget = self.ledger.state(key_id, policy.policy.budget)
        snapshot: dict[str, Any] = {"budget": budget.signals()}
        snapshot["request"] = {
            "task": task,
            "prefer": options.prefer,
            "route": options.route,
            "key_id": key_id or "",
            "max_latency_ms": options.max_latency_ms or 0.0,
        }
        return RouteContext(
            options, budget, task, key_id, snapshot, policy=policy, routing_key=routing_key
        )

    def decide(self, subtask: Subtask, context: RouteContext) -> Decision:
        """One decision; raises PrivacyViolation, PolicyDenied, BudgetExhausted or NoCapacity.

        What does not depend on the request is read from the shared snapshot
        (``route/snapshot.py``); an outcome already reached from the same facts for the same
        request shape under the same policy version is taken from it as it is."""
        policy = context.policy or self._policy()
        options = context.options
        shared = self._shared(subtask, context)
        rule = self._matching_rule(subtask, context, policy, shared)
        if rule is not None and rule.rule.action == "deny":
            raise PolicyDenied(f"policy rule {rule.rule.name!r} refuses this subtask")
        if options.route != "auto":
            rule = None  # the caller chose the tier: placement rules have nothing to add
        # The knob trades quality for cost at the caller's balance; prefer=quality, latency or
        # cost keep their own weights (quality never below balanced's answer).
        knob_applies = options.route == "auto" and options.prefer == "balanced"
        verdict = context.verdicts.get(subtask.id) if knob_applies else None
        key = outcome_key(subtask, context, policy, shared, rule, verdict, self._share)
        outcome = shared.outcomes.get(key) if shared.outcomes is not None else None
        if outcome is None or outcome.policy is not policy:
            outcome = self._rank(subtask, context, policy, shared, rule, verdict)
            shared.keep(key, outcome)
        ranked, cascade, reason = outcome.ranked, outcome.cascade, outcome.reason
        learned = None
        if self._learners is not None:
            learned = consult(self._learners, subtask, context, policy, rule, ranked)
        if learned is not None:
            ranked, cascade = moved(learned, ranked, cascade)
            reason = explain(subtask, options, ranked, outcome.candidates, cascade, rule, verdict)
            reason = learned.prefixed(reason)
        return Decision(
            subtask_id=subtask.id,
            chosen=ranked[0],
            fallbacks=ranked[1:],
            candidates=outcome.candidates,
            reason=reason,
            policy_version=policy.version,
            cascade=cascade,
            rules=[rule.rule.name] if rule is not None else [],
            verdict=verdict if rule is None else None,
            learning=None if learned is None else learned.record,
            signals_ref=self._snapshot(subtask, shared),
            options={
                "route": options.route,
                "prefer": options.prefer,
                "max_latency_ms": options.max_latency_ms,
            },
        )

    def _shared(self, subtask: Subtask, context: RouteContext) -> Shared:
        """The facts of the moment for the subtask's (capability, task)."""
        return self.decisions.entry(subtask.capability, subtask.task)

    def _rank(
        self,
        subtask: Subtask,
        context: RouteContext,
        policy: CompiledPolicy,
        shared: Shared,
        rule: CompiledRule | None,
        verdict: Verdict | None,
    ) -> Outcome:
        """Filter, score and order the candidates; the cascade and the reason."""
        options = context.options
        candidates = self._candidates(subtask, context, policy, shared)
        survivors = [c for c in candidates if c.rejected_by is None]
        if not survivors:
            raise self._nothing_left(subtask, options, candidates)
        survivors = self._apply_rollouts(subtask, context, policy, survivors)
        survivors = self._apply_budget(survivors, context, policy)
        survivors = self._apply_slo(survivors, options)
        _score(survivors, policy.policy.weights(options.prefer), subtask.difficulty)
        action: str | None = rule.rule.action if rule is not None else None
        if action is None and verdict is not None:
            action = verdict.action  # no rule placed it: the prompt's difficulty does
        # Ties break towards the faster, then the cheaper candidate: never on registry order.
        ranked = sorted(
            survivors,
            key=lambda c: (
                action is not None and not _prefers(action, c),
                -(c.score or 0.0),
                *_tie_break(c),
            ),
        )
        cascade = self._cascade(subtask, options, policy, rule, ranked)
        if cascade is not None:
            first = min(ranked, key=lambda c: (c.deployment.cost_per_call, c.expected_latency_ms))
            ranked = [first] + [c for c in ranked if c is not first]
        reason = ""
        if self.explains:
            reason = explain(subtask, options, ranked, candidates, cascade, rule, verdict)
        return Outcome(policy, candidates, ranked, cascade, reason)

    def _candidates(
        self, subtask: Subtask, context: RouteContext, policy: CompiledPolicy, shared: Shared
    ) -> list[Candidate]:
        """Every option, with the hard rule that rejects it, if any."""
        candidates = []
        for index, (node, deployment, latency) in enumerate(shared.options):
            candidate = Candidate(deployment=deployment, node=node, expected_latency_ms=latency)
            _filter(subtask, context, policy, candidate, shared.health[index])
            if candidate.rejected_by is None and shared.breaker_open[index]:
                candidate.rejected_by = "breaker"
                candidate.detail = f"circuit open after repeated failures of {deployment.id}"
            candidates.append(candidate)
        _eject_outliers(candidates, shared.ejected)
        return candidates

    def _snapshot(self, subtask: Subtask, shared: Shared) -> str | None:
        """This second's snapshot reference; the first decision of the second for its
        (capability, task) files the maps, the others look them up."""
        if self.snapshots is None:
            return None
        key = f"{subtask.capability}/{subtask.task or ''}"
        return self.snapshots.note(key, lambda: shared.tiers)

    def _matching_rule(
        self,
        subtask: Subtask,
        context: RouteContext,
        policy: CompiledPolicy,
        shared: Shared,
    ) -> CompiledRule | None:
        """The first rule whose condition holds; the values the conditions read, once read
        against an entry, file the answer in it."""
        if not policy.rules:
            return None
        fields = context.subtask_signals(subtask)
        key = rule_key(policy, fields, context.signals)
        known = shared.rules.get(key)
        if known is not None and known[0] is policy:
            return None if known[1] < 0 else policy.rules[known[1]]
        activation: Prepared | None = None
        cache = context.request_rules
        found = -1
        for index, rule in enumerate(policy.rules):
            if rule.per_subtask:
                activation = activation or Prepared(
                    {**context.signals, **shared.tiers, "subtask": fields}
                )
                holds = rule.condition.holds(activation)
            elif index in cache:
                holds = cache[index]
            else:
                holds = cache[index] = rule.condition.holds(context.signals)
            if holds:
                found = index
                break
        shared.remember(key, policy, found)
        return None if found < 0 else policy.rules[found]

    def _apply_rollouts(
        self,
        subtask: Subtask,
        context: RouteContext,
        policy: CompiledPolicy,
        survivors: list[Candidate],
    ) -> list[Candidate]:
        for rollout in policy.policy.rollouts:
            if rollout.task == (subtask.task or subtask.capability):
                survivors = keep_side(rollout, self._share(rollout), context.routing_key, survivors)
        return survivors

    def _share(self, rollout: ModelRollout) -> float:
        """A model rollout's candidate share now."""
        share = self._rollout_percent
        return rollout.start_percent if share is None else share(rollout)

    @staticmethod
    def _apply_budget(
        survivors: list[Candidate], context: RouteContext, policy: CompiledPolicy
    ) -> list[Candidate]:
        room = context.budget.room()
        affordable = [c for c in survivors if c.deployment.cost_per_call <= room + 1e-12]
        if len(affordable) == len(survivors):
            return survivors
        for candidate in survivors:
            if candidate not in affordable:
                candidate.rejected_by = "budget"
                candidate.detail = (
                    f"cloud budget left {room:g} < cost {candidate.deployment.cost_per_call:g}"
                )
        if policy.policy.budget.when_exhausted == "reject" or not affordable:
            raise BudgetExhausted("the cloud budget for this period is spent", retry_after_s=60.0)
        return affordable

    @staticmethod
    def _apply_slo(survivors: list[Candidate], options: RouteOptions) -> list[Candidate]:
        if options.max_latency_ms is None:
            return survivors
        within = [c for c in survivors if c.expected_latency_ms <= options.max_latency_ms]
        for candidate in survivors:
            if candidate not in within and within:
                candidate.rejected_by = "latency_slo"
                candidate.detail = (
                    f"expected {candidate.expected_latency_ms:.1f} ms > "
                    f"max_latency_ms {options.max_latency_ms:g}"
                )
        return within or survivors

    @staticmethod
    def _cascade(
        subtask: Subtask,
        options: RouteOptions,
        policy: CompiledPolicy,
        rule: CompiledRule | None,
        ranked: list[Candidate],
    ) -> Cascade | None:
        threshold = policy.thresholds.get(subtask.task or subtask.capability)
        if threshold is None or options.route != "auto":
            return None
        if options.prefer == "quality":  # only when a rule put a weaker deployment first:
            best = max(c.deployment.quality for c in ranked)  # never below balanced's answer
            if rule is None or ranked[0].deployment.quality >= best:
                return None
        elif options.prefer != "balanced":
            return None
        if rule is not None and (rule.rule.cascade is False or rule.rule.action == "cloud"):
            return None
        first = min(ranked, key=lambda c: (c.deployment.cost_per_call, c.expected_latency_ms))
        stronger = [c for c in ranked if c.deployment.quality > first.deployment.quality]
        if not stronger:
            return None
        stronger.sort(key=lambda c: c.deployment.quality, reverse=True)
        return Cascade(threshold=threshold, escalate_to=stronger)

    @staticmethod
    def _nothing_left(
        subtask: Subtask, options: RouteOptions, candidates: list[Candidate]
    ) -> Exception:
        wanted = f"{subtask.capability}" + (f"/{subtask.task}" if subtask.task else "")
        if not candidates:
            return NoCapacity(f"no deployment serves {wanted}")
        blocked_by_privacy = [c for c in candidates if c.rejected_by == "privacy"]
        forced_tier_private = any(
            c.node.tier.value == options.route and c.rejected_by != "privacy" for c in candidates
        )
        if blocked_by_privacy and (options.route == "auto" or not forced_tier_private):
            return PrivacyViolation(
                f"subtask {subtask.id!r} holds sensitive data, which never leaves the private "
                f"zone; no private-zone deployment can serve route={options.route}"
            )
        reasons = sorted({f"{c.deployment.id}: {c.detail}" for c in candidates})
        passing = any(c.rejected_by in PASSING_REJECTIONS for c in candidates)
        return NoCapacity(
            f"no deployment can serve {wanted} now ({'; '.join(reasons)})",
            retry_after_s=RETRY_AFTER_S if passing else None,
        )


__all__ = ["BudgetExhausted", "PolicyDenied", "RouteContext", "RouteOptions", "Router"]
