"""``ControlPlane``: the start order is one list whose reverse is the stop order, and the
handlers' services are wired to the plane's own parts."""

from __future__ import annotations

import asyncio

from hybridinfer.control.localtier import INPROCESS_NODE_ID, LOCAL_NODE_ID
from hybridinfer.control.plane import ControlPlane
from hybridinfer.errors import NoCapacity
from hybridinfer.settings import Settings


def test_the_store_comes_first_and_workers_after_their_queue(settings: Settings) -> None:
    names = [part.name for part in ControlPlane(settings).lifecycle.parts]

    assert names[0] == "store"  # migrated first, closed last
    # policies calibrate thresholds on the local models: the nodes are registered before
    assert names.index("known nodes") < names.index("policies")
    assert names.index("trace sink") < names.index("job workers")
    assert names.index("queue") < names.index("job workers")
    assert "replica sync" not in names  # a SQLite store has no other replica


async def test_start_registers_the_local_tier_behind_the_node_service(settings: Settings) -> None:
    plane = ControlPlane(settings)
    assert await plane.start() is None  # the bootstrap key is configured: nothing generated
    try:
        described = {node["id"] for node in plane.services.nodes.describe_all()}
        assert {LOCAL_NODE_ID, INPROCESS_NODE_ID} <= described
        for _ in range(600):  # readiness waits for the name and difficulty models (threads)
            try:
                await plane.services.nodes.check_ready()
                break
            except NoCapacity as loading:
                if "still loading" not in loading.message:
                    raise
                await asyncio.sleep(0.1)
        await plane.services.nodes.check_ready()
        assert plane.services.pipeline is plane.pipeline
        assert plane.services.jobs is plane.jobs
    finally:
        await plane.stop()
