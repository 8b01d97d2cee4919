"""Model A/B by the walk machinery: a model rollout with a ``guard:`` block is walked as a
policy canary is (``walker.py``) — the candidate version's share raised through the guard's
steps (5 → 20 → 50 → 100 % by default), each step judged on error rate, p99 latency, cloud share
and spend per request over every replica's stored traces, rolled back at once on a breach,
promoted after the last step.

What is particular to a model rollout: the walk starts by itself once a policy naming the
rollout is active (no operator move), and the window holds only traces of that active policy
version (traffic under a policy canary or an older version is not counted). A trace is the
candidate's when the first call to the rollout's model went to the candidate version — the
split chose it — and the baseline's when it went to another version; traces that never called
the model are left out. A step up is the walk row alone: every replica's
:class:`~hybridinfer.control.rollout.RolloutMonitor` serves the step its stored row is at. The
end is the rollout's stored decision (``model_rollouts``, audited ``model.rollout``), which
every replica follows. A rollout that leaves the active policy ends its walk (``aborted``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hybridinfer.control.audit import AuditLog
from hybridinfer.control.rollout import RolloutMonitor
from hybridinfer.control.walker import ACTOR, Move, figures_of
from hybridinfer.policy.document import CompiledPolicy, ModelRollout
from hybridinfer.policy.guard import Figures
from hybridinfer.store import tables
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.walks import LIVE, Walk, Walks


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
    """The candidate's and the baseline's guard figures among ``traces`` of the version."""
    sides: dict[str, list[Mapping[str, Any]]] = {"baseline": [], "candidate": []}
    for trace in traces:
        side = side_of(trace, rollout) if trace.get("policy_version") == policy_version else None
        if side is not None:
            sides[side].append(trace)
    return figures_of(sides["candidate"]), figures_of(sides["baseline"])


class RolloutWalks:
    """Guarded model rollouts of the active policy as walked things."""

    kind = "model"

    def __init__(
        self,
        store: SqlStore,
        monitor: RolloutMonitor,
        policy: Callable[[], CompiledPolicy],
        audit: AuditLog,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._monitor = monitor
        self.walks = Walks(store, clock, tables.rollout_walks)
        self._policy = policy
        self._audit = audit
        self._live_seen = True
        """Whether the last look found a live walk (True until it has looked)."""

    def _guarded(self) -> dict[str, ModelRollout]:
        return {r.id: r for r in self._policy().policy.rollouts if r.guard is not None}

    async def due(self) -> list[Walk]:
        """Every live walk; a walk started for each guarded rollout not decided nor walking.
        With no guarded rollout in the policy and none live at the last look, there is
        nothing to walk and the store is not read (a walk only starts from a guarded rollout,
        and every replica serves the same policy)."""
        if not self._guarded() and not self._live_seen:
            return []
        await self._monitor.refresh()
        walks = {walk.key: walk for walk in await self.walks.all()}
        due = [walk for walk in walks.values() if walk.status in LIVE]
        for rollout in self._guarded().values():
            known = walks.get(rollout.id)
            if self._monitor.decided(rollout.id) is None and (
                known is None or known.status not in LIVE
            ):
                due.append(await self._begin(rollout))
        self._live_seen = bool(due)
        return due

    async def _begin(self, rollout: ModelRollout) -> Walk:
        assert rollout.guard is not None
        walk = await self.walks.start(rollout.id, rollout.guard.model_dump(mode="json"))
        await self._audit.record(ACTOR, "model.walk.start", rollout.id, None, walk.describe())
        return walk

    async def ended(self, walk: Walk) -> str | None:
        decided = self._monitor.decided(walk.key)
        if decided is not None:  # decided meanwhile: the decision stands
            return str(decided["status"])
        return None if walk.key in self._guarded() else "aborted"

    async def sides(self, walk: Walk, traces: list[dict[str, Any]]) -> tuple[Figures, Figures]:
        rollout = self._guarded()[walk.key]
        return split_figures(traces, rollout, self._policy().version)

    async def serve(self, walk: Walk, move: Move) -> None:
        """A step up is the walk row (saved next); the end is the rollout's decision."""
        if move.kind == "step":
            return
        rollout = self._guarded()[walk.key]
        comparison = {
            "baseline": move.baseline.describe(),
            "candidate": move.canary.describe(),
            "breaches": [breach.describe() for breach in move.breaches],
            "step": walk.step,
            "step_percent": walk.percent,
        }
        if move.kind == "rollback":
            reason = f"breached at {walk.percent:g} %: " + "; ".join(
                breach.sentence() for breach in move.breaches
            )
            await self._monitor.decide(rollout, "rolled_back", reason, comparison)
        else:
            reason = "every guard held at every step, up to 100 %"
            await self._monitor.decide(rollout, "promoted", reason, comparison)

    async def recorded(self, walk: Walk) -> None:
        """Serve the new step (or the walk's end) on this replica at once."""
        await self._monitor.refresh()


__all__ = ["RolloutWalks", "side_of", "split_figures"]
