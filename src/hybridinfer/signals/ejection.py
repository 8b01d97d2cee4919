"""Outlier ejection in Envoy's manner: a deployment whose recent calls are an outlier against
its own history is taken out of routing for a jittered, capped period.

A breaker opens on failures *in a row*; a deployment that fails every other call, or whose
answers became five times slower than it usually is, never trips one. Here each deployment's
last ``window`` calls are compared with its own record: at least ``min_calls`` of them, and
half or more failed, or their mean latency is ``latency_factor`` times its long-run mean (and
``min_excess_ms`` above it) — then it is ejected. The period is drawn between half and all of
``base_s`` doubled per ejection in a row, capped at ``max_s`` (so the deployment is tried again
within ``max_s`` of the path becoming steady), and the recent calls are forgotten: it comes back
with a clean slate. At most ``max_share`` of a tier's deployments (never fewer than one; 0 turns
ejection off) are
ejected at once, and the router never ejects the last candidate a subtask has (Envoy's panic
threshold): ejection moves work, it never turns capacity into an error.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

Clock = Callable[[], float]
HISTORY_ALPHA = 0.05
"""Weight of one answer in a deployment's long-run mean latency. An answer joins the history
when it leaves the recent window, so the history never already holds what it is compared
with."""


@dataclass(slots=True)
class _Record:
    tier: str
    recent: deque[tuple[float, bool]]
    history_ms: float | None = None
    ejected_until: float = float("-inf")
    ejections: int = 0
    """Ejections in a row (reset once a full window of calls after one succeeded)."""
    total: int = 0
    """Times ejected so far (shown in ``/v1/nodes``)."""
    failed: int = 0
    """Failed calls among ``recent``, kept as calls come and go (every call reads it)."""
    latency_sum_ms: float = 0.0
    """The sum of ``recent``'s latencies, kept the same way."""

    def clear(self) -> None:
        self.recent.clear()
        self.failed = 0
        self.latency_sum_ms = 0.0


@dataclass
class Ejections:
    """Every deployment's outlier record; written by the executor, read by the router."""

    base_s: float = 0.5
    max_s: float = 2.0
    max_share: float = 0.5
    window: int = 20
    min_calls: int = 10
    failure_share: float = 0.5
    latency_factor: float = 5.0
    min_excess_ms: float = 50.0
    clock: Clock = time.monotonic
    rng: random.Random = field(default_factory=random.Random)
    _records: dict[str, _Record] = field(default_factory=dict)
    version: int = 0
    """Moves with every ejection (an ejection's end is ``ends_at``)."""

    def observe(self, deployment_id: str, tier: str, latency_ms: float, ok: bool) -> None:
        """One call's outcome; may eject the deployment."""
        record = self._records.get(deployment_id)
        if record is None:
            record = self._records[deployment_id] = _Record(tier, deque(maxlen=self.window))
        now = self.clock()
        if now < record.ejected_until:
            return  # a call decided before the ejection: its outcome is already accounted for
        if len(record.recent) == self.window:  # the oldest call leaves for the history
            old_ms, old_ok = record.recent[0]
            record.latency_sum_ms -= old_ms
            record.failed -= not old_ok
            if old_ok:
                history = record.history_ms
                record.history_ms = (
                    old_ms
                    if history is None
                    else (1 - HISTORY_ALPHA) * history + HISTORY_ALPHA * old_ms
                )
        record.recent.append((latency_ms, ok))
        record.latency_sum_ms += latency_ms
        record.failed += not ok
        if self._outlier(record):
            self._eject(record, now)
        elif len(record.recent) == self.window and record.failed == 0:
            record.ejections = 0

    def ejected(self, deployment_id: str) -> bool:
        record = self._records.get(deployment_id)
        return record is not None and self.clock() < record.ejected_until

    def ends_at(self, deployment_ids: Iterable[str]) -> float:
        """The earliest moment (this clock) an ejection among ``deployment_ids`` ends
        (infinity for none now)."""
        now = self.clock()
        ends = [
            record.ejected_until
            for deployment_id in deployment_ids
            if (record := self._records.get(deployment_id)) is not None
            and record.ejected_until > now
        ]
        return min(ends, default=float("inf"))

    def describe(self, deployment_id: str) -> dict[str, object]:
        """As ``/v1/nodes`` shows it: ejected now, and how often so far."""
        record = self._records.get(deployment_id)
        return {
            "ejected": self.ejected(deployment_id),
            "ejections": 0 if record is None else record.total,
        }

    def _outlier(self, record: _Record) -> bool:
        recent = record.recent
        if len(recent) < self.min_calls:
            return False
        if record.failed >= self.failure_share * len(recent):
            return True
        if record.history_ms is None:
            return False
        mean_ms = record.latency_sum_ms / len(recent)
        return (
            mean_ms >= self.latency_factor * record.history_ms
            and mean_ms - record.history_ms >= self.min_excess_ms
        )

    def _eject(self, record: _Record, now: float) -> None:
        in_tier = [r for r in self._records.values() if r.tier == record.tier]
        ejected = sum(now < r.ejected_until for r in in_tier)
        if self.max_share <= 0.0 or ejected >= max(1, int(self.max_share * len(in_tier))):
            return  # ejection is off, or the tier's share is spent: this one keeps serving
        ceiling = min(self.max_s, self.base_s * 2.0 ** min(record.ejections, 30))
        record.ejected_until = now + self.rng.uniform(ceiling / 2, ceiling)
        record.ejections += 1
        record.total += 1
        record.clear()
        self.version += 1
