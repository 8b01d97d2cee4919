"""``StatsService``: the dashboard's one summary, each figure from the part that holds it."""

from __future__ import annotations

from hybridinfer.control.stats import StatsService
from hybridinfer.core.trace import Trace
from hybridinfer.observe.stats import TrafficWindow
from hybridinfer.signals.budget import BudgetState
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.tracesink import TraceSink


async def test_the_summary_counts_traffic_latency_spend_and_spans(store: SqlStore) -> None:
    traffic = TrafficWindow()
    sink = TraceSink(store)
    sink.observers.append(traffic.record)
    for index in range(3):
        trace = Trace(request_id=f"r-{index}", key_id="app")
        trace.finish("ok")
        sink.record(trace)
    stats = StatsService(
        traffic=traffic,
        traces=sink,
        budget=lambda: BudgetState(2.5, 0.0, 100.0, None),
        telemetry=None,
        exporter="off",
    )

    summary = stats.summary()

    assert summary["latency_of_last"] == 3
    assert "total" in summary["latency_ms"]
    assert summary["spend"] == {"spent": 2.5, "limit": 100.0}
    assert summary["telemetry"] == {"exporter": "off", "exported": 0, "dropped": 0}
    counts = traffic.summary()
    assert counts  # the window's counts, as the window gives them
    assert {key: summary[key] for key in counts} == counts
