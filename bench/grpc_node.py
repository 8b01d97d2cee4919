"""Node throughput over REST vs gRPC, and the gateway → node hop over each.

A real `hybridinfer node` process serves `sentiment-small` over REST and gRPC (`--grpc-port`);
a separate load process runs a closed loop (C callers, each sending its next request when the
last answered, one text per request) for a fixed time against one transport, and reports its
own CPU use (CPU seconds per second: the client shares the 2 cores with the node). REST bodies
are V2 JSON over aiohttp; gRPC requests are typed contents over one grpc.aio channel (as the
gateway's V2 backend sends them).

The hop: the gateway's own `V2Backend.infer` (encode, call, decode) to the same node, one call
at a time, over REST and over gRPC; onnxruntime's batch-1 time alone shows the model's share.

    python bench/grpc_node.py [--models-dir DIR] [--seconds 3]

Writes bench/results/grpc_node.json.
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.harness import REPO, free_port, percentiles, write_result
from bench.node_throughput import MODEL, TEXTS, onnxruntime_alone
from bench.node_throughput import start_node as start_rest_node


def start_node(models_dir: Path, port: int, grpc_port: int, batch: int) -> subprocess.Popen[bytes]:
    """The throughput benchmark's node, serving V2 over gRPC too."""
    return start_rest_node(models_dir, port, batch, 0 if batch == 1 else 500, grpc_port)


def _rest_call(port: int) -> Any:
    import aiohttp
    import orjson

    url = f"http://127.0.0.1:{port}/v2/models/{MODEL}/infer"
    bodies = [
        orjson.dumps(
            {"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": [t]}]}
        )
        for t in TEXTS
    ]
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256))
    headers = {"Content-Type": "application/json"}

    async def call(n: int) -> bool:
        async with session.post(url, data=bodies[n % len(bodies)], headers=headers) as response:
            await response.read()
            return response.status == 200

    return call, session.close


def _grpc_call(grpc_port: int) -> Any:
    import grpc

    from hybridinfer.tensors.proto import grpc_predict_v2_pb2 as pb

    channel = grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}")
    infer = channel.unary_unary(
        "/inference.GRPCInferenceService/ModelInfer",
        request_serializer=pb.ModelInferRequest.SerializeToString,
        response_deserializer=pb.ModelInferResponse.FromString,
    )
    requests = []
    for text in TEXTS:
        request = pb.ModelInferRequest(model_name=MODEL)
        tensor = request.inputs.add(name="text", datatype="BYTES", shape=[1, 1])
        tensor.contents.bytes_contents.append(text.encode())
        requests.append(request)

    async def call(n: int) -> bool:
        response = await infer(requests[n % len(requests)], timeout=10)
        return len(response.outputs) > 0

    return call, channel.close


async def _closed_loop(
    transport: str, port: int, grpc_port: int, concurrency: int, seconds: float
) -> dict[str, Any]:
    call, close = _rest_call(port) if transport == "rest" else _grpc_call(grpc_port)
    latencies: list[float] = []
    errors = 0

    async def worker(index: int, stop: float, record: bool) -> None:
        nonlocal errors
        n = index
        while time.perf_counter() < stop:
            started = time.perf_counter()
            try:
                ok = await call(n)
            except Exception:
                ok = False
            n += 1
            if record:
                latencies.append((time.perf_counter() - started) * 1000)
                errors += not ok

    await asyncio.gather(*(worker(i, time.perf_counter() + 1.0, False) for i in range(concurrency)))
    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(i, started + seconds, True) for i in range(concurrency)))
    elapsed = time.perf_counter() - started
    client_cpu = (time.process_time() - cpu) / elapsed
    await close()
    return {
        "throughput_per_s": round(len(latencies) / elapsed, 1),
        "latency_ms": percentiles(latencies),
        "errors": errors,
        "client_cpu_cores": round(client_cpu, 2),
    }


async def _hop(port: int, grpc_port: int, models_dir: Path, seconds: float) -> dict[str, Any]:
    """The gateway's V2 backend to the node, one call at a time, over each transport."""
    import orjson

    from hybridinfer.backends.v2 import V2Backend
    from hybridinfer.core.topology import Node, Tier, Zone
    from hybridinfer.models.catalog import deployment_info, find_model
    from hybridinfer.signals.registry import deployment_from_info

    path, _ = find_model(models_dir, MODEL)
    card = orjson.loads((path.parent / "card.json").read_bytes())
    deployment = deployment_from_info("bench", deployment_info(card))
    backend = V2Backend()
    result: dict[str, Any] = {}
    for transport in ("rest", "grpc"):
        node = Node(
            id="bench",
            tier=Tier.CLOUD,
            zone=Zone.PUBLIC,
            url=f"http://127.0.0.1:{port}",
            protocol="v2",
            deployments=[deployment],
            grpc_url=f"grpc://127.0.0.1:{grpc_port}" if transport == "grpc" else None,
        )
        for n in range(50):  # warm-up: connections, the session
            await backend.infer(node, deployment, {"text": TEXTS[n % 4]}, 5.0)
        samples: list[float] = []
        stop = time.perf_counter() + seconds
        while time.perf_counter() < stop:
            started = time.perf_counter()
            await backend.infer(node, deployment, {"text": TEXTS[len(samples) % 4]}, 5.0)
            samples.append((time.perf_counter() - started) * 1000)
        result[transport] = {"calls": len(samples), "latency_ms": percentiles(samples)}
    await backend.aclose()
    return result


def _in_process(target: Any, *args: Any) -> Any:
    """Run ``target(*args)`` (a coroutine function) in its own process; its result."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_child, args=(queue, target, args))
    process.start()
    result = queue.get(timeout=300)
    process.join()
    return result


def _child(queue: Any, target: Any, args: tuple[Any, ...]) -> None:
    queue.put(asyncio.run(target(*args)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, default=REPO / ".hybridinfer" / "models")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--batches", default="1,64")
    parser.add_argument("--concurrency", default="16,64")
    args = parser.parse_args()
    runs: list[dict[str, Any]] = []
    hop: dict[str, Any] = {}
    for batch in [int(b) for b in args.batches.split(",")]:
        port, grpc_port = free_port(), free_port()
        node = start_node(args.models_dir, port, grpc_port, batch)
        try:
            if batch == 1:
                hop = _in_process(_hop, port, grpc_port, args.models_dir, args.seconds)
                print("hop:", hop, flush=True)
            for concurrency in [int(c) for c in args.concurrency.split(",")]:
                for transport in ("rest", "grpc"):
                    result = _in_process(
                        _closed_loop, transport, port, grpc_port, concurrency, args.seconds
                    )
                    row = {"transport": transport, "max_batch_size": batch}
                    runs.append({**row, "concurrency": concurrency, **result})
                    print(runs[-1], flush=True)
        finally:
            node.send_signal(signal.SIGTERM)
            node.wait(timeout=20)
    bare = onnxruntime_alone(args.models_dir, min(args.seconds, 2.0))
    best = {
        t: max((r for r in runs if r["transport"] == t), key=lambda r: r["throughput_per_s"])
        for t in ("rest", "grpc")
    }
    path = write_result(
        "grpc_node",
        {
            "model": MODEL,
            "setup": "node process (REST + gRPC) and a separate closed-loop load process on the "
            f"same {os.cpu_count()}-core host, shared with other work; one text per request",
            "runs": runs,
            "best": best,
            "gateway_to_node_hop": hop,
            "onnxruntime_alone": bare,
            "target_grpc_per_s": 3000,
        },
    )
    print(
        f"best rest {best['rest']['throughput_per_s']}/s, grpc {best['grpc']['throughput_per_s']}/s"
    )
    print(f"-> {path}")


if __name__ == "__main__":
    main()
