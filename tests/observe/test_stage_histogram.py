"""The stage histogram exposes what prometheus_client's own ``Histogram`` would."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from hybridinfer.core.trace import STAGES
from hybridinfer.observe.metrics import STAGE_BUCKETS_S, StageHistogram

# On a bound, between bounds, below the first, past the last, and zero.
SECONDS = (0.0, 0.00005, 0.0001, 0.0003, 0.001, 0.0049, 0.7, 30.0, 31.0, 1e9)


def exposition_without_created(registry: CollectorRegistry) -> list[str]:
    lines = generate_latest(registry).decode().splitlines()
    return [line for line in lines if "_created" not in line]


def test_it_exposes_the_samples_a_prometheus_histogram_would() -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    histogram = StageHistogram("hybridinfer_stage_seconds", "Stage time.", ours)
    reference = Histogram(
        "hybridinfer_stage_seconds",
        "Stage time.",
        ("stage",),
        buckets=STAGE_BUCKETS_S,
        registry=theirs,
    )
    for offset, stage in enumerate(STAGES):
        for seconds in SECONDS[offset:]:  # a different count in each stage
            histogram.observe(stage, seconds)
            reference.labels(stage).observe(seconds)
    assert exposition_without_created(ours) == exposition_without_created(theirs)


def test_every_stage_is_exposed_before_it_is_observed() -> None:
    registry = CollectorRegistry()
    StageHistogram("hybridinfer_stage_seconds", "Stage time.", registry)
    for stage in STAGES:
        count = registry.get_sample_value("hybridinfer_stage_seconds_count", {"stage": stage})
        assert count == 0.0


def test_a_trace_s_timings_are_observed_in_seconds_stage_by_stage() -> None:
    one, each = CollectorRegistry(), CollectorRegistry()
    by_trace = StageHistogram("hybridinfer_stage_seconds", "Stage time.", one)
    by_stage = StageHistogram("hybridinfer_stage_seconds", "Stage time.", each)
    timings_ms = {"gateway": 0.1, "route": 0.25, "execute": 4.9, "total": 99.0}  # no decompose
    by_trace.observe_trace(timings_ms)
    for stage in ("gateway", "route", "execute"):
        by_stage.observe(stage, timings_ms[stage] / 1000.0)
    assert exposition_without_created(one) == exposition_without_created(each)
    assert one.get_sample_value("hybridinfer_stage_seconds_count", {"stage": "decompose"}) == 0.0
    assert (
        one.get_sample_value(
            "hybridinfer_stage_seconds_bucket", {"stage": "execute", "le": "0.005"}
        )
        == 1.0
    )
