"""The one request path every protocol calls: decompose → route → execute → aggregate.

Handlers (REST, OpenAI-compatible, queue consumers) translate their protocol and call
``Pipeline.infer``; the logic lives here once.
"""

from __future__ import annotations

import time
from typing import Any

from hybridinfer.aggregate import aggregate, summarise
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.errors import HybridInferError
from hybridinfer.execute.executor import Executor
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.schemas import InferRequest
from hybridinfer.store.tracesink import TraceSink
from hybridinfer.trace import Trace


class Pipeline:
    """Owns no state: everything it needs is handed in, so replicas are interchangeable."""

    def __init__(
        self,
        decomposer: Decomposer,
        router: Router,
        executor: Executor,
        traces: TraceSink,
        request_timeout_ms: int,
    ) -> None:
        self._decomposer = decomposer
        self._router = router
        self._executor = executor
        self._traces = traces
        self._request_timeout_ms = request_timeout_ms

    async def infer(self, request: InferRequest, trace: Trace) -> dict[str, Any]:
        """The ``/v1/infer`` response body; raises HybridInferError (and records the trace)."""
        trace.task = request.task
        options = request.options
        timeout_ms = min(options.timeout_ms or self._request_timeout_ms, self._request_timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000.0
        try:
            with trace.stage("decompose"):
                plan = self._decomposer.plan(request.task, request.inputs, options.privacy)
                trace.plan = plan.describe()
            with trace.stage("route"):
                route_options = RouteOptions(options.route, options.prefer, options.max_latency_ms)
                decisions = {s.id: self._router.decide(s, route_options) for s in plan.subtasks}
                trace.decisions = [decision.describe() for decision in decisions.values()]
            with trace.stage("execute"):
                results = await self._executor.run(plan, decisions, request.inputs, trace, deadline)
            with trace.stage("aggregate"):
                subtasks = [summarise(results[s.id]) for s in plan.subtasks]
                trace.plan["results"] = subtasks
                status, outputs = aggregate(plan, results, request.inputs)
        except HybridInferError as error:
            trace.error = {"code": error.error_code, "message": error.message}
            trace.finish("error")
            self._traces.record(trace)
            raise
        trace.finish(status)
        self._traces.record(trace)
        return {
            "request_id": trace.request_id,
            "status": status,
            "outputs": outputs,
            "subtasks": subtasks,
            "timings_ms": trace.rounded_timings(),
        }
