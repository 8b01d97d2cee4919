"""A request's trace: stage timers add up, the gateway's share is what the stages leave, and
attempts are placed on the request's own clock."""

from __future__ import annotations

import time

import pytest

from hybridinfer.core.trace import STAGES, Attempt, Trace
from hybridinfer.core.tracecontext import new_context

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_a_stage_timed_twice_adds_up_and_keeps_its_first_offset() -> None:
    trace = Trace("r1")
    with trace.stage("execute"):
        time.sleep(0.01)
    first_offset = trace.offsets_ms["execute"]
    first = trace.timings_ms["execute"]
    with trace.stage("execute"):
        time.sleep(0.01)

    assert first >= 10.0
    assert trace.timings_ms["execute"] >= first + 10.0
    assert trace.offsets_ms["execute"] == first_offset


def test_a_stage_is_timed_even_when_it_raises() -> None:
    trace = Trace("r1")

    def failing_route() -> None:
        with trace.stage("route"):
            time.sleep(0.005)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        failing_route()
    assert trace.timings_ms["route"] >= 5.0


def test_finish_gives_the_gateway_what_the_stages_leave_and_fills_every_stage() -> None:
    trace = Trace("r1", started=time.perf_counter() - 0.05)
    trace.timings_ms["route"] = 10.0
    trace.timings_ms["execute"] = 20.0

    trace.finish("ok")

    timings = trace.timings_ms
    assert trace.status == "ok"
    assert timings["total"] >= 50.0
    assert timings["gateway"] == pytest.approx(timings["total"] - 30.0)
    assert timings["decompose"] == timings["aggregate"] == 0.0
    assert list(trace.rounded_timings()) == [*STAGES, "total"]


def test_the_gateway_share_is_never_negative() -> None:
    trace = Trace("r1")
    trace.timings_ms["execute"] = 10_000.0  # stages overlapping (parallel subtasks)
    trace.finish("error")
    assert trace.timings_ms["gateway"] == 0.0


def test_describe_places_attempts_after_the_arrival_and_carries_the_trace_id() -> None:
    trace = Trace("r1", context=new_context(f"00-{TRACE}-00f067aa0ba902b7-01"))
    attempt = Attempt(
        "classify",
        "edge/m:1",
        "edge",
        "edge",
        "m",
        "primary",
        latency_ms=1.23456,
        started_at=trace.started + 0.0025,
    )
    trace.attempts.append(attempt)
    trace.offsets_ms["route"] = 0.12345
    trace.finish("ok")

    described = trace.describe()

    (shown,) = described["attempts"]
    assert shown["started_ms"] == pytest.approx(2.5)
    assert shown["latency_ms"] == 1.235
    assert (shown["role"], shown["status"], shown["number"]) == ("primary", "ok", 1)
    assert described["offsets_ms"] == {"route": 0.123}
    assert described["trace_id"] == TRACE
    assert (described["request_id"], described["status"]) == ("r1", "ok")


def test_timings_are_rounded_to_the_microsecond_before_and_after_finishing() -> None:
    trace = Trace(request_id="r")
    trace.timings_ms.update(route=0.1234567, execute=2.0004999)
    assert trace.rounded_timings() == {"route": 0.123, "execute": 2.0}  # the stages so far
    trace.finish("ok")
    rounded = trace.rounded_timings()
    assert list(rounded) == [*STAGES, "total"]
    assert rounded["route"] == 0.123
    assert rounded["decompose"] == 0.0
    assert rounded == {name: round(trace.timings_ms[name], 3) for name in rounded}
