"""The time from a guard breach to the rollback of a walked model rollout being served on
every replica.

Two replicas' rollout monitors (each checking the store every 1 s, the gateway's default) and
one walker (ticking every 0.5 s) on one PostgreSQL database; a guarded rollout walks its first
step; traces in which the candidate version fails are written, and the time until neither
replica serves the candidate any more is measured. Writes bench/results/rolloutwalk.json.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from bench.harness import percentiles, write_result
from bench.replay import POSTGRES, until
from hybridinfer.control.audit import AuditLog
from hybridinfer.control.rollout import RolloutMonitor
from hybridinfer.control.rolloutwalk import RolloutWalks
from hybridinfer.control.walker import Walker
from hybridinfer.policy.document import compile_policy
from hybridinfer.store.sql import SqlStore

ROUNDS = 5
POLICY = compile_policy(
    """\
version: ab
rollouts:
  - task: sentiment
    model: small
    candidate: "2"
    guard: {dwell_s: 60, min_requests: 20}
"""
)
ROLLOUT = POLICY.policy.rollouts[0]


def traces(version: str, at: float, count: int) -> list[dict[str, Any]]:
    """``count`` finished traces whose call to ``small`` went to ``version`` (2 fails)."""
    status = "error" if version == "2" else "ok"
    deployment = f"edge/small:{version}"
    return [
        {
            "request_id": f"{version}-{at}-{index}",
            "task": "sentiment",
            "status": status,
            "created_at": at,
            "timings_ms": {"total": 5.0},
            "policy_version": "ab",
            "decisions": [
                {
                    "subtask": "s",
                    "chosen": deployment,
                    "tier": "edge",
                    "policy_version": "ab",
                    "reason": "bench",
                    "candidates": [],
                }
            ],
            "attempts": [
                {
                    "subtask": "s",
                    "deployment": deployment,
                    "tier": "edge",
                    "model": "small",
                    "role": "primary",
                    "status": status,
                    "latency_ms": 5.0,
                }
            ],
        }
        for index in range(count)
    ]


async def one_rollback(url: str) -> float:
    store = SqlStore(url)
    await store.migrate()
    audit = AuditLog(store)
    monitors = [RolloutMonitor(store, lambda: POLICY, audit) for _ in range(2)]

    async def flush() -> None:
        return None

    walker = Walker(store, audit, flush, tick_s=0.5)
    walker.lead(RolloutWalks(store, monitors[0], lambda: POLICY, audit))
    for monitor in monitors:
        monitor.start()
    walker.start()
    await until(lambda: all(m.describe()[0]["walk"] is not None for m in monitors))
    now = time.time()
    await store.save_traces(traces("1", now, 20) + traces("2", now, 20))
    closed = time.perf_counter()  # the window holds enough requests from here on
    await until(lambda: all(m.percent(ROLLOUT) == 0.0 for m in monitors))
    served = time.perf_counter() - closed
    await walker.stop()
    for monitor in monitors:
        await monitor.stop()
    await store.close()
    return served * 1000.0


async def rollback_times() -> list[float]:
    import asyncpg  # the bench makes its own databases, as the tests do

    admin = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres")
    times = []
    for round_ in range(ROUNDS):
        name = f"bench_rolloutwalk_{os.getpid()}_{round_}"
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            times.append(await one_rollback(f"{POSTGRES}/{name}"))
        finally:
            await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    await admin.close()
    return times


def main() -> None:
    load_before = os.getloadavg()
    rollback = percentiles(asyncio.run(rollback_times()))
    print(f"breach to model rollback served on both replicas: {rollback} ms")
    path = write_result(
        "rolloutwalk",
        {
            "load_average": {"before": load_before, "after": os.getloadavg()},
            "breach_to_rollback_on_every_replica_ms": rollback,
            "setup": "2 rollout monitors (check 1 s) + walker (tick 0.5 s), PostgreSQL",
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
