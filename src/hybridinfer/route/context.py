"""What the router knows about one request: the caller's wishes and a snapshot of live signals.

Built once per request (not per subtask), so every subtask of a plan is decided against the
same view of the network, and the snapshot costs one pass over the nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hybridinfer.plan import Subtask
from hybridinfer.route.budget import BudgetState
from hybridinfer.route.policy import Prefer
from hybridinfer.route.signals import Signals
from hybridinfer.topology import Node, NodeStatus, Tier


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
    request_rules: dict[int, bool] = field(default_factory=dict)
    """Results of conditions that read only request-wide signals, cached for the request."""

    def activation(
        self, subtask: Subtask, nodes: Iterable[Node], signals: Signals
    ) -> dict[str, Any]:
        """The CEL activation for one subtask; ``node``/``network`` describe the nodes that
        can serve it (a slow cloud LLM node says nothing about the cloud sentiment node)."""
        return {
            **self.signals,
            **tier_signals(nodes, signals),
            "subtask": {
                "id": subtask.id,
                "capability": subtask.capability,
                "task": subtask.task or "",
                "privacy": subtask.privacy.value,
                "size": subtask.size,
                "complexity": subtask.complexity,
                "priority": subtask.priority,
                "latency_sensitive": subtask.latency_sensitive
                or self.options.max_latency_ms is not None,
            },
        }


def tier_signals(nodes: Iterable[Node], signals: Signals) -> dict[str, Any]:
    """``node`` and ``network`` maps per tier (every tier present, so conditions never miss).

    Over several nodes of a tier: the highest load, and the lowest RTT (the best path there).
    """
    node: dict[str, dict[str, Any]] = {}
    network: dict[str, dict[str, Any]] = {}
    for tier in Tier:
        node[tier.value] = {"load": 0.0, "in_flight": 0, "ready": False, "count": 0}
        network[tier.value] = {"rtt_ms": 0.0, "error_rate": 0.0}
    rtts: dict[str, list[float]] = {tier.value: [] for tier in Tier}
    for item in nodes:
        entry = node[item.tier.value]
        entry["count"] += 1
        if item.status is not NodeStatus.READY:
            continue
        entry["ready"] = True
        entry["load"] = max(entry["load"], item.load)
        entry["in_flight"] += item.in_flight
        rtts[item.tier.value].append(item.rtt_ms)
        errors = [signals.error_rate(d.id) for d in item.deployments]
        network[item.tier.value]["error_rate"] = max(
            [network[item.tier.value]["error_rate"], *errors]
        )
    for tier_name, values in rtts.items():
        if values:
            network[tier_name]["rtt_ms"] = min(values)
    return {"node": node, "network": network}
