"""The dashboard's traffic summary over hand-made traces: the window, tiers, series buckets
and percentiles."""

from __future__ import annotations

from typing import Any

from hybridinfer.stats import answering_tier, summarise_traffic

NOW = 1_000_000.0


def trace(
    age_s: float, tier: str | None, status: str = "ok", total: float = 10.0
) -> dict[str, Any]:
    attempts = (
        []
        if tier is None
        else [{"tier": "edge", "status": "error"}, {"tier": tier, "status": "ok"}]
    )
    return {
        "created_at": NOW - age_s,
        "status": status,
        "attempts": attempts,
        "timings_ms": {"gateway": 1.0, "execute": total - 1.0, "total": total},
    }


def test_the_answering_tier_is_the_first_successful_attempts() -> None:
    assert answering_tier(trace(0, "cloud")) == "cloud"
    assert answering_tier(trace(0, None, "error")) == "none"


def test_traffic_is_counted_by_tier_and_status_within_the_window() -> None:
    traces = [
        trace(400, "local"),  # outside the 300 s window
        trace(295, "local", total=2.0),
        trace(5, "local", total=4.0),
        trace(3, "cloud", total=100.0),
        trace(1, None, "error", total=1.0),
    ]
    summary = summarise_traffic(traces, NOW, window_s=300, bucket_s=10)
    assert summary["requests"] == 4
    assert summary["tiers"] == {"local": 2, "edge": 0, "cloud": 1, "none": 1}
    assert summary["status"] == {"ok": 3, "error": 1}
    assert summary["cloud_share"] == round(1 / 3, 4)
    series = summary["series"]["tiers"]
    assert len(series["local"]) == 30
    assert series["local"][0] == 1  # 295 s ago: the oldest bucket
    assert series["local"][-1] == 1
    assert series["cloud"][-1] == 1
    assert series["none"][-1] == 1
    total = summary["latency_ms"]["total"]
    assert total["p50"] == 3.0
    assert total["p99"] > 90.0
    assert summary["latency_ms"]["route"] == {"p50": 0.0, "p90": 0.0, "p99": 0.0}


def test_no_traffic_is_zeros() -> None:
    summary = summarise_traffic([], NOW)
    assert summary["requests"] == 0
    assert summary["cloud_share"] == 0.0
    assert summary["latency_ms"]["total"]["p50"] == 0.0
