"""Request bodies of the public API, as pydantic models (validated at the edge)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hybridinfer.core.plan import Privacy
from hybridinfer.core.topology import Tier, Zone

Prefer = Literal["balanced", "latency", "cost", "quality"]
"""What a request weighs most when it is scored (a policy sets the weights of each)."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InferOptions(_Body):
    privacy: Privacy | None = Field(None, description="Raise the data's privacy label.")
    max_latency_ms: float | None = Field(None, gt=0, description="Latency SLO for routing.")
    prefer: Prefer = "balanced"
    route: Literal["auto", "local", "edge", "cloud"] = "auto"
    timeout_ms: int | None = Field(None, gt=0, le=600_000, description="Deadline of the request.")
    priority: int = Field(0, ge=0, le=9, description="Higher goes first when a node is saturated.")
    hedge: bool | None = Field(
        None,
        description="Race a second deployment when the first is slow (default: when "
        "max_latency_ms is under the gateway's hedge threshold).",
    )
    model: str | None = Field(
        None, min_length=1, max_length=200, description="Pin this model (`auto`: router's choice)."
    )
    cache: Literal["auto", "off", "refresh", "reuse"] = Field(
        "auto",
        description="Answer reuse: auto (the policy's), off (neither read nor kept), refresh "
        "(not read, kept), reuse (also a chat at non-zero temperature).",
    )
    cache_scope: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9._-]{1,64}$",
        description="Reuse answers only within this scope (always under the key's tenant).",
    )


class InferRequest(_Body):
    """``POST /v1/infer`` (and ``POST /v1/tasks``)."""

    task: str = Field(min_length=1, max_length=200)
    inputs: dict[str, Any] = Field(default_factory=dict)
    options: InferOptions = Field(default_factory=InferOptions)


class TensorInfo(_Body):
    name: str
    datatype: str
    shape: list[int]


class DeploymentInfo(_Body):
    """What a node says about one model it serves."""

    model: str = Field(min_length=1, max_length=200)
    version: str = Field(min_length=1, max_length=64)
    capability: str
    task: str | None = None
    quality: float = Field(ge=0.0, le=1.0)
    latency_ms: float = Field(ge=0.0)
    labels: list[str] = Field(default_factory=list)
    inputs: list[TensorInfo] = Field(default_factory=list)
    outputs: list[TensorInfo] = Field(default_factory=list)
    cost_per_call: float = Field(0.0, ge=0.0)
    max_input: int = Field(100_000, gt=0)
    calibration: dict[str, Any] = Field(default_factory=dict)


class NodeRegistration(_Body):
    """``POST /v1/nodes``: a node announces itself and its deployments."""

    id: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._-]+$")
    tier: Tier
    zone: Zone
    url: str = Field(min_length=1, max_length=500)
    protocol: Literal["v2", "openai"] = Field(
        "v2", description="`v2` (Open Inference Protocol) or `openai` (OpenAI-compatible API)."
    )
    grpc_url: str | None = Field(
        None,
        max_length=500,
        pattern=r"^grpcs?://[^/]+$",
        description="`v2` only: the node's Open Inference Protocol gRPC endpoint "
        "(`grpc://host:port`, `grpcs://` with TLS); the gateway then calls it over gRPC.",
    )
    deployments: list[DeploymentInfo] = Field(default_factory=list)


class Heartbeat(_Body):
    """``POST /v1/nodes/{id}/heartbeat``."""

    load: float = Field(0.0, ge=0.0, description="CPU use of the host, 0..1 (per core summed/n).")
    in_flight: int = Field(0, ge=0, description="Requests being served.")
    queue_depth: int = Field(0, ge=0, description="Requests waiting in micro-batch queues.")
    memory: float = Field(0.0, ge=0.0, le=1.0, description="Memory use of the host, 0..1.")
    memory_bytes: int = Field(0, ge=0, description="Resident memory of the node process.")
    models_not_ready: dict[str, str] = Field(
        default_factory=dict,
        description="Models the node should serve but cannot load yet, with the reason.",
    )
