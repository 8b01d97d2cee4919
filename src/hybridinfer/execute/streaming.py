"""Run one streaming subtask (chat): try the decision's chain until a deployment produces its
first token, then hand the rest of its answer to the caller.

Falling back is only honest before the first token: after it, the caller has already seen part
of one model's answer, so a failure then is reported as an error, never papered over.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import Any

from hybridinfer.backends.base import Backend, StreamingBackend
from hybridinfer.core.decision import Candidate, Decision
from hybridinfer.core.plan import Subtask
from hybridinfer.core.trace import Attempt, Trace
from hybridinfer.errors import HybridInferError, InvalidRequest, UpstreamError
from hybridinfer.execute.attempts import Step, chain, close_attempt, open_attempt, time_left
from hybridinfer.execute.chain import ChainRunner
from hybridinfer.execute.executor import resolve_inputs
from hybridinfer.execute.gate import PrivacyGate
from hybridinfer.execute.retry import Retries
from hybridinfer.execute.spend import SpendGuard
from hybridinfer.signals.ewma import Signals

Pieces = AsyncIterator[dict[str, Any]]
OnClose = Callable[["TokenStream", HybridInferError | None], None]


def _is_token(piece: Mapping[str, Any]) -> bool:
    delta = piece["delta"]
    return (
        bool(delta.get("content") or delta.get("tool_calls"))
        or piece.get("finish_reason") is not None
    )


class TokenStream:
    """A started answer: where it runs, the pieces read so far and the rest of them.

    Iterate it once. Upstream failures surface as ``HybridInferError``; ``on_close`` runs exactly
    once when the answer ends, fails or is abandoned.
    """

    def __init__(
        self,
        candidate: Candidate,
        attempt: Attempt,
        first: list[dict[str, Any]],
        rest: Pieces,
        signals: Signals,
        started: float,
    ) -> None:
        self.node = candidate.node
        self.deployment = candidate.deployment
        self.attempt = attempt
        self.first_token_ms = (time.perf_counter() - started) * 1000.0
        self._first = first
        self._rest = rest
        self._signals = signals
        self._started = started
        self._on_close: OnClose | None = None
        self._closed = False

    def on_close(self, callback: OnClose) -> None:
        self._on_close = callback

    async def __aiter__(self) -> AsyncGenerator[dict[str, Any], None]:
        error: HybridInferError | None = None
        try:
            for piece in self._first:
                yield piece
            async for piece in self._rest:
                yield piece
        except HybridInferError as exc:
            error = exc
            raise
        except BaseException:  # abandoned by the caller (disconnect, cancel)
            error = UpstreamError("the client went away mid-stream", code="client_closed")
            raise
        finally:
            await self._rest.aclose()  # type: ignore[attr-defined]
            self._close(error)

    def _close(self, error: HybridInferError | None) -> None:
        if self._closed:
            return
        self._closed = True
        close_attempt(self.attempt, self._started, error)
        self._signals.observe(
            self.deployment.id,
            self.attempt.latency_ms,
            error is None or error.error_code == "client_closed",
        )
        if self._on_close is not None:
            self._on_close(self, error)


class StreamExecutor:
    """Starts streaming subtasks on the backends that can stream."""

    def __init__(
        self,
        backends: Mapping[str, Backend],
        signals: Signals,
        spend: SpendGuard | None = None,
        retry: Retries | None = None,
    ) -> None:
        self._backends = dict(backends)
        self._signals = signals
        self._spend = spend
        self._retry = retry or Retries()

    async def start(
        self,
        subtask: Subtask,
        decision: Decision,
        request_inputs: Mapping[str, Any],
        trace: Trace,
        deadline: float,
        gate: PrivacyGate | None = None,
    ) -> TokenStream:
        """The first deployment of the chain that produced a token (each retried while the
        deadline allows); raises the last error. ``gate`` clears each public-zone call."""
        inputs = resolve_inputs(subtask.inputs, request_inputs, {})

        async def attempt(step: Step) -> TokenStream:
            return await self._attempt(subtask, step, inputs, trace, deadline, gate)

        return await ChainRunner(attempt, self._retry, deadline).run(chain(decision))

    async def _attempt(
        self,
        subtask: Subtask,
        step: Step,
        inputs: Mapping[str, Any],
        trace: Trace,
        deadline: float,
        gate: PrivacyGate | None,
    ) -> TokenStream:
        node, deployment = step.candidate.node, step.candidate.deployment
        attempt, started = open_attempt(trace, subtask, step)
        pieces: Pieces | None = None
        charged = False
        if gate is not None:
            try:
                await gate.clear(subtask, step.candidate, deadline)
                inputs = await gate.outbound(subtask, step.candidate, inputs, deadline)
            except HybridInferError as error:
                close_attempt(attempt, started, error)
                raise
        try:
            remaining = self._retry.timeout_s(time_left(deadline))
            backend = self._backends.get(node.protocol)
            if not isinstance(backend, StreamingBackend):
                raise InvalidRequest(f"{deployment.model} ({node.protocol}) cannot stream")
            if self._spend is not None:
                await self._spend.reserve(trace.key_id, deployment.cost_per_call)
                charged = True
            pieces = backend.infer_stream(node, deployment, inputs, remaining)
            if gate is not None:  # values put back as the pieces arrive (``gate.py``)
                pieces = gate.restoring(subtask, step.candidate, pieces)
            first = await _first_token(pieces)
        except HybridInferError as error:
            if charged and self._spend is not None:  # no token came: nothing to pay for
                await self._spend.refund(trace.key_id, deployment.cost_per_call)
            if pieces is not None:
                await pieces.aclose()  # type: ignore[attr-defined]
            close_attempt(attempt, started, error)
            self._signals.observe(deployment.id, attempt.latency_ms, False)
            raise
        assert pieces is not None
        return TokenStream(step.candidate, attempt, first, pieces, self._signals, started)


async def _first_token(pieces: Pieces) -> list[dict[str, Any]]:
    """Read up to and including the first token (or the whole of an empty answer)."""
    first: list[dict[str, Any]] = []
    async for piece in pieces:
        first.append(piece)
        if _is_token(piece):
            return first
    if not any(piece.get("finish_reason") for piece in first):  # still say how it finished
        first.append({"delta": {}, "finish_reason": "stop", "usage": None})
    return first
