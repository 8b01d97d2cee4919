"""A node process dies: its traffic moves to the other tiers and no more requests fail."""

from __future__ import annotations

import pytest
from bench.chaos.cluster import Cluster
from bench.chaos.load import Load, Row, first_after, record
from bench.chaos.network import Network

from tests.chaos.workload import digits, uncertain_sentiment, with_fault

pytestmark = pytest.mark.integration


def error_rate(outcomes: list) -> float:  # type: ignore[type-arg]
    return sum(not o.ok for o in outcomes) / len(outcomes)


async def test_sigkilled_edge_node_moves_traffic_to_other_tiers_at_the_same_error_rate(
    cluster: Cluster, network: Network
) -> None:
    assert cluster.gateway is not None
    bodies = [digits(i) for i in range(8)] + uncertain_sentiment()[:4]
    load = Load(cluster.gateway.url, bodies, 20.0)
    outcomes, kill_at = await with_fault(load, 9.0, 3.0, cluster.processes["edge-1"].kill)

    before = [o for o in outcomes if o.sent_s < kill_at]
    after = [o for o in outcomes if o.sent_s >= kill_at]
    assert any(o.task == "digits" and o.tier == "edge" for o in before), "edge carried nothing"
    moved = first_after(outcomes, kill_at, lambda o: o.ok and o.task == "digits")
    row = Row.of(
        "3 edge node SIGKILL",
        after,
        moved,
        error_rate_before=error_rate(before),
        error_rate_after=error_rate(after),
        digits_tiers_after=sorted({str(o.tier) for o in after if o.task == "digits"}),
    )
    record(row, network.impairment, load)
    assert not cluster.processes["edge-1"].alive()
    assert error_rate(after) <= error_rate(before), row
    assert all(o.tier != "edge" for o in after if o.ok and o.sent_s >= kill_at + 1.0), row
    assert any(o.task == "digits" and o.ok for o in after), row
