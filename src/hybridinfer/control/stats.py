"""The dashboard's summary behind ``GET /v1/stats``: traffic counts, latency percentiles of
the latest traces, spend against the budget, and the span exporter's counters.

The counts come from a ``TrafficWindow`` fed by every finished trace (a trace-sink observer
the composition root adds), so the summary costs nothing on the request path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hybridinfer.observe.stats import TrafficWindow, latency_percentiles
from hybridinfer.observe.telemetry import Telemetry
from hybridinfer.signals.budget import BudgetState
from hybridinfer.store.tracesink import TraceSink


class StatsService:
    """One summary for the dashboard from the parts that hold each figure."""

    def __init__(
        self,
        *,
        traffic: TrafficWindow,
        traces: TraceSink,
        budget: Callable[[], BudgetState],
        telemetry: Telemetry | None,
        exporter: str,
        answers: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        """``exporter``: the ``otel_exporter`` setting (``off`` when ``telemetry`` is None)."""
        self._traffic = traffic
        self._traces = traces
        self._budget = budget
        self._telemetry = telemetry
        self._exporter = exporter
        self._answers = answers

    def summary(self) -> dict[str, Any]:
        """Traffic, ``latency_ms`` over the last traces, ``spend`` and ``telemetry``."""
        recent = self._traces.latest()  # first: it records what is queued
        body = self._traffic.summary()
        body["latency_ms"] = latency_percentiles(recent)
        body["latency_of_last"] = len(recent)
        budget = self._budget()
        body["spend"] = {"spent": budget.spent_global, "limit": budget.limit_global}
        telemetry = self._telemetry
        body["telemetry"] = {
            "exporter": self._exporter,
            "exported": 0 if telemetry is None else telemetry.exported,
            "dropped": 0 if telemetry is None else telemetry.dropped,
        }
        if self._answers is not None:  # hit ratio and saved spend per capability
            body["answers"] = self._answers()
        return body
