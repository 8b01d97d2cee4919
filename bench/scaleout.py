"""Scale-out: gateway throughput with 1, 2 and 3 replicas, and async tasks through NATS.

Real `hybridinfer gateway` processes share the machine's PostgreSQL (a fresh database),
Redis and NATS JetStream. A load process on the same machine runs a closed loop (C
connections round-robin over the replicas, `sentiment` on the in-process local tier) for a
fixed time. Then 500 async tasks go to three replicas; the end-to-end latency of each is its
row's ``finished_at - created_at`` (submit to stored result).

    python bench/scaleout.py [--seconds 8] [--connections 16] [--tasks 500]

Writes bench/results/scaleout.json. The machine has 2 cores shared by the replicas, the load
process and the three services, so more replicas cannot add CPU: the figures show what
spreading over processes costs or gains on 2 cores, not a cluster's scaling.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.harness import REPO, free_port, percentiles, write_result

KEY = "bench-admin-key-0123456789"
POSTGRES = os.environ.get("HYBRIDINFER_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
REDIS_URL = os.environ.get("HYBRIDINFER_BENCH_REDIS", "redis://127.0.0.1:6379/0")
NATS_URL = os.environ.get("HYBRIDINFER_BENCH_NATS", "nats://127.0.0.1:4222")
BODY = {"task": "sentiment", "inputs": {"text": "I love this"}}


async def admin(statement: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(POSTGRES + "/postgres")
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextmanager
def gateways(count: int, models_dir: Path, workdir: Path) -> Iterator[tuple[list[str], str]]:
    """``count`` gateways on a fresh database, Redis prefix and stream; URLs and store URL."""
    database = f"hi_bench_{uuid.uuid4().hex[:8]}"
    asyncio.run(admin(f'CREATE DATABASE "{database}"'))
    store_url = f"{POSTGRES.replace('postgresql://', 'postgresql+asyncpg://')}/{database}"
    config = workdir / f"gateway-{database}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "models_dir": str(models_dir),
                "data_dir": str(workdir),
                "cache": "redis",
                "queue": "nats",
                "queue_stream": f"HI_BENCH_{uuid.uuid4().hex[:8]}",
                "cache_prefix": f"hi-bench-{database}:",
                "rate_limit_per_minute": 10_000_000,
                "inference_threads": 1,
                "log_level": "warning",
            }
        )
    )
    env = {
        **os.environ,
        "HYBRIDINFER_STORE_URL": store_url,
        "HYBRIDINFER_REDIS_URL": REDIS_URL,
        "HYBRIDINFER_NATS_URL": NATS_URL,
        "HYBRIDINFER_BOOTSTRAP_KEY": KEY,
    }
    processes, urls = [], []
    try:
        for _ in range(count):
            port = free_port()
            command = [sys.executable, "-m", "hybridinfer", "gateway", "--config", str(config)]
            processes.append(
                subprocess.Popen(
                    [*command, "--port", str(port)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            urls.append(f"http://127.0.0.1:{port}")
        for url in urls:
            wait_ready(url)
        yield urls, store_url
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))


def wait_ready(url: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready")


async def closed_loop(urls: list[str], connections: int, seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=connections * 2)
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(headers=headers, timeout=30, limits=limits) as client:
        for url in urls:  # warm up every replica
            for _ in range(20):
                await client.post(url + "/v1/infer", json=BODY)
        stop = time.perf_counter() + seconds

        async def worker(index: int) -> None:
            nonlocal errors
            turn = index
            while time.perf_counter() < stop:
                sent = time.perf_counter()
                response = await client.post(urls[turn % len(urls)] + "/v1/infer", json=BODY)
                turn += 1
                if response.status_code == 200:
                    latencies.append((time.perf_counter() - sent) * 1000.0)
                else:
                    errors += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(index) for index in range(connections)))
        elapsed = time.perf_counter() - started
    return {
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "errors": errors,
        "latency_ms": percentiles(latencies),
    }


async def tasks_run(urls: list[str], count: int, store_url: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as client:
        semaphore = asyncio.Semaphore(16)

        async def submit(index: int) -> None:
            async with semaphore:
                body = {"task": "sentiment", "inputs": {"text": f"task {index}"}}
                response = await client.post(urls[index % len(urls)] + "/v1/tasks", json=body)
                response.raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(submit(index) for index in range(count)))
        submitted = time.perf_counter() - started
    engine = create_async_engine(store_url)
    try:
        while True:
            async with engine.connect() as connection:
                rows = (
                    await connection.execute(
                        text("SELECT status, created_at, finished_at FROM tasks")
                    )
                ).all()
            if sum(row.status == "done" for row in rows) == count:
                break
            await asyncio.sleep(0.2)
        elapsed = time.perf_counter() - started
    finally:
        await engine.dispose()
    first = min(row.created_at for row in rows)
    last = max(row.finished_at for row in rows)
    return {
        "tasks": count,
        "replicas": len(urls),
        "submit_s": round(submitted, 2),
        "all_done_s": round(elapsed, 2),
        "tasks_per_s": round(count / (last - first), 1),
        "end_to_end_ms": percentiles([(r.finished_at - r.created_at) * 1000.0 for r in rows]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models-dir", type=Path, default=REPO / ".hybridinfer" / "models")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=500)
    args = parser.parse_args()
    workdir = REPO / ".hybridinfer" / "bench-scaleout"
    workdir.mkdir(parents=True, exist_ok=True)
    throughput = []
    for count in (1, 2, 3):
        with gateways(count, args.models_dir, workdir) as (urls, _):
            result = asyncio.run(closed_loop(urls, args.connections, args.seconds))
        throughput.append({"replicas": count, **result})
        print(f"{count} replica(s): {result['requests_per_s']} req/s", flush=True)
    with gateways(3, args.models_dir, workdir) as (urls, store_url):
        tasks = asyncio.run(tasks_run(urls, args.tasks, store_url))
    print(f"tasks: {tasks['tasks_per_s']} /s, e2e p50 {tasks['end_to_end_ms']['p50']} ms")
    write_result(
        "scaleout",
        {
            "setup": {
                "task": "sentiment (in-process local tier)",
                "connections": args.connections,
                "seconds": args.seconds,
                "note": "2 cores shared by the replicas, the load process, PostgreSQL, Redis "
                "and NATS: replicas add processes, not CPU",
            },
            "gateway_throughput": throughput,
            "async_tasks_through_nats": tasks,
        },
    )


if __name__ == "__main__":
    main()
