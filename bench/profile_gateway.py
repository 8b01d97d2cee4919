"""Where the gateway's CPU goes per request: py-spy on a loaded gateway, folded into layers.

The gateway of ``bench/gateway_overhead.py`` (one static `openai` node on the fixed-answer
upstream, model pinned, key checked, traces and metrics on) is driven by the open-loop
generator at a fixed rate while ``py-spy record`` samples it (100 Hz, every thread, idle
frames left out). Three paths: the pinned chat (``/v1/chat/completions``), the same with a
word of its own in every request (nothing one request's scan learnt serves the next), and a
local sentiment (``/v1/infer``, the in-process ONNX model). The gateway's own CPU seconds over
the run (``/proc/<pid>/stat``) divided by its answered requests give CPU per request; each
sample is charged to the layer of the innermost frame that belongs to a known layer, so the
table says how many µs of that CPU each layer takes. Flame graphs (SVG) and the table are
written to ``bench/results/``.

    python -m bench.profile_gateway [--rate 300] [--duration 20]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.gateway_overhead import GATEWAY_CONFIG, KEY, Target, load
from bench.harness import REPO, RESULTS, free_port, write_result
from bench.processes import stop_process, upstream_process, wait_ready
from bench.upstream import MODEL
from hybridinfer.modelzoo import build_models

# (layer, substring of a frame's file path or function), innermost match wins. Order matters
# only among patterns that could match the same frame.
PY_SPY = str(Path(sys.executable).parent / "py-spy")
LAYERS: tuple[tuple[str, str], ...] = (
    ("privacy scan", "hybridinfer/privacy/"),
    ("privacy scan", "hybridinfer/decompose/privacy.py"),
    ("decompose", "hybridinfer/decompose/"),
    ("route", "hybridinfer/route/"),
    ("execute", "hybridinfer/execute/"),
    ("backend + upstream client", "hybridinfer/backends/"),
    ("backend + upstream client", "/httpx/"),
    ("backend + upstream client", "/httpcore/"),
    ("backend + upstream client", "/aiohttp/"),
    ("model (onnxruntime)", "onnxruntime"),
    ("model (onnxruntime)", "hybridinfer/models/"),
    ("pipeline", "hybridinfer/pipeline/"),
    ("traces + metrics + spans", "hybridinfer/observe/"),
    ("traces + metrics + spans", "hybridinfer/core/trace"),
    ("traces + metrics + spans", "hybridinfer/store/tracesink"),
    ("traces + metrics + spans", "/opentelemetry/"),
    ("traces + metrics + spans", "/prometheus_client/"),
    ("state (SQL, cache)", "hybridinfer/store/"),
    ("state (SQL, cache)", "hybridinfer/cache/"),
    ("state (SQL, cache)", "/sqlalchemy/"),
    ("state (SQL, cache)", "/aiosqlite/"),
    ("control plane (keys, limits, probes)", "hybridinfer/control/"),
    ("control plane (keys, limits, probes)", "hybridinfer/signals/"),
    ("body decode + validation", "/pydantic"),
    ("body decode + validation", "/json/"),
    ("body decode + validation", "/orjson"),
    ("body decode + validation", "hybridinfer/core/schemas"),
    ("body decode + validation", "hybridinfer/core/chat"),
    ("gateway middleware + handlers", "hybridinfer/gateway/"),
    ("gateway middleware + handlers", "hybridinfer/server/"),
    ("Starlette routing + responses", "/starlette/"),
    ("HTTP server (uvicorn + httptools)", "/uvicorn/"),
    ("HTTP server (uvicorn + httptools)", "/httptools/"),
    ("HTTP server (uvicorn + httptools)", "/h11/"),
    ("asyncio event loop", "/asyncio/"),
    ("asyncio event loop", "uvloop"),
    # A thread whose innermost Python frame is its entry point is running native code.
    ("state (SQL, cache)", "_connection_worker_thread (aiosqlite"),
    ("worker threads (native: model runs, NER)", "_worker (concurrent/futures/thread.py"),
)
BLOCKED = (
    "_worker (concurrent/futures/thread.py:81)",  # work_queue.get(block=True)
    "_connection_worker_thread (aiosqlite/core.py:59)",  # tx.get()
)
"""Innermost frames of threads waiting on a queue: py-spy's idle check misses a wait inside
``SimpleQueue.get``, so these samples are idle and left out of the table."""
IDLE = "idle (waiting on a queue)"
IDLE_GOAL = 0.01
"""An idle gateway should use at most this share of one core (its background loops alone)."""


@dataclass(slots=True)
class RequestPath:
    """One request path to profile."""

    name: str
    route: str
    body: str
    vary: str = ""
    """A marker in ``body`` the generator replaces by a unique word per request."""


PATHS = (
    RequestPath(
        "pinned-chat",
        "/v1/chat/completions",
        json.dumps(
            {"model": MODEL, "messages": [{"role": "user", "content": "Say ok."}], "max_tokens": 8}
        ),
    ),
    RequestPath(
        "pinned-chat-unique",
        "/v1/chat/completions",
        json.dumps(
            {
                "model": MODEL,
                "messages": [{"role": "user", "content": "Say ok, XXXXXXXX."}],
                "max_tokens": 8,
            }
        ),
        vary="XXXXXXXX",
    ),
    RequestPath(
        "local-sentiment",
        "/v1/infer",
        json.dumps({"task": "sentiment", "inputs": {"text": "the update broke my phone"}}),
    ),
)


def layer_of(stack: list[str]) -> str:
    """The layer of the innermost frame (last in py-spy's collapsed order) with a known one.
    The main thread's entry frame alone means it is inside the event loop's native code."""
    if any(frame in stack[-1] for frame in BLOCKED):
        return IDLE
    if "Runner.run (asyncio/runners.py" in stack[-1]:
        return "event loop native (epoll, socket I/O)"
    for frame in reversed(stack):
        for layer, pattern in LAYERS:
            if pattern in frame:
                return layer
    return "other (interpreter, C, unknown)"


def fold(collapsed: str) -> tuple[Counter[str], Counter[str]]:
    """Samples per layer from py-spy's ``--format raw`` (collapsed stacks: ``a;b;c count``),
    and the innermost frames of the samples no layer claimed (so the table can be improved)."""
    layers: Counter[str] = Counter()
    unclaimed: Counter[str] = Counter()
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            frames = stack.split(";")
            layer = layer_of(frames)
            layers[layer] += int(count)
            if layer.startswith("other"):
                unclaimed[frames[-1]] += int(count)
    return layers, unclaimed


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds(pid: int) -> float:
    """CPU of the gateway's live child processes (the names process reads names there)."""
    total = 0.0
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(OSError):
            total += cpu_seconds(child.pid)
    return total


@contextmanager
def gateway(
    work: Path, upstream: str, extra_env: dict[str, str] | None = None
) -> Iterator[tuple[str, int]]:
    port = free_port()
    config = work / "hybridinfer.yaml"
    text = GATEWAY_CONFIG.format(port=port, data_dir=work / "data", upstream=upstream, model=MODEL)
    models = REPO / ".hybridinfer" / "models"
    build_models(models)
    config.write_text(
        text.replace("local_models: []", f"local_models: [sentiment-small]\nmodels_dir: {models}")
    )
    env = {**os.environ, "HYBRIDINFER_BOOTSTRAP_KEY": KEY, **(extra_env or {})}
    command = [sys.executable, "-m", "hybridinfer", "gateway", "--config", str(config)]
    url = f"http://127.0.0.1:{port}"
    with (work / "gateway.log").open("w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log, cwd=REPO)
        try:
            wait_ready(process, f"{url}/readyz", timeout_s=120, name="hybridinfer gateway")
            yield url, process.pid
        finally:
            stop_process(process)


def profile(
    url: str, pid: int, path: RequestPath, rate: float, duration_s: float
) -> dict[str, Any]:
    """One fixed-rate run with py-spy attached; returns the layer table and the run's figures."""
    target = Target(path.name, url, [f"Authorization: Bearer {KEY}"])
    svg = RESULTS / f"profile-{path.name}.svg"
    with tempfile.NamedTemporaryFile(suffix=".txt") as raw:
        load(target, min(rate, 50), 3, timeout_s=2.0)  # warm: sessions, pools, JIT caches
        spy = subprocess.Popen(
            [PY_SPY, "record", "--pid", str(pid), "--rate", "100", "--duration",
             str(int(duration_s) + 2), "--format", "raw", "--output", raw.name, "--threads"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO,
        )  # fmt: skip
        time.sleep(1.0)
        before, children_before = cpu_seconds(pid), children_cpu_seconds(pid)
        result = _load_path(target, path, rate, duration_s)
        used = cpu_seconds(pid) - before
        children_used = children_cpu_seconds(pid) - children_before
        spy.wait(timeout=duration_s + 60)
        collapsed = Path(raw.name).read_text()
    _flame_graph(url, pid, path, rate, svg)
    layers, unclaimed = fold(collapsed)
    idle = layers.pop(IDLE, 0)
    samples = sum(layers.values()) or 1
    # Requests the gateway answered: a timed-out one may not have been worked on at all.
    answered = result["ok"] + sum(
        count for kind, count in result["error_kinds"].items() if kind.startswith("HTTP")
    )
    per_request_us = used / max(answered, 1) * 1e6
    table = {
        layer: round(count / samples * per_request_us, 1) for layer, count in layers.most_common()
    }
    return {
        "path": path.name,
        "rate": rate,
        "duration_s": duration_s,
        "requests": answered,
        "latency_ms": result["latency_ms"],
        "error_rate": result["error_rate"],
        "gateway_cpu_s": round(used, 3),
        "gateway_cpu_us_per_request": round(per_request_us, 1),
        "children_cpu_us_per_request": round(children_used / max(answered, 1) * 1e6, 1),
        "samples": samples,
        "idle_samples_left_out": idle,
        "us_per_request_by_layer": table,
        "flame_graph": str(svg.relative_to(REPO)),
        "unclaimed_top_frames": dict(unclaimed.most_common(12)),
    }


def _load_path(target: Target, path: RequestPath, rate: float, duration_s: float) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.loadgen", "--url", f"{target.url}{path.route}"]
    command += ["--rate", str(rate), "--duration", str(duration_s), "--warmup", "1"]
    command += ["--timeout", "2", "--body", path.body, "--header", target.headers[0]]
    if path.vary:
        command += ["--vary", path.vary]
    finished = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(finished.stdout)
    return result


def _flame_graph(url: str, pid: int, path: RequestPath, rate: float, svg: Path) -> None:
    """A shorter second run with py-spy drawing the SVG flame graph itself."""
    target = Target(path.name, url, [f"Authorization: Bearer {KEY}"])
    spy = subprocess.Popen(
        [PY_SPY, "record", "--pid", str(pid), "--rate", "100", "--duration", "8",
         "--format", "flamegraph", "--output", str(svg), "--threads"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    time.sleep(1.0)
    _load_path(target, path, rate, 6)
    spy.wait(timeout=60)


def idle_cpu(pid: int, seconds: float) -> float:
    """Share of one core the gateway and its children (the names process) use with no request."""
    before = cpu_seconds(pid) + children_cpu_seconds(pid)
    time.sleep(seconds)
    return round((cpu_seconds(pid) + children_cpu_seconds(pid) - before) / seconds, 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rate",
        type=float,
        default=100.0,
        help="A rate the gateway holds: CPU per request "
        "is only meaningful where requests are answered, not timed out.",
    )
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument(
        "--idle", type=float, default=60.0, help="Seconds of idle measurement (at least 60)."
    )
    parser.add_argument("--label", default="", help="Suffix of the results file.")
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        upstream = stack.enter_context(upstream_process(free_port()))
        url, pid = stack.enter_context(gateway(Path(tmp), upstream))
        time.sleep(3.0)  # let start-up work (warm-ups, first probes) finish
        idle = idle_cpu(pid, max(args.idle, 60.0))
        idle_load = os.getloadavg()
        verdict = "met" if idle <= IDLE_GOAL else "missed"
        print(
            f"idle gateway: {idle:.2%} of a core over {max(args.idle, 60.0):.0f} s "
            f"(goal ≤ {IDLE_GOAL:.0%}: {verdict}), load average {idle_load[0]:.2f}",
            flush=True,
        )
        for path in PATHS:
            run = profile(url, pid, path, args.rate, args.duration)
            runs.append(run)
            print(
                f"{path.name}: {run['gateway_cpu_us_per_request']:.0f} µs CPU per request "
                f"(+{run['children_cpu_us_per_request']:.0f} in the names process) at "
                f"{args.rate:.0f}/s, p50 {run['latency_ms'].get('p50')} ms, "
                f"p99 {run['latency_ms'].get('p99')} ms",
                flush=True,
            )
            for layer, micros in run["us_per_request_by_layer"].items():
                print(f"    {micros:8.1f} µs  {layer}")
    name = "profile_gateway" + (f"_{args.label}" if args.label else "")
    path = write_result(
        name,
        {
            "what": "py-spy (100 Hz) on a loaded gateway; CPU per request charged to layers",
            "load_average": os.getloadavg(),
            "idle_cpu_share_of_core": idle,
            "idle_seconds": max(args.idle, 60.0),
            "idle_load_average": idle_load,
            "idle_goal_share_of_core": IDLE_GOAL,
            "idle_goal_met": idle <= IDLE_GOAL,
            "runs": runs,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
