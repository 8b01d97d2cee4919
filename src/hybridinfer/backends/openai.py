"""Remote models behind an OpenAI-compatible API (llama.cpp's server, vLLM, OpenAI itself).

Chat deployments take ``messages`` (plus optional generation parameters) and answer with the
assistant ``message``; embedding deployments take ``input`` (one text or a list) and answer with
one vector per text. ``infer_stream`` yields a chat answer piece by piece from the upstream's
server-sent events. A deployment labelled ``base-model`` is asked through ``/v1/completions``
with the prompt ``prompts.py`` writes from the messages, and its text comes back as the
assistant's message, streamed or not. ``measure`` times a tiny generation on an idle server:
the prober's latency prior of a deployment it has just seen. Every aiohttp, HTTP and JSON
failure becomes a ``hybridinfer.errors`` error.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import ssl
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import aiohttp
import orjson
from yarl import URL

from hybridinfer.backends.http import JSON_HEADERS, HttpBackend, json_object
from hybridinfer.backends.prompts import PROMPT_TASKS, CompletionPrompt, chat_prompt
from hybridinfer.core.chat import content_text
from hybridinfer.core.topology import BASE_MODEL_LABEL, Deployment, Node, PriorMeasurement
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
CHAT_ONLY_PARAMETERS = ("tools", "tool_choice", "response_format")
"""Chat inputs a base model cannot honour: asked for them, it refuses (the chain falls back)."""
BASE_MODEL_MAX_TOKENS = 256
"""A base model's answer length when the caller sets none (``/v1/completions`` would stop at
16 tokens; the stop sequences usually end the answer well before this)."""
TEXT_TASK_PARAMETERS = {"max_tokens": 200, "temperature": 0.0}
"""Generation settings of a composite plan's text step."""
PROBE_WARM_UP = {
    "messages": [{"role": "user", "content": "Say hello."}],
    "max_tokens": 1,
    "temperature": 0.0,
}
"""Untimed: a fresh server's first call pays one-time costs and a cold prompt cache."""
PROBE_TOKENS = 16
"""Tokens the prober's timed generation asks for: enough to time the decode rate."""
ANSWER_TOKENS = 64
"""The length of the short answer a latency prior stands for (a paragraph; the benchmark's
answers are 48 tokens): long enough that decode speed, where models differ most, counts."""
BURST_S = 0.0001
"""Tokens closer than this were read late (a busy client loop, a buffering proxy), not timed:
no model streams ten thousand tokens a second to one caller."""
IDLE_WAIT_S = 10.0
"""How long a measurement waits for the node's calls in flight to finish."""
PROBE_CHAT = {
    "messages": [{"role": "user", "content": "Write the days of the week."}],
    "max_tokens": PROBE_TOKENS,
    "temperature": 0.0,
}
"""The prober's timed generation: a new short prompt (its template prefix already cached, as
for a typical chat) whose answer runs past sixteen tokens on both demo models."""
PROBE_TEXT = "How long does one embedding take?"


def is_base_model(deployment: Deployment) -> bool:
    """A base model: asked with a completion prompt, not chat messages."""
    return BASE_MODEL_LABEL in deployment.labels


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

    def __init__(self, connections: int = 100, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(connections, tls)
        self._in_flight: dict[str, int] = {}
        """Calls in flight per node URL."""

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """Chat: ``message``, ``text``, ``finish_reason``, ``usage``; embedding: ``embeddings``."""
        if deployment.capability == "embedding":
            return await self._embed(node, deployment, inputs, timeout_s)
        task = PROMPT_TASKS.get(deployment.capability)
        if task is None:
            return await self._chat(node, deployment, inputs, timeout_s)
        # A text step of a composite plan, asked as a chat (or a completion, of a base model).
        if is_base_model(deployment):
            prompt = task.completion(inputs)
            answer = await self._chat(node, deployment, TEXT_TASK_PARAMETERS, timeout_s, prompt)
        else:
            chat = {**TEXT_TASK_PARAMETERS, "messages": task.messages(inputs)}
            answer = await self._chat(node, deployment, chat, timeout_s)
        return {task.output: answer["text"], "usage": answer["usage"]}

    async def _chat(
        self,
        node: Node,
        deployment: Deployment,
        inputs: Mapping[str, Any],
        timeout_s: float,
        prompt: CompletionPrompt | None = None,
    ) -> dict[str, Any]:
        path, body = self._generation_body(deployment, inputs, stream=False, prompt=prompt)
        payload = await self._post(node, path, body, timeout_s, deployment)
        try:
            choice = payload["choices"][0]
            if "text" in choice:  # a completion: the base model's continuation
                message = {"content": str(choice["text"] or "").strip()}
            else:
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
        path, body = self._generation_body(deployment, inputs, stream=True)
        url = f"{node.url}{path}"
        # aiohttp's own total timeout, not asyncio.timeout: a cancel scope must not span yields.
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        try:
            with self._serving(node):
                async with self._client().post(
                    url, data=body, headers=outgoing_headers(JSON_HEADERS), timeout=timeout
                ) as response:
                    if response.status >= 400:
                        raw = await response.read()
                        raise _status_error(deployment.model, response.status, raw)
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
        started = False  # a completion's first text: its leading space is the prompt's
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
                delta = dict(choice.get("delta") or {})
                if "text" in choice:  # a completion's piece, as a chat delta
                    text = str(choice["text"] or "")
                    text = text if started else text.lstrip()
                    delta = {} if not text else {"content": text}
                    if text and not started:
                        started, delta["role"] = True, "assistant"
                yield {
                    "delta": delta,
                    "finish_reason": choice.get("finish_reason"),
                    "usage": chunk.get("usage"),
                }
            except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError):
                raise UpstreamError(f"{model}: malformed stream event") from None
        raise UpstreamError(f"{model}: the stream ended without [DONE]", code="stream_interrupted")

    async def measure(
        self, node: Node, deployment: Deployment, timeout_s: float
    ) -> PriorMeasurement | None:
        """A new short chat on a warm, idle server: one one-token call, untimed, then one
        streamed answer of up to 16 tokens timed to its first token and per token after; the
        prior is a 64-token answer at those rates. A fresh server's first call pays one-time
        costs and a cold prompt cache, and the same prompt twice would time a fully cached
        prompt (``docs/models.md``). For an embedding deployment, one short text, timed whole.

        First waits (up to ``IDLE_WAIT_S``) for the node's calls in flight to finish: a server
        that answers one request at a time would make the probe wait its turn and time the
        queue. None if they do not."""
        if not await self._idle(node):
            return None
        started = time.perf_counter()
        if deployment.capability == "embedding":
            await self._embed(node, deployment, {"input": PROBE_TEXT}, timeout_s)
            elapsed_ms = (time.perf_counter() - started) * 1000.0
            return PriorMeasurement(elapsed_ms, elapsed_ms, None, 0, time.time())
        await self._chat(node, deployment, PROBE_WARM_UP, timeout_s)
        started = time.perf_counter()
        first = last = 0.0
        tokens = 0
        async for piece in self.infer_stream(node, deployment, PROBE_CHAT, timeout_s):
            if piece["delta"].get("content"):
                last = time.perf_counter()
                first = first or last
                tokens += 1
        if not tokens:
            raise UpstreamError(f"{deployment.model}: the probe's answer held no token")
        ttft_ms = (first - started) * 1000.0
        if tokens < 2:
            return PriorMeasurement(ttft_ms, ttft_ms, None, tokens, time.time())
        if last - first < (tokens - 1) * BURST_S:
            raise UpstreamError(f"{deployment.model}: the probe's tokens came in one burst")
        rate = (tokens - 1) / (last - first)
        answer_ms = ttft_ms + (ANSWER_TOKENS - 1) / rate * 1000.0
        return PriorMeasurement(answer_ms, ttft_ms, rate, tokens, time.time())

    async def _idle(self, node: Node) -> bool:
        """Whether the node's calls in flight finish within ``IDLE_WAIT_S``."""
        deadline = time.monotonic() + IDLE_WAIT_S
        while self._in_flight.get(node.url):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True

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
        payload = await self._post(node, "/v1/embeddings", body, timeout_s, deployment)
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
    def _generation_body(
        deployment: Deployment,
        inputs: Mapping[str, Any],
        stream: bool,
        prompt: CompletionPrompt | None = None,
    ) -> tuple[str, bytes]:
        """The path and body of one generation: a chat, or a base model's completion (of
        ``prompt`` when a text step wrote one, else of the messages)."""
        if prompt is None and not isinstance(inputs.get("messages"), list):
            raise InvalidInput(f"model {deployment.model} needs input 'messages'")
        body: dict[str, Any] = {"model": deployment.model}
        for name in GENERATION_PARAMETERS:
            if inputs.get(name) is not None:
                body[name] = inputs[name]
        body["stream"] = stream
        if not is_base_model(deployment):
            body["messages"] = [upstream_message(message) for message in inputs["messages"]]
            return "/v1/chat/completions", orjson.dumps(body)
        refused = [name for name in CHAT_ONLY_PARAMETERS if name in body]
        if refused:
            raise UpstreamRejected(
                f"{deployment.model} is a base model: it cannot honour {', '.join(refused)}"
            )
        prompt = prompt or chat_prompt(inputs["messages"])
        asked = body.get("stop")
        stop = [asked] if isinstance(asked, str) else list(asked or [])
        body |= {"prompt": prompt.prompt, "stop": [*prompt.stop, *stop]}
        body.setdefault("max_tokens", BASE_MODEL_MAX_TOKENS)
        return "/v1/completions", orjson.dumps(body)

    async def _post(
        self, node: Node, path: str, body: bytes, timeout_s: float, deployment: Deployment
    ) -> dict[str, Any]:
        with self._serving(node):
            status, raw = await self._send(f"{node.url}{path}", body, timeout_s, deployment.model)
        if status >= 400:
            raise _status_error(deployment.model, status, raw)
        return json_object(raw, status, deployment.model)

    @contextlib.contextmanager
    def _serving(self, node: Node) -> Iterator[None]:
        """Count the node's calls in flight (``measure`` waits for none)."""
        self._in_flight[node.url] = self._in_flight.get(node.url, 0) + 1
        try:
            yield
        finally:
            self._in_flight[node.url] -= 1
