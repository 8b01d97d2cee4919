"""The learner's log on SQLite and PostgreSQL: ordered outcomes, resets, feedback once."""

from __future__ import annotations

import pytest

from hybridinfer.errors import Conflict
from hybridinfer.store.learnerlog import LearnerLog
from hybridinfer.store.sql import SqlStore


def outcome(
    request_id: str, arm: str = "local/small:1", created_at: float = 100.0
) -> dict[str, object]:
    return {
        "capability": "text-classification",
        "arm": arm,
        "context": [1.0, 0.5, 0.5, 0.2],
        "propensity": 0.95,
        "candidates": ["local/small:1", "cloud-1/large:1"],
        "public": int(arm.startswith("cloud")),
        "quality": 0.8,
        "latency": 0.99,
        "cost": 1.0,
        "source": "implicit",
        "mode": "learned",
        "prefer": "balanced",
        "key_id": "k1",
        "request_id": request_id,
        "subtask_id": "classify",
        "created_at": created_at,
    }


async def test_outcomes_come_back_in_order_with_their_context(store: SqlStore) -> None:
    log = LearnerLog(store)
    await log.append([outcome(f"r{i}") for i in range(5)])
    rows = await log.since(0)
    assert [row["request_id"] for row in rows] == [f"r{i}" for i in range(5)]
    assert rows[0]["context"] == [1.0, 0.5, 0.5, 0.2]
    assert rows[0]["candidates"] == ["local/small:1", "cloud-1/large:1"]
    assert [row["request_id"] for row in await log.since(rows[2]["id"], limit=1)] == ["r3"]


async def test_a_reset_forgets_what_came_before_it_and_counts_generations(store: SqlStore) -> None:
    log = LearnerLog(store)
    await log.append([outcome("r1"), outcome("r2")])
    first = await log.reset("text-classification")
    assert first == (1, (await log.since(0))[-1]["id"])
    await log.append([outcome("r3")])
    assert [row["request_id"] for row in await log.records("text-classification")] == ["r3"]
    assert (await log.reset("text-classification"))[0] == 2
    assert await log.records("text-classification") == []
    assert len(await log.since(0)) == 3  # the log keeps them, for evaluation


async def test_one_feedback_per_request(store: SqlStore) -> None:
    log = LearnerLog(store)
    await log.add_feedback("r1", "k1", 0.0, {"request_id": "r1", "correct": False})
    with pytest.raises(Conflict) as raised:
        await log.add_feedback("r1", "k1", 1.0, {"request_id": "r1", "correct": True})
    assert raised.value.error_code == "feedback_exists"
    stored = await log.get_feedback("r1")
    assert stored is not None
    assert stored["quality"] == 0.0
    assert stored["body"] == {"request_id": "r1", "correct": False}
    found = await log.feedback_for(["r1", "r2"])
    assert set(found) == {"r1"}
    assert found["r1"]["key_id"] == "k1"
