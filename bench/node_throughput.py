"""Node throughput of `sentiment-small` against micro-batch size and concurrency.

A real `hybridinfer node` process serves the model; a separate load process runs a closed
loop (C connections, each sending its next request when the last answered, one text per
request, JSON V2 bodies) for a fixed time. Each batch size runs twice in turn: as shipped (a
lone quick call on the event loop, ``models/inline.py``) and with ``inline_below_us`` 0 (every
call on a worker thread). For comparison it also measures onnxruntime alone
(batch 1 and batch 64, no HTTP), which shows how much of the cost is the HTTP layer.

    python bench/node_throughput.py [--models-dir DIR] [--seconds 5]

Writes bench/results/node_throughput.json.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.harness import REPO, free_port, percentiles, write_result

MODEL = "sentiment-small"
TEXTS = [
    "what a great day, loving it",
    "this is the worst service I have ever had",
    "the meeting is at 3pm in room 4",
    "not bad at all, could be better though",
]


def start_node(
    models_dir: Path,
    port: int,
    batch: int,
    wait_us: int,
    grpc_port: int | None = None,
    inline: bool = True,
) -> subprocess.Popen[bytes]:
    """A node serving ``MODEL`` (and V2 over gRPC on ``grpc_port``), once it is ready."""
    command = [
        sys.executable, "-m", "hybridinfer", "node", "--models", MODEL,
        "--models-dir", str(models_dir), "--port", str(port),
        "--max-batch-size", str(batch), "--max-batch-wait-us", str(wait_us),
        "--cache-dir", str(REPO / ".hybridinfer" / "bench-node"),
    ]  # fmt: skip
    if grpc_port is not None:
        command += ["--grpc-port", str(grpc_port)]
    env = {**os.environ, **({} if inline else {"HYBRIDINFER_NODE_INLINE_BELOW_US": "0"})}
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=1):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("node did not start")


async def _closed_loop(port: int, concurrency: int, seconds: float) -> dict[str, Any]:
    import aiohttp
    import orjson

    url = f"http://127.0.0.1:{port}/v2/models/{MODEL}/infer"
    bodies = [
        orjson.dumps(
            {"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": [t]}]}
        )
        for t in TEXTS
    ]
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker(index: int, stop: float, record: bool) -> None:
            nonlocal errors
            n = index
            while time.perf_counter() < stop:
                started = time.perf_counter()
                async with session.post(
                    url, data=bodies[n % len(bodies)], headers={"Content-Type": "application/json"}
                ) as response:
                    await response.read()
                    ok = response.status == 200
                n += 1
                if record:
                    latencies.append((time.perf_counter() - started) * 1000)
                    errors += not ok

        warm = time.perf_counter() + 1.0
        await asyncio.gather(*(worker(i, warm, False) for i in range(concurrency)))
        started = time.perf_counter()
        stop = started + seconds
        await asyncio.gather(*(worker(i, stop, True) for i in range(concurrency)))
        elapsed = time.perf_counter() - started
    return {
        "throughput_per_s": round(len(latencies) / elapsed, 1),
        "latency_ms": percentiles(latencies),
        "errors": errors,
    }


def _load_process(port: int, concurrency: int, seconds: float, out: Any) -> None:
    out.put(asyncio.run(_closed_loop(port, concurrency, seconds)))


def run_load(port: int, concurrency: int, seconds: float) -> dict[str, Any]:
    """The closed loop in a separate process (its CPU is not the server's event loop)."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_load_process, args=(port, concurrency, seconds, queue))
    process.start()
    result: dict[str, Any] = queue.get(timeout=seconds + 60)
    process.join()
    return result


def onnxruntime_alone(models_dir: Path, seconds: float) -> dict[str, Any]:
    """Inferences per second of the bare session, batch 1 and batch 64, one thread."""
    from hybridinfer.models.catalog import find_model
    from hybridinfer.models.onnxmodel import OnnxModel

    path, _ = find_model(models_dir, MODEL)
    model = OnnxModel(path)
    result = {}
    for batch in (1, 8, 64):
        feeds = {"text": np.array([TEXTS[i % 4] for i in range(batch)], object).reshape(batch, 1)}
        count = 0
        stop = time.perf_counter() + seconds
        started = time.perf_counter()
        while time.perf_counter() < stop:
            model.run(feeds)
            count += batch
        result[f"batch_{batch}_per_s"] = round(count / (time.perf_counter() - started), 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, default=REPO / ".hybridinfer" / "models")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--batches", default="1,8,32,64")
    parser.add_argument("--concurrency", default="1,16,64")
    args = parser.parse_args()
    runs = []
    for batch in [int(b) for b in args.batches.split(",")]:
        for inline in (True, False):
            port = free_port()
            wait_us = 0 if batch == 1 else 500
            node = start_node(args.models_dir, port, batch, wait_us, inline=inline)
            try:
                for concurrency in [int(c) for c in args.concurrency.split(",")]:
                    result = run_load(port, concurrency, args.seconds)
                    runs.append(
                        {
                            "max_batch_size": batch,
                            "concurrency": concurrency,
                            "inline": inline,
                            **result,
                        }
                    )
                    print(runs[-1], flush=True)
            finally:
                node.send_signal(signal.SIGTERM)
                node.wait(timeout=20)
    bare = onnxruntime_alone(args.models_dir, min(args.seconds, 3.0))
    print("onnxruntime alone:", bare)
    best = max(runs, key=lambda run: run["throughput_per_s"])
    path = write_result(
        "node_throughput",
        {
            "model": MODEL,
            "models_dir": str(args.models_dir),
            "setup": "node process + separate closed-loop load process on the same "
            f"{os.cpu_count()}-core host; one text per request, JSON V2 bodies; "
            "max wait 500 µs when batching; each batch size with lone quick calls on the "
            "event loop (as shipped) and with every call on a worker thread",
            "runs": runs,
            "best": best,
            "onnxruntime_alone": bare,
            "target_per_s": 1000,
        },
    )
    print(f"best {best['throughput_per_s']}/s -> {path}")


if __name__ == "__main__":
    main()
