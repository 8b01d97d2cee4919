"""The metrics collector's readings (``observe.metrics.Readings``), taken from the parts that
hold them. The collector sees these ten readings, not the control plane, so it cannot grow a
dependency on the rest of it; the composition root builds this once from its parts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from hybridinfer.control.ratelimit import RateLimiter
from hybridinfer.control.worker import WorkerCounts
from hybridinfer.core.topology import Node
from hybridinfer.errors import NotFound
from hybridinfer.execute.admission import PriorityLimiter
from hybridinfer.execute.cpuload import LocalCpu
from hybridinfer.execute.executor import Executor
from hybridinfer.server.shedding import GatewayLoad
from hybridinfer.signals.budget import BudgetState
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store.tracesink import TraceSink


class PlaneReadings:
    """Reads each figure from the one part that owns it, at scrape time."""

    def __init__(
        self,
        *,
        registry: NodeRegistry,
        executor: Executor,
        budget: Callable[[], BudgetState],
        traces: TraceSink,
        rate_limiter: RateLimiter,
        job_counts: Callable[[], WorkerCounts],
        gateway_load: GatewayLoad,
        local_cpu: LocalCpu,
    ) -> None:
        """``budget`` and ``job_counts`` are called at each scrape: the policy that sets the
        limit changes while the gateway runs, and the workers own their counts."""
        self._registry = registry
        self._executor = executor
        self._budget = budget
        self._traces = traces
        self._rate_limiter = rate_limiter
        self._job_counts = job_counts
        self._gateway_load = gateway_load
        self._local_cpu = local_cpu

    def nodes(self) -> list[Node]:
        return self._registry.nodes()

    def breaker_states(self) -> Mapping[str, str]:
        return self._executor.breakers.states()

    def budget(self) -> BudgetState:
        return self._budget()

    def trace_writes(self) -> TraceSink:
        return self._traces

    def rate_limit_cache_errors(self) -> int:
        return self._rate_limiter.cache_errors

    def job_outcomes(self) -> Mapping[str, int]:
        """completed, failed, retried, dead_lettered, duplicates: the counts' field order."""
        return dataclasses.asdict(self._job_counts())

    def gateway_load(self) -> GatewayLoad:
        return self._gateway_load

    def admission_limiters(self) -> Mapping[str, PriorityLimiter]:
        return self._executor.limiters()

    def local_cpu(self) -> float:
        return self._local_cpu.cpu

    def cost_of(self, deployment_id: str) -> float:
        node_id = deployment_id.partition("/")[0]
        try:
            node = self._registry.get(node_id)
        except NotFound:  # a node that left since the call: its cost is unknown
            return 0.0
        for deployment in node.deployments:
            if deployment.id == deployment_id:
                return deployment.cost_per_call
        return 0.0
