"""Run a plan's subtasks on their deployments: dependencies first, independent ones in
parallel, each inside the request's deadline, with the decision's fallbacks and cascade."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hybridinfer.backends.base import Backend
from hybridinfer.decision import Candidate, Decision
from hybridinfer.decompose.rules import split_reference
from hybridinfer.errors import (
    DeadlineExceeded,
    HybridInferError,
    UpstreamError,
    UpstreamUnavailable,
)
from hybridinfer.execute.admission import PriorityLimiter
from hybridinfer.execute.breaker import Breakers
from hybridinfer.execute.spend import SpendGuard
from hybridinfer.plan import Plan, Subtask
from hybridinfer.route.budget import Ledger, MemoryLedger
from hybridinfer.route.policy import BudgetPolicy
from hybridinfer.route.signals import Signals
from hybridinfer.trace import Attempt, Trace


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


def resolve(
    value: Any, request_inputs: Mapping[str, Any], done: Mapping[str, SubtaskResult]
) -> Any:
    """A ``$source.field`` reference's value; anything else is returned as it is."""
    if not (isinstance(value, str) and value.startswith("$")):
        return value
    source, name = split_reference(value)
    if source == "inputs":
        return request_inputs.get(name)
    return done[source].outputs.get(name)


class Executor:
    """Runs plans; one backend per protocol."""

    def __init__(
        self,
        backends: Mapping[str, Backend],
        signals: Signals,
        ledger: Ledger | None = None,
        budget: Callable[[], BudgetPolicy] = BudgetPolicy,
        max_in_flight_per_node: int = 64,
        breakers: Breakers | None = None,
    ) -> None:
        self._backends = dict(backends)
        self._signals = signals
        self.spend = SpendGuard(ledger or MemoryLedger(), budget)
        self.breakers = breakers or Breakers()
        self._per_node_limit = max_in_flight_per_node
        self._limiters: dict[str, PriorityLimiter] = {}

    def limiter(self, node_id: str) -> PriorityLimiter:
        """The admission limiter of one node (created on first use)."""
        limiter = self._limiters.get(node_id)
        if limiter is None:
            limiter = self._limiters[node_id] = PriorityLimiter(self._per_node_limit)
        return limiter

    async def run(
        self,
        plan: Plan,
        decisions: Mapping[str, Decision],
        request_inputs: Mapping[str, Any],
        trace: Trace,
        deadline: float,
        unplaced: Mapping[str, HybridInferError] | None = None,
    ) -> dict[str, SubtaskResult]:
        """Every subtask's result, keyed by subtask id (failures included, never raised).

        ``unplaced`` holds the routing error of each soft subtask no deployment could take;
        those fail without running.
        """
        done: dict[str, SubtaskResult] = {}
        unplaced = unplaced or {}
        if (
            len(plan.subtasks) == 1 and not unplaced
        ):  # the common case: no task objects, no scheduling
            subtask = plan.subtasks[0]
            done[subtask.id] = await self._run_one(
                subtask, decisions[subtask.id], request_inputs, done, trace, deadline
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
                subtask, decisions[subtask.id], request_inputs, done, trace, deadline
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
    ) -> SubtaskResult:
        inputs = {
            name: resolve(value, request_inputs, done) for name, value in subtask.inputs.items()
        }
        chain = [(decision.chosen, "primary")] + [(c, "fallback") for c in decision.fallbacks]
        last_error: HybridInferError = DeadlineExceeded("no time left to run the subtask")
        for candidate, role in chain:
            try:
                outputs, attempt = await self._attempt(
                    subtask, candidate, role, inputs, trace, deadline
                )
            except HybridInferError as error:
                last_error = error
                continue
            if decision.cascade is not None and role == "primary":
                confidence = outputs.get("confidence")
                if isinstance(confidence, float) and confidence < decision.cascade.threshold:
                    escalated = await self._escalate(
                        subtask, decision, candidate, inputs, trace, deadline
                    )
                    if escalated is not None:
                        outputs, attempt = escalated
            return SubtaskResult(
                subtask,
                "ok",
                outputs,
                attempt,
                reason=decision.reason,
                latency_ms=attempt.latency_ms,
            )
        return SubtaskResult(subtask, "error", error=last_error, reason=decision.reason)

    async def _escalate(
        self,
        subtask: Subtask,
        decision: Decision,
        first: Candidate,
        inputs: Mapping[str, Any],
        trace: Trace,
        deadline: float,
    ) -> tuple[dict[str, Any], Attempt] | None:
        assert decision.cascade is not None
        for candidate in decision.cascade.escalate_to:
            if candidate is first:
                continue
            try:
                return await self._attempt(
                    subtask, candidate, "escalation", inputs, trace, deadline
                )
            except HybridInferError:
                continue  # the local answer stands; the trace shows the failed escalation
        return None

    async def _attempt(
        self,
        subtask: Subtask,
        candidate: Candidate,
        role: str,
        inputs: Mapping[str, Any],
        trace: Trace,
        deadline: float,
    ) -> tuple[dict[str, Any], Attempt]:
        node, deployment = candidate.node, candidate.deployment
        attempt = Attempt(
            subtask_id=subtask.id,
            deployment=deployment.id,
            tier=node.tier.value,
            node=node.id,
            model=deployment.model,
            role=role,
        )
        trace.attempts.append(attempt)
        started = time.perf_counter()
        try:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded("the request's deadline passed before this attempt")
            backend = self._backends.get(node.protocol)
            if backend is None:
                raise UpstreamError(f"no backend speaks {node.protocol!r}")
            if not self.breakers.allows(deployment.id):  # opened since the decision was made
                raise UpstreamUnavailable(f"{deployment.id}: circuit open", code="breaker_open")
            self.breakers.on_start(deployment.id)
            try:
                async with asyncio.timeout(remaining), self.limiter(node.id).slot(subtask.priority):
                    outputs = await self._call_within_budget(
                        backend, candidate, inputs, deadline - time.monotonic(), trace.key_id
                    )
            except TimeoutError:  # waiting for a slot used up the deadline
                raise DeadlineExceeded(f"{node.id} was saturated until the deadline") from None
        except HybridInferError as error:
            attempt.status = "error"
            attempt.error_code = error.error_code
            attempt.error = error.message
            if error.error_code != "breaker_open":
                self.breakers.on_result(deployment.id, error)
            raise
        finally:
            attempt.latency_ms = (time.perf_counter() - started) * 1000.0
            self._signals.observe(deployment.id, attempt.latency_ms, attempt.status == "ok")
        self.breakers.on_result(deployment.id, None)
        confidence = outputs.get("confidence")
        attempt.confidence = confidence if isinstance(confidence, float) else None
        return outputs, attempt

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
