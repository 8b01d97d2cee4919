"""Guarded canary walks on a real store: a good canary walks every step and is promoted; a
bad one is rolled back at the first judged step with the breached guard named in the audit;
only the lease holder moves a walk, and another replica takes over where the store says it
was; a walk can be paused, resumed and aborted."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hybridinfer.control.audit import AuditLog
from hybridinfer.control.canarywalk import ACTOR, CanaryWalker, figures_of
from hybridinfer.control.policycenter import PolicyCenter
from hybridinfer.errors import InvalidTransition, NotFound
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store.sql import SqlStore

both_stores = pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)

CANARY = "version: next-1\nguard: {steps: [20, 100], dwell_s: 10, min_requests: 5}\n"


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def trace(version: str, at: float, *, error: bool = False, cloud: bool = False) -> dict[str, Any]:
    deployment = "cloud-1/large:1" if cloud else "local/small:1"
    tier = "cloud" if cloud else "local"
    return {
        "request_id": f"r-{at}-{version}-{error}",
        "task": "sentiment",
        "status": "error" if error else "ok",
        "created_at": at,
        "timings_ms": {"total": 5.0},
        "policy_version": version,
        "decisions": [
            {
                "subtask": "classify",
                "chosen": deployment,
                "tier": tier,
                "policy_version": version,
                "reason": "test",
                "candidates": [{"deployment": "cloud-1/large:1", "cost_per_call": 0.001}],
            }
        ],
        "attempts": []
        if error
        else [{"subtask": "classify", "deployment": deployment, "tier": tier, "status": "ok"}],
    }


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def center(store: SqlStore, tmp_path: Path) -> AsyncIterator[PolicyCenter]:
    seed = tmp_path / "policy.yaml"
    seed.write_text("version: base-1\n")
    policies = PolicyCenter(
        store, NodeRegistry(), seed, poll_interval_s=3600, audit=AuditLog(store)
    )
    await policies.start()
    await policies.apply(CANARY, "ops", stage=True)
    yield policies
    await policies.stop()


def walker(store: SqlStore, center: PolicyCenter, clock: Clock) -> CanaryWalker:
    async def flush() -> None:
        return None

    return CanaryWalker(store, center, AuditLog(store), flush, lease_ttl_s=3.0, clock=clock)


async def traffic(store: SqlStore, clock: Clock, canary: dict[str, bool], count: int = 6) -> None:
    clock.now += 0.01
    rows = [trace("base-1", clock.now + i * 0.001) for i in range(count)]
    rows += [trace("next-1", clock.now + i * 0.001, **canary) for i in range(count)]
    await store.save_traces(rows)


def test_figures_count_errors_cloud_answers_and_spend() -> None:
    figures = figures_of(
        [trace("v", 1.0), trace("v", 2.0, cloud=True), trace("v", 3.0, error=True)]
    )
    assert figures.requests == 3
    assert figures.error_rate == pytest.approx(1 / 3)
    assert figures.cloud_share == pytest.approx(1 / 3)
    assert figures.spend_per_request == pytest.approx(0.001 / 3)


@both_stores
async def test_a_good_canary_walks_every_step_and_is_promoted(
    store: SqlStore, center: PolicyCenter, clock: Clock
) -> None:
    walk = walker(store, center, clock)
    started = await walk.begin("next-1", "ops")
    assert started["percent"] == 20.0
    assert center.canary_state() is not None
    await traffic(store, clock, {})
    await walk.tick()
    assert (await walk.describe("next-1"))["step"] == 0  # judged, but the dwell is not over
    clock.now += 10.0
    await walk.tick()
    assert (await walk.describe("next-1"))["percent"] == 100.0
    await traffic(store, clock, {})
    clock.now += 10.0
    await walk.tick()
    final = await walk.describe("next-1")
    assert final["status"] == "promoted"
    assert len(final["state"]["steps"]) == 2
    assert center.current().version == "next-1"
    actions = [e["action"] for e in await AuditLog(store).list() if e["actor"] == ACTOR]
    assert {"policy.walk.step", "policy.walk.promote", "policy.promote"} <= set(actions)


@pytest.mark.parametrize(
    ("canary", "guard"), [({"error": True}, "error_rate"), ({"cloud": True}, "cloud_share")]
)
@both_stores
async def test_a_bad_canary_is_rolled_back_at_once_naming_the_guard(
    store: SqlStore, center: PolicyCenter, clock: Clock, canary: dict[str, bool], guard: str
) -> None:
    walk = walker(store, center, clock)
    await walk.begin("next-1", "ops")
    await traffic(store, clock, canary)
    await walk.tick()  # no dwell needed: a breach rolls back as soon as it is judged
    described = await walk.describe("next-1")
    assert described["status"] == "rolled_back"
    assert guard in [b["guard"] for b in described["state"]["breach"]]
    assert center.canary_state() is None
    (entry,) = await AuditLog(store).list(action="policy.walk.rollback")
    assert guard in entry["after"]["breached"]


@both_stores
async def test_only_the_lease_holder_moves_and_another_takes_over(
    store: SqlStore, center: PolicyCenter, clock: Clock
) -> None:
    leader, follower = walker(store, center, clock), walker(store, center, clock)
    await leader.begin("next-1", "ops")
    await traffic(store, clock, {})
    clock.now += 2.0
    await leader.tick()  # leads; judged, the dwell is not over
    clock.now += 2.0
    await follower.tick()  # the leader's lease is still good: nothing moves
    assert (await follower.describe("next-1"))["step"] == 0
    clock.now += 6.5  # the leader died 6.5 s ago: its lease ran out; the dwell is over
    await follower.tick()
    moved = await follower.describe("next-1")
    assert moved["percent"] == 100.0
    assert moved["state"]["moved_by"] == follower.lease.holder != leader.lease.holder


@both_stores
async def test_pause_resume_abort(store: SqlStore, center: PolicyCenter, clock: Clock) -> None:
    walk = walker(store, center, clock)
    await walk.begin("next-1", "ops", dwell_s=1.0, min_requests=2)
    assert (await walk.pause("next-1", "ops"))["status"] == "paused"
    with pytest.raises(InvalidTransition):
        await walk.pause("next-1", "ops")
    await traffic(store, clock, {})
    clock.now += 5.0
    await walk.tick()
    assert (await walk.describe("next-1"))["step"] == 0  # paused: not judged
    assert (await walk.resume("next-1", "ops"))["status"] == "walking"
    assert (await walk.abort("next-1", "ops"))["status"] == "aborted"
    assert center.canary_state() is None
    with pytest.raises(NotFound):
        await walk.abort("next-1", "ops")
