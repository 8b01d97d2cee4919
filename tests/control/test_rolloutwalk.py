"""Guarded model rollouts walked by the walk machinery, on a real store: the side of a trace is
the version its first call to the model went to; a good candidate steps 20 → 50 → 100 % and is
promoted, a bad one is rolled back at the first judged step naming the guard; another
replica's monitor, with nothing in its memory, serves the step and the decision the store
holds; the walk is led by the lease holder only, continues on another replica, and ends when
the rollout leaves the active policy. A guarded rollout names steps, not a percent."""

from __future__ import annotations

import time
from typing import Any

import pytest

from hybridinfer.control.audit import SYSTEM, AuditLog
from hybridinfer.control.rollout import RolloutMonitor
from hybridinfer.control.rolloutwalk import RolloutWalks, side_of, split_figures
from hybridinfer.control.walker import ACTOR, Walker
from hybridinfer.errors import ConfigError
from hybridinfer.policy.document import CompiledPolicy, compile_policy
from hybridinfer.store.sql import SqlStore

both_stores = pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)

POLICY = compile_policy(
    """\
version: ab-1
rollouts:
  - task: sentiment
    model: small
    candidate: "2"
    guard: {steps: [20, 50, 100], dwell_s: 10, min_requests: 4, max_error_rate_increase: 0.1}
"""
)
ROLLOUT = POLICY.policy.rollouts[0]
WITHOUT = compile_policy("version: ab-2\n")


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


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
    candidate, baseline = split_figures(traces, ROLLOUT, "ab-1")
    assert (candidate.requests, baseline.requests) == (1, 1)
    assert candidate.error_rate == 0.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("percent: 20, guard: {}", "not percent"),
        ("guard: {}, promote_when: {min_requests: 5}", "not both"),
        ("promote_when: {min_requests: 5}", "needs a percent"),
    ],
)
def test_a_guarded_rollout_names_steps_not_a_percent(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        compile_policy(
            f"version: x\nrollouts:\n  - {{task: t, model: m, candidate: '2', {text}}}\n"
        )
    policy = compile_policy(
        "version: x\nrollouts:\n  - {task: t, model: m, candidate: '2', guard: {}}\n"
    )
    assert policy.policy.rollouts[0].start_percent == 5.0  # the default steps' first


class Replica:
    """One replica's rollout monitor and walker on the shared store."""

    def __init__(self, store: SqlStore, clock: Clock, policy: list[CompiledPolicy]) -> None:
        async def flush() -> None:
            return None

        audit = AuditLog(store)
        self.monitor = RolloutMonitor(store, lambda: policy[0], audit)
        self.walker = Walker(store, audit, flush, lease_ttl_s=3.0, clock=clock)
        self.walker.lead(RolloutWalks(store, self.monitor, lambda: policy[0], audit, clock))

    def share(self) -> float:
        return self.monitor.percent(ROLLOUT)

    async def walk(self) -> dict[str, Any]:
        await self.monitor.check()
        walk: dict[str, Any] = self.monitor.describe()[0]["walk"]
        return walk


async def traffic(store: SqlStore, clock: Clock, *, errors: int = 0, count: int = 4) -> None:
    """``count`` requests to each version (``errors`` of the candidate's failing)."""
    clock.now += 0.01
    rows = [trace("1", clock.now + i * 0.001) for i in range(count)]
    rows += [trace("2", clock.now + i * 0.001, error=i < errors) for i in range(count)]
    await store.save_traces(rows)


@both_stores
async def test_a_good_candidate_steps_to_100_and_is_promoted(store: SqlStore) -> None:
    clock = Clock()
    leader, follower = Replica(store, clock, [POLICY]), Replica(store, clock, [POLICY])
    assert leader.share() == 20.0  # before any walk: the first step
    await leader.walker.tick()  # starts the walk at its first step
    assert (await follower.walk())["percent"] == 20.0
    await traffic(store, clock)
    await leader.walker.tick()  # judged: no breach, but the dwell is not over
    assert (await follower.walk())["step"] == 0
    for share in (50.0, 100.0):
        clock.now += 10.0
        await leader.walker.tick()
        assert leader.share() == share  # the leader serves its step at once
        await follower.monitor.check()
        assert follower.share() == share  # the store's step, served by the other replica
        await traffic(store, clock, count=8 if share == 100.0 else 4)
    clock.now += 10.0
    await leader.walker.tick()
    await follower.monitor.check()
    assert follower.share() == 100.0
    described = follower.monitor.describe()[0]
    assert described["status"] == "promoted"
    walk = described["walk"]
    assert walk["status"] == "promoted"
    assert [s["step"] for s in walk["state"]["steps"]] == [0, 1, 2]
    # At 100 % no request is on the baseline: that step is judged on the last baseline seen.
    assert walk["state"]["steps"][2]["baseline"]["requests"] == 4
    assert walk["state"]["steps"][2]["canary"]["requests"] >= 8
    audit = AuditLog(store)
    actions = [e["action"] for e in await audit.list() if e["actor"] == ACTOR]
    assert actions.count("model.walk.step") == 2
    assert {"model.walk.start", "model.walk.promote"} <= set(actions)
    (decision,) = await audit.list(action="model.rollout")
    assert (decision["actor"], decision["after"]["status"]) == (SYSTEM, "promoted")
    assert decision["before"]["percent"] == 100.0
    await leader.walker.tick()  # decided: no walk starts again
    assert len(await audit.list(action="model.walk.start")) == 1


@both_stores
async def test_a_bad_candidate_is_rolled_back_within_its_first_step(store: SqlStore) -> None:
    clock = Clock()
    leader, follower = Replica(store, clock, [POLICY]), Replica(store, clock, [POLICY])
    await leader.walker.tick()
    await traffic(store, clock, errors=2)
    await leader.walker.tick()  # no dwell needed: a breach rolls back as soon as it is judged
    assert leader.share() == 0.0  # the leader serves the rollback at once
    await follower.monitor.check()
    assert follower.share() == 0.0
    described = follower.monitor.describe()[0]
    assert described["status"] == "rolled_back"
    assert [b["guard"] for b in described["walk"]["state"]["breach"]] == ["error_rate"]
    assert "error_rate" in described["decision"]["reason"]
    audit = AuditLog(store)
    (entry,) = await audit.list(action="model.walk.rollback")
    assert entry["after"]["breached"] == "error_rate"
    assert entry["before"]["canary"]["error_rate"] == 0.5
    (decision,) = await audit.list(action="model.rollout")
    assert decision["after"]["status"] == "rolled_back"
    assert decision["after"]["step_percent"] == 20.0


@both_stores
async def test_another_replica_takes_the_walk_over_and_a_dropped_rollout_ends_it(
    store: SqlStore,
) -> None:
    clock = Clock()
    policy = [POLICY]
    leader, follower = Replica(store, clock, policy), Replica(store, clock, policy)
    await leader.walker.tick()
    await traffic(store, clock)
    clock.now += 10.0
    await leader.walker.tick()  # steps up to 50 %
    await traffic(store, clock)
    clock.now += 1.0
    await follower.walker.tick()  # the leader's lease is still good: nothing moves
    assert (await follower.walk())["step"] == 1
    clock.now += 9.5  # the leader died 9.5 s ago: its lease ran out; the dwell is over
    await follower.walker.tick()
    moved = await follower.walk()
    assert (moved["step"], moved["state"]["moved_by"]) == (2, follower.walker.lease.holder)
    assert moved["state"]["steps"][0]["step"] == 0  # the leader's step, kept
    policy[0] = WITHOUT  # a policy without the rollout is applied
    await follower.walker.tick()
    walk = await follower.monitor.walks.get(ROLLOUT.id)
    assert walk is not None
    assert walk.status == "aborted"
    policy[0] = POLICY  # back again, undecided: it walks from the first step again
    await follower.walker.tick()
    again = await follower.monitor.walks.get(ROLLOUT.id)
    assert again is not None
    assert (again.status, again.step) == ("walking", 0)


async def test_with_no_guarded_rollout_and_no_live_walk_the_store_is_not_read(
    store: SqlStore,
) -> None:
    policy = [compile_policy("version: plain-1\n")]
    audit = AuditLog(store)
    monitor = RolloutMonitor(store, lambda: policy[0], audit)
    walks = RolloutWalks(store, monitor, lambda: policy[0], audit)
    reads = 0
    every = walks.walks.all

    async def counted() -> Any:
        nonlocal reads
        reads += 1
        return await every()

    walks.walks.all = counted  # type: ignore[method-assign]
    assert await walks.due() == []  # the first look reads (a walk may be live)
    for _ in range(5):
        assert await walks.due() == []
    assert reads == 1
    policy[0] = POLICY  # a guarded rollout: its walk starts on the next look
    [started] = await walks.due()
    assert (started.key, started.status, reads) == (ROLLOUT.id, "walking", 2)
