"""The tfserving backend against a fake TF Serving speaking the documented REST shapes
(row-format ``instances`` in, ``predictions`` out, ``{"error"}`` with 4xx/5xx)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hybridinfer.backends.tfserving import TFServingBackend
from hybridinfer.core.topology import Deployment, Node, TensorSpec, Tier, Zone
from hybridinfer.errors import UpstreamError, UpstreamRejected, UpstreamUnavailable
from tests.peers import free_port, serve_asgi

SEEN: list[tuple[str, dict[str, Any]]] = []


async def predict(request: Request) -> Response:
    body = orjson.loads(await request.body())
    SEEN.append((request.url.path, body))
    target = request.path_params["target"]
    if not target.endswith(":predict"):
        return JSONResponse({"error": "Malformed request"}, status_code=400)
    name = target.split("/")[0].removesuffix(":predict")
    if name == "broken":
        return JSONResponse({"error": "Servable crashed"}, status_code=500)
    if name not in ("single", "multi"):
        return JSONResponse({"error": f"Servable not found for request: Latest({name})"}, 404)
    rows = body["instances"]
    if name == "single":
        return JSONResponse({"predictions": [[0.1, 0.7, 0.2] for _ in rows]})
    return JSONResponse(
        {"predictions": [{"classes": 1, "probabilities": [0.2, 0.5, 0.3]} for _ in rows]}
    )


@pytest.fixture(scope="module")
def tfserving() -> Iterator[str]:
    app = Starlette(routes=[Route("/v1/models/{target:path}", predict, methods=["POST"])])
    with serve_asgi(app) as url:
        yield url


def deployment(model: str, version: str = "3", output: str = "probabilities") -> Deployment:
    return Deployment(
        node_id="tf",
        model=model,
        version=version,
        capability="text-classification",
        task="sentiment",
        quality=0.8,
        latency_ms=5.0,
        labels=["negative", "neutral", "positive"],
        inputs=[TensorSpec("text", "BYTES", [-1, 1])],
        outputs=[TensorSpec(output, "FP32", [-1, 3])],
    )


def node(url: str) -> Node:
    return Node(id="tf", tier=Tier.CLOUD, zone=Zone.PUBLIC, url=url, protocol="tfserving")


async def test_single_output_row_format(tfserving: str) -> None:
    backend = TFServingBackend()
    try:
        answer = await backend.infer(
            node(tfserving), deployment("single", output="scores"), {"text": "hi"}, 5.0
        )
    finally:
        await backend.aclose()
    assert answer["label"] == "neutral"
    assert answer["confidence"] == pytest.approx(0.7)
    path, body = SEEN[-1]
    assert path == "/v1/models/single/versions/3:predict"
    assert body == {"instances": [["hi"]]}


async def test_named_outputs_and_unversioned_url(tfserving: str) -> None:
    backend = TFServingBackend()
    try:
        answer = await backend.infer(
            node(tfserving), deployment("multi", version="latest"), {"text": "hi"}, 5.0
        )
    finally:
        await backend.aclose()
    assert answer["label"] == "neutral"
    assert answer["confidence"] == pytest.approx(0.5)
    assert SEEN[-1][0] == "/v1/models/multi:predict"


@pytest.mark.parametrize(
    ("model", "error"), [("missing", UpstreamRejected), ("broken", UpstreamError)]
)
async def test_errors_are_mapped(tfserving: str, model: str, error: type[Exception]) -> None:
    backend = TFServingBackend()
    try:
        with pytest.raises(error):
            await backend.infer(node(tfserving), deployment(model), {"text": "hi"}, 5.0)
    finally:
        await backend.aclose()


async def test_unreachable_server_is_unavailable() -> None:
    backend = TFServingBackend()
    try:
        with pytest.raises(UpstreamUnavailable):
            await backend.infer(
                node(f"http://127.0.0.1:{free_port()}"), deployment("single"), {"text": "x"}, 2.0
            )
    finally:
        await backend.aclose()
