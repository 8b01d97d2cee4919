"""The Python work of one request, counted, not timed: bytecode instructions per layer.

On two shared cores a CPU time moves by ±10 % from one run to the next, more than most single
changes to the request path save. A count of the Python instructions a request executes does
not: it is the same on a busy machine and a quiet one, so two versions of the code can be
compared on any machine, a change of a few percent included. It does not see native work
(onnxruntime, orjson, the socket calls) nor weigh one instruction against another; the CPU
benches (``shed_cost``, ``local_overhead``, ``gateway_overhead``) stay the measure of time.

Two requests are counted: the local sentiment request of ``bench/shed_cost.py``, and a chat
pinned to a cloud node (``bench/gateway_overhead.py``'s short chat, its node the instant
``bench/upstream.py`` in a process of its own, so only the gateway's side of the call counts).
Each is driven through the gateway's ASGI app in this process (as ``shed_cost`` does), on the
served event loop (uvloop: its own work is C, not counted, as it is not Python in a served
gateway either), warmed, and then ``REQUESTS`` of them are run under ``sys.settrace`` with
per-instruction events, their trace-sink bookkeeping included (it runs after the answer). Each
instruction is charged to the layer of the innermost frame that belongs to a known layer
(``bench/profile_gateway.py``'s table, so the two read alike), the frames of the standard
library (logging, dataclass ``__init__``, enum, contextlib) to the layer that called them,
asyncio's own to the event loop. Work on a timer (the trace writer's batches to SQL) lands in
the window by time, not by request: it moves the count by a few percent from run to run (the
``state`` layer); the rest repeats exactly.

    python -m bench.pathwork
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Any

from bench.gateway_overhead import BODY as CHAT_BODY
from bench.harness import REPO, free_port, write_result
from bench.inprocess import run_in_process, started_plane
from bench.processes import upstream_process
from bench.profile_gateway import LAYERS
from bench.shed_cost import call
from bench.upstream import MODEL
from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.app import create_app

WARMUP = 300
REQUESTS = 300
BENCH = "bench (the in-process client)"
BENCH_DIR = f"{REPO / 'bench'}/"
Tracer = Callable[[FrameType, str, Any], Any]


def layer_of_file(filename: str) -> str | None:
    """The layer a file belongs to; None for a file of no known layer (the caller's then)."""
    if filename.startswith(BENCH_DIR):
        return BENCH
    for layer, pattern in LAYERS:
        if pattern in filename:
            return layer
    return None


def layer_of_frame(frame: FrameType | None) -> str:
    """The layer of ``frame``'s file, else of the nearest caller's with one."""
    while frame is not None:
        layer = layer_of_file(frame.f_code.co_filename)
        if layer is not None:
            return layer
        frame = frame.f_back
    return "other"


class InstructionCounter:
    """Counts the Python instructions executed while it is on, by layer; and the frames
    entered (a coroutine's every resumption counts as one)."""

    def __init__(self) -> None:
        self.instructions: Counter[str] = Counter()
        self.frames = 0

    def __enter__(self) -> InstructionCounter:
        sys.settrace(self._call)
        return self

    def __exit__(self, *_: object) -> None:
        sys.settrace(None)

    def _call(self, frame: FrameType, event: str, arg: Any) -> Tracer:
        frame.f_trace_opcodes = True
        self.frames += 1
        layer = layer_of_frame(frame)
        counts = self.instructions

        def instruction(frame: FrameType, event: str, arg: Any) -> Tracer:
            if event == "opcode":
                counts[layer] += 1
            return instruction

        return instruction


Request = Callable[[Any, int], Awaitable[tuple[int, dict[bytes, bytes], bytes]]]


def local_sentiment(app: Any, index: int) -> Awaitable[tuple[int, dict[bytes, bytes], bytes]]:
    return call(app, index)


def pinned_chat(app: Any, index: int) -> Awaitable[tuple[int, dict[bytes, bytes], bytes]]:
    return call(app, index, "/v1/chat/completions", CHAT_BODY.encode())


def cloud_node(upstream: str) -> dict[str, Any]:
    """The chat's node: the instant upstream, as ``bench/gateway_overhead.py`` declares it."""
    deployment = {
        "model": MODEL,
        "version": "1",
        "capability": "chat",
        "quality": 0.5,
        "latency_ms": 1.0,
    }
    return {
        "id": "bench-upstream",
        "tier": "cloud",
        "zone": "public",
        "url": upstream,
        "protocol": "openai",
        "deployments": [deployment],
    }


async def count(plane: ControlPlane, request: Request) -> dict[str, Any]:
    """``REQUESTS`` of ``request`` counted after ``WARMUP`` of them, by layer."""
    app = create_app(plane)
    for index in range(WARMUP):
        status, _headers, body = await request(app, index)
        if status != 200:
            raise RuntimeError(f"warm-up request {index} answered {status}: {body!r}")
    await asyncio.sleep(0.05)  # the warm-up's bookkeeping done before counting starts
    with InstructionCounter() as counter:
        for index in range(WARMUP, WARMUP + REQUESTS):
            status, _headers, body = await request(app, index)
            if status != 200:
                raise RuntimeError(f"request {index} answered {status}: {body!r}")
        await asyncio.sleep(0.05)  # and theirs, inside the count
    by_layer = {
        layer: round(number / REQUESTS, 1)
        for layer, number in counter.instructions.most_common()
        if layer != BENCH
    }
    return {
        "requests": REQUESTS,
        "instructions_per_request": round(sum(by_layer.values()), 1),
        "frames_per_request": round(counter.frames / REQUESTS, 1),
        "by_layer": by_layer,
        "client_instructions_per_request": round(counter.instructions[BENCH] / REQUESTS, 1),
    }


async def measure(data_dir: Path) -> dict[str, Any]:
    with upstream_process(free_port()) as upstream:
        overrides = {"static_nodes": [cloud_node(upstream)]}
        async with started_plane(data_dir, **overrides) as plane:
            result = await count(plane, local_sentiment)
            result["chat"] = await count(plane, pinned_chat)
    return result


def main() -> None:
    result = run_in_process(measure)
    result["what"] = (
        "Python bytecode instructions per POST /v1/infer (local sentiment) in the gateway's "
        "ASGI app, its bookkeeping after the answer included; the client's own left out"
    )
    result["chat"]["what"] = (
        "the same for POST /v1/chat/completions pinned to a cloud node (the instant upstream)"
    )
    path = write_result("pathwork", result)
    for name, counted in (("local sentiment", result), ("pinned chat", result["chat"])):
        print(
            f"{name}: {counted['instructions_per_request']:.0f} instructions a request "
            f"({counted['frames_per_request']:.0f} frames entered or resumed)"
        )
        for layer, number in counted["by_layer"].items():
            print(f"  {number:8.1f}  {layer}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
