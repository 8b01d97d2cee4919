"""Where models run: nodes (places) and deployments (one model version on one node).

A deployment's latency and quality priors each carry where they came from (``PriorSource``):
typed in by whoever registered it, read from the model card the build measured, or measured
here by the prober at registration. ``/v1/nodes`` shows the source beside every figure, so an
assumption is never read as a measurement.
"""

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


class PriorSource(StrEnum):
    """Where a deployment's latency or quality figure comes from."""

    ASSUMED = "assumed"
    """Set by hand (a registration's or a config's number): nobody measured it."""
    CARD = "card"
    """The model card's: held-out accuracy and p50 latency, measured when the model was built."""
    MEASURED = "measured"
    """Measured by this gateway (the prober's probe at registration)."""


BASE_MODEL_LABEL = "base-model"
"""A deployment label: a base (not instruction-tuned) model, prompted as a completion."""
QUALITY_MEASURED_LABEL = "quality-measured"
"""A deployment label: its registration's quality figure was measured (an evaluation run)."""


@dataclass(frozen=True, slots=True)
class PriorMeasurement:
    """One probe of a deployment: a whole answer's time, time to first token, decode speed."""

    answer_ms: float
    """A short answer's time (64 tokens: the TTFT, then 63 at the measured rate), the network
    included: the kind of time the EWMA of real calls tracks (``signals/ewma.py``), so it is
    the latency prior. For an embedding, the one call."""
    ttft_ms: float
    """Request sent to first content token (the whole call for an embedding)."""
    tokens_per_s: float | None
    """Tokens after the first per second of decoding (None: one token or an embedding)."""
    tokens: int
    measured_at: float
    """Unix time of the probe."""

    def describe(self) -> dict[str, Any]:
        rate = None if self.tokens_per_s is None else round(self.tokens_per_s, 2)
        return {
            "answer_ms": round(self.answer_ms, 2),
            "ttft_ms": round(self.ttft_ms, 2),
            "tokens_per_s": rate,
            "tokens": self.tokens,
            "measured_at": self.measured_at,
        }


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
    """Expected quality on its task (held-out accuracy from the model card), 0..1;
    ``quality_source`` says whether anyone measured it."""
    latency_ms: float
    """Prior latency (the model card's, typed, or the prober's: ``latency_source``), until
    real calls are observed."""
    labels: list[str] = field(default_factory=list)
    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)
    cost_per_call: float = 0.0
    max_input: int = 100_000
    calibration: dict[str, Any] = field(default_factory=dict)
    latency_source: PriorSource = PriorSource.ASSUMED
    quality_source: PriorSource = PriorSource.ASSUMED
    measurement: PriorMeasurement | None = None
    """The prober's probe, once it ran (``latency_ms`` is then its answer less the RTT)."""
    id: str = field(init=False, default="")
    """``node/model:version``; computed once (the router reads it on every decision)."""

    def __post_init__(self) -> None:
        self.id = f"{self.node_id}/{self.model}:{self.version}"

    def record_measurement(self, measurement: PriorMeasurement, rtt_ms: float = 0.0) -> None:
        """Take a probe's short answer as the latency prior (the EWMA of real calls then tracks
        the same kind of time). The router adds the node's RTT to the prior, so the RTT the
        probe paid is taken out here rather than counted twice."""
        self.measurement = measurement
        self.latency_ms = max(measurement.answer_ms - rtt_ms, 0.0)
        self.latency_source = PriorSource.MEASURED

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "id": self.id,
            "model": self.model,
            "version": self.version,
            "capability": self.capability,
            "task": self.task,
            "quality": self.quality,
            "quality_source": self.quality_source.value,
            "latency_ms": self.latency_ms,
            "latency_source": self.latency_source.value,
            "cost_per_call": self.cost_per_call,
            "max_input": self.max_input,
        }
        if self.labels:
            described["labels"] = list(self.labels)
        if self.measurement is not None:
            described["measurement"] = self.measurement.describe()
        return described


@dataclass(slots=True)
class Node:
    """A place that runs models."""

    id: str
    tier: Tier
    zone: Zone
    url: str
    protocol: str
    deployments: list[Deployment] = field(default_factory=list)
    grpc_url: str | None = None
    """The node's V2 gRPC endpoint (``grpc://`` or ``grpcs://host:port``), when it serves one:
    the V2 backend then calls it rather than ``url``."""
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
            "grpc_url": self.grpc_url,
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
