"""Circuit breakers, one per deployment: closed → open → half-open → closed.

A deployment that fails ``failure_threshold`` times in a row opens its breaker: the router stops
placing work on it for an open period. Then the breaker is half-open: one trial call is let
through; success closes it, failure opens it again. Only upstream failures count (unreachable,
5xx, deadline): a request the model rejects as malformed says nothing about the deployment's
health.

The open period follows the link, not a clock of its own. It is drawn uniformly from zero to
``open_seconds`` doubled once per failed trial (capped at ``max_open_seconds``: "full jitter"),
so the trials of a breaker facing a periodic outage (a link cut and restored every 2 s) do not
all land in the cuts as fixed 1, 2, 4, 8 s periods did. A health probe that answers moves an
open breaker to half-open at once: the next call is its trial. A closed breaker keeps its
back-off level until ``reset_after`` calls in a row succeeded, so a link that fails again
right after a recovery is given a longer rest; a run of successes resets it.

A timeout counts only if the deployment has not answered any call since the timed-out one
started, and the timer that ended it fired on time. A cut link or a dead node answers nothing,
so its timeouts open the breaker as fast as ever; a node that kept answering other calls
meanwhile is busy, not broken, and a timer that fired late says the gateway's own event loop
was the bottleneck. Opening a breaker for either under overload would only turn a slow answer
into none (the timed-out call still fails, and may be retried or fall back).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from hybridinfer.core.backoff import full_jitter_s
from hybridinfer.errors import DeadlineExceeded, HybridInferError, UpstreamError

Clock = Callable[[], float]


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


def counts_against(error: HybridInferError) -> bool:
    """Whether an error says the deployment is unhealthy."""
    return isinstance(error, UpstreamError | DeadlineExceeded) and error.error_code not in (
        "upstream_rejected",
        "budget_exhausted",
    )


def _alive_meanwhile(
    breaker: CircuitBreaker, error: HybridInferError, started: float | None
) -> bool:
    """A timeout that says nothing against the deployment: another call's answer overtook it
    (the deployment is busy), or the gateway's own loop was too far behind to tell."""
    if not isinstance(error, DeadlineExceeded):
        return False
    overtaken = (
        started is not None
        and breaker.last_success_at is not None
        and breaker.last_success_at > started
    )
    return overtaken or error.loop_lagged


@dataclass(slots=True)
class CircuitBreaker:
    """The breaker of one deployment."""

    failure_threshold: int = 3
    open_seconds: float = 1.0
    max_open_seconds: float = 30.0
    reset_after: int = 5
    """Successes in a row that reset the back-off level."""
    rng: random.Random = field(default_factory=random.Random)
    failures: int = 0
    opened_at: float | None = None
    cooldown: float = 0.0
    level: int = 0
    """Failed trials since the back-off was last reset: the open period's ceiling doubles
    with each."""
    successes: int = 0
    """Calls in a row that succeeded."""
    trial_in_flight: bool = False
    last_success_at: float | None = None
    opens: int = 0
    """Times the breaker opened (from closed, or again after a failed trial)."""
    trials: int = 0
    """Half-open trial calls let through so far."""
    recoveries: int = 0
    """Trials that succeeded and closed the breaker."""

    def state(self, now: float) -> BreakerState:
        if self.opened_at is None:
            return BreakerState.CLOSED
        if now - self.opened_at < self.cooldown:
            return BreakerState.OPEN
        return BreakerState.HALF_OPEN

    def allows(self, now: float) -> bool:
        """Closed, or half-open with no trial call out yet."""
        state = self.state(now)
        return state is BreakerState.CLOSED or (
            state is BreakerState.HALF_OPEN and not self.trial_in_flight
        )

    def on_start(self, now: float) -> None:
        if self.state(now) is BreakerState.HALF_OPEN:
            self.trial_in_flight = True
            self.trials += 1

    def on_success(self, now: float) -> None:
        if self.trial_in_flight:
            self.recoveries += 1
        self.last_success_at = now
        self.failures = 0
        self.opened_at = None
        self.cooldown = 0.0
        self.trial_in_flight = False
        self.successes += 1
        if self.successes >= self.reset_after:
            self.level = 0

    def on_failure(self, now: float) -> None:
        was_trial = self.trial_in_flight
        self.trial_in_flight = False
        self.failures += 1
        self.successes = 0
        if was_trial:  # the trial failed: open again, with a higher ceiling
            self.level += 1
            self._open(now)
        elif self.opened_at is None and self.failures >= self.failure_threshold:
            self._open(now)

    def on_probe(self, now: float) -> None:
        """The node answered a health probe: an open breaker is half-open from now."""
        if self.opened_at is not None and self.state(now) is BreakerState.OPEN:
            self.cooldown = now - self.opened_at

    def _open(self, now: float) -> None:
        self.opened_at = now
        self.opens += 1
        self.cooldown = full_jitter_s(
            self.open_seconds, self.max_open_seconds, self.level, self.rng
        )


class Breakers:
    """Every deployment's breaker; read by the router, written by the executor.

    ``version`` moves whenever what ``allows`` answers may have changed other than by time
    passing (a breaker opened or closed, a trial started or ended, a probe cut an open period
    short); ``settles_at`` says when time alone changes it next.
    """

    def __init__(
        self,
        failure_threshold: int = 3,
        open_seconds: float = 1.0,
        max_open_seconds: float = 30.0,
        clock: Clock = time.monotonic,
        reset_after: int = 5,
        rng: random.Random | None = None,
    ) -> None:
        self._settings = (failure_threshold, open_seconds, max_open_seconds, reset_after)
        self._clock = clock
        self._rng = rng or random.Random()
        self._by_deployment: dict[str, CircuitBreaker] = {}
        self.version = 0
        self.opened: list[Callable[[], None]] = []
        """Called when a breaker opens (the prober looks at its node again at once)."""

    def settles_at(self, deployment_ids: Iterable[str]) -> float:
        """The earliest moment (this clock) an open breaker among ``deployment_ids`` turns
        half-open (infinity for none)."""
        now = self._clock()
        ends = [
            end
            for deployment_id in deployment_ids
            if (breaker := self._by_deployment.get(deployment_id)) is not None
            and breaker.opened_at is not None
            and (end := breaker.opened_at + breaker.cooldown) > now
        ]
        return min(ends, default=float("inf"))

    def opened_since(self, deployment_ids: Iterable[str], since: float) -> bool:
        """Whether a breaker among ``deployment_ids`` opened at or after ``since`` (this
        clock) and has not closed since."""
        return any(
            (breaker := self._by_deployment.get(deployment_id)) is not None
            and breaker.opened_at is not None
            and breaker.opened_at >= since
            for deployment_id in deployment_ids
        )

    def _breaker(self, deployment_id: str) -> CircuitBreaker:
        breaker = self._by_deployment.get(deployment_id)
        if breaker is None:
            threshold, open_s, max_open_s, reset_after = self._settings
            breaker = self._by_deployment[deployment_id] = CircuitBreaker(
                threshold, open_s, max_open_s, reset_after, self._rng
            )
        return breaker

    def on_probe(self, deployment_ids: Iterable[str]) -> None:
        """A node answered its health probe: its open breakers go half-open now."""
        now = self._clock()
        for deployment_id in deployment_ids:
            breaker = self._by_deployment.get(deployment_id)
            if breaker is not None and breaker.opened_at is not None:
                breaker.on_probe(now)
                self.version += 1

    def allows(self, deployment_id: str) -> bool:
        breaker = self._by_deployment.get(deployment_id)
        return breaker is None or breaker.allows(self._clock())

    def state(self, deployment_id: str) -> BreakerState:
        breaker = self._by_deployment.get(deployment_id)
        return BreakerState.CLOSED if breaker is None else breaker.state(self._clock())

    def on_start(self, deployment_id: str) -> None:
        breaker = self._by_deployment.get(deployment_id)
        if breaker is not None and breaker.opened_at is not None:
            breaker.on_start(self._clock())
            self.version += 1

    def now(self) -> float:
        """The breakers' clock: what ``on_result`` takes as the start of a call."""
        return self._clock()

    def on_result(
        self, deployment_id: str, error: HybridInferError | None, started: float | None = None
    ) -> None:
        """The verdict of one call that started at ``started`` (the breakers' clock)."""
        now = self._clock()
        breaker = self._breaker(deployment_id)
        before = (breaker.opened_at, breaker.trial_in_flight)
        if error is None:
            breaker.on_success(now)
        elif counts_against(error) and not _alive_meanwhile(breaker, error, started):
            breaker.on_failure(now)
        else:
            breaker.trial_in_flight = False
        if (breaker.opened_at, breaker.trial_in_flight) != before:
            self.version += 1
            if breaker.opened_at is not None and breaker.opened_at != before[0]:
                for listener in self.opened:
                    listener()

    def on_cancel(self, deployment_id: str) -> None:
        """A call ended without a verdict (cancelled itself, or an unexpected error): free
        the trial."""
        breaker = self._by_deployment.get(deployment_id)
        if breaker is not None and breaker.trial_in_flight:
            breaker.trial_in_flight = False
            self.version += 1

    def describe(self, deployment_id: str) -> dict[str, object]:
        """State and history of one deployment's breaker, as ``/v1/nodes`` shows it: an open
        or half-open spell can be shorter than any poll, so its opens, trials and recoveries
        are counted."""
        breaker = self._by_deployment.get(deployment_id)
        if breaker is None:
            return {
                "breaker": BreakerState.CLOSED.value,
                "breaker_opens": 0,
                "breaker_trials": 0,
                "breaker_recoveries": 0,
            }
        return {
            "breaker": breaker.state(self._clock()).value,
            "breaker_opens": breaker.opens,
            "breaker_trials": breaker.trials,
            "breaker_recoveries": breaker.recoveries,
        }

    def states(self) -> dict[str, str]:
        """Every breaker that is not closed, by deployment id."""
        now = self._clock()
        return {
            deployment_id: breaker.state(now).value
            for deployment_id, breaker in self._by_deployment.items()
            if breaker.state(now) is not BreakerState.CLOSED
        }
