"""Hit, miss and saved-spend counts per capability, read by ``/metrics`` and the dashboard
(the hit ratio per capability is ``hit + semantic`` over all results of its counter)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector


@dataclass(slots=True)
class CapabilityCounts:
    """One capability's lookups and what the hits saved."""

    hits: int = 0
    semantic_hits: int = 0
    misses: int = 0
    errors: int = 0
    saved: float = 0.0

    @property
    def lookups(self) -> int:
        return self.hits + self.semantic_hits + self.misses + self.errors

    @property
    def hit_ratio(self) -> float:
        return (self.hits + self.semantic_hits) / self.lookups if self.lookups else 0.0


@dataclass(slots=True)
class AnswerStats:
    """Counts since this process started (Prometheus sums replicas)."""

    by_capability: dict[str, CapabilityCounts] = field(
        default_factory=lambda: defaultdict(CapabilityCounts)
    )

    def hit(self, capability: str, kind: str, saved: float) -> None:
        counts = self.by_capability[capability]
        if kind == "semantic":
            counts.semantic_hits += 1
        else:
            counts.hits += 1
        counts.saved += saved

    def missed(self, capability: str) -> None:
        self.by_capability[capability].misses += 1

    def failed(self, capability: str) -> None:
        self.by_capability[capability].errors += 1

    def summary(self) -> dict[str, Any]:
        """Per capability: lookups, hits (exact, semantic), misses, errors, ratio, saved."""
        return {
            capability: {
                "lookups": counts.lookups,
                "hits": counts.hits,
                "semantic_hits": counts.semantic_hits,
                "misses": counts.misses,
                "errors": counts.errors,
                "hit_ratio": round(counts.hit_ratio, 4),
                "saved_spend": round(counts.saved, 6),
            }
            for capability, counts in sorted(self.by_capability.items())
        }


class AnswerCollector(Collector):
    """``hybridinfer_answer_lookups_total{capability,result}`` (result: hit, semantic, miss,
    error) and ``hybridinfer_answer_saved_spend_total{capability}``, read at scrape time."""

    def __init__(self, stats: AnswerStats) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        lookups = CounterMetricFamily(
            "hybridinfer_answer_lookups",
            "Cache-stage lookups of subtask answers, by capability and result.",
            labels=["capability", "result"],
        )
        saved = CounterMetricFamily(
            "hybridinfer_answer_saved_spend",
            "Spend the reused answers saved (their per-call cost), by capability.",
            labels=["capability"],
        )
        for capability, counts in list(self._stats.by_capability.items()):
            lookups.add_metric([capability, "hit"], counts.hits)
            lookups.add_metric([capability, "semantic"], counts.semantic_hits)
            lookups.add_metric([capability, "miss"], counts.misses)
            lookups.add_metric([capability, "error"], counts.errors)
            saved.add_metric([capability], counts.saved)
        yield lookups
        yield saved
