"""What the router's decisions share for up to 50 ms: per (capability, task), the
deployments able to serve it with their expected latency, the state rejections (health, open
breakers, ejected outliers), the ``node``/``network`` maps of the policy's conditions, and the
outcomes already decided from those facts.

A decision costs tens of microseconds per candidate; nearly all of it reads signals that do
not depend on the request and hardly move within tens of milliseconds. An entry is kept for
``ttl_s`` at most, and dropped at once (checked on every use) when:

- the registry changed (a node registered, removed, marked down or alive, a heartbeat),
- a breaker changed state (opened, closed, a half-open trial started or ended) or an ejection
  began (``Breakers.version``, ``Ejections.version``),
- a node's status differs from the one it was built with (however it was set),
- the earliest moment one of its facts turns by itself has come: a node's heartbeat ageing out,
  an open breaker's period ending, an ejection's end (each on its own source's clock).

The policy is not part of an entry: an outcome is filed under the identity of the policy
version that decided it (with the rollout sides and everything else of the request it read),
so a policy applied, a canary moved or a rollout decided is used by the next decision.
Latency EWMAs, loads and RTTs read from an entry are at most ``ttl_s`` old: loads and RTTs
change with heartbeats, probes and the host's CPU sampler (every 0.5 s), and the ``network``
tails cover seconds, so 50 ms adds little lag. A shorter life (5 ms until this was measured)
expired between requests at any rate below ~200 a second, and every decision rebuilt its entry:
at one request per 5 ms over 20 deployments, 394 µs per decision with 5 ms, 57 µs with 50 ms
(``bench/decision.py``; 15 µs back to back either way).
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from hybridinfer.core.decision import Candidate, Cascade, Verdict
from hybridinfer.core.plan import Subtask
from hybridinfer.core.topology import Deployment, Node, NodeStatus
from hybridinfer.policy.canary import on_canary_side
from hybridinfer.policy.document import CompiledPolicy, CompiledRule, ModelRollout
from hybridinfer.route.context import RouteContext, tier_signals
from hybridinfer.signals.breaker import Breakers
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry

Clock = Callable[[], float]
Option = tuple[Node, Deployment, float]
DEFAULT_TTL_S = 0.05
MAX_OUTCOMES = 256
"""Outcomes kept per entry (distinct request shapes within one entry's life)."""
_INF = float("inf")


@dataclass(slots=True)
class Outcome:
    """A decision minus what is the request's own (subtask id, options, learner's move)."""

    policy: CompiledPolicy
    candidates: list[Candidate]
    ranked: list[Candidate]
    cascade: Cascade | None
    reason: str


@dataclass(slots=True)
class Shared:
    """One (capability, task)'s facts of the moment."""

    options: list[Option]
    health: list[tuple[str, str] | None]
    """Per option, the rejection its node's state asks for (``health``), or None."""
    breaker_open: list[bool]
    ejected: list[bool]
    tiers: dict[str, Any]
    limits: list[int] = field(default_factory=list)
    """Every option's ``max_input``, sorted: how many are below a size says who rejects it."""
    max_cost: float = 0.0
    statuses: tuple[tuple[Node, NodeStatus], ...] = ()
    stamp: tuple[int, int, int] = (0, 0, 0)
    until: tuple[float, float, float, float] = (_INF, _INF, _INF, _INF)
    """Valid while: own clock, registry's, breakers', ejections' (each below its bound)."""
    outcomes: dict[Hashable, Outcome] | None = None
    """None: nothing is kept (a replay's one-off entry)."""
    rules: dict[Hashable, tuple[CompiledPolicy, int]] = field(default_factory=dict)
    """Which rule (index, -1 for none) of which policy matched, by the values its conditions
    read."""

    def keep(self, key: Hashable, outcome: Outcome) -> None:
        if self.outcomes is None:
            return
        if len(self.outcomes) >= MAX_OUTCOMES:
            self.outcomes.clear()
        self.outcomes[key] = outcome

    def remember(self, key: Hashable, policy: CompiledPolicy, rule: int) -> None:
        if self.outcomes is None:
            return
        if len(self.rules) >= MAX_OUTCOMES:
            self.rules.clear()
        self.rules[key] = (policy, rule)


def shared_of(options: list[Option], breakers: Breakers, signals: Signals, keep: bool) -> Shared:
    """The facts of ``options`` read now (``keep``: outcomes may be filed in it)."""
    health: list[tuple[str, str] | None] = []
    for node, _deployment, _latency in options:
        ready = node.status is NodeStatus.READY
        health.append(None if ready else ("health", f"node {node.id} is {node.status.value}"))
    nodes = {node.id: node for node, _d, _l in options}.values()
    return Shared(
        options=options,
        health=health,
        breaker_open=[not breakers.allows(d.id) for _n, d, _l in options],
        ejected=[signals.ejections.ejected(d.id) for _n, d, _l in options],
        tiers=tier_signals(nodes, signals),
        limits=sorted(d.max_input for _n, d, _l in options),
        max_cost=max((d.cost_per_call for _n, d, _l in options), default=0.0),
        statuses=tuple((node, node.status) for node in nodes),
        outcomes={} if keep else None,
    )


class DecisionSnapshots:
    """The entries, rebuilt when stale (see the module's docstring); ``ttl_s`` 0: never kept."""

    def __init__(
        self,
        registry: NodeRegistry,
        signals: Signals,
        breakers: Breakers,
        ttl_s: float = DEFAULT_TTL_S,
        clock: Clock = time.monotonic,
    ) -> None:
        self._registry = registry
        self._signals = signals
        self._breakers = breakers
        self._ttl_s = ttl_s
        self._clock = clock
        self._entries: dict[tuple[str, str | None], Shared] = {}
        self.builds = 0
        """Entries built so far (a figure for tests and benchmarks)."""

    def entry(self, capability: str, task: str | None) -> Shared:
        key = (capability, task)
        found = self._entries.get(key)
        if found is not None and self._fresh(found):
            return found
        built = self._build(capability, task)
        if self._ttl_s > 0.0:
            self._entries[key] = built
        return built

    def clear(self) -> None:
        self._entries.clear()

    def _stamp(self) -> tuple[int, int, int]:
        ejections = self._signals.ejections
        return (self._registry.version, self._breakers.version, ejections.version)

    def _fresh(self, entry: Shared) -> bool:
        if entry.stamp != self._stamp():
            return False
        own, registry, breakers, ejections = entry.until
        if (
            self._clock() >= own
            or self._registry.now() >= registry
            or self._breakers.now() >= breakers
            or self._signals.ejections.clock() >= ejections
        ):
            return False
        return all(node.status is status for node, status in entry.statuses)

    def _build(self, capability: str, task: str | None) -> Shared:
        registry, signals = self._registry, self._signals
        pairs = registry.candidates(capability, task)  # ages heartbeats: may mark nodes down
        options = [(node, d, expected_latency(signals, node, d)) for node, d in pairs]
        entry = shared_of(options, self._breakers, signals, keep=self._ttl_s > 0.0)
        deployments = [d.id for _n, d, _l in options]
        entry.stamp = self._stamp()
        entry.until = (
            self._clock() + self._ttl_s,
            registry.ages_at(node for node, _s in entry.statuses),
            self._breakers.settles_at(deployments),
            signals.ejections.ends_at(deployments),
        )
        self.builds += 1
        return entry


def expected_latency(signals: Signals, node: Node, deployment: Deployment) -> float:
    """Observed latency includes the network; a probe RTT alone shows a link that degraded
    while no traffic used it. Take whichever is worse."""
    prior = deployment.latency_ms + node.rtt_ms
    return max(signals.latency_ms(deployment.id, prior), prior)


_FIELD = re.compile(r"\b(subtask|request|budget)\s*\.\s*(\w+)")
_OPAQUE = re.compile(
    r"\[|\b(all|exists|exists_one|map|filter)\s*\(|\b(subtask|request|budget)\b(?!\s*\.\s*\w)"
)
ALL_FIELDS = None


def condition_reads(sources: list[str]) -> tuple[tuple[str, str], ...] | None:
    """The request-side fields (``subtask``, ``request``, ``budget``) some condition names,
    or None (``ALL_FIELDS``) when one may read fields it does not name (an index, a macro
    over a map, the whole map compared). A CEL expression reaches a variable only by its
    name, so a field no condition names is one no condition reads; ``node``/``network``
    come from the entry."""
    reads: set[tuple[str, str]] = set()
    for source in sources:
        if _OPAQUE.search(source):
            return ALL_FIELDS
        reads.update((variable, name) for variable, name in _FIELD.findall(source))
    return tuple(sorted(reads))


Reads = tuple[tuple[str, str], ...] | None
_READS: dict[int, tuple[CompiledPolicy, Reads]] = {}


def _reads_of(policy: CompiledPolicy) -> Reads:
    known = _READS.get(id(policy))
    if known is not None and known[0] is policy:
        return known[1]
    if len(_READS) >= 64:
        _READS.clear()
    reads = condition_reads([rule.condition.source for rule in policy.rules])
    _READS[id(policy)] = (policy, reads)
    return reads


def rule_key(policy: CompiledPolicy, fields: dict[str, Any], signals: dict[str, Any]) -> Hashable:
    """What the policy's conditions can read of this request and subtask (``node`` and
    ``network`` are the entry's own)."""
    reads = _reads_of(policy)
    if reads is ALL_FIELDS:
        request = tuple((name, tuple(sorted(m.items()))) for name, m in sorted(signals.items()))
        return (id(policy), tuple(fields.items()), request)
    values = tuple(
        fields.get(name) if variable == "subtask" else signals.get(variable, {}).get(name)
        for variable, name in reads
    )
    return (id(policy), values)


def outcome_key(
    subtask: Subtask,
    context: RouteContext,
    policy: CompiledPolicy,
    shared: Shared,
    rule: CompiledRule | None,
    verdict: Verdict | None,
    share: Callable[[ModelRollout], float],
) -> Hashable:
    """Everything of the request a ranking reads besides the entry: two requests with the
    same key are ranked, explained and rejected alike (the entry's (capability, task) is
    implied)."""
    options = context.options
    over = bisect_left(shared.limits, subtask.size)  # deployments whose max_input it exceeds
    room = context.budget.room()
    task = subtask.task or subtask.capability
    sides = tuple(
        (rollout.id, percent, on_canary_side(context.routing_key, rollout.id, percent))
        for rollout in policy.policy.rollouts
        if rollout.task == task
        for percent in (share(rollout),)
    )
    return (
        id(policy),
        None if rule is None else id(rule),
        subtask.privacy,
        subtask.privacy_mode,
        subtask.difficulty,
        options,
        0 if over == 0 else (over, subtask.size),  # the size is in the rejections' detail
        None if room + 1e-12 >= shared.max_cost else room,  # so is the room left
        sides,
        None
        if verdict is None
        else (verdict.difficulty, verdict.threshold, verdict.knob, verdict.calibration),
    )
