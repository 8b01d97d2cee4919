"""The dashboard's traffic counts over hand-made traces and a hand-turned clock: buckets,
the window, tiers and statuses; and latency percentiles per stage."""

from __future__ import annotations

from typing import Any

from hybridinfer.core.trace import Attempt, Trace
from hybridinfer.observe.stats import TrafficWindow, answering_tier, latency_percentiles


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def trace(tier: str | None, status: str = "ok") -> Trace:
    finished = Trace(request_id="r", status=status)
    finished.attempts.append(Attempt("s1", "d", "edge", "n", "m", "primary", status="error"))
    if tier is not None:
        finished.attempts.append(Attempt("s1", "d", tier, "n", "m", "fallback"))
    return finished


def test_the_answering_tier_is_the_first_successful_attempts() -> None:
    assert answering_tier(trace("cloud")) == "cloud"
    assert answering_tier(trace(None, "error")) == "none"


def test_requests_are_counted_by_tier_and_status_in_buckets_within_the_window() -> None:
    clock = Clock()
    window = TrafficWindow(window_s=300, bucket_s=10, clock=clock)
    window.record(trace("local"))
    clock.now += 100
    window.record(trace("local"))
    window.record(trace("cloud"))
    clock.now += 195  # the first request is now 295 s old: still inside
    window.record(trace(None, "error"))
    summary = window.summary()
    assert summary["requests"] == 4
    assert summary["tiers"] == {"local": 2, "edge": 0, "cloud": 1, "none": 1}
    assert summary["status"] == {"ok": 3, "error": 1}
    assert summary["cloud_share"] == round(1 / 3, 4)
    series = summary["series"]["tiers"]
    assert len(series["local"]) == 30
    assert sum(series["local"]) == 2
    assert series["none"][-1] == 1
    clock.now += 10  # the first request leaves the window
    assert window.summary()["tiers"]["local"] == 1
    clock.now += 400
    assert window.summary()["requests"] == 0


def test_every_request_counts_at_any_rate() -> None:
    clock = Clock()
    window = TrafficWindow(clock=clock)
    for _ in range(5000):
        window.record(trace("local"))
        clock.now += 0.01
    assert window.summary()["requests"] == 5000


def test_latency_percentiles_per_stage() -> None:
    bodies: list[dict[str, Any]] = [
        {"timings_ms": {"execute": value, "total": value + 1.0}} for value in (1.0, 2.0, 3.0)
    ]
    latency = latency_percentiles(bodies)
    assert latency["total"]["p50"] == 3.0
    assert latency["execute"]["p99"] > 2.9
    assert latency["route"] == {"p50": 0.0, "p90": 0.0, "p99": 0.0}
