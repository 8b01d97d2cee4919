"""Request metrics' resolved children: the series a request increments is the one exported."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from hybridinfer.observe.metrics import Children


def test_children_resolve_each_label_set_once_and_count_into_the_exported_series() -> None:
    registry = CollectorRegistry()
    counter = Counter("things", "Things.", ("tier", "status"), registry=registry)
    children = Children(counter)
    first = children("local", "ok")
    assert children("local", "ok") is first
    assert children("cloud", "ok") is not first
    for _ in range(3):
        children("local", "ok").inc()
    children("cloud", "error").inc()
    assert registry.get_sample_value("things_total", {"tier": "local", "status": "ok"}) == 3
    assert registry.get_sample_value("things_total", {"tier": "cloud", "status": "error"}) == 1
    assert registry.get_sample_value("things_total", {"tier": "cloud", "status": "ok"}) == 0
