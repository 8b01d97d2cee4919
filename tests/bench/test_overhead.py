"""The unloaded bench's paired difference: per-round, so drift common to both sides cancels."""

from __future__ import annotations

from bench.overhead import paired_median
from bench.report_gateway import local_section


def test_the_paired_median_reads_the_difference_not_the_drift() -> None:
    drift = [1.0 + 0.5 * (round_ % 7) for round_ in range(400)]  # the machine slows and speeds
    faster = [value + 0.1 for value in drift]
    slower = [value + 0.25 for value in drift]
    saves = paired_median(slower, faster)
    assert abs(saves["median"] - 0.15) < 1e-9
    assert saves["low"] <= saves["median"] <= saves["high"]
    assert saves["high"] - saves["low"] < 1e-9  # every round differs by the same


def test_the_report_shows_the_threaded_gateway_beside_the_shipped_one() -> None:
    percentile = {"p50": 1.0, "p99": 2.0}
    result = {
        "rounds": 10,
        "direct_ms": {"p50": 0.2, "p99": 0.4},
        "gateway_ms": percentile,
        "http_floor_ms": percentile,
        "overhead_ms": {"p50": 0.8, "p99": 1.6},
        "threaded_gateway_ms": {"p50": 1.3, "p99": 2.5},
        "threaded_overhead_ms": {"p50": 1.1, "p99": 2.1},
        "inline_saves_ms": {"median": 0.3, "low": 0.25, "high": 0.35},
        "server_stage_ms_p50": {"execute": 0.5},
        "target": "overhead p50 <= 0.5 ms",
        "target_p50_ms": 0.5,
    }
    text = "\n".join(local_section(result))
    assert "| overhead, model call on a thread | 1.10 ms | 2.10 ms |" in text
    assert "saves 0.30 ms a request" in text
    assert "0.25 ms to 0.35 ms" in text
    older = {k: v for k, v in result.items() if "threaded" not in k and k != "inline_saves_ms"}
    assert "thread" not in "\n".join(local_section(older))
