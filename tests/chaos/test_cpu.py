"""A host whose CPU another process eats: local admission shrinks, requests are still served."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from bench.chaos.cluster import Cluster
from bench.chaos.load import Load, Outcome, Row, record
from bench.chaos.network import Network

from hybridinfer.server.supervisor import with_parent_death_signal
from tests.chaos.workload import NodeWatch, sentiment, uncertain_sentiment

pytestmark = pytest.mark.integration


def burn_cpu() -> list[subprocess.Popen[bytes]]:
    """One busy loop per core, in other processes (they die with this one), at the lowest
    priority: the host is as busy as ever (its CPU use is what local admission reads), but the
    load generator keeps its schedule (else the scenario fails as not measured)."""
    burner = ["nice", "-n", "19", sys.executable, "-c", "while True: pass"]
    cores = len(os.sched_getaffinity(0))
    return [subprocess.Popen(with_parent_death_signal(burner)) for _ in range(cores)]


def local_share(outcomes: list[Outcome]) -> float:
    served = [o for o in outcomes if o.ok]
    return sum(o.tier == "local" for o in served) / max(len(served), 1)


async def test_saturated_local_cpu_limits_local_admission_and_still_serves(
    cluster: Cluster, network: Network
) -> None:
    assert cluster.gateway is not None
    only_local = [sentiment(text, route="local") for text in ("fine", "great day")]
    load = Load(cluster.gateway.url, uncertain_sentiment()[:4] + only_local, 20.0)
    watch = NodeWatch(cluster, "local", load.clock)
    stop = asyncio.Event()
    polling = asyncio.create_task(watch.run(stop))
    running = asyncio.create_task(load.run(16.0))
    await asyncio.sleep(3.0)
    burn_at = load.clock()
    burners = burn_cpu()
    try:
        await asyncio.sleep(10.0)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    burn_end = load.clock()
    outcomes = await running
    stop.set()
    await polling

    saturated = watch.first(burn_at, lambda s: s.load >= 0.9)
    during = [
        o for o in outcomes if saturated is not None and burn_at + saturated <= o.sent_s < burn_end
    ]
    auto_during = [o for o in during if o.route == "auto"]
    row = Row.of(
        "7 local CPU saturated",
        [o for o in outcomes if o.sent_s >= burn_at],
        saturated,
        requests_while_saturated=len(during),
        local_share_while_saturated=round(local_share(auto_during), 3),
        admission_limited_logged="local admission limited" in cluster.gateway.tail(200),
    )
    record(row, network.impairment, load)
    assert row.failed == 0, row
    assert saturated is not None, "the gateway never saw the local CPU saturated"
    assert len(during) >= 50, row
    assert row.details["admission_limited_logged"], row
    assert row.details["local_share_while_saturated"] < 0.5, row
    assert all(o.ok and o.tier == "local" for o in during if o.route == "local"), row
