"""Where models run: nodes (places) and deployments (one model version on one node)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Tier(StrEnum):
    LOCAL = "local"
    EDGE = "edge"
    CLOUD = "cloud"


class Zone(StrEnum):
    PRIVATE = "private"
    PUBLIC = "public"


class NodeStatus(StrEnum):
    READY = "ready"
    DOWN = "down"


@dataclass(slots=True)
class TensorSpec:
    """One model input or output as the Open Inference Protocol describes it."""

    name: str
    datatype: str
    shape: list[int]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}


@dataclass(slots=True)
class Deployment:
    """One model version served by one node, with what the router needs to know of it."""

    node_id: str
    model: str
    version: str
    capability: str
    task: str | None
    quality: float
    """Expected quality on its task (held-out accuracy from the model card), 0..1."""
    latency_ms: float
    """Prior latency from the model card, until real calls are observed."""
    labels: list[str] = field(default_factory=list)
    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)
    cost_per_call: float = 0.0
    max_input: int = 100_000
    calibration: dict[str, Any] = field(default_factory=dict)
    id: str = field(init=False, default="")
    """``node/model:version``; computed once (the router reads it on every decision)."""

    def __post_init__(self) -> None:
        self.id = f"{self.node_id}/{self.model}:{self.version}"

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "model": self.model,
            "version": self.version,
            "capability": self.capability,
            "task": self.task,
            "quality": self.quality,
            "latency_ms": self.latency_ms,
            "cost_per_call": self.cost_per_call,
            "max_input": self.max_input,
        }


@dataclass(slots=True)
class Node:
    """A place that runs models."""

    id: str
    tier: Tier
    zone: Zone
    url: str
    protocol: str
    deployments: list[Deployment] = field(default_factory=list)
    status: NodeStatus = NodeStatus.READY
    load: float = 0.0
    in_flight: int = 0
    queue_depth: int = 0
    """Requests waiting in the node's micro-batch queues (last heartbeat)."""
    memory: float = 0.0
    """Host memory in use, 0..1 (last heartbeat)."""
    memory_bytes: int = 0
    """Resident memory of the node process (last heartbeat)."""
    rtt_ms: float = 0.0
    models_not_ready: dict[str, str] = field(default_factory=dict)
    """Models the node should serve but cannot load yet, with why (last heartbeat)."""
    last_heartbeat: float = 0.0
    """Monotonic time of the last heartbeat (0 for in-process nodes, which never miss one)."""

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tier": self.tier.value,
            "zone": self.zone.value,
            "url": self.url,
            "protocol": self.protocol,
            "status": self.status.value,
            "load": self.load,
            "in_flight": self.in_flight,
            "queue_depth": self.queue_depth,
            "memory": self.memory,
            "memory_bytes": self.memory_bytes,
            "rtt_ms": self.rtt_ms,
            "models_not_ready": self.models_not_ready,
            "deployments": [deployment.describe() for deployment in self.deployments],
        }
