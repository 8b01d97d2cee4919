"""The exchange window: slow answers and timeouts count, dead-path failures do not."""

from __future__ import annotations

from hybridinfer.signals.exchanges import ExchangeWindows


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def exchange(windows: ExchangeWindows, clock: Clock, latency_ms: float, ok: bool) -> None:
    started = windows.now()
    clock.now += latency_ms / 1000.0
    windows.record("n", latency_ms, ok, started)


def test_a_timeout_while_other_exchanges_answered_is_a_slow_sample() -> None:
    clock = Clock()
    windows = ExchangeWindows(window_s=5.0, slow_ms=200.0, clock=clock)
    started = windows.now()  # a call that will time out at 250 ms
    clock.now += 0.1
    windows.record("n", 3.0, True, windows.now())  # another call answered meanwhile
    clock.now += 0.15
    windows.record("n", 250.0, False, started)
    tail = windows.tail("n")
    assert (tail.count, tail.slow_share, tail.p95_ms) == (2, 0.5, 250.0)


def test_failures_while_nothing_answered_are_a_dead_path_and_left_out() -> None:
    clock = Clock()
    windows = ExchangeWindows(window_s=5.0, slow_ms=200.0, clock=clock)
    exchange(windows, clock, 3.0, True)
    for _ in range(5):  # a cut: every exchange times out, nothing answers
        exchange(windows, clock, 250.0, False)
    assert windows.tail("n").count == 1
    assert windows.tail("n").slow_share == 0.0
    assert windows.tail("never").count == 0


def test_the_window_forgets_what_is_older_than_its_span() -> None:
    clock = Clock()
    windows = ExchangeWindows(window_s=5.0, slow_ms=200.0, clock=clock)
    exchange(windows, clock, 1500.0, True)
    exchange(windows, clock, 3.0, True)
    assert windows.tail("n").p95_ms == 1500.0
    clock.now += 5.0
    exchange(windows, clock, 3.0, True)
    assert windows.tail("n").slow_share == 0.0
    assert windows.tail("n").count == 1
