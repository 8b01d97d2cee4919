"""What the gateway's front door costs a request, folded and as a chain (issue 18, step 2).

In one process, in alternating blocks so machine noise hits every way alike:

- ``layers``: each front-door concern alone around a trivial ASGI app (reads the body, answers
  200), with the scope's state already holding what the outer layers would have put there, so
  a layer's own cost is its block's CPU per request less the ``bare`` app's. Beside them
  Starlette's own ``ServerErrorMiddleware`` + ``ExceptionMiddleware`` pair and uvicorn's
  ``ProxyHeadersMiddleware``; ``chain`` is the whole old fold around the trivial app
  (uvicorn's proxy-headers layer, Starlette's pair, the shedder, the six gateway layers),
  ``front_door`` the one callable around it; ``request_id_and_access_log`` shows what the two
  cost together (the access line is made inside the request's trace context). For each way
  the bench also counts, from the caller, how many frames deep the trivial app runs and how
  many ``send`` wrappers a response message passes through.
- ``answered``: ``POST /v1/infer`` for the local sentiment model, a real key and body, through
  the whole gateway built the old way (``chain_app``: Starlette's fold of the middleware
  classes) and the new (``create_app``), driven as ASGI directly (``asgi``) and served by the
  gateway's own uvicorn protocol on loopback (``http``; one keep-alive connection, one request
  at a time, client in the same process).

CPU per request is ``time.process_time`` over a block divided by the block; for ``answered``
also the median over rounds of each block less the chain's block in the same round. The old
chain is served behind uvicorn's proxy-headers layer, as it was; the front door without. The
chain's layer classes now call the same functions the front door does (one call more each
than before the fold). Writes bench/results/frontdoor.json.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from bench.harness import free_port, write_result
from bench.inprocess import KEY, run_in_process, started_plane
from bench.shed_cost import BODY, HttpClient, call
from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway import middleware
from hybridinfer.gateway.app import create_app
from hybridinfer.gateway.bodytimeout import BodyTimeoutMiddleware
from hybridinfer.gateway.frontdoor import FrontDoor
from hybridinfer.server.serving import server_config
from hybridinfer.server.shedding import LoadShedder

LAYER_BLOCKS, LAYER_BLOCK = 20, 2000
ANSWER_BLOCKS, ANSWER_BLOCK = 80, 100
Caller = Callable[[int], Awaitable[tuple[int, dict[bytes, bytes], bytes]]]


def depth() -> int:
    """Frames on the stack below the caller."""
    frame, count = sys._getframe(1), 0
    while frame is not None:
        frame, count = frame.f_back, count + 1  # type: ignore[assignment]
    return count


class Trivial:
    """Reads the body, answers 200; notes how deep it ran."""

    def __init__(self) -> None:
        self.depth = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.depth = depth()
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


def chain_middleware(plane: ControlPlane) -> list[Middleware]:
    """The gateway's fold before it was one callable, outermost first."""
    return [
        Middleware(LoadShedder, load=plane.gateway_load),
        Middleware(middleware.RequestIdMiddleware),
        Middleware(middleware.AccessLogMiddleware),
        Middleware(middleware.ErrorMiddleware),
        Middleware(BodyTimeoutMiddleware, timeout_s=plane.settings.body_timeout_s),
        Middleware(middleware.AuthMiddleware, keys=plane.keys),
        Middleware(middleware.RateLimitMiddleware, limiter=plane.rate_limiter),
    ]


def chain_app(plane: ControlPlane) -> Starlette:
    """The whole gateway built the old way: Starlette's fold of the middleware classes."""
    app = create_app(plane)
    old = Starlette(routes=app.routes, middleware=chain_middleware(plane))
    old.state = app.state
    return old


def fold(layers: list[Middleware], app: ASGIApp) -> ASGIApp:
    for cls, args, kwargs in reversed(layers):
        app = cls(app, *args, **kwargs)
    return app


def layer_ways(plane: ControlPlane, trivial: Trivial) -> dict[str, ASGIApp]:
    """Each concern alone around ``trivial``; the whole chain and the front door."""
    chain = chain_middleware(plane)
    ways: dict[str, ASGIApp] = {"bare": trivial}
    for name, layer in zip(
        (
            "shedder",
            "request_id",
            "access_log",
            "error",
            "body_timeout",
            "auth",
            "rate_limit",
        ),
        chain,
        strict=True,
    ):
        ways[name] = fold([layer], trivial)
    # The request id's context (trace ids) is on every log record made inside it.
    ways["request_id_and_access_log"] = fold(chain[1:3], trivial)
    ways["starlette_pair"] = ServerErrorMiddleware(ExceptionMiddleware(trivial))
    ways["proxy_headers"] = ProxyHeadersMiddleware(trivial)
    ways["chain"] = ProxyHeadersMiddleware(
        fold(
            [Middleware(ServerErrorMiddleware), *chain, Middleware(ExceptionMiddleware)],
            trivial,
        )
    )
    ways["front_door"] = front_door_around(plane, trivial)
    return ways


def front_door_around(plane: ControlPlane, app: ASGIApp) -> FrontDoor:
    return FrontDoor(
        app,
        load=plane.gateway_load,
        keys=plane.keys,
        limiter=plane.rate_limiter,
        body_timeout_s=plane.settings.body_timeout_s,
    )


async def drive(app: ASGIApp, index: int, state: dict[str, Any]) -> tuple[int, int]:
    """One request to ``app``; (frames from here to the app, send wrappers passed)."""
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/infer",
        "raw_path": b"/v1/infer",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"authorization", f"Bearer {KEY}".encode()),
            (b"content-length", str(len(BODY)).encode()),
            (b"x-request-id", f"bench-{index}".encode()),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
        "state": dict(state),
    }
    here = depth()
    wrappers = 0

    async def receive() -> Message:
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(message: Message) -> None:
        nonlocal wrappers
        wrappers = depth()

    await app(scope, receive, send)
    return here, wrappers


async def measure_layers(plane: ControlPlane) -> dict[str, Any]:
    principal = await plane.keys.authenticate(KEY)
    state = {"started": time.perf_counter(), "request_id": "bench", "principal": principal}
    trivial = Trivial()
    ways = layer_ways(plane, trivial)
    cpu: dict[str, list[float]] = {way: [] for way in ways}
    shape: dict[str, dict[str, int]] = {}
    for way, app in ways.items():  # warm, and the stack's shape
        here, final_send = await drive(app, 0, state)
        app_depth = trivial.depth
        shape[way] = {
            "frames_to_app": app_depth - here,
            "send_wrappers": final_send - app_depth - 1,
        }
    for _ in range(LAYER_BLOCKS):
        for way, app in ways.items():
            started = time.process_time()
            for index in range(LAYER_BLOCK):
                await drive(app, index, state)
            cpu[way].append((time.process_time() - started) / LAYER_BLOCK * 1e6)
    bare = statistics.median(cpu["bare"])
    return {
        way: {
            "cpu_us": round(statistics.median(values), 2),
            "own_cpu_us": round(statistics.median(values) - bare, 2),
            **shape[way],
        }
        for way, values in cpu.items()
    }


async def block(caller: Caller, first: int) -> float:
    started = time.process_time()
    for index in range(first, first + ANSWER_BLOCK):
        status, _headers, body = await caller(index)
        assert status == 200, (status, body)
    return (time.process_time() - started) / ANSWER_BLOCK * 1e6


async def alternate(callers: dict[str, Caller]) -> dict[str, Any]:
    """Blocks of each way in turn; also the median over rounds of each way's block less the
    first way's in the same round (drift cancels)."""
    cpu: dict[str, list[float]] = {way: [] for way in callers}
    for caller in callers.values():  # models, caches and key lookups warm
        await block(caller, 0)
    index = ANSWER_BLOCK
    for _ in range(ANSWER_BLOCKS):
        for way, caller in callers.items():
            cpu[way].append(await block(caller, index))
            index += ANSWER_BLOCK
    first = next(iter(callers))
    return {
        way: {
            "cpu_us": round(statistics.median(values), 2),
            "min": round(min(values), 2),
            "max": round(max(values), 2),
            f"less_{first}_us": round(
                statistics.median(a - b for a, b in zip(values, cpu[first], strict=True)), 2
            ),
        }
        for way, values in cpu.items()
    }


async def serve(
    app: ASGIApp, proxy_headers: bool
) -> tuple[uvicorn.Server, asyncio.Task[None], int]:
    port = free_port()
    config = server_config(app, "127.0.0.1", port, lifespan="off", proxy_headers=proxy_headers)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(500):  # up to 5 s to bind
        if server.started:
            return server, task, port
        await asyncio.sleep(0.01)
    raise RuntimeError("the bench server did not start")


async def measure_answered(plane: ControlPlane) -> dict[str, Any]:
    apps = {"chain": chain_app(plane), "front_door": create_app(plane)}

    def direct(app: ASGIApp) -> Caller:
        return lambda index: call(app, index)

    result = {"asgi": await alternate({way: direct(app) for way, app in apps.items()})}
    # The chain as it was served, behind uvicorn's proxy-headers layer; the front door without.
    served = {way: await serve(app, way == "chain") for way, app in apps.items()}
    clients = {way: HttpClient(port) for way, (_server, _task, port) in served.items()}
    try:
        result["http"] = await alternate(dict(clients))
    finally:
        for client in clients.values():
            client.close()
        for server, _task, _port in served.values():
            server.should_exit = True
        await asyncio.gather(*(task for _server, task, _port in served.values()))
    return result


async def run(data_dir: Path) -> dict[str, Any]:
    async with started_plane(data_dir, rate_limit_per_minute=10**9) as plane:
        return {
            "layers": await measure_layers(plane),
            "answered": await measure_answered(plane),
        }


def main() -> None:
    result = run_in_process(run)
    result["what"] = (
        "CPU per request through the gateway's front door: each layer alone, the old chain and "
        "the one callable around a trivial app; POST /v1/infer (local sentiment) answered "
        "through the whole gateway built both ways, as ASGI and over loopback HTTP"
    )
    result["blocks"] = {
        "layers": [LAYER_BLOCKS, LAYER_BLOCK],
        "answered": [ANSWER_BLOCKS, ANSWER_BLOCK],
    }
    path = write_result("frontdoor", result)
    for way, figures in result["layers"].items():
        print(
            f"layer {way:>25}: {figures['cpu_us']:7.2f} µs ({figures['own_cpu_us']:+6.2f} own), "
            f"app at frame {figures['frames_to_app']}, {figures['send_wrappers']} send wrappers"
        )
    for mode, ways in result["answered"].items():
        for way, figures in ways.items():
            print(
                f"{mode:>4} {way:>10}: CPU {figures['cpu_us']:8.1f} µs/request "
                f"(blocks {figures['min']:.1f} to {figures['max']:.1f}), "
                f"{figures['less_chain_us']:+.1f} µs against the chain, paired by round"
            )
    print(f"load average before {result['load_before']}, after {result['load_after']}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
