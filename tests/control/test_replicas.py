"""A replica adopts the node registrations other replicas stored, once each (again when the
node registers anew), and refreshes its view of the shared ledger."""

from __future__ import annotations

import asyncio

from hybridinfer.control.replicas import ReplicaSync
from hybridinfer.core.schemas import DeploymentInfo, NodeRegistration
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.errors import CacheUnavailable
from hybridinfer.policy.document import BudgetPolicy
from hybridinfer.signals.budget import MemoryLedger
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store.sql import SqlStore


class CountingLedger(MemoryLedger):
    """Counts refreshes; ``fail`` makes the cache look away."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.refreshes = 0
        self.fail = fail

    async def refresh(self, policy: BudgetPolicy) -> None:
        self.refreshes += 1
        if self.fail:
            raise CacheUnavailable("redis down")


async def register(store: SqlStore, node_id: str, model: str = "small") -> None:
    registration = NodeRegistration(
        id=node_id,
        tier=Tier.EDGE,
        zone=Zone.PRIVATE,
        url=f"http://{node_id}:8001",
        deployments=[
            DeploymentInfo(
                model=model,
                version="1",
                capability="text-classification",
                quality=0.8,
                latency_ms=2.0,
            )
        ],
    )
    body = registration.model_dump_json().encode()
    await store.save_node(node_id, "edge", "private", registration.url, body)


def replica(store: SqlStore, ledger: CountingLedger) -> tuple[ReplicaSync, NodeRegistry]:
    registry = NodeRegistry()
    return ReplicaSync(store, registry, ledger, BudgetPolicy, interval_s=0.01), registry


async def test_stored_registrations_are_adopted_once_and_again_when_renewed(
    store: SqlStore,
) -> None:
    ledger = CountingLedger()
    sync, registry = replica(store, ledger)
    await register(store, "edge-1")
    await register(store, "edge-2")

    assert await sync.sync_once() == 2
    assert {node.id for node in registry.nodes()} == {"edge-1", "edge-2"}
    assert await sync.sync_once() == 0

    await asyncio.sleep(0.01)  # a later registered_at
    await register(store, "edge-1", model="medium")
    assert await sync.sync_once() == 1
    assert [d.model for d in registry.get("edge-1").deployments] == ["medium"]
    assert ledger.refreshes == 3


async def test_a_registration_that_does_not_validate_is_skipped(store: SqlStore) -> None:
    sync, registry = replica(store, CountingLedger())
    await store.save_node("broken", "edge", "private", "http://x", b'{"id": "broken"}')
    await register(store, "edge-1")

    assert await sync.sync_once() == 1
    assert [node.id for node in registry.nodes()] == ["edge-1"]


async def test_the_cache_being_away_does_not_stop_the_adoption(store: SqlStore) -> None:
    ledger = CountingLedger(fail=True)
    sync, registry = replica(store, ledger)
    await register(store, "edge-1")

    assert await sync.sync_once() == 1
    assert ledger.refreshes == 1
    assert registry.get("edge-1").url == "http://edge-1:8001"


async def test_the_background_loop_adopts_until_stopped(store: SqlStore) -> None:
    sync, registry = replica(store, CountingLedger())
    sync.start()
    try:
        await register(store, "edge-1")
        for _ in range(300):  # up to 3 s
            if registry.nodes():
                break
            await asyncio.sleep(0.01)
    finally:
        await sync.stop()
    assert [node.id for node in registry.nodes()] == ["edge-1"]
