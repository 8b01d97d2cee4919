"""What one replica learns from the others, through the shared store and cache.

A node registers with whichever replica the load balancer picks; the registration is stored,
and every replica adopts stored registrations it has not seen (then probes the node itself,
so health and RTT are each replica's own measurement). Spend counters of the shared ledger
are re-read, so the budget signals that routing sees stay close to the truth. Only runs when
the store is shared (not SQLite, which one process owns).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from hybridinfer.core import background
from hybridinfer.core.schemas import NodeRegistration
from hybridinfer.errors import CacheUnavailable, HybridInferError, StoreUnavailable
from hybridinfer.policy.document import BudgetPolicy
from hybridinfer.signals.budget import Ledger
from hybridinfer.signals.registry import NodeRegistry, node_from_registration
from hybridinfer.store.sql import SqlStore

log = logging.getLogger(__name__)


class ReplicaSync:
    """Every ``interval_s``: adopt new node registrations, refresh the ledger's view."""

    def __init__(
        self,
        store: SqlStore,
        registry: NodeRegistry,
        ledger: Ledger,
        budget: Callable[[], BudgetPolicy],
        interval_s: float,
    ) -> None:
        self._store = store
        self._registry = registry
        self._ledger = ledger
        self._budget = budget
        self._interval_s = interval_s
        self._seen: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="replica-sync")

    async def stop(self) -> None:
        await background.cancel(self._task)
        self._task = None

    async def sync_once(self) -> int:
        """Adopt registrations newer than what this replica knows; how many were adopted."""
        adopted = 0
        for record in await self._store.list_nodes():
            if self._seen.get(record["id"], -1.0) >= record["registered_at"]:
                continue
            self._seen[record["id"]] = record["registered_at"]
            try:
                registration = NodeRegistration.model_validate_json(record["registration"])
            except ValueError:
                log.warning("stored registration of node %s does not validate", record["id"])
                continue
            self._registry.add(node_from_registration(registration))
            adopted += 1
        with contextlib.suppress(CacheUnavailable):
            await self._ledger.refresh(self._budget())
        return adopted

    async def _run(self) -> None:
        while True:
            try:
                await self.sync_once()
            except StoreUnavailable as exc:
                log.warning("replica sync: %s", exc.message)
            except HybridInferError as exc:
                log.error("replica sync: %s", exc.message)
            await asyncio.sleep(self._interval_s)
