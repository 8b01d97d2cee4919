"""The control plane's view of every node and deployment, with heartbeat ageing."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from hybridinfer.core.schemas import DeploymentInfo, NodeRegistration
from hybridinfer.core.topology import (
    QUALITY_MEASURED_LABEL,
    Deployment,
    Node,
    NodeStatus,
    PriorSource,
    TensorSpec,
)
from hybridinfer.errors import NotFound

Clock = Callable[[], float]


class NodeRegistry:
    """Nodes by id; a remote node is down once it has missed ``missed_heartbeats`` beats.

    ``version`` moves with every change made through it (a node added, removed, marked down
    or alive, a heartbeat): what the router's decision snapshots are checked against.
    """

    def __init__(
        self,
        heartbeat_interval_s: float = 10.0,
        missed_heartbeats: int = 3,
        clock: Clock = time.monotonic,
    ) -> None:
        self._nodes: dict[str, Node] = {}
        self._index: dict[tuple[str, str | None], list[tuple[Node, Deployment]]] = {}
        self._timeout_s = heartbeat_interval_s * missed_heartbeats
        self._clock = clock
        self.version = 0

    def now(self) -> float:
        """The heartbeats' clock."""
        return self._clock()

    def add(self, node: Node) -> None:
        """Register a node, or replace it (re-registration after a restart)."""
        if node.last_heartbeat == 0.0 and node.protocol != "onnx":
            node.last_heartbeat = self._clock()
        node.status = NodeStatus.READY
        self._nodes[node.id] = node
        self._reindex()
        self.version += 1

    def remove(self, node_id: str) -> None:
        self._nodes.pop(node_id, None)
        self._reindex()
        self.version += 1

    def get(self, node_id: str) -> Node:
        node = self._nodes.get(node_id)
        if node is None:
            raise NotFound(f"unknown node {node_id!r}", code="unknown_node")
        return node

    def mark_alive(self, node_id: str) -> None:
        """A probe answered: the node is ready, its reported load stays as it was."""
        node = self.get(node_id)
        node.last_heartbeat = self._clock()
        node.status = NodeStatus.READY
        self.version += 1

    def mark_down(self, node: Node) -> None:
        """A probe went unanswered: the node is down until it answers again."""
        node.status = NodeStatus.DOWN
        self.version += 1

    def heartbeat(
        self,
        node_id: str,
        load: float,
        in_flight: int,
        queue_depth: int = 0,
        memory: float = 0.0,
        memory_bytes: int = 0,
        models_not_ready: dict[str, str] | None = None,
    ) -> Node:
        """Record a heartbeat and the load it reports; the node is ready again."""
        node = self.get(node_id)
        node.models_not_ready = dict(models_not_ready or {})
        node.last_heartbeat = self._clock()
        node.load = load
        node.in_flight = in_flight
        node.queue_depth = queue_depth
        node.memory = memory
        node.memory_bytes = memory_bytes
        node.status = NodeStatus.READY
        self.version += 1
        return node

    def nodes(self) -> list[Node]:
        self.refresh()
        return list(self._nodes.values())

    def refresh(self) -> None:
        """Mark nodes down whose heartbeats stopped."""
        now = self._clock()
        for node in self._nodes.values():
            stale = node.last_heartbeat > 0.0 and now - node.last_heartbeat > self._timeout_s
            if stale and node.status is not NodeStatus.DOWN:
                node.status = NodeStatus.DOWN
                self.version += 1

    def ages_at(self, nodes: Iterable[Node]) -> float:
        """The earliest moment (this clock) one of ``nodes`` that is ready now would be marked
        down by its heartbeats stopping (infinity for none)."""
        ages = [
            node.last_heartbeat + self._timeout_s
            for node in nodes
            if node.last_heartbeat > 0.0 and node.status is NodeStatus.READY
        ]
        return min(ages, default=float("inf"))

    def candidates(self, capability: str, task: str | None) -> list[tuple[Node, Deployment]]:
        """Every deployment able to run ``capability`` (for ``task``), healthy or not."""
        self.refresh()
        return self._index.get((capability, task), [])

    def any_ready(self) -> bool:
        self.refresh()
        return any(node.status is NodeStatus.READY for node in self._nodes.values())

    def _reindex(self) -> None:
        index: dict[tuple[str, str | None], list[tuple[Node, Deployment]]] = {}
        for node in self._nodes.values():
            for deployment in node.deployments:
                index.setdefault((deployment.capability, deployment.task), []).append(
                    (node, deployment)
                )
                if deployment.task is not None:
                    index.setdefault((deployment.capability, None), []).append((node, deployment))
        self._index = index


def prior_sources(info: DeploymentInfo) -> tuple[PriorSource, PriorSource]:
    """Where a registration's (latency, quality) figures come from.

    A model card's deployment carries the card's calibration block, computed on a held-out
    split when the model was built: its accuracy and p50 are the card's measurements. Any other
    figure was typed in, unless the registration labels its quality ``quality-measured``; its
    latency stays assumed until the prober measures it.
    """
    if info.calibration:
        return PriorSource.CARD, PriorSource.CARD
    quality = PriorSource.MEASURED if QUALITY_MEASURED_LABEL in info.labels else PriorSource.ASSUMED
    return PriorSource.ASSUMED, quality


def deployment_from_info(node_id: str, info: DeploymentInfo) -> Deployment:
    latency_source, quality_source = prior_sources(info)
    return Deployment(
        node_id=node_id,
        model=info.model,
        version=info.version,
        capability=info.capability,
        task=info.task,
        quality=info.quality,
        latency_ms=info.latency_ms,
        labels=list(info.labels),
        inputs=[TensorSpec(t.name, t.datatype, list(t.shape)) for t in info.inputs],
        outputs=[TensorSpec(t.name, t.datatype, list(t.shape)) for t in info.outputs],
        cost_per_call=info.cost_per_call,
        max_input=info.max_input,
        calibration=dict(info.calibration),
        latency_source=latency_source,
        quality_source=quality_source,
    )


def node_from_registration(registration: NodeRegistration) -> Node:
    return Node(
        id=registration.id,
        tier=registration.tier,
        zone=registration.zone,
        url=registration.url.rstrip("/"),
        protocol=registration.protocol,
        deployments=[deployment_from_info(registration.id, d) for d in registration.deployments],
        grpc_url=registration.grpc_url,
    )
