"""Guarded walks: the one machinery that raises a canary step by step (5 → 20 → 50 → 100 % by
default) and rolls it back by itself when a guard breaks, whatever is walked — a policy canary
(``canarywalk.py``) or a model rollout's candidate version (``rolloutwalk.py``), each a
:class:`WalkSubject`.

At each step the canary's requests are compared with the baseline's over the same window (the
step so far), from the shared trace store, so the figures are every replica's: error rate, p99
latency, cloud share and spend per request, with the tolerances of the walk's ``guard:`` block
(``policy/guard.py``). Once both sides have ``min_requests``, a breach rolls back at once; a
step that held for ``dwell_s`` moves on; passing the 100 % step promotes. At 100 % no request
is on the baseline, so that step is judged against the last baseline figures seen.

One replica leads every walk (the ``canary-walk`` lease, ``store/leases.py``); the others only
follow the stored walk rows and what each subject stores, so a walk survives the leader's
death: when its lease expires another replica takes it over where the store says it was. Every
move is audited (``policy.walk.*``, ``model.walk.*``) with the figures that decided it; a
breach names the guard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from hybridinfer.control.audit import AuditLog
from hybridinfer.core import background
from hybridinfer.errors import HybridInferError
from hybridinfer.policy.guard import EMPTY, Breach, Figures, Guard, breaches, p99
from hybridinfer.route.replay import answered_attempts, answering_attempt
from hybridinfer.store.leases import Lease
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.walks import Walk, Walks

log = logging.getLogger(__name__)

ACTOR = "canary-walk"
"""Who the audit log names for the walk's own moves."""

IDLE_TICKS = 4
"""While no walk is under way the loop ticks this many times slower (at most half a lease, so
a leader still renews in time and a follower takes over soon after an expiry); a walk started
or resumed through this replica wakes it at once, one started through another within an idle
tick."""


def figures_of(traces: Iterable[Mapping[str, Any]]) -> Figures:
    """Guard figures of finished traces: errors, p99 of totals, requests any of whose
    subtasks a cloud deployment answered, spend of every answered call (hedges included)."""
    totals: list[float] = []
    errors = cloud = 0
    spend = 0.0
    for trace in traces:
        totals.append(float((trace.get("timings_ms") or {}).get("total", 0.0)))
        errors += trace.get("status") == "error"
        costs = {
            c["deployment"]: float(c.get("cost_per_call") or 0.0)
            for d in trace.get("decisions") or ()
            for c in d.get("candidates") or ()
        }
        attempts = trace.get("attempts") or ()
        answers = [answering_attempt(attempts, d["subtask"]) for d in trace.get("decisions") or ()]
        cloud += any(a is not None and a.get("tier") == "cloud" for a in answers)
        spend += sum(
            costs.get(a["deployment"], 0.0)
            for d in trace.get("decisions") or ()
            for a in answered_attempts(attempts, d["subtask"])
        )
    count = len(totals)
    if not count:
        return EMPTY
    return Figures(count, errors / count, p99(totals), cloud / count, spend / count)


@dataclass(frozen=True, slots=True)
class Move:
    """What a judged step decided: roll back, step up to ``percent``, or promote; with the
    figures that decided it and the baseline figures the walk carries on with."""

    kind: Literal["rollback", "step", "promote"]
    canary: Figures
    baseline: Figures
    breaches: tuple[Breach, ...] = ()
    percent: float = 100.0

    @property
    def status(self) -> str:
        """The walk's status after the move."""
        return {"rollback": "rolled_back", "promote": "promoted", "step": "walking"}[self.kind]

    def figures(self) -> dict[str, Any]:
        return {"canary": self.canary.describe(), "baseline": self.baseline.describe()}


def next_move(
    guard: Guard, walk: Walk, canary: Figures, baseline: Figures, now: float
) -> Move | None:
    """The move a step's window calls for, or None (too few requests, or the dwell not over).

    At the 100 % step, or while the baseline is short of requests, the last baseline figures
    the walk stored stand in for it."""
    if guard.steps[walk.step] >= 100.0 or baseline.requests < guard.min_requests:
        baseline = Figures(**walk.state.get("baseline", EMPTY.describe()))
    if canary.requests < guard.min_requests or baseline.requests < guard.min_requests:
        return None
    broken = breaches(guard, canary, baseline)
    if broken:
        return Move("rollback", canary, baseline, tuple(broken))
    if now - walk.step_started_at < guard.dwell_s:
        return None
    if walk.step + 1 >= len(guard.steps):
        return Move("promote", canary, baseline)
    return Move("step", canary, baseline, percent=guard.steps[walk.step + 1])


class WalkSubject(Protocol):
    """A kind of thing walked: where its walks are stored, how a window splits into canary and
    baseline, and how a move is served."""

    kind: str
    """``policy`` or ``model``: the audit actions are ``{kind}.walk.*``."""
    walks: Walks

    async def due(self) -> list[Walk]:
        """The walks to judge now (a subject may start walks here)."""
        ...

    async def ended(self, walk: Walk) -> str | None:
        """The walk's final status when what it walks was moved meanwhile (None: walk on)."""
        ...

    async def sides(self, walk: Walk, traces: list[dict[str, Any]]) -> tuple[Figures, Figures]:
        """The canary's and the baseline's figures among the window's ``traces``."""
        ...

    async def serve(self, walk: Walk, move: Move) -> None:
        """Make ``move`` take effect for every replica (before the walk row records it)."""
        ...

    async def recorded(self, walk: Walk) -> None:
        """The walk row now records the move (a subject serving from the row reads it here)."""
        ...


class Walker:
    """The leader's loop: judges every walk of every subject, and moves it."""

    def __init__(
        self,
        store: SqlStore,
        audit: AuditLog,
        flush: Callable[[], Awaitable[None]],
        tick_s: float = 0.5,
        lease_ttl_s: float = 3.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._window = Walks(store, clock)
        self._audit = audit
        self._flush = flush
        self._tick_s = tick_s
        self._clock = clock
        self.lease = Lease(store, "canary-walk", uuid.uuid4().hex[:16], lease_ttl_s, clock)
        self.subjects: list[WalkSubject] = []
        self._task: asyncio.Task[None] | None = None
        self._idle_tick_s = min(tick_s * IDLE_TICKS, max(lease_ttl_s / 2, tick_s))
        self._nudged = asyncio.Event()
        self.walking = True
        """Whether the last tick found a walk under way (or had not looked yet)."""

    def lead(self, subject: WalkSubject) -> None:
        """Walk ``subject``'s walks too, under the same lease."""
        self.subjects.append(subject)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="canary-walk")

    async def stop(self) -> None:
        """Stop judging; hand the lease over at once (a replica killed hands it over when it
        expires)."""
        await background.cancel(self._task)
        self._task = None
        with contextlib.suppress(HybridInferError):
            await self.lease.release()

    async def _run(self) -> None:
        while True:
            try:
                await self.tick()
            except HybridInferError as exc:  # the store away, a move raced: try next tick
                log.warning("canary walk: %s", exc.message)
            except Exception:  # a loop that died silently would stop every walk
                log.exception("canary walk tick failed")
            await self._wait()

    def nudge(self) -> None:
        """A walk started or resumed here: judge it from the next tick, not an idle one."""
        self.walking = True
        self._nudged.set()

    async def _wait(self) -> None:
        """One tick while a walk is under way; while none is, the longer idle tick, cut
        short by :meth:`nudge`."""
        self._nudged.clear()
        period = self._tick_s if self.walking else self._idle_tick_s
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(period):
                await self._nudged.wait()

    async def tick(self) -> None:
        """If this replica leads: judge every walk under way, and move it."""
        if not await self.lease.hold():
            self.walking = False  # a follower only needs to notice the lease expire
            return
        walking = False
        for subject in self.subjects:
            for walk in await subject.due():
                if walk.status == "walking":
                    walking = True
                    await self._judge(subject, walk)
        self.walking = walking

    async def _judge(self, subject: WalkSubject, walk: Walk) -> None:
        ended = await subject.ended(walk)
        if ended is not None:  # moved by hand meanwhile
            await subject.walks.save(walk.key, status=ended, step=walk.step, state=walk.state)
            return
        await self._flush()
        traces = await self._window.traces_since(walk.step_started_at)
        canary, baseline = await subject.sides(walk, traces)
        guard = Guard.model_validate(walk.settings)
        move = next_move(guard, walk, canary, baseline, self._clock())
        if move is not None:
            await self._apply(subject, walk, move)

    async def _apply(self, subject: WalkSubject, walk: Walk, move: Move) -> None:
        """Serve the move, record it on the walk row, audit it."""
        figures = move.figures()
        state = {**walk.state, "moved_by": self.lease.holder}
        state["steps"] = [*walk.state.get("steps", []), {"step": walk.step, **figures}]
        if move.kind == "rollback":
            state["breach"] = [breach.describe() for breach in move.breaches]
        else:
            state["baseline"] = move.baseline.describe()
        await subject.serve(walk, move)
        stepped = move.kind == "step"
        await subject.walks.save(
            walk.key,
            status=move.status,
            step=walk.step + stepped,
            state=state,
            step_started_at=self._clock() if stepped else None,
        )
        await subject.recorded(walk)
        action, after = f"{subject.kind}.walk.{move.kind}", state
        if move.kind == "rollback":
            after = {"breached": ", ".join(b.guard for b in move.breaches), **state}
            sentences = "; ".join(b.sentence() for b in move.breaches)
            log.warning("%s walk of %s rolled back: %s", subject.kind, walk.key, sentences)
        elif stepped:
            after = {"percent": move.percent}
        await self._audit.record(ACTOR, action, walk.key, figures, after)


__all__ = ["ACTOR", "Move", "WalkSubject", "Walker", "figures_of", "next_move"]
