"""What the router knows about one request: the caller's wishes and a snapshot of live signals.

Built once per request (not per subtask), so every subtask of a plan is decided against the
same view of the network, and the snapshot costs one pass over the nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hybridinfer.core.decision import Verdict
from hybridinfer.core.plan import Subtask
from hybridinfer.core.schemas import Prefer
from hybridinfer.core.topology import Deployment, Node, NodeStatus
from hybridinfer.policy.document import CompiledPolicy
from hybridinfer.signals.budget import BudgetState
from hybridinfer.signals.ewma import Signals


@dataclass(slots=True, frozen=True)
class RouteOptions:
    """The caller's routing wishes for one request."""

    route: str = "auto"
    """``auto`` or a tier name (``local``, ``edge``, ``cloud``)."""
    prefer: Prefer = "balanced"
    max_latency_ms: float | None = None


@dataclass(slots=True)
class RouteContext:
    """One request's options and signal snapshot, as policy conditions see them."""

    options: RouteOptions
    budget: BudgetState
    task: str = ""
    key_id: str | None = None
    signals: dict[str, Any] = field(default_factory=dict)
    options_cache: dict[tuple[str, str | None], list[tuple[Node, Deployment, float]]] = field(
        default_factory=dict
    )
    """Deployments (with expected latency) per (capability, task), looked up once."""
    tier_cache: dict[tuple[str, str | None], dict[str, Any]] = field(default_factory=dict)
    """``node``/``network`` maps per (capability, task): subtasks alike share one snapshot."""
    request_rules: dict[int, bool] = field(default_factory=dict)
    """Results of conditions that read only request-wide signals, cached for the request."""
    policy: CompiledPolicy | None = None
    """The policy version deciding this request (the canary's, for its share of traffic)."""
    routing_key: str = ""
    """What the canary and model-rollout splits hash: the same key, the same side."""
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    """Subtask id → its difficulty against the policy's threshold (``route/difficulty.py``)."""
    request_id: str = ""
    """The request's id: what a retained prompt is kept under (``store/retained.py``)."""

    def activation(
        self, subtask: Subtask, nodes: Iterable[Node], signals: Signals
    ) -> dict[str, Any]:
        """The CEL activation for one subtask; ``node``/``network`` describe the nodes that
        can serve it (a slow cloud LLM node says nothing about the cloud sentiment node)."""
        key = (subtask.capability, subtask.task)
        tiers = self.tier_cache.get(key)
        if tiers is None:
            tiers = self.tier_cache[key] = tier_signals(nodes, signals)
        return {**self.signals, **tiers, "subtask": self.subtask_signals(subtask)}

    def subtask_signals(self, subtask: Subtask) -> dict[str, Any]:
        """The ``subtask`` map of the conditions."""
        return {
            "id": subtask.id,
            "capability": subtask.capability,
            "task": subtask.task or "",
            "privacy": subtask.privacy.value,
            "size": subtask.size,
            "complexity": subtask.complexity,
            "difficulty": -1.0 if subtask.difficulty is None else subtask.difficulty,
            "priority": subtask.priority,
            "latency_sensitive": subtask.latency_sensitive
            or self.options.max_latency_ms is not None,
        }


TIERS = ("local", "edge", "cloud")


def tier_signals(nodes: Iterable[Node], signals: Signals) -> dict[str, Any]:
    """``node`` and ``network`` maps per tier (every tier present, so conditions never miss).

    Over several nodes of a tier: the highest load, and the lowest RTT, p95 and slow share (the
    best path there). ``p95_ms`` and ``slow_share`` cover the last few seconds of probes and
    calls, slow answers and timeouts included (``signals/exchanges.py``).
    """
    node = {t: {"load": 0.0, "in_flight": 0, "ready": False, "count": 0} for t in TIERS}
    inf = float("inf")
    network = {
        t: {"rtt_ms": inf, "error_rate": 0.0, "p95_ms": inf, "slow_share": inf} for t in TIERS
    }
    for item in nodes:
        tier = item.tier  # a StrEnum: it is its own key
        entry = node[tier]
        entry["count"] += 1
        if item.status is not NodeStatus.READY:
            continue
        entry["ready"] = True
        entry["load"] = max(entry["load"], item.load)
        entry["in_flight"] += item.in_flight
        path = network[tier]
        path["rtt_ms"] = min(path["rtt_ms"], item.rtt_ms)
        tail = signals.exchanges.tail(item.id)
        path["p95_ms"] = min(path["p95_ms"], tail.p95_ms)
        path["slow_share"] = min(path["slow_share"], tail.slow_share)
        for deployment in item.deployments:
            path["error_rate"] = max(path["error_rate"], signals.error_rate(deployment.id))
    for path in network.values():
        for name in ("rtt_ms", "p95_ms", "slow_share"):
            if path[name] == inf:
                path[name] = 0.0
    return {"node": node, "network": network}
