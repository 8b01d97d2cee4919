"""Remote models behind an OpenAI-compatible API (llama.cpp's server, vLLM, OpenAI itself).

Chat deployments take ``messages`` (plus optional generation parameters) and answer with the
assistant ``message``; embedding deployments take ``input`` (one text or a list) and answer with
one vector per text. ``infer_stream`` yields a chat answer piece by piece from the upstream's
server-sent events. Every aiohttp, HTTP and JSON failure becomes a ``hybridinfer.errors`` error.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import orjson
from yarl import URL

from hybridinfer.backends.http import JSON_HEADERS, HttpBackend, json_object
from hybridinfer.backends.prompts import PROMPT_TASKS
from hybridinfer.core.chat import content_text
from hybridinfer.core.topology import Deployment, Node
from hybridinfer.core.tracecontext import outgoing_headers
from hybridinfer.errors import (
    DeadlineExceeded,
    HybridInferError,
    InvalidInput,
    UpstreamError,
    UpstreamRejected,
    UpstreamUnavailable,
)

GENERATION_PARAMETERS = (
    "max_tokens", "temperature", "top_p", "stop", "seed", "presence_penalty",
    "frequency_penalty", "tools", "tool_choice", "response_format",
)  # fmt: skip
"""Chat inputs passed through to the upstream besides ``messages``."""


def upstream_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message as every OpenAI-compatible server reads it: text parts joined into one
    string (chat templates of local servers print a list as it is), null content as ``""``."""
    sent = dict(message)
    if not isinstance(sent.get("content"), str):
        sent["content"] = content_text(sent.get("content"))
    return sent


def _status_error(model: str, status: int, raw: bytes) -> HybridInferError:
    """4xx → UpstreamRejected, 5xx (and anything else) → UpstreamError, with its message."""
    message: Any = None
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        message = message or payload.get("detail")
    text = str(message or raw[:200].decode("utf-8", "replace") or "no error message")
    kind = UpstreamRejected if 400 <= status < 500 else UpstreamError
    return kind(f"{model}: HTTP {status}: {text[:300]}", upstream_status=status)


def _mean_pool(vectors: list[list[float]]) -> list[float]:
    """One vector for a text whose upstream returned one per token (a model without pooling)."""
    width = len(vectors[0])
    pooled = [sum(row[i] for row in vectors) / len(vectors) for i in range(width)]
    norm = math.sqrt(sum(value * value for value in pooled)) or 1.0
    return [value / norm for value in pooled]


def _embedding(item: Any, model: str) -> list[float]:
    vector = item.get("embedding") if isinstance(item, dict) else None
    if isinstance(vector, list) and vector and isinstance(vector[0], list):
        return _mean_pool(vector)
    if isinstance(vector, list) and vector and all(isinstance(v, int | float) for v in vector):
        return [float(v) for v in vector]
    raise UpstreamError(f"{model}: embeddings response holds no vector")


class OpenAIBackend(HttpBackend):
    """One pooled HTTP client for every OpenAI-compatible node."""

    protocol = "openai"

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """Chat: ``message``, ``text``, ``finish_reason``, ``usage``; embedding: ``embeddings``."""
        if deployment.capability == "embedding":
            return await self._embed(node, deployment, inputs, timeout_s)
        prompt = PROMPT_TASKS.get(deployment.capability)
        if prompt is not None:  # a text step of a composite plan, asked as a chat
            chat = {"messages": prompt.messages(inputs), "max_tokens": 200, "temperature": 0.0}
            answer = await self._chat(node, deployment, chat, timeout_s)
            return {prompt.output: answer["text"], "usage": answer["usage"]}
        return await self._chat(node, deployment, inputs, timeout_s)

    async def _chat(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        body = self._chat_body(deployment, inputs, stream=False)
        payload = await self._post(f"{node.url}/v1/chat/completions", body, timeout_s, deployment)
        try:
            choice = payload["choices"][0]
            message = choice["message"]
            text = message.get("content") or ""
            answer: dict[str, Any] = {"role": "assistant", "content": text}
            if message.get("tool_calls"):
                answer["tool_calls"] = list(message["tool_calls"])
        except (KeyError, IndexError, TypeError, AttributeError):
            raise UpstreamError(f"{deployment.model}: malformed chat completion") from None
        return {
            "message": answer,
            "text": text,
            "finish_reason": choice.get("finish_reason") or "stop",
            "usage": payload.get("usage") or {},
        }

    async def infer_stream(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> AsyncIterator[dict[str, Any]]:
        """Chat pieces ``{"delta": {...}, "finish_reason": ...}`` as the upstream sends them.

        The stream must end with ``data: [DONE]``; an upstream that goes away before that raises
        ``UpstreamError`` (``stream_interrupted``), so a cut answer is never taken for a whole one.
        """
        body = self._chat_body(deployment, inputs, stream=True)
        url = f"{node.url}/v1/chat/completions"
        # aiohttp's own total timeout, not asyncio.timeout: a cancel scope must not span yields.
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        try:
            async with self._client().post(
                url, data=body, headers=outgoing_headers(JSON_HEADERS), timeout=timeout
            ) as response:
                if response.status >= 400:
                    raise _status_error(deployment.model, response.status, await response.read())
                async for piece in self._events(response, deployment.model):
                    yield piece
        except TimeoutError:
            raise DeadlineExceeded(
                f"{deployment.model} did not finish within the deadline"
            ) from None
        except aiohttp.ClientPayloadError as exc:
            raise UpstreamError(
                f"{deployment.model}: the stream broke off ({exc})", code="stream_interrupted"
            ) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise UpstreamUnavailable(f"{deployment.model}: {type(exc).__name__}: {exc}") from None

    @staticmethod
    async def _events(
        response: aiohttp.ClientResponse, model: str
    ) -> AsyncIterator[dict[str, Any]]:
        async for raw_line in response.content:
            line = raw_line.strip()
            if not line.startswith(b"data:"):
                continue  # blank separators, comments (": ping") and event names
            data = line[5:].strip()
            if data == b"[DONE]":
                return
            try:
                chunk = orjson.loads(data)
                if isinstance(chunk, dict) and "error" in chunk:
                    raise _status_error(model, 502, data)
                choice = chunk["choices"][0] if chunk.get("choices") else {}
                yield {
                    "delta": dict(choice.get("delta") or {}),
                    "finish_reason": choice.get("finish_reason"),
                    "usage": chunk.get("usage"),
                }
            except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError):
                raise UpstreamError(f"{model}: malformed stream event") from None
        raise UpstreamError(f"{model}: the stream ended without [DONE]", code="stream_interrupted")

    async def probe(self, node: Node, timeout_s: float = 2.0) -> bool:
        """Whether the node accepts a TCP connection (refused, unreachable or timed out: not).

        Not ``GET /v1/models``: llama.cpp's server answers one request at a time, so an HTTP
        probe waits behind a generation and its time would measure the queue, not the network
        (the prober reads this call's duration as RTT). The kernel accepts connections even
        while the server is busy, so a connect is both a liveness check and a true RTT.
        """
        url = URL(node.url)
        if url.host is None:
            return False
        try:
            async with asyncio.timeout(timeout_s):
                _, writer = await asyncio.open_connection(url.host, url.port)
        except (TimeoutError, OSError):
            return False
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return True

    async def _embed(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        texts = inputs.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts:
            raise InvalidInput(f"model {deployment.model} needs input 'input' (text or texts)")
        body = orjson.dumps({"model": deployment.model, "input": texts})
        payload = await self._post(f"{node.url}/v1/embeddings", body, timeout_s, deployment)
        data = payload.get("data")
        if not isinstance(data, list) or len(data) != len(texts):
            raise UpstreamError(f"{deployment.model}: expected {len(texts)} embeddings")
        ordered = sorted(
            data, key=lambda item: item.get("index", 0) if isinstance(item, dict) else 0
        )
        return {
            "embeddings": [_embedding(item, deployment.model) for item in ordered],
            "usage": payload.get("usage") or {},
        }

    @staticmethod
    def _chat_body(deployment: Deployment, inputs: Mapping[str, Any], stream: bool) -> bytes:
        if not isinstance(inputs.get("messages"), list):
            raise InvalidInput(f"model {deployment.model} needs input 'messages'")
        messages = [upstream_message(message) for message in inputs["messages"]]
        body: dict[str, Any] = {"model": deployment.model, "messages": messages}
        for name in GENERATION_PARAMETERS:
            if inputs.get(name) is not None:
                body[name] = inputs[name]
        body["stream"] = stream
        return orjson.dumps(body)

    async def _post(
        self, url: str, body: bytes, timeout_s: float, deployment: Deployment
    ) -> dict[str, Any]:
        status, raw = await self._send(url, body, timeout_s, deployment.model)
        if status >= 400:
            raise _status_error(deployment.model, status, raw)
        return json_object(raw, status, deployment.model)
