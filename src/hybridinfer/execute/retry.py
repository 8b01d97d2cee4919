"""Retries of one deployment inside the request's deadline.

A failure that says the path, not the request, is at fault (the node could not be reached,
answered 502/503/504, or did not answer within the attempt's timeout) is tried again on the
same deployment after an exponentially growing wait with full jitter, a bounded number of
times, and never past the deadline; then the decision's fallback chain takes over. A 4xx, an
open breaker, a spent budget or a saturated node is not retried: trying again could not help.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from hybridinfer.core.backoff import full_jitter_s
from hybridinfer.errors import (
    DeadlineExceeded,
    HybridInferError,
    UpstreamError,
    UpstreamRejected,
    UpstreamUnavailable,
)

RETRYABLE_STATUSES = frozenset({502, 503, 504})


def retryable(error: HybridInferError) -> bool:
    """Whether trying the same deployment again may succeed."""
    if isinstance(error, UpstreamRejected):
        return False
    if isinstance(error, UpstreamUnavailable):  # connect errors and resets
        return error.error_code == UpstreamUnavailable.code
    if isinstance(error, UpstreamError):
        return error.upstream_status in RETRYABLE_STATUSES
    return isinstance(error, DeadlineExceeded)


@dataclass(frozen=True, slots=True)
class Retries:
    """How often, and after how long a wait, one deployment is tried again."""

    attempts: int = 1
    """Tries per deployment, the first included (1: no retries)."""
    base_s: float = 0.05
    """The first retry waits up to this long; each further one up to twice as long."""
    max_s: float = 1.0
    """Cap of one wait."""
    attempt_timeout_s: float | None = None
    """Longest one try may take, fixed (None: the adaptive bound below)."""
    adaptive_factor: float = 0.0
    """Without a fixed bound, a try of a deployment whose p99 is known may take this many
    times that p99 (0: whatever is left of the deadline)."""
    adaptive_floor_s: float = 0.25
    """The adaptive bound is never below this."""
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def wait_s(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1 for the first retry)."""
        return full_jitter_s(self.base_s, self.max_s, retry - 1, self.rng)

    def timeout_s(self, remaining_s: float, p99_s: float | None = None) -> float:
        """How long the next try may take, given what is left of the deadline: the fixed
        bound if there is one; else, once the deployment's p99 is known (``p99_s``),
        ``adaptive_factor`` times it, at least ``adaptive_floor_s``. A call into a cut link
        then costs a few times the deployment's usual latency, not the whole deadline."""
        if self.attempt_timeout_s is not None:
            return min(remaining_s, self.attempt_timeout_s)
        if p99_s is not None and self.adaptive_factor > 0.0:
            return min(remaining_s, max(self.adaptive_floor_s, self.adaptive_factor * p99_s))
        return remaining_s
