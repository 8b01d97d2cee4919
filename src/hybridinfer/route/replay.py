"""What-if replay: re-decide a logged subtask under another policy, calling no model.

The trace keeps what the router read: the subtask's labels (never its inputs), every
candidate with its expected latency, quality and cost as they were, the caller's routing
wishes, the prompt's difficulty verdict, and a reference to the per-second snapshot of the
``node``/``network`` signals (``store/snapshots.py``). A :class:`ReplayRouter` is the real
:class:`~hybridinfer.route.router.Router` fed those instead of the live registry, so filter,
rules, scoring and cascade are the same code that decides live traffic.

The logged verdict is reused unless the prompt is in the opt-in retained sample: then the
staged router's verdict on it is used (``route/rescore.py``).

What replay cannot know is said in the outcome: a cascade's escalation is predicted from the
confidence the logged run measured on the same deployment (``confidence_known`` is False when
the logged run never called it); the execute-time privacy gate (names in the prompt keep it
private) is known only for prompts the log sent, or tried to send, out of the private zone
(``gate_unknown`` otherwise: the prediction is then an upper bound of the cloud share);
candidates rejected by the state of the time (breaker,
health, ejection, budget, input limit) stay rejected; the budget is not replayed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hybridinfer.core.decision import Candidate, Decision, Verdict
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.core.topology import Deployment, Node, Tier, Zone
from hybridinfer.errors import HybridInferError
from hybridinfer.policy.document import CompiledPolicy
from hybridinfer.route.context import RouteContext, RouteOptions
from hybridinfer.route.rescore import Rescored
from hybridinfer.route.router import Router
from hybridinfer.route.snapshot import Shared, shared_of
from hybridinfer.signals.budget import BudgetState
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry

STATE_REJECTIONS = frozenset({"breaker", "health", "ejected", "budget", "input_limit"})
"""Rejections that were facts of their moment, not of the policy: they stay in a replay."""

_UNLIMITED = BudgetState(0.0, 0.0, None, None)
_OPTIONS_KEPT = 50_000
"""Distinct logged candidates kept for reuse during one replay."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """Where one subtask ran (logged) or would run (replayed), and what it cost."""

    capability: str
    tier: str
    deployment: str
    spend: float
    latency_ms: float
    quality: float | None
    privacy_violation: bool = False
    confidence_known: bool = True
    refused: str | None = None
    """The error code when the policy refuses or cannot place it."""
    gate_unknown: bool = False
    """It would leave the private zone, and the log never showed the execute-time privacy
    gate this prompt (names found in it would keep it in the private zone)."""


class ReplayRouter(Router):
    """The router, reading a logged decision's candidates instead of the live registry."""

    def __init__(self, policy: CompiledPolicy) -> None:
        super().__init__(NodeRegistry(), Signals(), lambda: policy)
        self.explains = False

    def _shared(self, subtask: Subtask, context: RouteContext) -> Shared:
        """The logged candidates and maps, for this decision alone."""
        key = (subtask.capability, subtask.task)
        shared = shared_of(context.options_cache[key], self._breakers, self._signals, keep=False)
        logged = context.tier_cache.get(key)
        if logged is not None:
            shared.tiers = logged
        return shared


def _subtask(labels: Mapping[str, Any]) -> Subtask:
    return Subtask(
        id=str(labels["id"]),
        capability=str(labels["capability"]),
        task=labels.get("task"),
        inputs={},
        privacy=Privacy(labels.get("privacy", "internal")),
        size=int(labels.get("size", 0)),
        complexity=float(labels.get("complexity", 0.5)),
        latency_sensitive=bool(labels.get("latency_sensitive", False)),
        stays_local=bool(labels.get("stays_local", False)),
        difficulty=labels.get("difficulty"),
    )


def labels_of(trace: Mapping[str, Any], subtask_id: str) -> Mapping[str, Any]:
    """The logged labels of one subtask of ``trace`` (empty if the plan lacks it)."""
    subtasks: list[Mapping[str, Any]] = (trace.get("plan") or {}).get("subtasks") or []
    return next((s for s in subtasks if s.get("id") == subtask_id), {"id": subtask_id})


def _candidate_option(
    subtask: Subtask, logged: Mapping[str, Any]
) -> tuple[Node, Deployment, float] | None:
    if logged.get("rejected_by") in STATE_REJECTIONS:
        return None
    node_id, _, rest = str(logged["deployment"]).partition("/")
    model, _, version = rest.rpartition(":")
    latency = float(logged.get("expected_latency_ms") or 0.0)
    deployment = Deployment(
        node_id=node_id,
        model=model,
        version=version,
        capability=subtask.capability,
        task=subtask.task,
        quality=float(logged.get("quality") or 0.0),
        latency_ms=latency,
        cost_per_call=float(logged.get("cost_per_call") or 0.0),
    )
    node = Node(node_id, Tier(logged["tier"]), Zone(logged["zone"]), "", "replay")
    node.deployments.append(deployment)
    return node, deployment, latency


def _verdict(logged: Mapping[str, Any] | None) -> Verdict | None:
    if not logged:
        return None
    return Verdict(
        float(logged["difficulty"]),
        float(logged["threshold"]),
        str(logged.get("knob", "")),
        str(logged.get("calibration", "fixed")),
    )


def _options(logged: Mapping[str, Any] | None) -> RouteOptions:
    if not logged:
        return RouteOptions()
    limit = logged.get("max_latency_ms")
    return RouteOptions(
        str(logged.get("route", "auto")),
        logged.get("prefer", "balanced"),
        None if limit is None else float(limit),
    )


def confidences(trace: Mapping[str, Any]) -> dict[tuple[str, str], float]:
    """(subtask, deployment) → the confidence that deployment answered with in the log."""
    found: dict[tuple[str, str], float] = {}
    for attempt in trace.get("attempts") or ():
        confidence = attempt.get("confidence")
        if attempt.get("status") == "ok" and isinstance(confidence, int | float):
            found[(attempt["subtask"], attempt["deployment"])] = float(confidence)
    return found


class Replayer:
    """Re-decides logged subtasks under one compiled policy."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.policy = policy
        self._router = ReplayRouter(policy)
        self._options: dict[tuple[Any, ...], tuple[Node, Deployment, float] | None] = {}

    def _option(
        self, subtask: Subtask, logged: Mapping[str, Any]
    ) -> tuple[Node, Deployment, float] | None:
        """The logged candidate as the router's input; alike candidates (most of a log) share
        one (the router does not change them), which keeps replay fast."""
        key = (
            subtask.capability,
            subtask.task,
            logged["deployment"],
            logged.get("tier"),
            logged.get("zone"),
            logged.get("quality"),
            logged.get("cost_per_call"),
            logged.get("expected_latency_ms"),
            logged.get("rejected_by"),
        )
        if key not in self._options:
            if len(self._options) >= _OPTIONS_KEPT:
                self._options.clear()
            self._options[key] = _candidate_option(subtask, logged)
        return self._options[key]

    def replay(
        self,
        trace: Mapping[str, Any],
        logged: Mapping[str, Any],
        snapshot: Mapping[str, Any] | None,
        rescored: Rescored | None = None,
    ) -> Outcome:
        """The outcome of the logged decision ``logged`` of ``trace`` under this policy;
        ``rescored``: the prompt's verdict under the staged router, read from the retained
        sample (``route/rescore.py``), instead of the logged one."""
        subtask = _subtask(labels_of(trace, logged["subtask"]))
        key = (subtask.capability, subtask.task)
        found = [self._option(subtask, c) for c in logged.get("candidates") or ()]
        context = RouteContext(
            _options(logged.get("options")),
            _UNLIMITED,
            trace.get("task") or "",
            signals={"budget": _UNLIMITED.signals(), "request": {"task": trace.get("task") or ""}},
            policy=self.policy,
            routing_key=trace.get("routing_key") or trace.get("request_id") or "",
        )
        context.options_cache[key] = [option for option in found if option is not None]
        tiers = (snapshot or {}).get(f"{subtask.capability}/{subtask.task or ''}")
        if tiers is not None:
            context.tier_cache[key] = tiers
        verdict = _verdict(logged.get("difficulty"))
        if rescored is not None:
            subtask.difficulty, verdict = rescored.difficulty, rescored.verdict
        if verdict is not None:
            context.verdicts[subtask.id] = verdict
        try:
            decision = self._router.decide(subtask, context)
        except HybridInferError as error:
            return Outcome(subtask.capability, "none", "", 0.0, 0.0, None, refused=error.error_code)
        return _outcome(subtask, decision, _logged(trace, subtask.id))


def _quality(candidate: Candidate) -> float:
    if candidate.expected_quality is not None:
        return candidate.expected_quality
    return candidate.deployment.quality


@dataclass(frozen=True, slots=True)
class _Logged:
    """What the logged run measured of one subtask: confidences, and the privacy gate's word."""

    confidence: Mapping[tuple[str, str], float]
    gate_refused: bool
    """The execute-time privacy gate refused to send it out of the private zone."""
    left_private_zone: bool
    """It was sent to a public-zone deployment (so the gate let it pass)."""


def _logged(trace: Mapping[str, Any], subtask_id: str) -> _Logged:
    mine = [a for a in trace.get("attempts") or () if a.get("subtask") == subtask_id]
    refused = any(a.get("error_code") == "privacy_violation" for a in mine)
    public = any(a.get("status") == "ok" and a.get("tier") == "cloud" for a in mine)
    return _Logged(confidences(trace), refused, public)


def _outcome(subtask: Subtask, decision: Decision, logged: _Logged) -> Outcome:
    chosen = decision.chosen
    final, known = chosen, True
    spend, latency = chosen.deployment.cost_per_call, chosen.expected_latency_ms
    cascade = decision.cascade
    if cascade is not None and cascade.escalate_to:
        measured = logged.confidence.get((subtask.id, chosen.deployment.id))
        known = measured is not None
        stronger = cascade.escalate_to[0]
        # The gate refused this prompt the public zone in the log: it would again (the first
        # answer stands, as the executor does).
        blocked = logged.gate_refused and stronger.node.zone is not Zone.PRIVATE
        if measured is not None and measured < cascade.threshold and not blocked:
            final = stronger
            spend += final.deployment.cost_per_call
            latency += final.expected_latency_ms
    leaked = (
        any(c.node.zone is not Zone.PRIVATE for c in (chosen, final))
        and subtask.privacy is Privacy.SENSITIVE
    )
    unchecked = final.node.zone is not Zone.PRIVATE and not (
        logged.left_private_zone or logged.gate_refused
    )
    return Outcome(
        subtask.capability,
        final.node.tier.value,
        final.deployment.id,
        spend,
        latency,
        _quality(final),
        privacy_violation=leaked,
        confidence_known=known,
        gate_unknown=unchecked,
    )


def answered_attempts(
    attempts: Iterable[Mapping[str, Any]], subtask_id: str
) -> list[Mapping[str, Any]]:
    """The calls of one subtask that answered. A hedge the primary beat may still be open
    when the trace closes (``ok`` with no latency yet): it did not answer, so it is left out."""
    return [
        a
        for a in attempts
        if a.get("subtask") == subtask_id
        and a.get("status") == "ok"
        and (a.get("role") != "hedge" or float(a.get("latency_ms") or 0.0) > 0.0)
    ]


def answering_attempt(
    attempts: Iterable[Mapping[str, Any]], subtask_id: str
) -> Mapping[str, Any] | None:
    """The logged attempt whose answer a subtask returned: an escalation that answered, else
    the first of the others to finish (a hedge race's winner; the loser may finish too)."""
    answered = answered_attempts(attempts, subtask_id)
    escalated = [a for a in answered if a.get("role") == "escalation"]
    if escalated:
        return escalated[-1]
    if not answered:
        return None
    return min(
        answered,
        key=lambda a: float(a.get("started_ms") or 0.0) + float(a.get("latency_ms") or 0.0),
    )


def logged_outcome(trace: Mapping[str, Any], logged: Mapping[str, Any]) -> Outcome:
    """What the logged run of one decision did: the answering attempt's tier, the spend of
    every answered call (a hedge's too: it was paid for), and the answer's latency."""
    subtask_id = logged["subtask"]
    by_id = {c["deployment"]: c for c in logged.get("candidates") or ()}
    attempts = trace.get("attempts") or ()
    capability = str(labels_of(trace, subtask_id).get("capability", ""))
    last = answering_attempt(attempts, subtask_id)
    if last is None:
        return Outcome(capability, "none", "", 0.0, 0.0, None, refused="failed")
    final = by_id.get(last["deployment"], {})
    spend = sum(
        float(by_id.get(a["deployment"], {}).get("cost_per_call") or 0.0)
        for a in answered_attempts(attempts, subtask_id)
    )
    quality = final.get("expected_quality") or final.get("quality")
    primary = float(last.get("latency_ms") or 0.0)
    return Outcome(
        capability,
        str(last["tier"]),
        str(last["deployment"]),
        spend,
        float(last.get("started_ms") or 0.0) + primary
        if last.get("role") == "escalation"
        else primary,
        None if quality is None or math.isnan(quality) else float(quality),
    )
