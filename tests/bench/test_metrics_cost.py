"""The metrics-cost benchmark's rounds: work one mode leaves queued is charged to no mode."""

from __future__ import annotations

import asyncio

from bench.metrics_cost import paired_rounds


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def rounds_with(drain: bool) -> dict[str, list[float]]:
    """Three modes timed on a fake clock: each call takes 1 ms, plus whatever a ``spans`` call
    left queued (0.5 ms) if nothing drained it first."""
    clock = FakeClock()
    queued: list[float] = []

    async def run(mode: str) -> None:
        clock.now += 0.001 + sum(queued)  # what is still queued runs inside this call
        queued.clear()
        if mode == "spans":
            queued.append(0.0005)  # an export left for later, as the span writer does

    async def untimed(mode: str, index: int) -> None:
        if drain:
            queued.clear()

    return asyncio.run(paired_rounds(6, 2, ("none", "spans", "all"), run, untimed, clock))


def test_work_a_mode_queues_is_done_between_calls_not_in_the_next_mode() -> None:
    samples = rounds_with(drain=True)
    assert {mode: len(values) for mode, values in samples.items()} == {
        "none": 6,
        "spans": 6,
        "all": 6,
    }
    assert {mode: {round(v, 9) for v in values} for mode, values in samples.items()} == {
        "none": {1.0},
        "spans": {1.0},
        "all": {1.0},
    }
    # what the untimed step is for: left in place, the export lands on whoever runs next
    leaked = rounds_with(drain=False)
    assert round(max(leaked["none"]), 9) == round(max(leaked["all"]), 9) == 1.5
    assert {round(v, 9) for v in leaked["spans"]} == {1.0}


def test_every_round_rotates_which_mode_comes_first() -> None:
    order: list[str] = []

    async def run(mode: str) -> None:
        order.append(mode)

    async def untimed(mode: str, index: int) -> None:
        return None

    asyncio.run(paired_rounds(3, 0, ("a", "b", "c"), run, untimed))
    assert order == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
