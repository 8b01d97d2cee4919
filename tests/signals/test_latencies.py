from __future__ import annotations

from hybridinfer.signals.latencies import LatencyWindows


def test_p95_needs_enough_samples_and_tracks_the_tail() -> None:
    windows = LatencyWindows(size=100, min_samples=20)
    for latency in range(19):
        windows.observe("d", float(latency))
    assert windows.p95_ms("d") is None
    for latency in range(19, 100):
        windows.observe("d", float(latency))
    assert windows.p95_ms("d") == 95.0
    for _ in range(100):  # the window forgets old calls
        windows.observe("d", 1.0)
    assert windows.p95_ms("d") == 1.0


def test_a_quantile_may_ask_for_fewer_samples_than_the_window_default() -> None:
    windows = LatencyWindows(min_samples=20)
    for latency in (3.0, 9.0, 4.0, 5.0, 2.0):
        windows.observe("d", latency)
    assert windows.quantile_ms("d", 0.99) is None
    assert windows.quantile_ms("d", 0.99, min_samples=5) == 9.0  # over five: their maximum
    assert windows.quantile_ms("other", 0.99, min_samples=5) is None
