"""The node use cases behind ``/v1/nodes``, ``/readyz`` and ``GET /v1/models``.

Registration is one use case, not four steps a handler strings together: the registry takes
the node, the store keeps the registration (other replicas and restarts adopt it, see
``replicas.py``), the audit log records before and after, and the reply tells the node how
often to beat. Each method here is what one handler calls.

Readiness can also wait for named nodes (``expect``): ``hybridinfer up`` names the nodes it
starts itself, so ``/readyz`` answers 200 only once its cloud node has registered. It is a
start-up gate, not a health check: once an expected node has been ready, its later outages
do not make the gateway unready (the local tier still answers, and the supervisor restarts
the node), as a readiness probe that failed on them would take the whole gateway out of a
load balancer for the loss of one tier.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import orjson

from hybridinfer.control.audit import AuditLog
from hybridinfer.core.schemas import Heartbeat, NodeRegistration
from hybridinfer.core.topology import NodeStatus
from hybridinfer.errors import NoCapacity
from hybridinfer.signals.breaker import Breakers
from hybridinfer.signals.ejection import Ejections
from hybridinfer.signals.registry import NodeRegistry, node_from_registration
from hybridinfer.store.sql import SqlStore


@dataclass(slots=True)
class ServedModel:
    """One model some node serves, with every tier that serves it."""

    model: str
    capability: str
    tiers: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one capability is served: a model on a node of a tier."""

    capability: str
    tier: str
    node: str
    model: str


class NodeService:
    """Registers nodes, takes their heartbeats, and describes what is registered."""

    def __init__(
        self,
        *,
        registry: NodeRegistry,
        store: SqlStore,
        audit: AuditLog,
        breakers: Breakers,
        heartbeat_interval_s: float,
        clock: Callable[[], float] = time.time,
        loading: Callable[[], str | None] = lambda: None,
        ejections: Ejections | None = None,
    ) -> None:
        """``loading`` names a model the process still loads before it may serve (the name
        model the privacy gate reads with), or None."""
        self._loading = loading
        self._registry = registry
        self._store = store
        self._audit = audit
        self._breakers = breakers
        self._ejections = ejections
        self._heartbeat_interval_s = heartbeat_interval_s
        self._clock = clock
        self._awaited: set[str] = set()

    def expect(self, node_ids: Collection[str]) -> None:
        """Readiness also waits until each of ``node_ids`` has registered and been ready once."""
        self._awaited = set(node_ids)

    def awaited(self) -> list[str]:
        """The expected nodes that have not been ready yet, sorted."""
        if self._awaited:
            ready = {n.id for n in self._registry.nodes() if n.status is NodeStatus.READY}
            self._awaited -= ready
        return sorted(self._awaited)

    async def register(self, registration: NodeRegistration, actor: str) -> dict[str, Any]:
        """Add (or replace) the node, persist and audit its registration; the reply body."""
        node = node_from_registration(registration)
        before = next((n.describe() for n in self._registry.nodes() if n.id == node.id), None)
        self._registry.add(node)
        await self._store.save_node(
            node.id,
            node.tier.value,
            node.zone.value,
            node.url,
            orjson.dumps(registration.model_dump(mode="json")),
        )
        await self._audit.record(actor, "node.register", node.id, before, node.describe())
        return {
            "id": node.id,
            "heartbeat_interval_s": self._heartbeat_interval_s,
            "registered_at": self._clock(),
        }

    def heartbeat(self, node_id: str, beat: Heartbeat) -> dict[str, Any]:
        """Record the load a node reports; its id and status (404 for an unknown node)."""
        node = self._registry.heartbeat(
            node_id,
            beat.load,
            beat.in_flight,
            queue_depth=beat.queue_depth,
            memory=beat.memory,
            memory_bytes=beat.memory_bytes,
            models_not_ready=beat.models_not_ready,
        )
        return {"id": node.id, "status": node.status.value}

    def describe_all(self) -> list[dict[str, Any]]:
        """Every node, each deployment with its circuit breaker's and outlier ejection's state
        merged in."""
        nodes = [node.describe() for node in self._registry.nodes()]
        for node in nodes:
            for deployment in node["deployments"]:
                deployment.update(self._breakers.describe(deployment["id"]))
                if self._ejections is not None:
                    deployment.update(self._ejections.describe(deployment["id"]))
        return nodes

    async def check_ready(self) -> None:
        """Raise 503 ``not_ready`` unless the store answers, every expected node has been
        ready (``expect``) and some node is ready."""
        if not await self._store.ping():
            raise NoCapacity("the store is unreachable", code="not_ready")
        loading = self._loading()
        if loading is not None:
            raise NoCapacity(f"still loading {loading}", code="not_ready")
        awaited = self.awaited()
        if awaited:
            raise NoCapacity(
                f"waiting for node(s) {', '.join(awaited)} to register", code="not_ready"
            )
        if not self._registry.any_ready():
            raise NoCapacity("no node is ready", code="not_ready")

    def served_models(self, capabilities: Collection[str]) -> list[ServedModel]:
        """Each model with one of ``capabilities``, once, in registration order."""
        seen: dict[str, ServedModel] = {}
        for node in self._registry.nodes():
            for deployment in node.deployments:
                if deployment.capability not in capabilities:
                    continue
                served = seen.setdefault(
                    deployment.model, ServedModel(deployment.model, deployment.capability)
                )
                if node.tier.value not in served.tiers:
                    served.tiers.append(node.tier.value)
        return list(seen.values())

    def placements(self) -> list[Placement]:
        """Every capability each ready node serves, once per node and model, in registration
        order."""
        found: dict[Placement, None] = {}
        for node in self._registry.nodes():
            if node.status is NodeStatus.READY:
                for deployment in node.deployments:
                    place = Placement(
                        deployment.capability, node.tier.value, node.id, deployment.model
                    )
                    found[place] = None
        return list(found)
