"""Overload: twice the measured peak for a minute."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest
from bench.chaos.cluster import Cluster
from bench.chaos.load import Load, Row, peak, record
from bench.chaos.network import Network

from tests.chaos.workload import digits, sentiment

pytestmark = pytest.mark.integration

MIB = 1 << 20
OVERLOAD_S = 60.0


def mixed() -> list[dict[str, object]]:
    texts = ["I love this", "this is awful", "the train was on time", "what a day"]
    return [sentiment(text) for text in texts] + [digits(i) for i in range(4)]


async def sample_rss(cluster: Cluster, stop: asyncio.Event, into: list[int]) -> None:
    assert cluster.gateway is not None
    while not stop.is_set():
        into.append(cluster.gateway.rss_bytes())
        await asyncio.sleep(1.0)


async def test_twice_the_peak_for_60s_sheds_with_retry_after_and_bounds_memory(
    cluster: Cluster, network: Network
) -> None:
    assert cluster.gateway is not None
    url = cluster.gateway.url
    measured = await peak(url, mixed(), connections=32, seconds=3.0)
    load = Load(url, mixed(), rate=2 * measured, max_in_flight=4096)
    rss: list[int] = []
    stop = asyncio.Event()
    sampling = asyncio.create_task(sample_rss(cluster, stop, rss))
    outcomes = await load.run(OVERLOAD_S)
    elapsed = load.pace().elapsed_s  # measured: a generator that fell behind sent for longer
    stop.set()
    await sampling

    shed = [o for o in outcomes if o.status == 503]
    other = [o for o in outcomes if o.status not in (200, 503)]
    half = len(rss) // 2
    row = Row.of(
        "6 2x peak for 60 s",
        outcomes,
        None,
        peak_per_s=round(measured, 1),
        offered_per_s=round(len(outcomes) / elapsed, 1),
        shed_503=len(shed),
        shed_without_retry_after=sum(o.retry_after is None for o in shed),
        other_failures=len(other),
        unsent=load.unsent,
        failure_codes=dict(Counter(f"{o.status} {o.code}" for o in outcomes if not o.ok)),
        rss_start_mib=round(rss[0] / MIB),
        rss_max_mib=round(max(rss) / MIB),
        rss_end_mib=round(rss[-1] / MIB),
    )
    record(row, network.impairment, load)
    assert cluster.gateway.alive(), "the gateway died under overload"
    async with httpx.AsyncClient() as client:
        assert (await client.get(url + "/healthz", timeout=5)).status_code == 200
    assert not other, (row, other[:5])
    assert all(o.retry_after is not None for o in shed), row
    assert max(rss) - rss[0] <= 256 * MIB, row
    assert max(rss[half:]) - rss[half] <= 64 * MIB, f"RSS still growing: {row}"
    assert row.details["offered_per_s"] >= 1.9 * measured, f"the load was not 2x peak: {row}"
