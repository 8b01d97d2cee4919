"""The bookkeeping every call of a subtask shares, streamed or not: its trace entry, the time
left before the deadline, and how a failure is written down."""

from __future__ import annotations

import time
from dataclasses import dataclass

from hybridinfer.core.decision import Candidate, Decision
from hybridinfer.core.plan import Subtask
from hybridinfer.core.trace import Attempt, Trace
from hybridinfer.errors import DeadlineExceeded, HybridInferError
from hybridinfer.privacy.scrub import scrub


@dataclass(frozen=True, slots=True)
class Step:
    """One try of one deployment: its place in the chain and in its retries."""

    candidate: Candidate
    role: str
    """``primary``, ``fallback``, ``hedge`` or ``escalation``."""
    number: int = 1
    """1 for the first try of this deployment, 2 for its first retry, …"""
    wait_ms: float = 0.0
    """Backoff waited before this try."""
    last: bool = True
    """No other deployment is left after this one (so it waits for a slot, never spills)."""


def chain(decision: Decision) -> list[Step]:
    """The decision's deployments in the order they are tried."""
    candidates = [(decision.chosen, "primary")] + [(c, "fallback") for c in decision.fallbacks]
    return [
        Step(candidate, role, last=index == len(candidates) - 1)
        for index, (candidate, role) in enumerate(candidates)
    ]


def open_attempt(trace: Trace, subtask: Subtask, step: Step) -> tuple[Attempt, float]:
    """A new attempt, already listed in the trace, and its ``perf_counter`` start."""
    node, deployment = step.candidate.node, step.candidate.deployment
    attempt = Attempt(
        subtask_id=subtask.id,
        deployment=deployment.id,
        tier=node.tier.value,
        node=node.id,
        model=deployment.model,
        role=step.role,
        number=step.number,
        wait_ms=step.wait_ms,
    )
    trace.attempts.append(attempt)
    return attempt, time.perf_counter()


def time_left(deadline: float) -> float:
    """Seconds until the monotonic ``deadline``; DeadlineExceeded once it passed."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceeded("the request's deadline passed before this attempt")
    return remaining


def close_attempt(attempt: Attempt, started: float, error: HybridInferError | None) -> None:
    """Stamp the attempt's latency (from ``perf_counter`` ``started``) and its error, if any."""
    attempt.latency_ms = (time.perf_counter() - started) * 1000.0
    if error is not None:
        attempt.status = "error"
        attempt.error_code = error.error_code
        attempt.error = scrub(error.message)  # an upstream may echo what it was sent
