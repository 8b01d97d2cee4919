"""A live summary of recent traffic for the dashboard (``GET /v1/stats``).

Read from the traces this replica finished lately (the trace sink's in-memory ring), so it
costs nothing per request and answers without the store. Behind several replicas each one
summarises its own traffic; Prometheus (``/metrics``) is the view across replicas.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from hybridinfer.trace import STAGES

TIERS = ("local", "edge", "cloud", "none")
"""``none``: no attempt answered (the request failed before or during execution)."""


def answering_tier(trace: Mapping[str, Any]) -> str:
    """The tier of the first successful attempt, as the request metrics count it."""
    for attempt in trace.get("attempts") or ():
        if attempt.get("status") == "ok":
            return str(attempt.get("tier"))
    return "none"


def _percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"p50": 0.0, "p90": 0.0, "p99": 0.0}
    p50, p90, p99 = np.percentile(np.asarray(samples), [50, 90, 99])
    return {"p50": round(float(p50), 3), "p90": round(float(p90), 3), "p99": round(float(p99), 3)}


def summarise_traffic(
    traces: Iterable[Mapping[str, Any]], now: float, window_s: int = 300, bucket_s: int = 10
) -> dict[str, Any]:
    """Requests of the last ``window_s`` seconds: by status and tier, a per-tier series in
    ``bucket_s`` buckets (oldest first), and latency percentiles per stage and in total."""
    start = now - window_s
    buckets = window_s // bucket_s
    series = {tier: [0] * buckets for tier in TIERS}
    by_status: Counter[str] = Counter()
    by_tier: Counter[str] = Counter()
    timings: dict[str, list[float]] = {stage: [] for stage in (*STAGES, "total")}
    count = 0
    for trace in traces:
        created = float(trace.get("created_at") or 0.0)
        if created < start:
            continue
        count += 1
        tier = answering_tier(trace)
        tier = tier if tier in series else "none"
        by_tier[tier] += 1
        by_status[str(trace.get("status"))] += 1
        series[tier][min(buckets - 1, int((created - start) // bucket_s))] += 1
        for stage, elapsed in (trace.get("timings_ms") or {}).items():
            if stage in timings:
                timings[stage].append(float(elapsed))
    answered = sum(by_tier[tier] for tier in ("local", "edge", "cloud"))
    return {
        "window_s": window_s,
        "requests": count,
        "per_second": round(count / window_s, 3),
        "status": dict(by_status),
        "tiers": {tier: by_tier[tier] for tier in TIERS},
        "cloud_share": round(by_tier["cloud"] / answered, 4) if answered else 0.0,
        "series": {"bucket_s": bucket_s, "start": start, "tiers": series},
        "latency_ms": {stage: _percentiles(samples) for stage, samples in timings.items()},
    }
