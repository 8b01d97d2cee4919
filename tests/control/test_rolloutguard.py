"""Model rollouts judged by the guard metrics over the shared trace store: the side of a trace
is the version its first call to the model went to; the decision waits for ``min_requests`` on
both sides, rolls back on a breach naming the guard, promotes when every guard holds; the
monitor decides from traces other replicas wrote (none recorded in its own memory), stores the
decision once and audits it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from hybridinfer.control.audit import SYSTEM, AuditLog
from hybridinfer.control.rollout import RolloutMonitor
from hybridinfer.control.rolloutguard import (
    GuardedRollouts,
    guard_verdict,
    side_of,
    split_figures,
)
from hybridinfer.policy.document import compile_policy
from hybridinfer.policy.guard import Figures, Guard
from hybridinfer.store.sql import SqlStore

POLICY = compile_policy(
    """\
version: ab-1
rollouts:
  - task: sentiment
    model: small
    candidate: "2"
    percent: 50
    guard: {dwell_s: 60, min_requests: 4, max_error_rate_increase: 0.1}
"""
)
ROLLOUT = POLICY.policy.rollouts[0]


def _guard() -> Guard:
    assert ROLLOUT.guard is not None
    return ROLLOUT.guard


GUARD = _guard()


def trace(
    version: str,
    at: float,
    *,
    error: bool = False,
    total_ms: float = 5.0,
    policy: str = "ab-1",
    task: str = "sentiment",
) -> dict[str, Any]:
    """A finished trace whose first call to ``small`` went to ``version`` (on another replica's
    node or this one's: the store does not say, and the judgement does not care)."""
    deployment = f"edge-{version}/small:{version}"
    return {
        "request_id": f"r-{version}-{at}-{error}-{policy}-{task}",
        "task": task,
        "status": "error" if error else "ok",
        "created_at": at,
        "timings_ms": {"total": total_ms},
        "policy_version": policy,
        "decisions": [
            {
                "subtask": "s",
                "chosen": deployment,
                "tier": "edge",
                "policy_version": policy,
                "reason": "test",
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
                "status": "error" if error else "ok",
                "latency_ms": total_ms,
            }
        ],
    }


def figures(requests: int, error_rate: float = 0.0, p99_ms: float = 5.0) -> Figures:
    return Figures(requests, error_rate, p99_ms, 0.0, 0.0)


def test_a_trace_is_on_the_side_of_its_first_call_to_the_model() -> None:
    assert side_of(trace("2", 1.0), ROLLOUT) == "candidate"
    assert side_of(trace("1", 1.0), ROLLOUT) == "baseline"
    assert side_of(trace("2", 1.0, task="other"), ROLLOUT) is None
    fell_back = trace("2", 1.0, error=True)
    fell_back["attempts"].append({**trace("1", 1.0)["attempts"][0], "role": "fallback"})
    assert side_of(fell_back, ROLLOUT) == "candidate"  # the split chose version 2
    assert side_of({**trace("2", 1.0), "attempts": []}, ROLLOUT) is None


def test_only_traces_of_the_active_version_count() -> None:
    traces = [trace("1", 1.0), trace("2", 2.0), trace("2", 3.0, policy="canary-9", error=True)]
    baseline, candidate = split_figures(traces, ROLLOUT, "ab-1")
    assert (baseline.requests, candidate.requests) == (1, 1)
    assert candidate.error_rate == 0.0


def test_the_verdict_waits_then_rolls_back_on_a_breach_or_promotes() -> None:
    assert guard_verdict(GUARD, figures(4), figures(3)) is None
    assert guard_verdict(GUARD, figures(3), figures(40)) is None
    worse = guard_verdict(GUARD, figures(4), figures(4, error_rate=0.25))
    assert worse is not None
    assert worse.status == "rolled_back"
    assert [b["guard"] for b in worse.comparison["breaches"]] == ["error_rate"]
    assert "error_rate" in worse.reason
    slow = guard_verdict(GUARD, figures(4, p99_ms=10.0), figures(4, p99_ms=200.0))
    assert slow is not None
    assert [b["guard"] for b in slow.comparison["breaches"]] == ["p99_latency"]
    held = guard_verdict(GUARD, figures(10, error_rate=0.1), figures(10, error_rate=0.15))
    assert held is not None
    assert held.status == "promoted"
    assert held.comparison["breaches"] == []
    assert held.comparison["candidate"]["requests"] == 10


async def no_flush() -> None:
    return None


@pytest.mark.parametrize(("errors", "status"), [(0, "promoted"), (2, "rolled_back")])
async def test_the_monitor_decides_from_every_replicas_stored_traces(
    store: SqlStore, errors: int, status: str
) -> None:
    now = time.time()
    old = [trace("2", now - 120.0 + i, error=True) for i in range(10)]  # out of the window
    rows = [trace("1", now - 10.0 + i * 0.01) for i in range(4)]
    rows += [trace("2", now - 5.0 + i * 0.01, error=i < errors) for i in range(4)]
    await store.save_traces(old + rows)
    audit = AuditLog(store)
    guarded = GuardedRollouts(store, no_flush, clock=lambda: now)
    monitor = RolloutMonitor(store, lambda: POLICY, audit, guarded=guarded)
    await monitor.check()
    assert monitor.percent(ROLLOUT) == (100.0 if status == "promoted" else 0.0)
    described = monitor.describe()[0]
    assert described["status"] == status
    assert described["guard"]["min_requests"] == 4
    (entry,) = await audit.list(action="model.rollout")
    assert entry["actor"] == SYSTEM
    assert entry["after"]["status"] == status
    assert entry["after"]["candidate"]["error_rate"] == errors / 4
    assert bool(entry["after"]["breaches"]) == (status == "rolled_back")

    # Another replica, with no traces recorded in its memory, serves the stored decision.
    other = RolloutMonitor(store, lambda: POLICY, audit, guarded=guarded)
    await other.check()
    assert other.percent(ROLLOUT) == monitor.percent(ROLLOUT)
    assert len(await audit.list(action="model.rollout")) == 1


async def test_too_few_requests_in_the_window_leave_the_rollout_running(store: SqlStore) -> None:
    now = time.time()
    await store.save_traces([trace("1", now - 1.0 - i) for i in range(4)] + [trace("2", now)])
    guarded = GuardedRollouts(store, no_flush, clock=lambda: now)
    monitor = RolloutMonitor(store, lambda: POLICY, AuditLog(store), guarded=guarded)
    await monitor.check()
    assert monitor.percent(ROLLOUT) == 50.0
    assert monitor.describe()[0]["status"] == "running"
