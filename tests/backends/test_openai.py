"""The openai backend against a fake OpenAI-compatible server: every failure maps to ours."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from hybridinfer.backends.openai import OpenAIBackend
from hybridinfer.backends.prompts import CHAT_EXAMPLES
from hybridinfer.core.topology import BASE_MODEL_LABEL, Deployment, Node, Tier, Zone
from hybridinfer.errors import (
    DeadlineExceeded,
    HybridInferError,
    UpstreamError,
    UpstreamRejected,
    UpstreamUnavailable,
)

STATE = web.AppKey("state", dict[str, str])
COMPLETIONS = web.AppKey("completions", list[dict[str, Any]])
MESSAGES = {"messages": [{"role": "user", "content": "hi"}]}


def chunk(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    body = json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    return f"data: {body}\n\n".encode()


async def chat(request: web.Request) -> web.StreamResponse:
    mode = request.app[STATE]["mode"]
    if mode == "slow":
        await asyncio.sleep(1)
    if mode in {"400", "500"}:
        return web.json_response({"error": {"message": f"boom {mode}"}}, status=int(mode))
    if mode == "not-json":
        return web.Response(text="<html>oops</html>", status=200)
    body = await request.json()
    if not body.get("stream"):
        return web.json_response(
            {
                "choices": [
                    {"message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}
                ],
                "usage": {"completion_tokens": 1},
            }
        )
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(chunk("hel"))
    await response.write(chunk("lo"))
    if mode == "cut":
        return response  # ends without [DONE]
    await response.write(chunk(finish="stop"))
    await response.write(b"data: [DONE]\n\n")
    return response


def piece(text: str, finish: str | None = None) -> bytes:
    body = json.dumps({"choices": [{"index": 0, "text": text, "finish_reason": finish}]})
    return f"data: {body}\n\n".encode()


async def completions(request: web.Request) -> web.StreamResponse:
    """A base model's endpoint: continues the prompt with " Paris." (a leading space, as a
    tokenizer writes the word after "Answer:")."""
    body = await request.json()
    request.app[COMPLETIONS].append(body)
    if not body.get("stream"):
        choice = {"index": 0, "text": " Paris.\n", "finish_reason": "stop"}
        return web.json_response({"choices": [choice], "usage": {"completion_tokens": 2}})
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for text in (" ", " Paris", "."):
        await response.write(piece(text))
    await response.write(piece("", finish="stop"))
    await response.write(b"data: [DONE]\n\n")
    return response


async def embeddings(request: web.Request) -> web.Response:
    per_token = [[1.0, 0.0], [0.0, 1.0]]
    return web.json_response({"data": [{"index": 0, "embedding": per_token}], "usage": {}})


@pytest.fixture
async def upstream(unused_tcp_port: int) -> AsyncIterator[tuple[web.Application, Node]]:
    app = web.Application()
    app[STATE] = {"mode": "ok"}
    app[COMPLETIONS] = []
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/embeddings", embeddings)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", unused_tcp_port).start()
    yield app, node(f"http://127.0.0.1:{unused_tcp_port}")
    await runner.cleanup()


def node(url: str) -> Node:
    return Node("up", Tier.CLOUD, Zone.PUBLIC, url, "openai")


def deployment(capability: str = "chat", labels: tuple[str, ...] = ()) -> Deployment:
    return Deployment("up", "m", "1", capability, None, 0.5, 10.0, labels=list(labels))


def base_model(capability: str = "chat") -> Deployment:
    return deployment(capability, labels=(BASE_MODEL_LABEL,))


@pytest.fixture
async def backend() -> AsyncIterator[OpenAIBackend]:
    backend = OpenAIBackend()
    yield backend
    await backend.aclose()


async def test_plain_chat_and_stream(backend: OpenAIBackend, upstream: Any) -> None:
    _, target = upstream
    answer = await backend.infer(target, deployment(), MESSAGES, 5)
    assert answer["text"] == "hello"
    assert answer["finish_reason"] == "stop"
    pieces = [p async for p in backend.infer_stream(target, deployment(), MESSAGES, 5)]
    assert "".join(p["delta"].get("content", "") for p in pieces) == "hello"
    assert pieces[-1]["finish_reason"] == "stop"


async def test_embeddings_are_mean_pooled_and_normalised(
    backend: OpenAIBackend, upstream: Any
) -> None:
    _, target = upstream
    result = await backend.infer(target, deployment("embedding"), {"input": "x"}, 5)
    [vector] = result["embeddings"]
    assert vector == pytest.approx([0.7071, 0.7071], abs=1e-3)


@pytest.mark.parametrize(
    ("mode", "error", "code"),
    [
        ("400", UpstreamRejected, "upstream_rejected"),
        ("500", UpstreamError, "upstream_failed"),
        ("not-json", UpstreamError, "upstream_failed"),
        ("slow", DeadlineExceeded, "deadline_exceeded"),
    ],
)
async def test_failures_map_to_our_errors(
    backend: OpenAIBackend, upstream: Any, mode: str, error: type[HybridInferError], code: str
) -> None:
    app, target = upstream
    app[STATE]["mode"] = mode
    with pytest.raises(error) as caught:
        await backend.infer(target, deployment(), MESSAGES, 0.5)
    assert caught.value.error_code == code
    if mode != "not-json":
        with pytest.raises(error):
            async for _ in backend.infer_stream(target, deployment(), MESSAGES, 0.5):
                pass


async def test_refused_connection_is_unavailable(
    backend: OpenAIBackend, unused_tcp_port: int
) -> None:
    with pytest.raises(UpstreamUnavailable):
        await backend.infer(node(f"http://127.0.0.1:{unused_tcp_port}"), deployment(), MESSAGES, 1)
    with pytest.raises(UpstreamUnavailable):
        async for _ in backend.infer_stream(
            node(f"http://127.0.0.1:{unused_tcp_port}"), deployment(), MESSAGES, 1
        ):
            pass
    assert not await backend.probe(node(f"http://127.0.0.1:{unused_tcp_port}"))


async def test_a_stream_cut_before_done_is_an_error_not_an_end(
    backend: OpenAIBackend, upstream: Any
) -> None:
    app, target = upstream
    app[STATE]["mode"] = "cut"
    seen: list[str] = []

    async def read_all() -> None:
        async for piece in backend.infer_stream(target, deployment(), MESSAGES, 5):
            seen.append(piece["delta"].get("content", ""))

    with pytest.raises(UpstreamError) as caught:
        await read_all()
    assert seen == ["hel", "lo"]
    assert caught.value.error_code == "stream_interrupted"


async def test_a_base_model_is_asked_a_completion_and_answers_as_a_chat(
    backend: OpenAIBackend, upstream: Any
) -> None:
    app, target = upstream
    chat = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "What is the capital of France?"}],
            },
        ],
        "stop": "###",
        "temperature": 0.0,
    }
    answer = await backend.infer(target, base_model(), chat, 5)
    assert answer["message"] == {"role": "assistant", "content": "Paris."}
    assert (answer["text"], answer["finish_reason"]) == ("Paris.", "stop")
    [sent] = app[COMPLETIONS]
    assert "messages" not in sent
    assert sent["prompt"] == (
        f"Be brief.\n\n{CHAT_EXAMPLES}Question: What is the capital of France?\nAnswer:"
    )
    assert sent["stop"] == ["\n\n", "\nQuestion:", "###"]  # the format's, then the caller's
    assert (sent["max_tokens"], sent["temperature"], sent["stream"]) == (256, 0.0, False)


async def test_a_base_model_streams_its_completion_as_chat_deltas(
    backend: OpenAIBackend, upstream: Any
) -> None:
    app, target = upstream
    chat = {**MESSAGES, "max_tokens": 12}
    pieces = [p async for p in backend.infer_stream(target, base_model(), chat, 5)]
    contents = [p["delta"] for p in pieces]
    assert contents == [{}, {"role": "assistant", "content": "Paris"}, {"content": "."}, {}]
    assert pieces[-1]["finish_reason"] == "stop"
    assert app[COMPLETIONS][0]["stream"] is True
    assert app[COMPLETIONS][0]["max_tokens"] == 12


async def test_a_base_model_refuses_tools_so_the_chain_can_fall_back(
    backend: OpenAIBackend, upstream: Any
) -> None:
    app, target = upstream
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    with pytest.raises(UpstreamRejected, match="base model: it cannot honour tools"):
        await backend.infer(target, base_model(), {**MESSAGES, "tools": tools}, 5)
    assert app[COMPLETIONS] == []


async def test_a_base_model_serves_a_text_step_with_its_completion_prompt(
    backend: OpenAIBackend, upstream: Any
) -> None:
    app, target = upstream
    answer = await backend.infer(target, base_model("captioning"), {"label": "0"}, 5)
    assert answer["caption"] == "Paris."
    [sent] = app[COMPLETIONS]
    assert sent["prompt"].endswith("Digit: 0\nCaption:")
    assert (sent["stop"], sent["max_tokens"]) == (["\n"], 200)


async def test_a_cookie_an_upstream_sets_is_not_sent_with_the_next_request(
    backend: OpenAIBackend, unused_tcp_port: int
) -> None:
    seen: list[str | None] = []

    async def answer(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Cookie"))
        response = web.json_response(
            {"choices": [{"message": {"role": "assistant", "content": "hi"}}], "usage": {}}
        )
        response.set_cookie("session", "caller-one")  # as a CDN in front of a cloud API does
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", unused_tcp_port).start()
    # A host name: aiohttp's cookie jar keeps no cookie of a bare IP address anyway.
    target = node(f"http://localhost:{unused_tcp_port}")
    for _ in range(2):
        assert (await backend.infer(target, deployment(), MESSAGES, 5))["text"] == "hi"
    await runner.cleanup()
    assert seen == [None, None]
