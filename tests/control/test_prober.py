from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from hybridinfer.backends.base import Backend
from hybridinfer.control.prober import NodeProber, update_rtt
from hybridinfer.core.topology import Deployment, Node, NodeStatus
from tests.fakes import hybrid_registry


class SlowOrDead(Backend):
    """Answers probes after ``delay_s``, or not at all when ``alive`` is False."""

    protocol = "v2"

    def __init__(self) -> None:
        self.delay_s = 0.0
        self.alive = True

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def probe(self, node: Node, timeout_s: float) -> bool:
        await asyncio.sleep(self.delay_s)
        return self.alive


def test_rtt_attacks_fast_and_decays_slowly() -> None:
    assert update_rtt(0.0, 5.0) == 5.0
    assert update_rtt(5.0, 250.0) == 250.0  # one slow probe is enough to see a slow link
    assert update_rtt(250.0, 2.0) == 126.0  # recovery is trusted step by step
    assert update_rtt(126.0, 2.0) == 64.0


async def test_probes_measure_rtt_and_mark_dead_nodes_down() -> None:
    registry = hybrid_registry()
    backend = SlowOrDead()
    prober = NodeProber(registry, {"v2": backend}, interval_s=0.05)
    backend.delay_s = 0.06
    await prober.probe_all()
    cloud = registry.get("cloud-1")
    assert 55.0 <= cloud.rtt_ms < 500.0
    assert cloud.status is NodeStatus.READY
    backend.alive = False
    await prober.probe_all()
    assert cloud.status is NodeStatus.DOWN
    assert registry.get("local").status is NodeStatus.READY  # in-process nodes are not probed
    backend.alive = True
    backend.delay_s = 0.0
    await prober.probe_all()
    assert cloud.status is NodeStatus.READY
    assert cloud.rtt_ms < 55.0
