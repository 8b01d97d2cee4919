"""The node's HTTP API: the Open Inference Protocol (KServe V2) REST endpoints, with the
binary tensor data extension (``binarytensor.py``) as Triton's clients use it by default.

Errors follow the protocol: ``{"error": "<message>"}`` with 400 for a bad request and 404 for
an unknown model or version; a bad request never stops the node from serving.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import numpy.typing as npt
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer import __version__
from hybridinfer.errors import HybridInferError, InvalidInput, InvalidJSON
from hybridinfer.node.faults import FaultInjector
from hybridinfer.node.metrics import metrics
from hybridinfer.node.repository import ModelRepository
from hybridinfer.server.responses import JSON
from hybridinfer.tensors.binary import HEADER, from_binary, split_body, to_binary
from hybridinfer.tensors.datatypes import datatype_of, to_array, to_tensor

log = logging.getLogger(__name__)


class RequestTensor(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    shape: list[int]
    datatype: str
    parameters: dict[str, Any] | None = None
    data: Any = None


class RequestOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    parameters: dict[str, Any] | None = None


class InferenceRequest(BaseModel):
    """The V2 inference request body."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    parameters: dict[str, Any] | None = None
    inputs: list[RequestTensor] = Field(min_length=1)
    outputs: list[RequestOutput] | None = None


def v2_error(message: str, status: int) -> JSON:
    return JSON({"error": message}, status_code=status)


def _repository(request: Request) -> ModelRepository:
    repository: ModelRepository = request.app.state.repository
    return repository


async def live(request: Request) -> Response:
    return JSON({"live": True})


async def ready(request: Request) -> Response:
    """Ready when every configured model serves. While some cannot load, the answer says which
    and why, still 200 so the node keeps taking work for the others; 503 when none serves."""
    repository = _repository(request)
    if not repository.unavailable:
        return JSON({"ready": True})
    body = {"ready": False, "models_not_ready": repository.unavailable}
    return JSON(body, status_code=200 if repository.names() else 503)


async def server_metadata(request: Request) -> Response:
    return JSON(
        {
            "name": "hybridinfer-node",
            "version": __version__,
            "extensions": ["binary_tensor_data", "statistics", "model_repository"],
        }
    )


async def model_metadata(request: Request) -> Response:
    params = request.path_params
    return JSON(_repository(request).metadata(params["name"], params.get("version")))


async def repository_index(request: Request) -> Response:
    """Triton's model repository index: every version with its state (refusals included)."""
    return JSON(_repository(request).index())


async def model_ready(request: Request) -> Response:
    params = request.path_params
    repository = _repository(request)
    reason = repository.unavailable.get(params["name"])
    if reason is not None and params.get("version") is None:
        return JSON({"name": params["name"], "ready": False, "reason": reason}, status_code=503)
    model = repository.get(params["name"], params.get("version"))
    return JSON({"name": model.name, "ready": True})


async def model_statistics(request: Request) -> Response:
    params = request.path_params
    model = _repository(request).get(params["name"], params.get("version"))
    return JSON({"model_stats": [model.statistics()]})


def _parse(header: bytes) -> InferenceRequest:
    try:
        return InferenceRequest.model_validate(orjson.loads(header))
    except orjson.JSONDecodeError as exc:
        raise InvalidJSON(f"body is not valid JSON: {exc.msg}") from None
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidInput(f"invalid inference request: {where}: {first['msg']}") from None


def _inputs(body: InferenceRequest, binary: memoryview) -> dict[str, npt.NDArray[Any]]:
    """The request's tensors, from JSON data or their slice of the binary part."""
    arrays: dict[str, npt.NDArray[Any]] = {}
    offset = 0
    for tensor in body.inputs:
        size = (tensor.parameters or {}).get("binary_data_size")
        if size is None:
            if tensor.data is None:
                raise InvalidInput(f"input {tensor.name!r} has neither data nor binary data")
            arrays[tensor.name] = to_array(tensor.name, tensor.datatype, tensor.shape, tensor.data)
            continue
        if not isinstance(size, int) or size < 0 or offset + size > len(binary):
            raise InvalidInput(f"input {tensor.name!r}: binary_data_size {size!r} does not fit")
        raw = binary[offset : offset + size]
        offset += size
        arrays[tensor.name] = from_binary(tensor.name, tensor.datatype, tensor.shape, raw)
    if offset != len(binary):
        raise InvalidInput(f"{len(binary) - offset} bytes of binary data belong to no input")
    return arrays


def _wants_binary(body: InferenceRequest) -> dict[str, bool]:
    default = bool((body.parameters or {}).get("binary_data_output", False))
    wanted = {
        o.name: bool((o.parameters or {}).get("binary_data", default)) for o in body.outputs or []
    }
    return wanted or {"*": default}


def _respond(
    response: dict[str, Any], outputs: dict[str, npt.NDArray[Any]], binary: dict[str, bool]
) -> Response:
    tensors: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    for name, array in outputs.items():
        if binary.get(name, binary.get("*", False)):
            blob = to_binary(array)
            blobs.append(blob)
            tensors.append(
                {
                    "name": name,
                    "datatype": datatype_of(array),
                    "shape": list(array.shape),
                    "parameters": {"binary_data_size": len(blob)},
                }
            )
        else:
            tensors.append(to_tensor(name, array))
    response["outputs"] = tensors
    header = orjson.dumps(response)
    if not blobs:
        return Response(header, media_type="application/json")
    return Response(
        header + b"".join(blobs),
        media_type="application/octet-stream",
        headers={HEADER: str(len(header))},
    )


async def infer(request: Request) -> Response:
    repository = _repository(request)
    params = request.path_params
    model = repository.get(params["name"], params.get("version"))
    header, binary = split_body(await request.body(), request.headers.get(HEADER))
    body = _parse(header)
    outputs = await repository.infer(model, _inputs(body, binary))
    wanted = [o.name for o in body.outputs] if body.outputs else list(outputs)
    unknown = [name for name in wanted if name not in outputs]
    if unknown:
        raise InvalidInput(f"model {model.name} has no output {', '.join(unknown)}")
    response: dict[str, Any] = {"model_name": model.name, "model_version": model.version}
    if body.id is not None:
        response["id"] = body.id
    return _respond(response, {name: outputs[name] for name in wanted}, _wants_binary(body))


async def _gone(request: Request, exc: Exception) -> Response:
    """The caller went away before its body was read (a gateway gave up on a slow call):
    nobody to answer, and nothing went wrong here. Never a stack trace in the log."""
    log.info("caller went away before sending its body: %s", request.url.path)
    return Response(status_code=499)


async def _errors(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HybridInferError):
        status = exc.status_code if exc.status_code in (400, 404, 413, 422) else 500
        return v2_error(exc.message, 400 if status in (413, 422) else status)
    if isinstance(exc, HTTPException):
        return v2_error(str(exc.detail), exc.status_code)
    return v2_error("internal error", 500)


def create_node_app(
    repository: ModelRepository,
    background: Callable[[], AbstractAsyncContextManager[None]] | None = None,
    admin_token: str | None = None,
    node_id: str = "node",
    cache_dir: Path = Path("."),
) -> Starlette:
    """The V2 server; ``background`` (registration, heartbeats) runs for the app's lifetime.

    ``GET /metrics`` reports the disk use under ``cache_dir`` (node/metrics.py), unauthenticated
    like the V2 health endpoints.

    With ``admin_token`` (the node token), ``/admin/faults`` accepts fault-injection drills.
    """

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if background is None:
            yield
        else:
            async with background():
                yield
        await repository.aclose()

    prefix = "/v2/models/{name}"
    routes = [
        Route("/v2/health/live", live, methods=["GET"]),
        Route("/v2/health/ready", ready, methods=["GET"]),
        Route("/v2", server_metadata, methods=["GET"]),
        Route(prefix, model_metadata, methods=["GET"]),
        Route(prefix + "/versions/{version}", model_metadata, methods=["GET"]),
        Route(prefix + "/ready", model_ready, methods=["GET"]),
        Route(prefix + "/versions/{version}/ready", model_ready, methods=["GET"]),
        Route(prefix + "/stats", model_statistics, methods=["GET"]),
        Route(prefix + "/versions/{version}/stats", model_statistics, methods=["GET"]),
        Route("/v2/repository/index", repository_index, methods=["POST"]),
        Route(prefix + "/infer", infer, methods=["POST"]),
        Route(prefix + "/versions/{version}/infer", infer, methods=["POST"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(FaultInjector, token=admin_token)],
        exception_handlers={
            HybridInferError: _errors,
            HTTPException: _errors,
            ClientDisconnect: _gone,
            Exception: _errors,
        },
        lifespan=lifespan,
    )
    app.state.repository = repository
    app.state.node_id = node_id
    app.state.cache_dir = cache_dir
    return app
