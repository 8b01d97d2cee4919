"""The metrics-cost benchmark's rounds: work one mode leaves queued is charged to no mode."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter

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
    assert round(max(leaked["none"] + leaked["all"]), 9) == 1.5


def test_every_round_runs_each_mode_once_and_no_mode_always_follows_another() -> None:
    order: list[str] = []

    async def run(mode: str) -> None:
        order.append(mode)

    async def untimed(mode: str, index: int) -> None:
        return None

    modes = ("direct", "none", "spans")
    asyncio.run(paired_rounds(300, 0, modes, run, untimed))
    rounds = [order[i : i + 3] for i in range(0, len(order), 3)]
    assert all(sorted(r) == sorted(modes) for r in rounds)
    follows = Counter(itertools.pairwise(order))
    # every ordered pair of different modes occurs, none far from its fair share (~1/6)
    pairs = [(a, b) for a in modes for b in modes if a != b]
    shares = [follows[pair] / (len(order) - 1) for pair in pairs]
    assert min(shares) > 0.10
    assert max(shares) < 0.23
