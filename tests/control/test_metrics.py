"""``MetricsService``: one scrape reads the queue's depth, and an unreachable queue is a -1
in the exposition, not a failed scrape; a worker's scrape holds every worker's metrics."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from hybridinfer.control.metrics import MetricsService, worker_expositions
from hybridinfer.core.topology import Node
from hybridinfer.errors import QueueUnavailable
from hybridinfer.observe.metrics import Metrics
from hybridinfer.queue.memory import MemoryQueue
from hybridinfer.server.shedding import GatewayLoad
from hybridinfer.settings import Settings
from hybridinfer.signals.budget import BudgetState


class Counters:
    written = dropped = buffered = 0


class QuietPlane:
    """Readings of a gateway with nothing registered and nothing done yet."""

    def nodes(self) -> list[Node]:
        return []

    def breaker_states(self) -> Mapping[str, str]:
        return {}

    def budget(self) -> BudgetState:
        return BudgetState(0.0, 0.0, None, None)

    def trace_writes(self) -> Counters:
        return Counters()

    def rate_limit_cache_errors(self) -> int:
        return 0

    def job_outcomes(self) -> Mapping[str, int]:
        return {}

    def gateway_load(self) -> GatewayLoad:
        return GatewayLoad(max_in_flight=1, max_queued=1)

    def admission_limiters(self) -> Mapping[str, object]:
        return {}

    def local_cpu(self) -> float:
        return 0.0

    def cost_of(self, deployment_id: str) -> float:
        return 0.0


class UnreachableQueue(MemoryQueue):
    async def depth(self) -> int:
        raise QueueUnavailable("the queue is away")


def queue_depth(exposition: bytes) -> float:
    for family in text_string_to_metric_families(exposition.decode()):
        if family.name == "hybridinfer_task_queue_depth":
            return float(family.samples[0].value)
    raise AssertionError("no queue depth exposed")


async def test_the_scrape_carries_the_queue_depth() -> None:
    queue = MemoryQueue()
    await queue.connect()
    await queue.publish(b"a")
    await queue.publish(b"b")
    scrape = MetricsService(Metrics(QuietPlane()), queue)
    assert queue_depth(await scrape.exposition()) == 2


async def test_an_unreachable_queue_is_minus_one() -> None:
    scrape = MetricsService(Metrics(QuietPlane()), UnreachableQueue())
    assert queue_depth(await scrape.exposition()) == -1


async def test_a_worker_scrape_holds_every_worker_labelled(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, workers=2)
    assert worker_expositions(settings) is None  # the parent, or a single process
    scrapes = []
    for index in (0, 1):
        expositions = worker_expositions(settings.model_copy(update={"worker_index": index}))
        assert expositions is not None
        scrape = MetricsService(Metrics(QuietPlane()), MemoryQueue(), expositions)
        await expositions.start(scrape.own_exposition)
        scrapes.append(scrape)
    try:
        merged = await scrapes[1].exposition()
    finally:
        for scrape in scrapes:
            assert scrape.workers is not None
            await scrape.workers.stop()
    depths = {
        sample.labels["worker"]
        for family in text_string_to_metric_families(merged.decode())
        if family.name == "hybridinfer_task_queue_depth"
        for sample in family.samples
    }
    assert depths == {"0", "1"}
