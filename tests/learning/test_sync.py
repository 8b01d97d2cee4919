"""Two replicas' learners on one store agree; a restart rebuilds; a reset reaches both;
feedback within the window replaces the implicit quality. Real SQLite and PostgreSQL."""

from __future__ import annotations

import time

from hybridinfer.learning.engine import Learners
from hybridinfer.learning.sync import LearnerSync
from hybridinfer.policy.learning import LearningPolicy
from hybridinfer.store.learnerlog import LearnerLog
from hybridinfer.store.sql import SqlStore
from tests.store.test_learnerlog import outcome

POLICY = LearningPolicy(enabled=True, feedback_window_s=10.0, half_life=50)
LOCAL, CLOUD = "local/small:1", "cloud-1/large:1"
CONTEXT = (1.0, 0.5, 0.5, 0.2)


def replica(store: SqlStore) -> tuple[Learners, LearnerSync]:
    learners = Learners(lambda: POLICY, seed=1)
    return learners, LearnerSync(learners, LearnerLog(store), lambda: POLICY.feedback_window_s)


def estimate(learners: Learners, arm: str) -> float:
    bandit = learners.bandits["text-classification"]
    return bandit.estimate(arm, CONTEXT, (1.0, 1.0, 1.0)).mean


async def test_replicas_apply_the_same_log_and_agree(store: SqlStore) -> None:
    (first, first_sync), (second, second_sync) = replica(store), replica(store)
    first.pending = [outcome(f"a{i}", LOCAL) for i in range(20)]
    second.pending = [outcome(f"b{i}", CLOUD) for i in range(20)]
    assert await first_sync.step(now=200.0) == 20  # its own rows, written and due
    assert await second_sync.step(now=200.0) == 40
    await first_sync.step(now=200.0)
    for arm in (LOCAL, CLOUD):
        assert estimate(first, arm) == estimate(second, arm)
    restarted, restarted_sync = replica(store)
    assert await restarted_sync.step(now=200.0) == 40
    assert estimate(restarted, CLOUD) == estimate(first, CLOUD)


async def test_an_outcome_waits_for_its_window_and_takes_the_feedback_given_in_it(
    store: SqlStore,
) -> None:
    learners, sync = replica(store)
    log = LearnerLog(store)
    now = time.time()
    learners.pending = [outcome(f"r{i}", LOCAL, created_at=now) for i in range(10)]
    learners.pending += [outcome(f"late{i}", CLOUD, created_at=now - 9.5) for i in range(10)]
    assert await sync.step(now=now + 5.0) == 0  # inside the 10 s window: not yet learned
    for i in range(10):  # within the window for r*, too late for late*
        await log.add_feedback(f"r{i}", "k1", 0.0, {"request_id": f"r{i}", "correct": False})
        await log.add_feedback(f"late{i}", "k1", 0.0, {"request_id": f"late{i}", "score": 0})
    assert await sync.step(now=now + 11.0) == 20
    bandit = learners.bandits["text-classification"]
    quality_only = (1.0, 0.0, 0.0)
    # Implicit quality 0.8; "correct: false" made it 0 where it came within the window.
    assert bandit.estimate(LOCAL, CONTEXT, quality_only).mean < 0.2
    assert bandit.estimate(CLOUD, CONTEXT, quality_only).mean > 0.6


async def test_a_reset_on_one_replica_reaches_the_other(store: SqlStore) -> None:
    (first, first_sync), (second, second_sync) = replica(store), replica(store)
    first.pending = [outcome(f"a{i}", LOCAL) for i in range(10)]
    await first_sync.step(now=200.0)
    await second_sync.step(now=200.0)
    assert "text-classification" in second.bandits
    await LearnerLog(store).reset("text-classification")
    second.pending = [outcome("after", CLOUD)]
    await second_sync.step(now=200.0)
    await first_sync.step(now=200.0)
    for learners in (first, second):
        arms = learners.bandits["text-classification"].arms
        assert set(arms) == {CLOUD}
        assert arms[CLOUD].observed == 1


async def test_with_learning_off_the_loop_reads_nothing_and_catches_up_once_on(
    store: SqlStore,
) -> None:
    import asyncio

    enabled = False
    learners = Learners(lambda: POLICY, seed=1)
    outcome_log = LearnerLog(store)
    await outcome_log.append([outcome(f"o{i}", LOCAL, created_at=100.0) for i in range(5)])
    reads = 0
    since = outcome_log.since

    async def counted(after_id: int, limit: int = 1000) -> list[dict[str, object]]:
        nonlocal reads
        reads += 1
        return await since(after_id, limit)

    outcome_log.since = counted  # type: ignore[method-assign,assignment]
    sync = LearnerSync(
        learners, outcome_log, lambda: POLICY.feedback_window_s, 0.02, lambda: enabled
    )
    sync.start()
    try:
        await asyncio.sleep(0.3)
        assert reads == 0  # off, nothing pending: no round
        enabled = True
        await asyncio.sleep(0.3)
    finally:
        await sync.stop()
    assert reads > 0
    assert sync.applied_id > 0  # the rows written while it was off are applied now
