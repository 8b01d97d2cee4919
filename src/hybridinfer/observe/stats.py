"""A live summary of recent traffic for the dashboard (``GET /v1/stats``).

Counts come from ``TrafficWindow``, a trace-sink observer that adds each finished request to
a 10 s bucket (a few dict updates per request), so they stay exact at any rate. Latency
percentiles come from the latest traces this replica keeps in memory (the trace sink's ring,
2,000 by default). Behind several replicas each one summarises its own traffic; Prometheus
(``/metrics``) is the view across replicas.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from hybridinfer.core.trace import STAGES, Trace

TIERS = ("local", "edge", "cloud", "none")
"""``none``: no attempt answered (the request failed before or during execution)."""


def answering_tier(trace: Trace) -> str:
    """The tier of the first successful attempt, as the request metrics count it."""
    for attempt in trace.attempts:
        if attempt.status == "ok":
            return attempt.tier if attempt.tier in TIERS else "none"
    return "none"


class TrafficWindow:
    """Finished requests by tier and status, in ``bucket_s`` buckets over ``window_s``."""

    def __init__(
        self, window_s: int = 300, bucket_s: int = 10, clock: Callable[[], float] = time.time
    ) -> None:
        self.window_s = window_s
        self.bucket_s = bucket_s
        self._clock = clock
        self._buckets: deque[tuple[int, Counter[tuple[str, str]]]] = deque()

    def record(self, trace: Trace) -> None:
        """Trace-sink observer: count the request in the current bucket."""
        slot = int(self._clock() // self.bucket_s)
        if not self._buckets or self._buckets[-1][0] != slot:
            self._buckets.append((slot, Counter()))
            while self._buckets[0][0] <= slot - self.window_s // self.bucket_s:
                self._buckets.popleft()
        self._buckets[-1][1][(answering_tier(trace), trace.status)] += 1

    def summary(self) -> dict[str, Any]:
        """Counts by tier and status, and the per-tier series (oldest bucket first)."""
        buckets = self.window_s // self.bucket_s
        last = int(self._clock() // self.bucket_s)
        first = last - buckets + 1
        series = {tier: [0] * buckets for tier in TIERS}
        by_tier: Counter[str] = Counter()
        by_status: Counter[str] = Counter()
        for slot, counts in self._buckets:
            if slot < first:
                continue
            for (tier, status), count in counts.items():
                series[tier][slot - first] += count
                by_tier[tier] += count
                by_status[status] += count
        requests = sum(by_tier.values())
        answered = requests - by_tier["none"]
        return {
            "window_s": self.window_s,
            "requests": requests,
            "per_second": round(requests / self.window_s, 3),
            "status": dict(by_status),
            "tiers": {tier: by_tier[tier] for tier in TIERS},
            "cloud_share": round(by_tier["cloud"] / answered, 4) if answered else 0.0,
            "series": {"bucket_s": self.bucket_s, "start": first * self.bucket_s, "tiers": series},
        }


def _percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"p50": 0.0, "p90": 0.0, "p99": 0.0}
    p50, p90, p99 = np.percentile(np.asarray(samples), [50, 90, 99])
    return {"p50": round(float(p50), 3), "p90": round(float(p90), 3), "p99": round(float(p99), 3)}


def latency_percentiles(traces: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """p50/p90/p99 per stage and in total over ``traces`` (``describe()`` bodies)."""
    timings: dict[str, list[float]] = {stage: [] for stage in (*STAGES, "total")}
    for trace in traces:
        for stage, elapsed in (trace.get("timings_ms") or {}).items():
            if stage in timings:
                timings[stage].append(float(elapsed))
    return {stage: _percentiles(samples) for stage, samples in timings.items()}
