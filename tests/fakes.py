"""Hand-made topology and backends for unit tests (integration tests use the real thing)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from hybridinfer.backends.base import Backend
from hybridinfer.core.topology import Deployment, Node, TensorSpec, Tier, Zone
from hybridinfer.errors import HybridInferError, UpstreamUnavailable
from hybridinfer.signals.registry import NodeRegistry


def deployment(
    node_id: str,
    model: str,
    *,
    quality: float,
    latency_ms: float,
    cost: float = 0.0,
    task: str = "sentiment",
    max_input: int = 100_000,
) -> Deployment:
    return Deployment(
        node_id=node_id,
        model=model,
        version="1",
        capability="text-classification",
        task=task,
        quality=quality,
        latency_ms=latency_ms,
        labels=["negative", "neutral", "positive"],
        inputs=[TensorSpec("text", "BYTES", [-1, 1])],
        outputs=[TensorSpec("probabilities", "FP32", [-1, 3])],
        cost_per_call=cost,
        max_input=max_input,
    )


def node(node_id: str, tier: Tier, zone: Zone, *deployments: Deployment) -> Node:
    protocol = "onnx" if tier is Tier.LOCAL else "v2"
    return Node(
        id=node_id,
        tier=tier,
        zone=zone,
        url=f"http://{node_id}",
        protocol=protocol,
        deployments=list(deployments),
    )


def hybrid_registry() -> NodeRegistry:
    """A local small model, a private edge model and a public cloud large model."""
    registry = NodeRegistry(heartbeat_interval_s=10.0)
    registry.add(
        node(
            "local",
            Tier.LOCAL,
            Zone.PRIVATE,
            deployment("local", "small", quality=0.75, latency_ms=0.3),
        )
    )
    registry.add(
        node(
            "edge-1",
            Tier.EDGE,
            Zone.PRIVATE,
            deployment("edge-1", "medium", quality=0.76, latency_ms=3.0),
        )
    )
    registry.add(
        node(
            "cloud-1",
            Tier.CLOUD,
            Zone.PUBLIC,
            deployment("cloud-1", "large", quality=0.78, latency_ms=8.0, cost=0.0002),
        )
    )
    return registry


class ScriptedBackend(Backend):
    """Answers from a script per node id: a confidence, or an error to raise."""

    protocol = "fake"

    def __init__(self, script: Mapping[str, float | HybridInferError]) -> None:
        self.script = dict(script)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        self.calls.append((node.id, dict(inputs)))
        outcome = self.script.get(node.id, UpstreamUnavailable(f"{node.id} is not scripted"))
        if isinstance(outcome, HybridInferError):
            raise outcome
        return {"label": f"from-{node.id}", "confidence": outcome, "scores": {}}


Outcome = float | HybridInferError | tuple[float, float]
"""A confidence, an error to raise, or (seconds to take, confidence)."""


class SequenceBackend(Backend):
    """Answers each node's calls from its own list of outcomes, in order (the last repeats)."""

    protocol = "fake"

    def __init__(self, script: Mapping[str, list[Outcome]]) -> None:
        self.script = {node_id: list(outcomes) for node_id, outcomes in script.items()}
        self.calls: list[str] = []
        self.cancelled: list[str] = []

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        self.calls.append(node.id)
        outcomes = self.script.get(node.id) or [UpstreamUnavailable(f"{node.id} is not scripted")]
        outcome = outcomes.pop(0) if len(outcomes) > 1 else outcomes[0]
        if isinstance(outcome, HybridInferError):
            raise outcome
        confidence = outcome
        if isinstance(outcome, tuple):
            seconds, confidence = outcome
            try:
                await asyncio.sleep(seconds)
            except asyncio.CancelledError:
                self.cancelled.append(node.id)
                raise
        return {"label": f"from-{node.id}", "confidence": confidence, "scores": {}}


def recording_node(seen: list[dict[str, str]], failures: int = 0) -> Starlette:
    """A V2 node that answers a three-class probability and keeps each call's headers; its
    first ``failures`` calls answer 503."""

    async def ready(request: Request) -> JSONResponse:
        return JSONResponse({})

    async def infer(request: Request) -> JSONResponse:
        seen.append(dict(request.headers))
        if len(seen) <= failures:
            return JSONResponse({"error": "warming up"}, status_code=503)
        output: dict[str, Any] = {
            "name": "probabilities",
            "datatype": "FP32",
            "shape": [1, 3],
            "data": [0.1, 0.2, 0.7],
        }
        return JSONResponse({"model_name": request.path_params["model"], "outputs": [output]})

    return Starlette(
        routes=[
            Route("/v2/health/ready", ready),
            Route("/v2/models/{model}/versions/{version}/infer", infer, methods=["POST"]),
        ]
    )
