from __future__ import annotations

import numpy as np

from hybridinfer.models.inline import InlineRuns, input_size


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_nothing_runs_inline_before_a_run_of_its_size_was_timed() -> None:
    gate = InlineRuns(max_s=0.001, clock=Clock())
    assert not gate.admits(0)
    gate.observe(100, 0.0002, inline=False)
    assert gate.admits(100)
    assert gate.admits(40)
    assert not gate.admits(101)  # larger than any seen in time: to a thread, timed there


def test_a_slow_run_sends_its_size_and_larger_back_to_the_thread() -> None:
    gate = InlineRuns(max_s=0.001, clock=Clock())
    gate.observe(100, 0.0002, inline=False)
    gate.observe(80, 0.005, inline=False)
    assert gate.bound == 79
    assert not gate.admits(80)
    assert gate.admits(79)
    gate.observe(100, 0.0003, inline=False)  # in time again on the thread: the bound returns
    assert gate.admits(100)


def test_a_slow_run_above_the_bound_leaves_it_alone() -> None:
    gate = InlineRuns(max_s=0.001, clock=Clock())
    gate.observe(100, 0.0002, inline=False)
    gate.observe(5000, 0.01, inline=False)
    assert gate.bound == 100


def test_the_loop_spends_at_most_its_share_on_inline_runs() -> None:
    clock = Clock()  # binary fractions of a second: the sums below are exact
    gate = InlineRuns(max_s=0.25, share=0.125, burst_s=0.5, clock=clock)
    gate.observe(10, 0.125, inline=False)  # a thread's run spends nothing
    ran = 0
    while gate.admits(10):
        gate.observe(10, 0.125, inline=True)
        ran += 1
    assert ran == 4  # the burst, an eighth of a second a run
    clock.now += 2.0  # two seconds at an eighth: a quarter of a second back
    assert gate.admits(10)
    gate.observe(10, 0.125, inline=True)
    assert gate.admits(10)
    gate.observe(10, 0.125, inline=True)
    assert not gate.admits(10)
    assert gate.runs == 6


def test_input_size_counts_bytes_and_string_lengths() -> None:
    numbers = np.zeros((2, 3), np.float32)
    text = np.array([["hello", "world!"]], dtype=object)
    assert input_size({"x": numbers}) == 24
    assert input_size({"text": text}) == 11
    assert input_size({"x": numbers, "text": text}) == 35
