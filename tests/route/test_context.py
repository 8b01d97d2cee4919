"""What policy conditions see of the network: per tier, the busiest ready node's load and the
best path's RTT, computed once per (capability, task) for a request."""

from __future__ import annotations

from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.core.topology import Node, NodeStatus, Tier, Zone
from hybridinfer.route.context import RouteContext, RouteOptions, tier_signals
from hybridinfer.signals.budget import BudgetState
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.exchanges import ExchangeWindows
from tests.fakes import deployment, node


def edge(node_id: str, load: float, rtt_ms: float, in_flight: int = 0) -> Node:
    made = node(node_id, Tier.EDGE, Zone.PRIVATE, deployment(node_id, "m", quality=1, latency_ms=1))
    made.load, made.rtt_ms, made.in_flight = load, rtt_ms, in_flight
    return made


def test_a_tier_shows_its_busiest_ready_node_and_its_best_path() -> None:
    signals = Signals(alpha=1.0)
    signals.observe("edge-2/m:1", 10.0, ok=False)
    down = edge("edge-3", load=0.99, rtt_ms=0.1, in_flight=50)
    down.status = NodeStatus.DOWN

    seen = tier_signals(
        [edge("edge-1", 0.2, 40.0, in_flight=2), edge("edge-2", 0.6, 15.0, 3), down], signals
    )

    assert seen["node"]["edge"] == {"load": 0.6, "in_flight": 5, "ready": True, "count": 3}
    assert seen["network"]["edge"] == {
        "rtt_ms": 15.0,
        "error_rate": 1.0,
        "p95_ms": 0.0,
        "slow_share": 0.0,
    }


def test_a_tier_shows_the_tail_of_its_best_path_timeouts_included() -> None:
    clock = [100.0]
    exchanges = ExchangeWindows(window_s=5.0, slow_ms=200.0, clock=lambda: clock[0])
    signals = Signals(exchanges=exchanges)
    exchanges.record("edge-1", 4.0, True, exchanges.now())
    for _ in range(3):  # edge-1: a brownout, 3 in 10 exchanges time out at 250 ms
        slow_started = exchanges.now()
        clock[0] += 0.1
        exchanges.record("edge-1", 4.0, True, exchanges.now())  # others answer meanwhile
        exchanges.record("edge-1", 4.0, True, exchanges.now())
        clock[0] += 0.15
        exchanges.record("edge-1", 250.0, False, slow_started)
    for _ in range(10):  # edge-2: a slow path, every exchange answered in 300 ms
        started = exchanges.now()
        clock[0] += 0.1
        exchanges.record("edge-2", 300.0, True, started)

    seen = tier_signals([edge("edge-1", 0.1, 2.0), edge("edge-2", 0.1, 2.0)], signals)

    assert seen["network"]["edge"]["rtt_ms"] == 2.0  # the probes' RTT sees none of it
    assert seen["network"]["edge"]["p95_ms"] == 250.0
    assert seen["network"]["edge"]["slow_share"] == 0.3
    clock[0] += 6.0  # the brownout passed: the window forgets it
    later = tier_signals([edge("edge-1", 0.1, 2.0)], signals)
    assert later["network"]["edge"]["slow_share"] == 0.0


def test_every_tier_is_present_and_a_tier_without_ready_nodes_reads_zero() -> None:
    down = edge("edge-1", 0.9, 30.0)
    down.status = NodeStatus.DOWN

    seen = tier_signals([down], Signals())

    assert set(seen["node"]) == set(seen["network"]) == {"local", "edge", "cloud"}
    assert seen["node"]["edge"] == {"load": 0.0, "in_flight": 0, "ready": False, "count": 1}
    assert seen["network"]["edge"]["rtt_ms"] == 0.0
    assert seen["node"]["cloud"]["count"] == 0


def context(options: RouteOptions) -> RouteContext:
    budget = BudgetState(0.0, 0.0, None, None)
    return RouteContext(options, budget, task="sentiment", signals={"budget": budget.signals()})


def test_the_activation_describes_the_subtask_and_reuses_the_snapshot_per_capability() -> None:
    routed = context(RouteOptions())
    subtask = Subtask(
        "classify", "text-classification", "sentiment", {}, privacy=Privacy.SENSITIVE, size=7
    )
    first = routed.activation(subtask, [edge("edge-1", 0.5, 20.0)], Signals())
    # The same (capability, task) later in the request reads the snapshot, not the nodes.
    again = routed.activation(subtask, [edge("edge-1", 0.9, 90.0)], Signals())

    assert first["subtask"]["privacy"] == "sensitive"
    assert first["subtask"]["size"] == 7
    assert first["subtask"]["latency_sensitive"] is False
    assert first["budget"] == {"spent": 0.0, "limit": 0.0, "remaining": 0.0, "fraction": 0.0}
    assert again["node"]["edge"]["load"] == 0.5
    other = Subtask("chat", "chat", None, {})
    assert (
        routed.activation(other, [edge("edge-1", 0.9, 90.0)], Signals())["node"]["edge"]["load"]
        == 0.9
    )
    assert routed.activation(other, [], Signals())["subtask"]["task"] == ""


def test_a_latency_slo_makes_every_subtask_latency_sensitive() -> None:
    routed = context(RouteOptions(max_latency_ms=50.0))
    subtask = Subtask("classify", "text-classification", "sentiment", {})
    assert routed.activation(subtask, [], Signals())["subtask"]["latency_sensitive"] is True
