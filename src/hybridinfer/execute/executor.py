"""Run a plan's subtasks on their deployments: dependencies first, independent ones in
parallel, each inside the request's deadline, with retries, the decision's fallbacks, an
optional hedge and the cascade."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hybridinfer.backends.base import Backend
from hybridinfer.core.decision import Candidate, Decision
from hybridinfer.core.plan import Plan, Subtask
from hybridinfer.core.trace import Attempt, Trace
from hybridinfer.decompose.rules import split_reference
from hybridinfer.errors import (
    DeadlineExceeded,
    HybridInferError,
    NoCapacity,
    Overloaded,
    UpstreamError,
)
from hybridinfer.execute.admission import PriorityLimiter
from hybridinfer.execute.attempts import Step, chain, close_attempt, open_attempt, time_left
from hybridinfer.execute.chain import ChainRunner
from hybridinfer.execute.gate import PrivacyGate
from hybridinfer.execute.hedge import HedgePolicy, hedge_order
from hybridinfer.execute.retry import Retries
from hybridinfer.execute.reuse import AnswerReuse, ReuseRequest
from hybridinfer.execute.spend import SpendGuard
from hybridinfer.policy.document import BudgetPolicy
from hybridinfer.signals.breaker import Breakers, counts_against
from hybridinfer.signals.budget import Ledger, MemoryLedger
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.latencies import LatencyWindows

Outcome = tuple[dict[str, Any], Attempt]
LATE_TIMER_FRACTION = 0.5
"""A try's timer that fired later than this share of its timeout after it was due means the
gateway's own event loop was behind: such a timeout does not count against the breaker."""
LINK_PROTOCOLS = frozenset({"v2", "tfserving"})
"""Remote protocols whose call times speak for the path (not the in-process tier, not
OpenAI-compatible LLM servers)."""
TIMEOUT_SAMPLES = 5
"""Answers of a deployment before its adaptive per-try bound applies (its p99 over so few is
their maximum, a cautious start)."""


@dataclass(slots=True)
class SubtaskResult:
    """What one subtask produced, and where."""

    subtask: Subtask
    status: str
    """``ok``, ``error`` or ``skipped`` (a hard dependency failed)."""
    outputs: dict[str, Any] = field(default_factory=dict)
    attempt: Attempt | None = None
    error: HybridInferError | None = None
    reason: str = ""
    latency_ms: float = 0.0
    degraded: str = ""
    """Why the answer is below the quality the decision wanted (a cascade escalation failed
    and the first answer stood); empty when it is not."""
    reused: dict[str, Any] | None = None
    """The cached answer it reused (``answers/stage.py``); None when it was computed."""


Binding = tuple[str, str, str]
"""An input's name, and the source (``inputs`` or a subtask id) and field it refers to."""


@functools.lru_cache(maxsize=1024)
def _bindings(items: tuple[tuple[str, Any], ...]) -> tuple[Binding, ...] | None:
    """Every input's reference, split once per distinct set of inputs (a plan template's step:
    the same for every request of its task); None if one input is not a reference."""
    bindings: list[Binding] = []
    for name, value in items:
        if value.__class__ is not str or value[:1] != "$":
            return None
        bindings.append((name, *split_reference(value)))
    return tuple(bindings)


def resolve_inputs(
    inputs: Mapping[str, Any],
    request_inputs: Mapping[str, Any],
    done: Mapping[str, SubtaskResult],
) -> dict[str, Any]:
    """``inputs`` with each ``$source.field`` reference replaced by its value (a request input,
    or a finished subtask's output); anything else as it is. A chat's subtask has eleven
    inputs, most of them absent from the request, resolved up to three times a request: their
    references are split once (``_bindings``) and read in one comprehension."""
    try:
        bindings = _bindings(tuple(inputs.items()))
    except TypeError:  # a value that cannot be hashed: not a reference
        bindings = None
    if bindings is None:
        return _resolve_each(inputs, request_inputs, done)
    get = request_inputs.get
    return {
        name: get(field) if source == "inputs" else done[source].outputs.get(field)
        for name, source, field in bindings
    }


def _resolve_each(
    inputs: Mapping[str, Any],
    request_inputs: Mapping[str, Any],
    done: Mapping[str, SubtaskResult],
) -> dict[str, Any]:
    resolved: dict[str, Any] = {}
    for name, value in inputs.items():
        if value.__class__ is str and value[:1] == "$":
            source, field = split_reference(value)
            value = (
                request_inputs.get(field) if source == "inputs" else done[source].outputs.get(field)
            )
        resolved[name] = value
    return resolved


@dataclass(frozen=True, slots=True)
class Admission:
    """Per-node admission: slots in flight and the bound of the queue waiting for one."""

    max_in_flight: int = 64
    max_queued: int = 256
    retry_after_s: float = 1.0


class Executor:
    """Runs plans; one backend per protocol."""

    def __init__(
        self,
        backends: Mapping[str, Backend],
        signals: Signals,
        ledger: Ledger | None = None,
        budget: Callable[[], BudgetPolicy] = BudgetPolicy,
        admission: Admission | None = None,
        breakers: Breakers | None = None,
        retry: Retries | None = None,
        hedging: HedgePolicy | None = None,
    ) -> None:
        self._backends = dict(backends)
        self._signals = signals
        self.spend = SpendGuard(ledger or MemoryLedger(), budget)
        self.breakers = breakers or Breakers()
        self.retry = retry or Retries()
        self.hedging = hedging or HedgePolicy()
        self.latencies = LatencyWindows()
        self._admission = admission or Admission()
        self._limiters: dict[str, PriorityLimiter] = {}
        self.answers: AnswerReuse | None = None
        """The cache stage (``execute/reuse.py``); None: every subtask runs."""

    def limiters(self) -> dict[str, PriorityLimiter]:
        """Every node's limiter created so far, by node id."""
        return dict(self._limiters)

    def limiter(self, node_id: str) -> PriorityLimiter:
        """The admission limiter of one node (created on first use)."""
        limiter = self._limiters.get(node_id)
        if limiter is None:
            admission = self._admission
            limiter = self._limiters[node_id] = PriorityLimiter(
                admission.max_in_flight, admission.max_queued, admission.retry_after_s, node_id
            )
        return limiter

    async def run(
        self,
        plan: Plan,
        decisions: Mapping[str, Decision],
        request_inputs: Mapping[str, Any],
        trace: Trace,
        deadline: float,
        unplaced: Mapping[str, HybridInferError] | None = None,
        gate: PrivacyGate | None = None,
        reuse: ReuseRequest | None = None,
    ) -> dict[str, SubtaskResult]:
        """Every subtask's result, keyed by subtask id (failures included, never raised).

        ``unplaced`` holds the routing error of each soft subtask no deployment could take;
        those fail without running. ``gate`` clears each call to a public-zone deployment.
        ``reuse``: what the request allows the cache stage (None: no reuse).
        """
        done: dict[str, SubtaskResult] = {}
        unplaced = unplaced or {}
        if (
            len(plan.subtasks) == 1 and not unplaced
        ):  # the common case: no task objects, no scheduling
            subtask = plan.subtasks[0]
            done[subtask.id] = await self._run_one(
                subtask, decisions[subtask.id], request_inputs, done, trace, deadline, gate, reuse
            )
            return done
        running: dict[str, asyncio.Task[SubtaskResult]] = {}

        async def run_after_dependencies(subtask: Subtask) -> SubtaskResult:
            for dependency in subtask.depends_on:
                await running[dependency]
            failed = [d for d in subtask.depends_on if done[d].status != "ok"]
            if subtask.id in unplaced:
                return SubtaskResult(subtask, "error", error=unplaced[subtask.id])
            if failed:
                return SubtaskResult(
                    subtask,
                    "skipped",
                    error=UpstreamError(
                        f"skipped: dependency {', '.join(failed)} failed", code="dependency_failed"
                    ),
                )
            return await self._run_one(
                subtask, decisions[subtask.id], request_inputs, done, trace, deadline, gate, reuse
            )

        async def run_and_record(subtask: Subtask) -> SubtaskResult:
            result = await run_after_dependencies(subtask)
            done[subtask.id] = result
            return result

        for subtask in plan.subtasks:  # listed in dependency order (validated in the rules)
            running[subtask.id] = asyncio.create_task(run_and_record(subtask))
        await asyncio.gather(*running.values())
        return done

    async def _run_one(
        self,
        subtask: Subtask,
        decision: Decision,
        request_inputs: Mapping[str, Any],
        done: Mapping[str, SubtaskResult],
        trace: Trace,
        deadline: float,
        gate: PrivacyGate | None = None,
        reuse: ReuseRequest | None = None,
    ) -> SubtaskResult:
        inputs = resolve_inputs(subtask.inputs, request_inputs, done)
        reused = await self._reused(subtask, decision, inputs, reuse)
        if reused is not None:
            return reused

        async def attempt(step: Step) -> Outcome:
            raced = hedge_delay is not None
            return await self._attempt(subtask, step, inputs, trace, deadline, gate, raced)

        steps, hedge_delay = chain(decision), None
        hedged = hedge_order(steps) if subtask.hedge and decision.fallbacks else None
        if hedged is not None:
            delay = self.hedging.delay_s(self.latencies, decision.chosen.deployment.id)
            if delay < deadline - time.monotonic():  # else the hedge could not finish in time
                steps, hedge_delay = hedged, delay
        try:
            outputs, used = await ChainRunner(attempt, self.retry, deadline).run(steps, hedge_delay)
        except HybridInferError as error:
            return SubtaskResult(subtask, "error", error=error, reason=decision.reason)
        degraded = ""
        if decision.cascade is not None and used.role == "primary":
            confidence = outputs.get("confidence")
            if isinstance(confidence, float) and confidence < decision.cascade.threshold:
                escalated = await self._escalate(subtask, decision, inputs, trace, deadline, gate)
                if isinstance(escalated, str):
                    degraded = escalated
                elif escalated is not None:
                    outputs, used = escalated
        await self._keep(subtask, decision, inputs, reuse, (outputs, used, degraded), trace)
        return SubtaskResult(
            subtask,
            "ok",
            outputs,
            used,
            reason=decision.reason,
            latency_ms=used.latency_ms,
            degraded=degraded,
        )

    async def _reused(
        self,
        subtask: Subtask,
        decision: Decision,
        inputs: Mapping[str, Any],
        reuse: ReuseRequest | None,
    ) -> SubtaskResult | None:
        """The subtask's answer from the cache stage, when it has one to reuse."""
        if self.answers is None or reuse is None:
            return None
        found = await self.answers.lookup(subtask, decision, inputs, reuse)
        if found is None:
            return None
        outputs, attempt, account = found
        latency_ms = attempt.latency_ms
        return SubtaskResult(
            subtask, "ok", outputs, attempt, reason=decision.reason, latency_ms=latency_ms,
            reused=account,
        )  # fmt: skip

    async def _keep(
        self,
        subtask: Subtask,
        decision: Decision,
        inputs: Mapping[str, Any],
        reuse: ReuseRequest | None,
        answered: tuple[Mapping[str, Any], Attempt, str],
        trace: Trace,
    ) -> None:
        """Keep the answer for the cache stage; not one below the decision's quality (a
        failed escalation's)."""
        outputs, used, degraded = answered
        if self.answers is not None and reuse is not None and not degraded:
            await self.answers.keep(
                subtask, decision, inputs, reuse, outputs, used, trace.request_id
            )

    async def _escalate(
        self,
        subtask: Subtask,
        decision: Decision,
        inputs: Mapping[str, Any],
        trace: Trace,
        deadline: float,
        gate: PrivacyGate | None,
    ) -> Outcome | str | None:
        """The stronger deployment's answer; else why every escalation failed (the first
        answer stands, degraded); None when there was nothing to escalate to."""
        assert decision.cascade is not None
        failures: list[str] = []
        for candidate in decision.cascade.escalate_to:
            if candidate is decision.chosen:
                continue
            try:
                return await self._attempt(
                    subtask, Step(candidate, "escalation"), inputs, trace, deadline, gate
                )
            except HybridInferError as error:  # the trace shows the failed escalation
                failures.append(f"{candidate.deployment.id}: {error.error_code}")
        if not failures:
            return None
        return f"escalation failed ({'; '.join(failures)}); the first answer stands"

    async def _attempt(
        self,
        subtask: Subtask,
        step: Step,
        inputs: Mapping[str, Any],
        trace: Trace,
        deadline: float,
        gate: PrivacyGate | None = None,
        raced: bool = False,
    ) -> Outcome:
        """One call of ``step``. ``raced``: in a hedge race, whose loser is cancelled; its call
        then runs on, shielded, to its own bound. Otherwise the call runs in this task (a task
        of its own costs a loop pass), and a cancel cancels the call too."""
        deployment = step.candidate.deployment
        attempt, started = open_attempt(trace, subtask, step)
        if gate is not None:  # refused here, the call says nothing of the deployment's health
            try:
                await gate.clear(subtask, step.candidate, deadline)
                inputs = await gate.outbound(subtask, step.candidate, inputs, deadline)
            except HybridInferError as error:
                close_attempt(attempt, started, error)
                raise
        if not self.breakers.allows(deployment.id):  # opened since the decision was made:
            refused = NoCapacity(  # it passes by itself, like the router's own rejection
                f"{deployment.id}: circuit open", retry_after_s=self._admission.retry_after_s
            )
            close_attempt(attempt, started, refused)
            raise refused
        called_at, exchanged_at = self.breakers.now(), self._signals.exchanges.now()
        calling = self._call(subtask, step, inputs, deadline, trace.key_id)
        call = asyncio.ensure_future(calling) if raced else None
        try:
            outputs = await (calling if call is None else asyncio.shield(call))
        except HybridInferError as error:
            close_attempt(attempt, started, error)
            self._judge(step, error, attempt.latency_ms, called_at, exchanged_at)
            raise
        except asyncio.CancelledError:  # a hedge race was won by the other call, or the
            close_attempt(attempt, started, None)  # request itself was cancelled
            attempt.status = "cancelled"
            if call is None:  # cancelled with this task: no verdict; free a breaker's trial
                self.breakers.on_cancel(deployment.id)
                raise
            # The call itself runs on to its own bound: its verdict still teaches the
            # breaker, the exchange window and the outlier record (a hedge that always wins
            # against a cut link would otherwise hide the cut from all three).
            verdict = functools.partial(self._judge_abandoned, step, started, called_at)
            call.add_done_callback(functools.partial(verdict, exchanged_at))
            raise
        if gate is not None:  # values put back; a failure fails closed (``gate.py``)
            try:
                outputs = gate.inbound(subtask, step.candidate, outputs)
            except HybridInferError as error:
                close_attempt(attempt, started, error)
                raise
        close_attempt(attempt, started, None)
        self._judge(step, None, attempt.latency_ms, called_at, exchanged_at)
        confidence = outputs.get("confidence")
        attempt.confidence = confidence if isinstance(confidence, float) else None
        return outputs, attempt

    def _judge(
        self,
        step: Step,
        error: HybridInferError | None,
        latency_ms: float,
        called_at: float,
        exchanged_at: float,
    ) -> None:
        """One call's verdict: the breaker, EWMA, latency window, exchange window, outliers."""
        deployment_id = step.candidate.deployment.id
        if error is None:
            self._signals.observe(deployment_id, latency_ms, True)
            self._exchanged(step, latency_ms, None, exchanged_at)
            self.latencies.observe(deployment_id, latency_ms)
            self.breakers.on_result(deployment_id, None)
            return
        self.breakers.on_result(deployment_id, error, called_at)
        if not isinstance(error, NoCapacity):  # a full queue says nothing of the model
            self._signals.observe(deployment_id, latency_ms, False)
            self._exchanged(step, latency_ms, error, exchanged_at)

    def _judge_abandoned(
        self,
        step: Step,
        started: float,
        called_at: float,
        exchanged_at: float,
        call: asyncio.Future[dict[str, Any]],
    ) -> None:
        """The verdict of a call whose hedge race was lost, once it ended on its own."""
        latency_ms = (time.perf_counter() - started) * 1000.0
        error = None if call.cancelled() else call.exception()
        if call.cancelled() or not (error is None or isinstance(error, HybridInferError)):
            self.breakers.on_cancel(step.candidate.deployment.id)  # no verdict: free the trial
            return
        self._judge(step, error, latency_ms, called_at, exchanged_at)

    def _exchanged(
        self, step: Step, latency_ms: float, error: HybridInferError | None, started: float
    ) -> None:
        """A call to a remote node joins its exchange window (``network.<tier>.p95_ms``), a
        timeout with its elapsed time, and its deployment's outlier record. Not a timeout the
        gateway's own lagging loop caused, nor a saturated node's queue; and for the window
        not an LLM server's answer, whose length is the request's, not the path's."""
        node, deployment = step.candidate.node, step.candidate.deployment
        lagged = isinstance(error, DeadlineExceeded) and error.loop_lagged
        if lagged or isinstance(error, Overloaded):
            return
        if error is None or counts_against(error):
            self._signals.ejections.observe(
                deployment.id, node.tier.value, latency_ms, error is None
            )
        if node.protocol in LINK_PROTOCOLS:
            self._signals.exchanges.record(node.id, latency_ms, error is None, started)

    async def _call(
        self,
        subtask: Subtask,
        step: Step,
        inputs: Mapping[str, Any],
        deadline: float,
        key_id: str | None,
    ) -> dict[str, Any]:
        """Admission (node slot), then the call within its timeout and budget."""
        node, deployment = step.candidate.node, step.candidate.deployment
        remaining = time_left(deadline)
        backend = self._backends.get(node.protocol)
        if backend is None:
            raise UpstreamError(f"no backend speaks {node.protocol!r}")
        self.breakers.on_start(deployment.id)
        limiter = self.limiter(node.id)
        if not limiter.take_free():  # a busy node: queue for a slot until the deadline
            spill = not step.last and limiter.constrained  # others can take it: do not queue
            try:
                async with asyncio.timeout(remaining):
                    await limiter.acquire(subtask.priority, wait=not spill)
            except TimeoutError:  # no slot freed before the deadline: overload, not a fault
                raise Overloaded(
                    f"{node.id} was saturated until the deadline",
                    retry_after_s=self._admission.retry_after_s,
                    code="node_saturated",
                ) from None
        try:
            # The try's own bound is within what is left of the deadline (``Retries``), so it
            # is the only timer the call needs.
            p99_ms = self.latencies.quantile_ms(deployment.id, 0.99, TIMEOUT_SAMPLES)
            timeout_s = self.retry.timeout_s(
                deadline - time.monotonic(), None if p99_ms is None else p99_ms / 1000.0
            )
            try_started = time.monotonic()
            try:
                async with asyncio.timeout(timeout_s):
                    return await self._call_within_budget(
                        backend, step.candidate, inputs, timeout_s, key_id
                    )
            except (TimeoutError, DeadlineExceeded):
                late_s = time.monotonic() - try_started - timeout_s
                raise DeadlineExceeded(
                    f"{deployment.model} on {node.id} did not answer within "
                    f"{timeout_s * 1000.0:.0f} ms",
                    loop_lagged=late_s > timeout_s * LATE_TIMER_FRACTION,
                ) from None
        finally:
            limiter.release()

    async def _call_within_budget(
        self,
        backend: Backend,
        candidate: Candidate,
        inputs: Mapping[str, Any],
        timeout_s: float,
        key_id: str | None,
    ) -> dict[str, Any]:
        """Reserve the call's cost first (atomic), give it back if the call fails."""
        cost = candidate.deployment.cost_per_call
        await self.spend.reserve(key_id, cost)
        try:
            return await backend.infer(candidate.node, candidate.deployment, inputs, timeout_s)
        except HybridInferError:
            await self.spend.refund(key_id, cost)
            raise
