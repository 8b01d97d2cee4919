"""Grey failures on the cloud link: a link cut and restored every 2 s, and a brownout in
which 30 % of the exchanges with the cloud node take 1.5 s more."""

from __future__ import annotations

import asyncio

import pytest
from bench.chaos.cluster import Cluster
from bench.chaos.load import Load, Outcome, Row, first_after, percentile, record, require_traffic
from bench.chaos.network import Namespace, Network

from tests.chaos.workload import NodeWatch, digits, uncertain_sentiment

pytestmark = pytest.mark.integration

RATE = 20.0
FLAP_S = 2.0
"""Cut for this long, then restored for as long."""
FLAPS = 10
BACK_WITHIN_S = 1.5
"""After a restore, the cloud answers a request sent within this."""
STEADY_WITHIN_S = 3.0
"""No breaker open and no deployment ejected later than this after the link is steady."""
BROWNOUT_S = 20.0
BROWNOUT_DELAY_MS = 1500.0
BROWNOUT_PERCENT = 30.0
SETTLE_S = 5.0
"""From the brownout's start, latency-sensitive requests must have moved off it."""
SENSITIVE_P99_MS = 300.0


def on_cloud(outcome: Outcome) -> bool:
    return outcome.ok and outcome.tier == "cloud"


async def watched_run(
    watch: NodeWatch, load: Load, seconds: float, fault: asyncio.Task[list[float]]
) -> tuple[list[Outcome], list[float]]:
    """Run ``load`` for ``seconds`` while ``watch`` polls and ``fault`` plays its script."""
    stop = asyncio.Event()
    polling = asyncio.create_task(watch.run(stop))
    try:
        outcomes = await load.run(seconds)
        return outcomes, await fault
    finally:
        stop.set()
        await polling


async def test_flapping_cloud_link_fails_nothing_and_the_cloud_follows_each_restore(
    cluster: Cluster, cloud: Namespace, network: Network
) -> None:
    assert cluster.gateway is not None
    bodies = uncertain_sentiment() + [digits(i) for i in range(8)]
    load = Load(cluster.gateway.url, bodies, RATE)
    watch = NodeWatch(cluster, "cloud-1", load.clock)

    async def flap() -> list[float]:
        """Cut, restore, … FLAPS times; the times of the first cut and of each restore."""
        await asyncio.sleep(4.0)
        times = [load.clock()]
        for _ in range(FLAPS):
            await asyncio.to_thread(cloud.link.cut)
            await asyncio.sleep(FLAP_S)
            await asyncio.to_thread(cloud.link.restore)
            times.append(load.clock())
            await asyncio.sleep(FLAP_S)
        return times

    seconds = 4.0 + FLAPS * 2 * FLAP_S + 8.0
    outcomes, times = await watched_run(watch, load, seconds, asyncio.create_task(flap()))
    first_cut, restores = times[0], times[1:]
    steady_at = restores[-1]
    cuts = [(restore - FLAP_S, restore) for restore in restores]
    across_cut = [  # answered by the cloud, sent and answered inside one cut: impossible
        o
        for o in outcomes
        if on_cloud(o)
        and any(cut <= o.sent_s and o.sent_s + o.latency_ms / 1000.0 < end for cut, end in cuts)
    ]
    back = [first_after(outcomes, at, on_cloud) for at in restores]
    followed = sum(b is not None and b <= BACK_WITHIN_S for b in back)
    late = [s for s in watch.samples if s.at_s >= steady_at + STEADY_WITHIN_S]
    stuck = [s for s in late if "open" in s.breakers or s.ejected]
    opens_late = late[-1].opens - late[0].opens if late else 0
    after = [o for o in outcomes if o.sent_s >= first_cut]
    row = Row.of(
        "8 cloud link flapping 2 s/2 s",
        after,
        max((b for b in back if b is not None), default=None),
        cloud_before=sum(on_cloud(o) for o in outcomes if o.sent_s < first_cut),
        back_on_cloud_s=[None if b is None else round(b, 2) for b in back],
        restores_followed=followed,
        breaker_opens=watch.samples[-1].opens if watch.samples else 0,
        breaker_recoveries=watch.samples[-1].recoveries if watch.samples else 0,
        stuck_samples_after_steady=len(stuck),
        opens_after_steady=opens_late,
        cloud_after_steady=sum(on_cloud(o) for o in outcomes if o.sent_s >= steady_at),
        won_by_hedge=sum(o.ok and o.role == "hedge" for o in after),
        answered_across_a_cut=len(across_cut),
    )
    record(row, network.impairment, load)
    require_traffic(outcomes, "cloud", first_cut)
    assert not across_cut, f"the cuts cut nothing: {row}"
    assert row.failed == 0, [o for o in after if not o.ok][:5]
    assert followed >= 8, row
    assert late, "the watch took no sample after the link was steady"
    assert not stuck, (row, stuck[:3])
    assert opens_late == 0, row


async def test_cloud_brownout_moves_latency_sensitive_work_local_and_back(
    cluster: Cluster, network: Network
) -> None:
    assert cluster.gateway is not None
    load = Load(cluster.gateway.url, uncertain_sentiment(), RATE)
    watch = NodeWatch(cluster, "cloud-1", load.clock)

    async def brownout() -> list[float]:
        await asyncio.sleep(4.0)
        started = load.clock()
        faults = {"delay_ms": BROWNOUT_DELAY_MS, "delay_percent": BROWNOUT_PERCENT}
        await asyncio.to_thread(lambda: cluster.set_faults("cloud-1", **faults))
        await asyncio.sleep(BROWNOUT_S)
        ended = load.clock()
        await asyncio.to_thread(cluster.set_faults, "cloud-1")
        return [started, ended]

    seconds = 4.0 + BROWNOUT_S + 12.0
    outcomes, (started, ended) = await watched_run(
        watch, load, seconds, asyncio.create_task(brownout())
    )
    during = [o for o in outcomes if started <= o.sent_s < ended]
    settled = [o for o in during if o.sent_s >= started + SETTLE_S]
    p99_settled = percentile([o.latency_ms for o in settled if o.ok], 99)
    back = first_after(outcomes, ended, on_cloud)
    row = Row.of(
        "9 cloud brownout 30 % +1.5 s",
        during,
        None,
        p99_from_5s_ms=p99_settled,
        requests_from_5s=len(settled),
        cloud_before=sum(on_cloud(o) for o in outcomes if o.sent_s < started),
        cloud_during=sum(on_cloud(o) for o in during),
        cloud_from_5s=sum(on_cloud(o) for o in settled),
        back_on_cloud_s=None if back is None else round(back, 2),
        ejections=any(s.ejected for s in watch.samples),
        won_by_hedge=sum(o.ok and o.role == "hedge" for o in during),
        slowest_from_5s=[
            f"{o.latency_ms:.0f} ms {o.tier} {o.role}"
            for o in sorted(settled, key=lambda o: o.latency_ms)[-3:]
        ],
    )
    record(row, network.impairment, load)
    require_traffic(outcomes, "cloud", started)
    assert row.failed == 0, [o for o in during if not o.ok][:5]
    assert len(settled) >= 0.9 * RATE * (BROWNOUT_S - SETTLE_S), row
    assert all(o.ok for o in settled), row
    assert p99_settled <= SENSITIVE_P99_MS, row
    assert back is not None, f"the cloud never took traffic back: {row}"
    assert back <= 10.0, row
