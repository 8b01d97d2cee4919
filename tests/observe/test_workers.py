"""The merged exposition of several workers: labelled samples, real Unix sockets."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from hybridinfer.observe.workers import WorkerExpositions, merge, socket_path


def exposition(requests: int) -> bytes:
    registry = CollectorRegistry()
    counter = Counter("hybridinfer_requests", "Requests.", ("status",), registry=registry)
    counter.labels("ok").inc(requests)
    histogram = Histogram("hybridinfer_stage_seconds", "Stage.", registry=registry)
    histogram.observe(0.01)
    return generate_latest(registry)


def samples(text: bytes, name: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            if sample.name == name:
                found[sample.labels.get("worker", "")] = sample.value
    return found


def test_merge_labels_every_sample_with_its_worker_and_keeps_types() -> None:
    merged = merge({"0": exposition(3), "1": exposition(4)})
    assert samples(merged, "hybridinfer_requests_total") == {"0": 3.0, "1": 4.0}
    assert samples(merged, "hybridinfer_stage_seconds_count") == {"0": 1.0, "1": 1.0}
    assert samples(merged, "hybridinfer_worker_up") == {"0": 1.0, "1": 1.0}
    assert b"# TYPE hybridinfer_requests_total counter" in merged
    assert b"# TYPE hybridinfer_stage_seconds histogram" in merged


def test_a_worker_reads_the_others_over_their_sockets_and_skips_one_that_is_gone(
    tmp_path: Path,
) -> None:
    async def scenario() -> tuple[bytes, bytes]:
        first = WorkerExpositions(tmp_path / "workers", 0, 3)
        second = WorkerExpositions(tmp_path / "workers", 1, 3)  # worker 2 never starts

        async def own_second() -> bytes:
            return exposition(5)

        async def own_first() -> bytes:
            return exposition(2)

        await first.start(own_first)
        await second.start(own_second)
        try:
            assert socket_path(tmp_path / "workers", 1).exists()
            both = await first.merged(exposition(2))
        finally:
            await second.stop()
        alone = await first.merged(exposition(2))
        await first.stop()
        return both, alone

    both, alone = asyncio.run(scenario())
    assert samples(both, "hybridinfer_requests_total") == {"0": 2.0, "1": 5.0}
    assert samples(alone, "hybridinfer_worker_up") == {"0": 1.0}
    assert not socket_path(tmp_path / "workers", 0).exists()
    assert (tmp_path / "workers").stat().st_mode & 0o777 == 0o700
