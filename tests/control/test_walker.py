"""The walk machinery's stepping, with fakes: a step waits for ``min_requests`` on both sides;
a breach rolls back without waiting for the dwell; a step that held for ``dwell_s`` moves up,
the last one promotes; the 100 % step (and a step short of baseline requests) is judged on the
baseline figures the walk stored. The walker serves each move through its subject before the
walk row records it, and audits it under the subject's kind."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from hybridinfer.control.audit import AuditLog
from hybridinfer.control.walker import ACTOR, Move, Walker, next_move
from hybridinfer.policy.guard import Figures, Guard
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.walks import Walk

GUARD = Guard(steps=(5.0, 20.0, 50.0, 100.0), dwell_s=10.0, min_requests=4)
GOOD = Figures(4, 0.0, 5.0, 0.0, 0.0)
ERRORS = Figures(4, 0.5, 5.0, 0.0, 0.0)


def walk(step: int = 0, started: float = 0.0, **state: Any) -> Walk:
    return Walk(
        key="w",
        status="walking",
        step=step,
        step_started_at=started,
        settings=GUARD.model_dump(mode="json"),
        state={"steps": [], **state},
        started_at=0.0,
        updated_at=0.0,
    )


def test_a_step_waits_for_enough_requests_on_both_sides() -> None:
    few = Figures(3, 1.0, 500.0, 1.0, 1.0)
    assert next_move(GUARD, walk(), few, GOOD, now=100.0) is None
    assert next_move(GUARD, walk(), ERRORS, Figures(3, 0.0, 5.0, 0.0, 0.0), now=100.0) is None


def test_a_breach_rolls_back_before_the_dwell_is_over() -> None:
    move = next_move(GUARD, walk(), ERRORS, GOOD, now=1.0)
    assert move is not None
    assert (move.kind, move.status) == ("rollback", "rolled_back")
    assert [b.guard for b in move.breaches] == ["error_rate"]


@pytest.mark.parametrize(
    ("step", "now", "kind", "percent"),
    [(0, 9.9, None, None), (0, 10.0, "step", 20.0), (2, 10.0, "step", 100.0)],
)
def test_a_step_that_held_for_its_dwell_moves_up(
    step: int, now: float, kind: str | None, percent: float | None
) -> None:
    move = next_move(GUARD, walk(step), GOOD, GOOD, now)
    assert (None if move is None else (move.kind, move.percent)) == (
        None if kind is None else (kind, percent)
    )


def test_the_last_step_is_judged_on_the_stored_baseline_and_promotes() -> None:
    stored = {"baseline": Figures(40, 0.0, 5.0, 0.0, 0.0).describe()}
    none = Figures(0, 0.0, 0.0, 0.0, 0.0)
    move = next_move(GUARD, walk(3, **stored), GOOD, none, now=10.0)
    assert move is not None
    assert (move.kind, move.baseline.requests) == ("promote", 40)
    assert next_move(GUARD, walk(3), GOOD, none, now=10.0) is None  # no baseline ever seen
    # Short of baseline requests below 100 %: the stored figures stand in as well.
    short = Figures(2, 0.0, 5.0, 0.0, 0.0)
    rolled = next_move(GUARD, walk(1, **stored), ERRORS, short, now=1.0)
    assert rolled is not None
    assert rolled.baseline.requests == 40


class FakeWalks:
    def __init__(self, walks: list[Walk]) -> None:
        self.rows = {w.key: w for w in walks}
        self.saved: list[dict[str, Any]] = []

    async def save(self, key: str, **values: Any) -> None:
        self.saved.append({"key": key, **values})


class FakeSubject:
    """A subject whose windows are given figures, recording what it is asked to serve."""

    kind = "fake"

    def __init__(self, walks: list[Walk], canary: Figures, baseline: Figures) -> None:
        self.walks = FakeWalks(walks)
        self.figures = (canary, baseline)
        self.served: list[tuple[str, Move]] = []

    async def due(self) -> list[Walk]:
        return list(self.walks.rows.values())

    async def ended(self, walk: Walk) -> str | None:
        return "aborted" if walk.key == "gone" else None

    async def sides(self, walk: Walk, traces: list[dict[str, Any]]) -> tuple[Figures, Figures]:
        return self.figures

    async def serve(self, walk: Walk, move: Move) -> None:
        assert walk.key not in {s["key"] for s in self.walks.saved}  # served, then recorded
        self.served.append((walk.key, move))

    async def recorded(self, walk: Walk) -> None:
        assert walk.key in {s["key"] for s in self.walks.saved}


async def no_flush() -> None:
    return None


@pytest.mark.parametrize(
    ("canary", "status", "action"),
    [(ERRORS, "rolled_back", "fake.walk.rollback"), (GOOD, "walking", "fake.walk.step")],
)
async def test_the_walker_serves_records_and_audits_each_move(
    store: SqlStore, canary: Figures, status: str, action: str
) -> None:
    audit = AuditLog(store)
    walker = Walker(store, audit, no_flush, clock=lambda: 10.0)
    subject = FakeSubject([walk(), replace(walk(), key="gone")], canary, GOOD)
    walker.lead(subject)
    await walker.tick()
    assert [key for key, _ in subject.served] == ["w"]
    by_key = {s["key"]: s for s in subject.walks.saved}
    assert by_key["gone"]["status"] == "aborted"  # moved elsewhere: recorded, not judged
    assert by_key["w"]["status"] == status
    assert by_key["w"]["step"] == (1 if status == "walking" else 0)
    assert by_key["w"]["state"]["steps"][0]["canary"]["requests"] == 4
    (entry,) = await audit.list(action=action)
    assert (entry["actor"], entry["target"]) == (ACTOR, "w")


class CountingSubject:
    """A subject whose walks are asked for, counted; none is under way unless ``walks``."""

    kind = "fake"

    def __init__(self) -> None:
        self.asked = 0
        self.walks: list[Walk] = []

    async def due(self) -> list[Walk]:
        self.asked += 1
        return [replace(w, status="paused") for w in self.walks]


async def test_with_no_walk_under_way_the_loop_ticks_slower_until_nudged(
    store: SqlStore,
) -> None:
    import asyncio

    walker = Walker(store, AuditLog(store), no_flush, tick_s=0.05, lease_ttl_s=2.0)
    subject = CountingSubject()
    walker.lead(subject)  # type: ignore[arg-type]
    walker.start()
    try:
        await asyncio.sleep(1.0)  # idle: a tick every 0.2 s, not every 0.05 s
        idle = subject.asked
        assert 3 <= idle <= 7, idle
        walker.nudge()  # a walk began here: the next tick comes at once
        await asyncio.sleep(0.12)  # within the idle tick it would otherwise wait for
        assert subject.asked == idle + 1
    finally:
        await walker.stop()
