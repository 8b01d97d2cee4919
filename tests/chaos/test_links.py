"""Faults on the cloud link: slow (+200 ms), cut (100 % loss), restored, lossy (10 %). The
slow, cut and restore scenarios run twice: the gateway calling the cloud node over REST, and
over gRPC (the node serves ``--grpc-port`` and registers ``grpc://``)."""

from __future__ import annotations

import pytest
from bench.chaos.cluster import GRPC_PORT, NODE_PORT, Cluster
from bench.chaos.load import (
    Load,
    Outcome,
    Row,
    first_after,
    percentile,
    record,
    require_traffic,
    settled_after,
)
from bench.chaos.network import Namespace, Network

from tests.chaos.workload import (
    NodeWatch,
    digits,
    uncertain_sentiment,
    watched,
    with_fault,
)

pytestmark = pytest.mark.integration

RATE = 20.0
"""Requests per second of the link scenarios (open loop)."""


CLOUD_PROTOCOLS = pytest.mark.parametrize("cloud_protocol", ["rest", "grpc"])
"""Overrides conftest's ``cloud_protocol`` fixture: the scenario runs on each."""


def on_cloud(outcome: Outcome) -> bool:
    return outcome.tier == "cloud"


def scenario(name: str, cloud_protocol: str) -> str:
    """The row's name: the REST rows keep theirs, the gRPC ones say so."""
    return name if cloud_protocol == "rest" else f"{name}, cloud on gRPC"


def check_cloud_protocol(cluster: Cluster, cloud: Namespace, cloud_protocol: str) -> None:
    """On gRPC, that the gateway really calls the cloud node over it: ``/v1/nodes`` shows the
    ``grpc_url`` it registered, and after the warm-up (the cloud answered) and its probes the
    gateway holds a connection to the node's gRPC port and none to its REST port (heartbeats
    go from the node to the gateway)."""
    if cloud_protocol != "grpc":
        return
    registered = cluster.nodes()["cloud-1"].get("grpc_url")
    assert registered == cluster.processes["cloud-1"].grpc_url, registered
    assert str(registered).startswith(f"grpc://{cloud.link.address}:"), registered
    assert cluster.peers(cloud, GRPC_PORT), "no connection to the cloud node's gRPC port"
    rest_peers = cluster.peers(cloud, NODE_PORT)
    assert rest_peers == [], f"the gateway still calls the cloud over REST: {rest_peers}"


@CLOUD_PROTOCOLS
async def test_slow_cloud_link_moves_latency_sensitive_work_local_within_3s(
    cluster: Cluster, cloud: Namespace, network: Network, cloud_protocol: str
) -> None:
    assert cluster.gateway is not None
    check_cloud_protocol(cluster, cloud, cloud_protocol)
    load = Load(cluster.gateway.url, uncertain_sentiment(), RATE)
    local = NodeWatch(cluster, "local", load.clock)
    outcomes, fault_at = await watched(local, load, 12.0, 3.0, lambda: cloud.link.impair(200.0))

    def runs_local(outcome: Outcome) -> bool:
        """On the local tier, or, while the host CPU holds local admission limited (the
        mechanism of scenario 7), spilled to the edge node, or answered there by the hedge
        raced against a slow local try: never on the slow link."""
        spilled = outcome.tier == "edge" and local.saturated(outcome.sent_s)
        hedged = outcome.tier == "edge" and outcome.role == "hedge"
        return outcome.ok and (outcome.tier == "local" or spilled or hedged)

    before = [o for o in outcomes if o.sent_s < fault_at]
    assert any(on_cloud(o) for o in before), "no sentiment request ran on the cloud before"
    reroute = settled_after(outcomes, fault_at, runs_local)
    shifted = [o for o in outcomes if reroute is not None and o.sent_s >= fault_at + reroute]
    p99_after = percentile([o.latency_ms for o in shifted if o.ok], 99)
    row = Row.of(
        scenario("1 cloud link +200 ms", cloud_protocol),
        [o for o in outcomes if o.sent_s >= fault_at],
        reroute,
        p99_after_shift_ms=p99_after,
        off_cloud_s=settled_after(outcomes, fault_at, lambda o: o.ok and o.tier != "cloud"),
        on_local_tier_s=settled_after(outcomes, fault_at, lambda o: o.ok and o.tier == "local"),
        spilled_to_edge=sum(o.tier == "edge" for o in outcomes if o.sent_s >= fault_at),
        hedged_to_edge=sum(o.role == "hedge" for o in outcomes if o.sent_s >= fault_at),
        requests_after_shift=len(shifted),
        slowest_after_shift=[
            f"{o.latency_ms:.0f} ms {o.tier}"
            for o in sorted(shifted, key=lambda o: o.latency_ms)[-3:]
        ],
        cloud_before=sum(on_cloud(o) for o in before),
    )
    record(row, network.impairment, load)
    assert reroute is not None, f"sentiment still ran off the local tier at the end: {row}"
    late = [o for o in outcomes if o.sent_s >= fault_at + 3.0 and not runs_local(o)]
    assert reroute <= 3.0, (row, late[:10])
    assert len(shifted) >= 100, row
    assert all(o.ok for o in shifted), row
    assert p99_after < 100.0, row


@CLOUD_PROTOCOLS
async def test_cut_cloud_link_fails_no_request_with_a_local_path_and_opens_the_breaker(
    cluster: Cluster, cloud: Namespace, network: Network, cloud_protocol: str
) -> None:
    assert cluster.gateway is not None
    check_cloud_protocol(cluster, cloud, cloud_protocol)
    bodies = uncertain_sentiment() + [digits(i) for i in range(8)]
    load = Load(cluster.gateway.url, bodies, RATE)
    watch = NodeWatch(cluster, "cloud-1", load.clock)
    outcomes, fault_at = await watched(watch, load, 9.0, 3.0, cloud.link.cut)

    at_cut = watch.at(fault_at)
    opens_before = at_cut.opens if at_cut is not None else 0
    # An open spell may be shorter than a poll (full jitter): the breaker counts its opens.
    breaker_open = watch.first(fault_at, lambda s: "open" in s.breakers or s.opens > opens_before)
    node_down = watch.first(fault_at, lambda s: s.status == "down")
    after = [o for o in outcomes if o.sent_s >= fault_at]
    row = Row.of(
        scenario("2 cloud link cut", cloud_protocol),
        after,
        breaker_open,
        node_down_s=node_down,
        cloud_before_cut=sum(on_cloud(o) for o in outcomes if o.sent_s < fault_at),
        cloud_after_cut=sum(on_cloud(o) for o in after),
    )
    record(row, network.impairment, load)
    require_traffic(outcomes, "cloud", fault_at)  # else the cut cut nothing
    assert row.failed == 0, [o for o in after if not o.ok][:5]
    assert breaker_open is not None, row
    assert breaker_open <= 1.0, row


@CLOUD_PROTOCOLS
async def test_restored_cloud_link_takes_traffic_back_within_10s(
    cluster: Cluster, cloud: Namespace, network: Network, cloud_protocol: str
) -> None:
    assert cluster.gateway is not None
    check_cloud_protocol(cluster, cloud, cloud_protocol)
    load = Load(cluster.gateway.url, uncertain_sentiment(), RATE)
    watch = NodeWatch(cluster, "cloud-1", load.clock)
    restored: list[float] = []

    def cut_then_restore() -> None:
        """Cut until the gateway has given up on the cloud (breaker tripped, node down). A
        tripped breaker whose node is down gets no trial call, so once its open spell (full
        jitter, maybe shorter than a poll) is over it waits half-open: both say tripped."""
        cloud.link.cut()
        tripped = lambda: bool(cluster.breakers("cloud-1") - {"closed"})  # noqa: E731
        cluster.wait(tripped, 10.0, "breaker tripped")
        cluster.wait(lambda: cluster.nodes()["cloud-1"]["status"] == "down", 10.0, "down")
        cloud.link.restore()
        restored.append(load.clock())

    outcomes, cut_at = await watched(watch, load, 16.0, 2.0, cut_then_restore)
    restored_at = restored[0]
    back = first_after(outcomes, restored_at, lambda o: o.ok and on_cloud(o))
    # The half-open spell lasts one trial call (~0.2 s), shorter than a poll may catch: the
    # breaker's own count of trials that closed it says it happened.
    at_restore = watch.at(restored_at)
    recoveries_before = at_restore.recoveries if at_restore is not None else 0
    recovered = watch.first(restored_at, lambda s: s.recoveries > recoveries_before)
    half_open = watch.first(restored_at, lambda s: "half_open" in s.breakers)
    closed = watch.first(restored_at, lambda s: s.breakers == {"closed"})
    row = Row.of(
        scenario("4 cloud link restored", cloud_protocol),
        [o for o in outcomes if o.sent_s >= restored_at],
        back,
        half_open_seen_s=half_open,
        closed_by_trial_s=recovered,
        breakers_closed_s=closed,
    )
    record(row, network.impairment, load)
    require_traffic(outcomes, "cloud", cut_at)  # else nothing had to come back
    assert back is not None, row
    assert back <= 10.0, row
    assert recovered is not None, f"no half-open trial closed a breaker after the restore: {row}"
    assert closed is not None, row
    assert row.failed == 0, row


async def test_lossy_cloud_link_keeps_999_per_mille_success(
    cluster: Cluster, cloud: Namespace, network: Network
) -> None:
    assert cluster.gateway is not None
    bodies = uncertain_sentiment() + [digits(i, prefer="quality") for i in range(8)]
    load = Load(cluster.gateway.url, bodies, 80.0)
    outcomes, fault_at = await with_fault(load, 15.0, 2.0, lambda: cloud.link.impair(0.0, 0.1))

    after = [o for o in outcomes if o.sent_s >= fault_at]
    row = Row.of("5 cloud link 10 % loss", after, None, cloud=sum(on_cloud(o) for o in after))
    record(row, network.impairment, load)
    assert len(after) >= 1000, row
    assert row.details["cloud"] > 0, "no request crossed the lossy link"
    assert row.succeeded / row.sent >= 0.999, row
