"""The one request path every protocol calls: decompose → route → execute → aggregate.

Handlers (REST, OpenAI-compatible, queue consumers) translate their protocol and call
``Pipeline.infer``; the logic lives here once.
"""

from __future__ import annotations

import time
from typing import Any

from hybridinfer.core.decision import Decision
from hybridinfer.core.plan import Plan, Privacy
from hybridinfer.core.schemas import InferRequest
from hybridinfer.core.trace import Trace
from hybridinfer.decompose.auto import AUTO_TASK, choose_task
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.decompose.names import NameCheck
from hybridinfer.decompose.privacy import apply_privacy_modes, detector_for
from hybridinfer.errors import HybridInferError, InvalidRequest
from hybridinfer.execute.executor import Executor, SubtaskResult, resolve_inputs
from hybridinfer.execute.gate import PrivacyGate
from hybridinfer.execute.reuse import ReuseRequest
from hybridinfer.execute.streaming import StreamExecutor, TokenStream
from hybridinfer.pipeline.aggregate import aggregate, summarise
from hybridinfer.policy.document import PrivacyPolicy
from hybridinfer.policy.privacymodes import PrivacyModes
from hybridinfer.privacy.scrub import scrub
from hybridinfer.route.difficulty import DifficultyScorer, decide_reading_difficulty
from hybridinfer.route.pin import pin
from hybridinfer.route.router import RouteContext, RouteOptions, Router
from hybridinfer.store.tracesink import TraceSink


def privacy_policy(context: RouteContext) -> PrivacyPolicy:
    """The privacy settings of the policy version deciding the request."""
    return context.policy.policy.privacy if context.policy is not None else PrivacyPolicy()


def privacy_modes(context: RouteContext) -> PrivacyModes:
    """The privacy modes per capability of the policy version deciding the request."""
    return context.policy.policy.privacy_modes if context.policy is not None else PrivacyModes()


class Pipeline:
    """Owns no state: everything it needs is handed in, so replicas are interchangeable."""

    def __init__(
        self,
        decomposer: Decomposer,
        router: Router,
        executor: Executor,
        traces: TraceSink,
        request_timeout_ms: int,
        streamer: StreamExecutor | None = None,
        names: NameCheck | None = None,
        difficulty: DifficultyScorer | None = None,
    ) -> None:
        """``names``: the name finder the privacy gate reads inputs with before a public call
        (None: no model; the policy's ``on_detector_failure`` decides what that means)."""
        self._decomposer = decomposer
        self._router = router
        self._executor = executor
        self._traces = traces
        self._request_timeout_ms = request_timeout_ms
        self._streamer = streamer
        self._names = names
        self._difficulty = difficulty

    async def infer(self, request: InferRequest, trace: Trace) -> dict[str, Any]:
        """The ``/v1/infer`` response body; raises HybridInferError (and records the trace)."""
        trace.task = request.task
        options = request.options
        try:
            with trace.stage("decompose"):
                auto = None
                if request.task == AUTO_TASK:
                    auto = choose_task(request.inputs)
                    request = request.model_copy(update={"task": auto.task, "inputs": auto.inputs})
                    trace.task = auto.task
                deadline = self._deadline(request)
                context = self._context(self._route_options(request), request.task, trace)
                privacy = privacy_policy(context)
                plan = self._plan(request, privacy, privacy_modes(context))
                hedging = self._executor.hedging
                for subtask in plan.subtasks:
                    subtask.priority = options.priority
                    subtask.hedge = hedging.wanted(
                        options.hedge,
                        options.max_latency_ms,
                        subtask.latency_sensitive,
                        options.prefer,
                        subtask.capability,
                    )
                trace.plan = plan.describe()
                if auto is not None:
                    trace.plan["auto"] = {"task": auto.task, "reason": auto.reason}
            with trace.stage("route"):
                decisions, unplaced = await self._route(plan, request, trace, context)
            with trace.stage("execute"):
                gate = self._gate(plan, request, privacy, context)
                reuse = self._reuse(request, plan, trace)
                results = await self._executor.run(
                    plan, decisions, request.inputs, trace, deadline, unplaced, gate, reuse
                )
                trace.plan["privacy"] = dict(plan.privacy)
            with trace.stage("aggregate"):
                subtasks = [summarise(results[s.id]) for s in plan.subtasks]
                trace.plan["results"] = subtasks
                reused = {s["id"]: s["reused"] for s in subtasks if "reused" in s}
                if reused:  # the trace names the requests whose answers were reused
                    trace.plan["reused"] = reused
                status, outputs = aggregate(plan, results, request.inputs)
        except HybridInferError as error:
            trace.error = {"code": error.error_code, "message": scrub(error.message)}
            trace.finish("error")
            self._traces.record(trace)
            raise
        trace.finish(status)
        self._traces.record(trace)
        body: dict[str, Any] = {"request_id": trace.request_id, "status": status}
        body["outputs"] = outputs
        if auto is not None:
            body["task"] = auto.task
        body |= {"subtasks": subtasks, "timings_ms": trace.rounded_timings()}
        return body

    def _reuse(self, request: InferRequest, plan: Plan, trace: Trace) -> ReuseRequest | None:
        """What the request allows the cache stage; None when the gateway has none."""
        if self._executor.answers is None:
            return None
        options = request.options
        sensitive = options.privacy is Privacy.SENSITIVE
        sensitive = sensitive or any(s.privacy is Privacy.SENSITIVE for s in plan.subtasks)
        tenant = trace.key_id or "anonymous"
        return ReuseRequest(tenant, options.cache_scope, options.cache, sensitive, plan.privacy)

    @staticmethod
    def _route_options(request: InferRequest) -> RouteOptions:
        options = request.options
        return RouteOptions(options.route, options.prefer, options.max_latency_ms)

    def _plan(self, request: InferRequest, privacy: PrivacyPolicy, modes: PrivacyModes) -> Plan:
        """The request's plan, scanned with the policy's phone regions and failure rule, each
        subtask in its capability's privacy mode."""
        plan = self._decomposer.plan(
            request.task,
            request.inputs,
            request.options.privacy,
            detector_for(tuple(privacy.phone_regions)),
            fail_closed=privacy.on_detector_failure == "sensitive",
        )
        apply_privacy_modes(plan, modes, request.options.privacy)
        return plan

    def _gate(
        self, plan: Plan, request: InferRequest, privacy: PrivacyPolicy, context: RouteContext
    ) -> PrivacyGate:
        """The request's privacy gate (it pseudonymises with the policy's detector)."""
        detector = detector_for(tuple(privacy.phone_regions))
        modes = privacy_modes(context)
        return PrivacyGate(plan, request.inputs, self._names, privacy, modes, detector)

    async def _route(
        self, plan: Plan, request: InferRequest, trace: Trace, context: RouteContext
    ) -> tuple[dict[str, Decision], dict[str, HybridInferError]]:
        """A decision per subtask. A soft subtask nothing can serve is left unplaced (the
        answer is then ``partial``); a hard one fails the request. ``stays_local`` subtasks
        (redaction, restoring values) are placed on the local tier whatever the route says."""
        options = request.options
        local_context = context
        if options.route not in ("auto", "local") and any(s.stays_local for s in plan.subtasks):
            local_options = RouteOptions("local", options.prefer, options.max_latency_ms)
            local_context = self._context(local_options, request.task, trace)
        decisions: dict[str, Decision] = {}
        unplaced: dict[str, HybridInferError] = {}
        for subtask in plan.subtasks:
            try:
                decision = await decide_reading_difficulty(
                    self._router,
                    self._difficulty,
                    subtask,
                    local_context if subtask.stays_local else context,
                    request.inputs,
                )
            except HybridInferError as error:
                if not subtask.soft:
                    raise
                unplaced[subtask.id] = error
                continue
            decisions[subtask.id] = pin(decision, None if subtask.stays_local else options.model)
        trace.decisions = [decision.describe() for decision in decisions.values()]
        return decisions, unplaced

    def _context(self, options: RouteOptions, task: str, trace: Trace) -> RouteContext:
        """Route context for the request; the trace records which policy version decides."""
        routing_key = trace.routing_key or trace.request_id
        context = self._router.context(options, task, trace.key_id, routing_key)
        context.request_id = trace.request_id
        trace.policy_version = context.policy.version if context.policy else None
        return context

    def _deadline(self, request: InferRequest) -> float:
        """Monotonic deadline: the caller's timeout, capped by the task's (or the gateway's)."""
        ceiling = self._decomposer.timeout_ms(request.task) or self._request_timeout_ms
        timeout_ms = min(request.options.timeout_ms or ceiling, ceiling)
        return time.monotonic() + timeout_ms / 1000.0

    async def reused(self, request: InferRequest, trace: Trace) -> dict[str, Any] | None:
        """The ``/v1/infer`` body of a one-subtask task (a chat about to stream) whose answer
        the cache stage holds, its trace recorded; None otherwise (the caller then streams;
        what this took stays in the trace's decompose and route timings)."""
        answers = self._executor.answers
        if answers is None or request.options.cache in ("off", "refresh"):
            return None
        trace.task = request.task
        try:
            with trace.stage("decompose"):
                context = self._context(self._route_options(request), request.task, trace)
                plan = self._plan(request, privacy_policy(context), privacy_modes(context))
            if len(plan.subtasks) != 1:
                return None
            subtask = plan.subtasks[0]
            with trace.stage("route"):
                decided = await decide_reading_difficulty(
                    self._router, self._difficulty, subtask, context, request.inputs
                )
                decision = pin(decided, request.options.model)
            reuse = self._reuse(request, plan, trace)
            inputs = resolve_inputs(subtask.inputs, request.inputs, {})
            found = (
                None if reuse is None else await answers.lookup(subtask, decision, inputs, reuse)
            )
        except HybridInferError:  # streaming meets the same error and reports it
            return None
        if found is None:
            return None
        outputs, attempt, account = found
        result = SubtaskResult(subtask, "ok", outputs, attempt, reason=decision.reason)
        result.reused, result.latency_ms = account, attempt.latency_ms
        trace.plan, trace.decisions = plan.describe(), [decision.describe()]
        summary = summarise(result)
        trace.plan |= {"results": [summary], "reused": {subtask.id: account}}
        trace.finish("ok")
        self._traces.record(trace)
        body: dict[str, Any] = {"request_id": trace.request_id, "status": "ok"}
        return body | {
            "outputs": outputs,
            "subtasks": [summary],
            "timings_ms": trace.rounded_timings(),
        }

    async def stream(self, request: InferRequest, trace: Trace) -> TokenStream:
        """Start a one-subtask task (chat) piece by piece, once its first token exists.

        Errors before the first token raise here (after falling back along the decision's
        chain); errors after it surface while iterating the stream. The trace is recorded when
        the stream ends, whichever way it ends.
        """
        if self._streamer is None:
            raise InvalidRequest("this gateway does not stream")
        trace.task = request.task
        options = request.options
        deadline = self._deadline(request)
        try:
            with trace.stage("decompose"):
                context = self._context(self._route_options(request), request.task, trace)
                privacy = privacy_policy(context)
                plan = self._plan(request, privacy, privacy_modes(context))
                trace.plan = plan.describe()
                if len(plan.subtasks) != 1:
                    raise InvalidRequest(f"task {request.task!r} has several steps; cannot stream")
            subtask = plan.subtasks[0]
            with trace.stage("route"):
                decided = await decide_reading_difficulty(
                    self._router, self._difficulty, subtask, context, request.inputs
                )
                decision = pin(decided, options.model)
                trace.decisions = [decision.describe()]
            with trace.stage("execute"):
                gate = self._gate(plan, request, privacy, context)
                try:
                    stream = await self._streamer.start(
                        subtask, decision, request.inputs, trace, deadline, gate
                    )
                finally:  # a refusal's trace shows what the gate found too
                    trace.plan["privacy"] = dict(plan.privacy)
        except HybridInferError as error:
            self._record_failure(trace, error)
            raise
        resumed = time.perf_counter()

        def close(stream: TokenStream, error: HybridInferError | None) -> None:
            trace.timings_ms["execute"] += (time.perf_counter() - resumed) * 1000.0
            self._record_stream(trace, plan, stream, decision.reason, error)

        stream.on_close(close)
        return stream

    def _record_stream(
        self,
        trace: Trace,
        plan: Plan,
        stream: TokenStream,
        reason: str,
        error: HybridInferError | None,
    ) -> None:
        subtask = plan.subtasks[0]
        status = "ok" if error is None else "error"
        result = SubtaskResult(subtask, status, attempt=stream.attempt, error=error, reason=reason)
        result.latency_ms = stream.attempt.latency_ms
        assert trace.plan is not None
        trace.plan["privacy"] = dict(plan.privacy)  # restoring ends with the stream
        trace.plan["results"] = [summarise(result)]
        trace.plan["first_token_ms"] = round(stream.first_token_ms, 3)
        if error is not None:
            self._record_failure(trace, error)
            return
        trace.finish("ok")
        self._traces.record(trace)

    def _record_failure(self, trace: Trace, error: HybridInferError) -> None:
        trace.error = {"code": error.error_code, "message": scrub(error.message)}
        trace.finish("error")
        self._traces.record(trace)
