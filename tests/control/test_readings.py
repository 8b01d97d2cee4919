"""``PlaneReadings``: each reading comes from the part that owns it, and the metrics collector
exposes them through the ``Readings`` protocol alone."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from hybridinfer.control.ratelimit import RateLimiter
from hybridinfer.control.readings import PlaneReadings
from hybridinfer.control.worker import WorkerCounts
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.errors import UpstreamUnavailable
from hybridinfer.execute.cpuload import CpuTimes, LocalCpu
from hybridinfer.execute.executor import Executor
from hybridinfer.observe.metrics import Metrics
from hybridinfer.server.shedding import GatewayLoad
from hybridinfer.signals.budget import BudgetState
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.tracesink import TraceSink
from tests.fakes import deployment, node


def readings(store: SqlStore, counts: WorkerCounts) -> tuple[PlaneReadings, Executor]:
    registry = NodeRegistry()
    registry.add(
        node(
            "edge",
            Tier.EDGE,
            Zone.PRIVATE,
            deployment("edge", "m", quality=0.9, latency_ms=5.0, cost=0.25),
        )
    )
    executor = Executor({}, Signals())
    cpu = LocalCpu([], executor.limiter("edge"), read=lambda: CpuTimes(0.0, 1.0))
    cpu.cpu = 0.5
    load = GatewayLoad(max_in_flight=4, max_queued=8)
    load.shed = 3
    limiter = RateLimiter(60)
    limiter.cache_errors = 2
    plane = PlaneReadings(
        registry=registry,
        executor=executor,
        budget=lambda: BudgetState(1.5, 0.0, 10.0, None),
        traces=TraceSink(store),
        rate_limiter=limiter,
        job_counts=lambda: counts,
        gateway_load=load,
        local_cpu=cpu,
    )
    return plane, executor


def test_each_reading_is_the_owners_figure(store: SqlStore) -> None:
    counts = WorkerCounts(completed=4, dead_lettered=1)
    plane, executor = readings(store, counts)
    for _ in range(3):  # the default breaker opens on the third failure
        executor.breakers.on_result("edge/m:1", UpstreamUnavailable("down"))

    assert [n.id for n in plane.nodes()] == ["edge"]
    assert plane.breaker_states() == {"edge/m:1": "open"}
    assert plane.budget().spent_global == 1.5
    assert plane.rate_limit_cache_errors() == 2
    assert list(plane.job_outcomes().items()) == [
        ("completed", 4),
        ("failed", 0),
        ("retried", 0),
        ("dead_lettered", 1),
        ("duplicates", 0),
    ]
    assert plane.gateway_load().shed == 3
    assert set(plane.admission_limiters()) == {"edge"}
    assert plane.local_cpu() == 0.5
    counts.completed += 1  # read at each scrape, not copied once
    assert plane.job_outcomes()["completed"] == 5


def test_cost_of_a_deployment_and_of_one_gone(store: SqlStore) -> None:
    plane, _ = readings(store, WorkerCounts())
    assert plane.cost_of("edge/m:1") == 0.25
    assert plane.cost_of("edge/other:1") == 0.0
    assert plane.cost_of("gone/m:1") == 0.0


def test_the_collector_exposes_the_readings(store: SqlStore) -> None:
    plane, _ = readings(store, WorkerCounts(retried=2))
    text = Metrics(plane).exposition(queue_depth=7).decode()
    values = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    assert values[("hybridinfer_node_up", (("node", "edge"),))] == 1.0
    assert values[("hybridinfer_budget_spent", ())] == 1.5
    assert values[("hybridinfer_budget_limit", ())] == 10.0
    assert values[("hybridinfer_tasks_total", (("outcome", "retried"),))] == 2
    assert values[("hybridinfer_ratelimit_cache_errors_total", ())] == 2
    assert values[("hybridinfer_overloaded_total", (("where", "gateway"),))] == 3
    assert values[("hybridinfer_local_cpu", ())] == 0.5
    assert values[("hybridinfer_task_queue_depth", ())] == 7
