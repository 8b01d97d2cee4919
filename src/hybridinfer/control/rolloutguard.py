"""Model rollouts judged like guarded canaries: a rollout with a ``guard:`` block is decided on
error rate, p99 latency, cloud share and spend per request (``policy/guard.py``'s comparison),
over the finished traces of every replica in the shared store, not one replica's memory.

The window is the last ``dwell_s`` seconds of traces of the active policy version (so traffic
under a policy canary or an older version is not counted). A trace is the candidate's when the
first call to the rollout's model went to the candidate version — the split chose it — and the
baseline's when it went to another version; traces that never called the model are left out.
Once both sides have ``min_requests`` in the window, a breach rolls the candidate back and no
breach promotes it. The guard's ``steps`` are not walked here: the rollout serves its
``percent`` until decided.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hybridinfer.control.canarywalk import figures_of
from hybridinfer.policy.document import ModelRollout
from hybridinfer.policy.guard import Figures, Guard, breaches
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.walks import Walks


@dataclass(frozen=True, slots=True)
class GuardDecision:
    """A guard-judged rollout: ``promoted`` or ``rolled_back``, why, and the figures."""

    status: str
    reason: str
    comparison: dict[str, Any]


def side_of(trace: Mapping[str, Any], rollout: ModelRollout) -> str | None:
    """``candidate`` or ``baseline`` by the version the first call to the model went to."""
    if trace.get("task") != rollout.task:
        return None
    for attempt in trace.get("attempts") or ():
        if attempt.get("model") == rollout.model:
            version = str(attempt.get("deployment") or "").rpartition(":")[2]
            return "candidate" if version == rollout.candidate else "baseline"
    return None


def split_figures(
    traces: Iterable[Mapping[str, Any]], rollout: ModelRollout, policy_version: str
) -> tuple[Figures, Figures]:
    """The baseline's and the candidate's guard figures among ``traces`` of the version."""
    sides: dict[str, list[Mapping[str, Any]]] = {"baseline": [], "candidate": []}
    for trace in traces:
        side = side_of(trace, rollout) if trace.get("policy_version") == policy_version else None
        if side is not None:
            sides[side].append(trace)
    return figures_of(sides["baseline"]), figures_of(sides["candidate"])


def guard_verdict(guard: Guard, baseline: Figures, candidate: Figures) -> GuardDecision | None:
    """The decision once both sides have ``min_requests``; None before."""
    if min(baseline.requests, candidate.requests) < guard.min_requests:
        return None
    broken = breaches(guard, candidate, baseline)
    comparison = {
        "baseline": baseline.describe(),
        "candidate": candidate.describe(),
        "breaches": [breach.describe() for breach in broken],
    }
    if broken:
        reason = "breached " + "; ".join(breach.sentence() for breach in broken)
        return GuardDecision("rolled_back", reason, comparison)
    return GuardDecision("promoted", "every guard held against the current version", comparison)


class GuardedRollouts:
    """Reads the shared window of traces and judges a guarded rollout on it."""

    def __init__(
        self,
        store: SqlStore,
        flush: Callable[[], Awaitable[None]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._walks = Walks(store)
        self._flush = flush
        self._clock = clock

    async def judge(
        self, rollout: ModelRollout, guard: Guard, policy_version: str
    ) -> GuardDecision | None:
        """Flush this replica's traces, read every replica's window, and decide (or not)."""
        await self._flush()
        traces = await self._walks.traces_since(self._clock() - guard.dwell_s)
        baseline, candidate = split_figures(traces, rollout, policy_version)
        return guard_verdict(guard, baseline, candidate)


__all__ = ["GuardDecision", "GuardedRollouts", "guard_verdict", "side_of", "split_figures"]
