"""A reused chat answer replayed as ``chat.completion.chunk`` events."""

from __future__ import annotations

import asyncio

import orjson

from hybridinfer.gateway.replay import replay


def test_the_kept_message_comes_back_as_pieces_then_done() -> None:
    result = {
        "request_id": "r2",
        "outputs": {
            "message": {"role": "assistant", "content": "Four, of course."},
            "finish_reason": "stop",
            "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
        },
        "subtasks": [{"model": "smollm2-135m"}],
    }

    async def collect() -> list[bytes]:
        return [event async for event in replay(result, include_usage=True)]

    events = asyncio.run(collect())
    assert events[-1] == b"data: [DONE]\n\n"
    chunks = [orjson.loads(e.removeprefix(b"data: ")) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "Four, of course."
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert len([c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]) == 3
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["total_tokens"] == 9
    assert {c["id"] for c in chunks} == {"chatcmpl-r2"}
