"""A minimal OpenAI-style upstream: answers every chat completion with the same tiny reply.

The gateway-overhead bench calls it directly, through hybridinfer and through LiteLLM's proxy,
so it must cost next to nothing and be the same for all three: a bare ``asyncio.Protocol`` over
HTTP/1.1 keep-alive (no framework, no JSON parsing of the request), one pre-built response.

    python -m bench.upstream --port 9100

Serves ``POST /v1/chat/completions`` (fixed completion), ``GET /v1/models`` and ``GET /health``;
anything else is a 404. Request bodies must carry ``Content-Length`` (every client here does).
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
            del self.buffer[:total]
            method, _, rest = head.partition(b" ")
            path = rest.partition(b" ")[0].partition(b"?")[0]
            self.transport.write(RESPONSES.get((method, path), NOT_FOUND))
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
