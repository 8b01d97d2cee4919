"""What a refused request costs next to an answered one (issue 18, build point 3).

``POST /v1/infer`` for the local sentiment model, a real key and a real body, several ways in
turn, in blocks of ``BLOCK`` requests, measured twice: ``asgi``, the gateway's ASGI app driven
directly in the bench's process (what the gateway itself decides), and ``http``, the same apps
served in the bench's process by the gateway's own uvicorn protocol (``server/serving.py``,
httptools) on loopback to a blocking-socket client in a process of its own, one request at a
time on one keep-alive connection per server (so the server's parse and write are in, and the
client's work is not: the figure is what the gateway spends):

- ``answered``: the gateway has room; the request runs the whole path (auth, rate limit,
  request id, access log, body, privacy scan, decompose, route, execute, trace, metrics);
- ``shed``: every slot is held and nobody may wait (``shed_max_queued`` 0), so the request is
  refused 503 ``overloaded`` with ``Retry-After`` and the JSON error body by the outermost
  step of the app, the shedder of the front door;
- ``shed_early`` (``http`` only): the same refusal as the gateway serves it, by the server's
  protocol before the request becomes an ASGI task (``server/serving.py``, ``refuse_now``);
- ``shed_inner``: the same refusal by the middleware stack as it was before the shedder moved
  outermost (request id, access log and error envelope ran first), rebuilt here from the same
  classes so both figures come from one run;
- ``floor`` (``http`` only): an ASGI app that answers every request with a fixed 503 and
  nothing else, on the same server: what the server costs by itself for an ASGI answer.

CPU per request is ``time.process_time`` of the bench's process over a block (every thread)
divided by the block; wall time per request is reported beside it. Over ``http`` a block is one
line to the client and one back, which the process's figure includes (under a microsecond a
request). The gateway's background work
(trace writes of the answered, probes, samplers) lands in whichever block runs meanwhile, so a
refusal block carries some of it: the refusal figures are upper bounds. Every refusal is
checked: status 503, a ``Retry-After`` header, an ``X-Request-ID`` header and the error
envelope with code ``overloaded``. Writes bench/results/shed_cost.json.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bench.harness import REPO, free_port, write_result
from bench.inprocess import KEY, run_in_process, started_plane
from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.app import SERVICE_ROUTES, create_app
from hybridinfer.gateway.bodytimeout import BodyTimeoutMiddleware
from hybridinfer.gateway.middleware import (
    AccessLogMiddleware,
    AuthMiddleware,
    ErrorMiddleware,
    RateLimitMiddleware,
    RequestIdMiddleware,
)
from hybridinfer.server.serving import guarded_protocol, server_config
from hybridinfer.server.shedding import GatewayLoad, LoadShedder, Refusal

BLOCKS = 40
BLOCK = 250
BODY = orjson.dumps(
    {
        "task": "sentiment",
        "inputs": {"text": "the update broke my phone and support never answered"},
    }
)


def inner_stack(plane: ControlPlane) -> Starlette:
    """The middleware order before the shedder moved outermost."""
    return Starlette(
        routes=SERVICE_ROUTES,
        middleware=[
            Middleware(RequestIdMiddleware),
            Middleware(AccessLogMiddleware),
            Middleware(ErrorMiddleware),
            Middleware(LoadShedder, load=plane.gateway_load),
            Middleware(BodyTimeoutMiddleware, timeout_s=plane.settings.body_timeout_s),
            Middleware(AuthMiddleware, keys=plane.keys),
            Middleware(RateLimitMiddleware, limiter=plane.rate_limiter),
        ],
    )


async def call(
    app: ASGIApp, index: int, path: str = "/v1/infer", body: bytes = BODY
) -> tuple[int, dict[bytes, bytes], bytes]:
    """One POST of ``body`` to ``path`` through ``app``, as a served request arrives."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"authorization", f"Bearer {KEY}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"x-request-id", f"bench-{index}".encode()),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
    }
    sent: list[Message] = []
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if delivered:
            await asyncio.sleep(3600)
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = sent[0]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return int(start["status"]), dict(start["headers"]), body


def request_bytes(index: int) -> bytes:
    head = (
        "POST /v1/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(BODY)}\r\nX-Request-ID: bench-{index}\r\n\r\n"
    )
    return head.encode() + BODY


def parse_head(head: bytes) -> tuple[int, dict[bytes, bytes]]:
    """The status and the headers (names lowercased) of a response's head."""
    lines = head.split(b"\r\n")
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers


class HttpClient:
    """One keep-alive connection; one request at a time."""

    def __init__(self, port: int) -> None:
        self._port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __call__(self, index: int) -> tuple[int, dict[bytes, bytes], bytes]:
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self._port)
        self._writer.write(request_bytes(index))
        status, headers = parse_head(await self._reader.readuntil(b"\r\n\r\n"))
        body = await self._reader.readexactly(int(headers[b"content-length"]))
        return status, headers, body

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


async def floor(scope: Scope, receive: Receive, send: Send) -> None:
    """A fixed refusal and nothing else."""
    if scope["type"] != "http":
        return
    body = orjson.dumps({"error": {"code": "overloaded", "message": "", "request_id": "x"}})
    headers = [
        (b"content-type", b"application/json"),
        (b"retry-after", b"1"),
        (b"content-length", str(len(body)).encode()),
        (b"x-request-id", dict(scope["headers"])[b"x-request-id"]),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def check_refusal(status: int, headers: dict[bytes, bytes], body: bytes, index: int) -> None:
    assert status == 503, status
    assert b"retry-after" in headers, headers
    assert headers.get(b"x-request-id") == f"bench-{index}".encode(), headers
    error = orjson.loads(body)["error"]
    assert error["code"] == "overloaded", error
    assert error["request_id"] in (f"bench-{index}", "x"), error


Caller = Callable[[int], Awaitable[tuple[int, dict[bytes, bytes], bytes]]]
Blocks = Callable[[str, int], Awaitable[None]]
"""Runs ``BLOCK`` requests of one way from a first index, checking every answer."""


def in_process(caller: Caller) -> Blocks:
    """Blocks of requests made by ``caller`` in this process."""

    async def run(way: str, first: int) -> None:
        for index in range(first, first + BLOCK):
            check(way, index, *await caller(index))

    return run


def check(way: str, index: int, status: int, headers: dict[bytes, bytes], body: bytes) -> None:
    if way in ("answered", "warm"):
        assert status == 200, (status, body)
    else:
        check_refusal(status, headers, body, index)


async def block(blocks: Blocks, way: str, first: int) -> tuple[float, float]:
    """(CPU µs, wall µs) per request over one block."""
    cpu, wall = time.process_time(), time.perf_counter()
    await blocks(way, first)
    return (
        (time.process_time() - cpu) / BLOCK * 1e6,
        (time.perf_counter() - wall) / BLOCK * 1e6,
    )


class RemoteClient:
    """The ``http`` client: a process of its own (``--client``), told each block on a line
    (way, port, first index) and answering ``ok`` once every answer of the block checked."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process

    @classmethod
    async def start(cls) -> RemoteClient:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.shed_cost",
            "--client",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=REPO,
        )
        return cls(process)

    def to(self, port: int) -> Blocks:
        """Blocks sent to the server on ``port``."""

        async def run(way: str, first: int) -> None:
            assert self._process.stdin is not None
            assert self._process.stdout is not None
            self._process.stdin.write(f"{way} {port} {first}\n".encode())
            line = (await self._process.stdout.readline()).decode().strip()
            if line != "ok":
                raise RuntimeError(f"the client failed a block of {way!r}: {line or 'it exited'}")

        return run

    async def stop(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        await self._process.wait()


def client_main() -> None:
    """The ``--client`` process: one blocking keep-alive socket per port."""
    connections: dict[int, BlockingClient] = {}
    for line in sys.stdin:
        way, port, first = line.split()
        client = connections.setdefault(int(port), BlockingClient(int(port)))
        try:
            for index in range(int(first), int(first) + BLOCK):
                check(way, index, *client(index))
        except (AssertionError, OSError, ValueError) as failed:
            print(f"{type(failed).__name__}: {failed}"[:500].replace("\n", " "), flush=True)
            continue
        print("ok", flush=True)


class BlockingClient:
    """One request at a time on one kept-alive connection, with a blocking socket."""

    def __init__(self, port: int) -> None:
        self._socket = socket.create_connection(("127.0.0.1", port))
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = b""

    def __call__(self, index: int) -> tuple[int, dict[bytes, bytes], bytes]:
        self._socket.sendall(request_bytes(index))
        while b"\r\n\r\n" not in self._buffer:
            self._receive()
        head, _, self._buffer = self._buffer.partition(b"\r\n\r\n")
        status, headers = parse_head(head)
        length = int(headers[b"content-length"])
        while len(self._buffer) < length:
            self._receive()
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        return status, headers, body

    def _receive(self) -> None:
        chunk = self._socket.recv(65536)
        if not chunk:
            raise OSError("the server closed the connection")
        self._buffer += chunk


async def serve(
    app: ASGIApp, refuse_now: Callable[[Scope], Refusal | None] | None = None
) -> tuple[uvicorn.Server, asyncio.Task[None], int]:
    port = free_port()
    protocol = guarded_protocol(refuse_now=refuse_now)
    server = uvicorn.Server(
        server_config(app, "127.0.0.1", port, protocol=protocol, lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    for _ in range(500):  # up to 5 s to bind
        if server.started:
            return server, task, port
        await asyncio.sleep(0.01)
    raise RuntimeError("the bench server did not start")


async def measure_with(load: GatewayLoad, ways: dict[str, Blocks], warm: Blocks) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {
        way: {"cpu_us": [], "wall_us": []} for way in ways
    }
    await warm("warm", 0)  # models, caches and key lookups warm
    index = BLOCK
    for _ in range(BLOCKS):
        for way, blocks in ways.items():
            held = None if way == "answered" else await load.enter()  # the one slot, taken
            try:
                cpu_us, wall_us = await block(blocks, way, index)
            finally:
                if held is not None:
                    load.leave(held)
            index += BLOCK
            samples[way]["cpu_us"].append(cpu_us)
            samples[way]["wall_us"].append(wall_us)
    result: dict[str, Any] = {}
    for way, figures in samples.items():
        result[way] = {
            name: {
                "median": round(statistics.median(values), 2),
                "min": round(min(values), 2),
                "max": round(max(values), 2),
            }
            for name, values in figures.items()
        }
    answered = result["answered"]["cpu_us"]["median"]
    for way in ways:
        if way == "answered":
            continue
        result[f"{way}_share_of_answered_cpu"] = round(
            result[way]["cpu_us"]["median"] / answered, 4
        )
    return result


async def measure(plane: ControlPlane) -> dict[str, Any]:
    outer, inner = create_app(plane), inner_stack(plane)
    load = plane.gateway_load

    def direct(app: ASGIApp) -> Blocks:
        return in_process(lambda index: call(app, index))

    asgi = {"answered": direct(outer), "shed": direct(outer), "shed_inner": direct(inner)}
    result = {"asgi": await measure_with(load, asgi, direct(outer))}
    # As the gateway serves it (the protocol refuses first), then the app alone, its old
    # order, and the floor.
    served = [await serve(outer, outer.state.refuse_now)]
    served += [await serve(app) for app in (outer, inner, floor)]
    ports = [port for _server, _task, port in served]
    client = await RemoteClient.start()
    try:
        ways = ("answered", "shed_early", "shed", "shed_inner", "floor")
        by_way = [ports[0], ports[0], ports[1], ports[2], ports[3]]
        http = {way: client.to(port) for way, port in zip(ways, by_way, strict=True)}
        result["http"] = await measure_with(load, http, client.to(ports[0]))
    finally:
        await client.stop()
        for server, _task, _port in served:
            server.should_exit = True
        await asyncio.gather(*(task for _server, task, _port in served))
    return result


async def run(data_dir: Path) -> dict[str, Any]:
    # One request at a time here: the bench holds the slot to shed.
    async with started_plane(
        data_dir, shed_max_in_flight=1, shed_max_queued=0, rate_limit_per_minute=10**9
    ) as plane:
        return await measure(plane)


def main() -> None:
    result = run_in_process(run)
    result["what"] = (
        "CPU per POST /v1/infer (local sentiment) of the gateway's process (over HTTP, the "
        "client in a process of its own): answered, refused 503 by the server's protocol, by "
        "the outermost shedder, by the shedder where it was"
    )
    result["blocks"], result["block"] = BLOCKS, BLOCK
    path = write_result("shed_cost", result)
    for mode in ("asgi", "http"):
        for way in [way for way in result[mode] if isinstance(result[mode][way], dict)]:
            cpu, wall = result[mode][way]["cpu_us"], result[mode][way]["wall_us"]
            share = result[mode].get(f"{way}_share_of_answered_cpu")
            print(
                f"{mode:>4} {way:>10}: CPU {cpu['median']:8.1f} µs/request (blocks "
                f"{cpu['min']:.1f} to {cpu['max']:.1f}), wall "
                f"{wall['median']:8.1f} µs"
                + ("" if share is None else f"  = {share * 100:.1f} % of an answer")
            )
    print(f"load average before {result['load_before']}, after {result['load_after']}")
    print(f"wrote {path}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--client"]:
        client_main()
    else:
        main()
