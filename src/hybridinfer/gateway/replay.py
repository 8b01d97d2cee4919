"""A streamed chat whose answer was reused: the kept message replayed as the same
``chat.completion.chunk`` events a live stream sends (role and text, then the finish reason,
the usage when asked for, then ``data: [DONE]``)."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson

PIECE = re.compile(r"\S+\s*|\s+")
"""A word and the spaces after it: the replay's pieces, about a live stream's tokens."""


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


async def replay(result: dict[str, Any], include_usage: bool) -> AsyncIterator[bytes]:
    """The SSE body of a reused chat answer (``result``: the ``/v1/infer`` body)."""
    outputs = result["outputs"]
    message = outputs.get("message") or {}
    base = {
        "id": f"chatcmpl-{result['request_id']}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": result["subtasks"][0]["model"],
    }
    pieces = PIECE.findall(str(message.get("content") or "")) or [""]
    for index, piece in enumerate(pieces):
        delta: dict[str, Any] = {"content": piece}
        if index == 0:
            delta["role"] = message.get("role", "assistant")
        choice = {"index": 0, "delta": delta, "finish_reason": None}
        yield _event({**base, "choices": [choice]})
    finish = {"index": 0, "delta": {}, "finish_reason": outputs.get("finish_reason", "stop")}
    yield _event({**base, "choices": [finish]})
    if include_usage and outputs.get("usage"):
        yield _event({**base, "choices": [], "usage": outputs["usage"]})
    yield b"data: [DONE]\n\n"
