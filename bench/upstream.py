"""A minimal OpenAI-style upstream: answers every chat completion with the same tiny reply.

The gateway-overhead bench calls it directly, through hybridinfer and through LiteLLM's proxy,
so it must cost next to nothing and be the same for all three: a bare ``asyncio.Protocol`` over
HTTP/1.1 keep-alive (no framework; only embedding requests are parsed), pre-built responses.

    python -m bench.upstream --port 9100

Serves ``POST /v1/chat/completions`` (fixed completion; streamed as server-sent events when the
body asks ``"stream": true``), ``POST /v1/embeddings`` (a fixed vector per input),
``GET /v1/models`` and ``GET /health``; anything else is a 404. Request bodies must carry
``Content-Length`` (every client here does).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal

MODEL = "bench-chat"
COMPLETION = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1700000000,
    "model": MODEL,
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "ok"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 8, "completion_tokens": 1, "total_tokens": 9},
}
USAGE = {"prompt_tokens": 8, "total_tokens": 8}
MODELS = {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "bench"}]}


def http_response(status: str, payload: object) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


RESPONSES = {
    (b"POST", b"/v1/chat/completions"): http_response("200 OK", COMPLETION),
    (b"POST", b"/chat/completions"): http_response("200 OK", COMPLETION),
    (b"GET", b"/v1/models"): http_response("200 OK", MODELS),
    (b"GET", b"/health"): http_response("200 OK", {"status": "ok"}),
}
NOT_FOUND = http_response("404 Not Found", {"error": {"message": "not found"}})
EMBEDDING = {"object": "embedding", "embedding": [0.125, -0.25, 0.5, 0.0625]}


def chunk(delta: dict[str, str], finish_reason: str | None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    payload = {**COMPLETION, "object": "chat.completion.chunk", "choices": [choice]}
    del payload["usage"]
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


STREAM_BODY = (
    chunk({"role": "assistant", "content": "ok"}, None) + chunk({}, "stop") + b"data: [DONE]\n\n"
)
STREAM = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    b"Content-Length: %d\r\nConnection: keep-alive\r\n\r\n" % len(STREAM_BODY)
) + STREAM_BODY


def embeddings(body: bytes) -> bytes:
    """One fixed vector per input (a string, or a list of them); 400 for anything else."""
    try:
        inputs = json.loads(body)["input"]
    except (ValueError, KeyError, TypeError):
        return http_response("400 Bad Request", {"error": {"message": "no input"}})
    count = len(inputs) if isinstance(inputs, list) else 1
    data = [{**EMBEDDING, "index": index} for index in range(count)]
    answer = {"object": "list", "model": MODEL, "data": data, "usage": USAGE}
    return http_response("200 OK", answer)


def answer(method: bytes, path: bytes, body: bytes) -> bytes:
    """The response to one request; only bodies that change the answer are parsed."""
    if method == b"POST" and path.endswith(b"/embeddings"):
        return embeddings(body)
    streamed = b'"stream":true' in body.replace(b" ", b"")
    if method == b"POST" and path.endswith(b"/chat/completions") and streamed:
        return STREAM
    return RESPONSES.get((method, path), NOT_FOUND)


def content_length(head: bytes) -> int:
    """The request's ``Content-Length`` (0 when absent)."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


class UpstreamProtocol(asyncio.Protocol):
    """One keep-alive connection: parse request heads, skip bodies, write the fixed answer."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while self.transport is not None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end])
            total = end + 4 + content_length(head)
            if len(self.buffer) < total:
                return
            body = bytes(self.buffer[end + 4 : total])
            del self.buffer[:total]
            method, _, rest = head.partition(b" ")
            path = rest.partition(b" ")[0].partition(b"?")[0]
            self.transport.write(answer(method, path, body))
            if b"connection: close" in head.lower():
                self.transport.close()
                return

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(UpstreamProtocol, host, port, backlog=1024)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
