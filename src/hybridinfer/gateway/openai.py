"""The OpenAI-compatible API: thin handlers that translate OpenAI's shapes and call the one
pipeline (tasks ``chat`` and ``embed``), like ``/v1/infer`` does.

Errors keep the gateway's one envelope ``{"error": {"code", "message", "request_id"}}``; the
OpenAI client reads ``error.message`` from it. A stream that fails after its first token ends
with an explicit ``data: {"error": {...}}`` event and no ``data: [DONE]``, so no client can take
a cut answer for a whole one.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import struct
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from hybridinfer.control.nodes import ServedModel
from hybridinfer.errors import HybridInferError
from hybridinfer.execute.streaming import TokenStream
from hybridinfer.gateway.cachecontrol import CACHE_HEADER, cache_header, with_cache_control
from hybridinfer.gateway.openai_schemas import ChatCompletionRequest, EmbeddingRequest
from hybridinfer.gateway.replay import replay
from hybridinfer.gateway.routes import request_trace, requires
from hybridinfer.gateway.state import json_of, nodes_of, pipeline_of
from hybridinfer.server.responses import JSON, parse_body

log = logging.getLogger("hybridinfer.gateway")

TIER_HEADER = "X-Hybridinfer-Tier"
MODEL_HEADER = "X-Hybridinfer-Model"
OPENAI_CAPABILITIES = ("chat", "embedding")


def _placement(result: dict[str, Any]) -> dict[str, str]:
    subtask = result["subtasks"][0]
    return {TIER_HEADER: str(subtask["tier"]), MODEL_HEADER: str(subtask["model"])}


@requires("infer")
async def chat_completions(request: Request) -> Response:
    """``POST /v1/chat/completions``: plain JSON, or SSE chunks when ``stream`` is true."""
    body = parse_body(ChatCompletionRequest, await json_of(request))
    trace = request_trace(request)
    pipeline = pipeline_of(request)
    infer_request = with_cache_control(body.to_infer(), request)
    if body.stream:
        include_usage = body.stream_options is not None and body.stream_options.include_usage
        reused = await pipeline.reused(infer_request, trace)
        if reused is not None:  # a kept answer, replayed as the same events
            headers = _placement(reused) | cache_header(reused) | {"Cache-Control": "no-cache"}
            return StreamingResponse(
                replay(reused, include_usage), media_type="text/event-stream", headers=headers
            )
        stream = await pipeline.stream(infer_request, trace)
        return StreamingResponse(
            _sse(stream, trace.request_id, include_usage),
            media_type="text/event-stream",
            headers={
                TIER_HEADER: stream.node.tier.value,
                MODEL_HEADER: stream.deployment.model,
                "Cache-Control": "no-cache",
                CACHE_HEADER: "miss",
            },
        )
    result = await pipeline.infer(infer_request, trace)
    outputs = result["outputs"]
    completion = {
        "id": f"chatcmpl-{trace.request_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": result["subtasks"][0]["model"],
        "choices": [
            {
                "index": 0,
                "message": outputs["message"],
                "finish_reason": outputs["finish_reason"],
            }
        ],
        "usage": outputs.get("usage") or {},
    }
    return JSON(completion, headers=_placement(result) | cache_header(result))


async def _sse(stream: TokenStream, request_id: str, include_usage: bool) -> AsyncIterator[bytes]:
    """Upstream pieces as ``chat.completion.chunk`` events; an error event if it breaks off."""
    base = {
        "id": f"chatcmpl-{request_id}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": stream.deployment.model,
    }
    try:
        async with contextlib.aclosing(stream.__aiter__()) as pieces:
            async for piece in pieces:
                choice = {
                    "index": 0,
                    "delta": piece["delta"],
                    "finish_reason": piece["finish_reason"],
                }
                yield _event({**base, "choices": [choice]})
                if include_usage and piece.get("usage"):
                    yield _event({**base, "choices": [], "usage": piece["usage"]})
    except HybridInferError as error:
        yield _event({"error": _error_body(error, request_id)})
        return
    except Exception:  # never a silently truncated 200, even for our own bugs
        log.exception("stream failed", extra={"request_id": request_id})
        internal = HybridInferError("internal error mid-stream; see the server log")
        yield _event({"error": _error_body(internal, request_id)})
        return
    yield b"data: [DONE]\n\n"


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def _error_body(error: HybridInferError, request_id: str) -> dict[str, Any]:
    # ``type`` is what OpenAI clients show as the error kind; ``code`` stays ours.
    return {
        "code": error.error_code,
        "message": error.message,
        "request_id": request_id,
        "type": "upstream_error" if error.status_code >= 500 else "invalid_request_error",
    }


@requires("infer")
async def embeddings(request: Request) -> Response:
    """``POST /v1/embeddings``: one vector per input text."""
    body = parse_body(EmbeddingRequest, await json_of(request))
    infer_request = with_cache_control(body.to_infer(), request)
    result = await pipeline_of(request).infer(infer_request, request_trace(request))
    vectors: list[list[float]] = result["outputs"]["embeddings"]
    data = [
        {"object": "embedding", "index": index, "embedding": _encode(vector, body.encoding_format)}
        for index, vector in enumerate(vectors)
    ]
    usage = result["outputs"].get("usage") or {}
    response = {
        "object": "list",
        "data": data,
        "model": result["subtasks"][0]["model"],
        "usage": {
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "total_tokens": usage.get("total_tokens", 0),
        },
    }
    return JSON(response, headers=_placement(result) | cache_header(result))


def _encode(vector: list[float], encoding_format: str) -> list[float] | str:
    if encoding_format == "base64":  # little-endian float32, as OpenAI sends it
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
    return vector


@requires("infer")
async def list_models(request: Request) -> Response:
    """``GET /v1/models``: ``auto`` plus every chat and embedding model a node serves."""
    served = nodes_of(request).served_models(OPENAI_CAPABILITIES)
    auto = {"id": "auto", "object": "model", "created": 0, "owned_by": "hybridinfer"}
    return JSON({"object": "list", "data": [auto, *map(_model_entry, served)]})


def _model_entry(served: ServedModel) -> dict[str, Any]:
    """One model in OpenAI's shape, with our ``capability`` and ``tiers`` beside it."""
    return {
        "id": served.model,
        "object": "model",
        "created": 0,
        "owned_by": "hybridinfer",
        "capability": served.capability,
        "tiers": served.tiers,
    }


OPENAI_ROUTES = [
    Route("/v1/chat/completions", chat_completions, methods=["POST"]),
    Route("/v1/embeddings", embeddings, methods=["POST"]),
    Route("/v1/models", list_models, methods=["GET"]),
]
