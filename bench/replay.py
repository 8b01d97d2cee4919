"""What-if replay speed and memory on 100,000 logged traces, and the time from a guard breach
to the rollback being served on every replica.

Part 1: 100,000 synthetic traces are logged by the live router (the shipped default policy
with a sentiment cascade, three tiers, a cloud RTT that drifts each second so rules read
changing snapshots), stored as JSON as the trace store keeps them; then replayed under a
changed policy (parse + re-decide + sum), timed and traced for memory (tracemalloc peak).

Part 2: two replicas' policy centers and a canary walker on one PostgreSQL database (the
walker ticks every 0.5 s, centers poll every 1 s, as the gateway's defaults); breaching
traces are written, and the time until neither replica serves the canary is measured.
Writes bench/results/replay.json.
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench.decision import registry_with
from bench.harness import percentiles, write_result
from hybridinfer.control.audit import AuditLog
from hybridinfer.control.canarywalk import CanaryWalker
from hybridinfer.control.policycenter import PolicyCenter
from hybridinfer.control.replay import ReplayReport
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.policy.document import compile_policy, default_policy_path
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store.snapshots import SignalSnapshots
from hybridinfer.store.sql import SqlStore

TRACES = 100_000
ROLLBACK_ROUNDS = 5
POSTGRES = os.environ.get(
    "HYBRIDINFER_BENCH_POSTGRES", "postgresql+asyncpg://postgres@127.0.0.1:5432"
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def logged_traces(count: int) -> tuple[list[bytes], dict[str, Any]]:
    """``count`` traces as JSON, decided live (100 requests a second), and their snapshots."""
    policy = compile_policy(default_policy_path().read_text(), thresholds={"sentiment": 0.6})
    registry = registry_with(6)
    clock, rng = Clock(), random.Random(7)
    router = Router(registry, Signals(), lambda: policy)
    router.snapshots = book = SignalSnapshots(capacity=count, clock=clock)
    cloud = [node for node in registry.nodes() if node.tier.value == "cloud"]
    rows: list[bytes] = []
    for index in range(count):
        if index % 100 == 0:
            clock.now += 1.0
            for node in cloud:
                node.rtt_ms = rng.choice((20.0, 60.0, 250.0))
        work = Subtask(
            id="classify",
            capability="text-classification",
            task="sentiment",
            inputs={},
            privacy=Privacy.SENSITIVE if index % 10 == 0 else Privacy.INTERNAL,
            complexity=rng.random(),
            latency_sensitive=index % 3 == 0,
        )
        decision = router.decide(work, router.context(RouteOptions(), "sentiment"))
        chosen = decision.chosen
        trace = {
            "request_id": f"r{index}",
            "task": "sentiment",
            "status": "ok",
            "policy_version": policy.version,
            "plan": {"subtasks": [work.labels()]},
            "decisions": [decision.describe()],
            "attempts": [
                {
                    "subtask": "classify",
                    "deployment": chosen.deployment.id,
                    "tier": chosen.node.tier.value,
                    "status": "ok",
                    "latency_ms": chosen.expected_latency_ms,
                    "confidence": rng.random(),
                }
            ],
        }
        rows.append(orjson.dumps(trace))
    snapshots = {ref: body for ref, _second, body in book.drain(everything=True)}
    return rows, snapshots


def replay_speed() -> dict[str, Any]:
    rows, snapshots = logged_traces(TRACES)
    changed = compile_policy(
        default_policy_path().read_text().replace("version: default-4", "version: next"),
        thresholds={"sentiment": 0.75},
    )
    tracemalloc.start()
    started = time.perf_counter()
    report = ReplayReport(changed)
    for row in rows:
        report.add(orjson.loads(row), snapshots)
    result = report.result()
    elapsed = time.perf_counter() - started
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # tracemalloc slows allocation-heavy code: time once more without it. The CPU time beside
    # the wall time: on two shared cores the wall clock also counts other processes' turns.
    load = os.getloadavg()[0]
    started, cpu_started = time.perf_counter(), time.process_time()
    again = ReplayReport(changed)
    for row in rows:
        again.add(orjson.loads(row), snapshots)
    again.result()
    untraced = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    return {
        "traces": TRACES,
        "snapshots": len(snapshots),
        "stored_bytes": sum(len(row) for row in rows),
        "seconds": round(untraced, 3),
        "traces_per_s": round(TRACES / untraced),
        "cpu_seconds": round(cpu, 3),
        "traces_per_cpu_s": round(TRACES / cpu),
        "load_average_1m": round(load, 2),
        "seconds_under_tracemalloc": round(elapsed, 3),
        "replay_peak_memory_mb": round(peak / 1e6, 1),
        "changed": result["overall"]["changed"],
        "cloud_share": {
            "logged": result["overall"]["logged"]["cloud_share"],
            "predicted": result["overall"]["predicted"]["cloud_share"],
        },
        "privacy_violations": result["privacy_violations"],
    }


def breaching(version: str, at: float, count: int) -> list[dict[str, Any]]:
    return [
        {
            "request_id": f"{version}-{at}-{index}",
            "task": "sentiment",
            "status": "error" if version == "bad" else "ok",
            "created_at": at,
            "timings_ms": {"total": 5.0},
            "policy_version": version,
            "decisions": [],
            "attempts": [],
        }
        for index in range(count)
    ]


async def until(check: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Poll ``check`` every 5 ms (the resolution of the figure measured)."""
    for _ in range(int(timeout_s / 0.005)):
        if check():
            return
        await asyncio.sleep(0.005)
    raise TimeoutError("not within the timeout")


async def one_rollback(url: str, folder: Path, round_: int) -> float:
    store = SqlStore(url)
    await store.migrate()
    seed = folder / f"seed-{round_}.yaml"
    seed.write_text("version: base\n")
    audit = AuditLog(store)
    centers = [PolicyCenter(store, NodeRegistry(), seed, 1.0, audit) for _ in range(2)]
    for center in centers:
        await center.start()
    await centers[0].apply("version: bad\nguard: {dwell_s: 60, min_requests: 20}\n", "ops", True)

    async def flush() -> None:
        return None

    walker = CanaryWalker(store, centers[0], audit, flush, tick_s=0.5)
    await walker.begin("bad", "ops")
    walker.start()
    await until(lambda: all(center.canary_state() is not None for center in centers))
    now = time.time()
    await store.save_traces(breaching("base", now, 20) + breaching("bad", now, 20))
    closed = time.perf_counter()  # the window holds enough requests from here on
    await until(lambda: all(center.canary_state() is None for center in centers))
    served = time.perf_counter() - closed
    await walker.stop()
    for center in centers:
        await center.stop()
    await store.close()
    return served * 1000.0


async def rollback_times() -> list[float]:
    import asyncpg  # the bench makes its own databases, as the tests do

    admin = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres")
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(ROLLBACK_ROUNDS):
            name = f"bench_replay_{os.getpid()}_{round_}"
            await admin.execute(f'CREATE DATABASE "{name}"')
            try:
                times.append(await one_rollback(f"{POSTGRES}/{name}", Path(folder), round_))
            finally:
                await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    await admin.close()
    return times


def main() -> None:
    load_before = os.getloadavg()
    speed = replay_speed()
    print(
        f"replay: {speed['traces_per_s']} traces/s wall, {speed['traces_per_cpu_s']} per CPU"
        f" second (goal 5,000; load {speed['load_average_1m']}),"
        f" peak {speed['replay_peak_memory_mb']} MB"
    )
    rollback = percentiles(asyncio.run(rollback_times()))
    print(f"breach to rollback served on both replicas: {rollback} ms")
    path = write_result(
        "replay",
        {
            "load_average": {"before": load_before, "after": os.getloadavg()},
            "replay": speed,
            "breach_to_rollback_on_every_replica_ms": rollback,
            "rollback_setup": "2 policy centers (poll 1 s) + walker (tick 0.5 s), PostgreSQL",
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
