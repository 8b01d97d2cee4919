"""Guarded progressive canaries: a walk raises a policy canary step by step (5 → 20 → 50 →
100 % by default) and rolls it back by itself when a guard breaks.

At each step the canary's requests are compared with the baseline's over the same window (the
step so far), from the shared trace store, so the figures are every replica's: error rate, p99
latency, cloud share and spend per request, with the tolerances of the canary's ``guard:``
block (``policy/guard.py``). Once both sides have ``min_requests``, a breach rolls back at
once; a step that held for ``dwell_s`` moves on; passing the 100 % step promotes. At 100 % no
request is on the baseline, so that step is judged against the last baseline figures seen.

One replica leads (a lease in the store, ``store/leases.py``); the others only follow the
stored walk and policy states, so the walk survives the leader's death: when its lease
expires another replica takes it over where the store says it was. Every move is audited
(``policy.walk.*``) with the figures that decided it; a breach names the guard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from hybridinfer.control.audit import AuditLog
from hybridinfer.control.policycenter import PolicyCenter
from hybridinfer.core import background
from hybridinfer.errors import HybridInferError, InvalidInput, InvalidTransition, NotFound
from hybridinfer.policy.guard import EMPTY, Figures, Guard, breaches, p99
from hybridinfer.route.replay import answered_attempts, answering_attempt
from hybridinfer.store.leases import Lease
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.walks import Walk, Walks

log = logging.getLogger(__name__)

ACTOR = "canary-walk"
"""Who the audit log names for the walk's own moves."""


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


class CanaryWalker:
    """Starts, pauses, resumes and aborts walks; the leader's loop judges and moves them."""

    def __init__(
        self,
        store: SqlStore,
        policies: PolicyCenter,
        audit: AuditLog,
        flush: Callable[[], Awaitable[None]],
        tick_s: float = 0.5,
        lease_ttl_s: float = 3.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._walks = Walks(store, clock)
        self._policies = policies
        self._audit = audit
        self._flush = flush
        self._tick_s = tick_s
        self._clock = clock
        self.lease = Lease(store, "canary-walk", uuid.uuid4().hex[:16], lease_ttl_s, clock)
        self._task: asyncio.Task[None] | None = None

    async def begin(
        self,
        version: str,
        actor: str,
        dwell_s: float | None = None,
        min_requests: int | None = None,
    ) -> dict[str, Any]:
        """Start a walk of ``version`` at its first step (the canary starts there)."""
        guard = (await self._policies.load_version(version)).policy.guard
        changes: dict[str, Any] = {"dwell_s": dwell_s, "min_requests": min_requests}
        try:  # the overrides obey the same bounds as the block
            guard = Guard.model_validate(
                {**guard.model_dump(), **{k: v for k, v in changes.items() if v is not None}}
            )
        except ValidationError as exc:
            raise InvalidInput(f"walk settings: {exc.errors()[0]['msg']}") from None
        await self._policies.canary(version, guard.steps[0], actor)
        walk = await self._walks.start(version, guard.model_dump(mode="json"))
        await self._audit.record(actor, "policy.walk.start", version, None, walk.describe())
        return walk.describe()

    async def pause(self, version: str, actor: str) -> dict[str, Any]:
        return await self._set(version, actor, "walking", "paused")

    async def resume(self, version: str, actor: str) -> dict[str, Any]:
        """Walk on; the step's window starts again (paused time is not judged)."""
        return await self._set(version, actor, "paused", "walking")

    async def abort(self, version: str, actor: str) -> dict[str, Any]:
        """Stop the walk and roll the canary back."""
        walk = await self._live(version)
        await self._walks.save(version, status="aborted", step=walk.step, state=walk.state)
        await self._audit.record(actor, "policy.walk.abort", version, walk.status, "aborted")
        await self._policies.rollback(version, actor)
        return await self.describe(version)

    async def _set(self, version: str, actor: str, expected: str, status: str) -> dict[str, Any]:
        walk = await self._live(version)
        if walk.status != expected:
            raise InvalidTransition(f"the walk of {version!r} is {walk.status}, not {expected}")
        started = self._clock() if status == "walking" else None
        await self._walks.save(
            version, status=status, step=walk.step, state=walk.state, step_started_at=started
        )
        await self._audit.record(actor, f"policy.walk.{status}", version, expected, status)
        return await self.describe(version)

    async def _live(self, version: str) -> Walk:
        walk = await self._walks.get(version)
        if walk is None or walk.status not in ("walking", "paused"):
            raise NotFound(f"no walk of {version!r} under way", code="unknown_walk")
        return walk

    async def describe(self, version: str) -> dict[str, Any]:
        """The walk, with the replica leading walks now and the one answering."""
        walk = await self._walks.get(version)
        if walk is None:
            raise NotFound(f"no walk of {version!r}", code="unknown_walk")
        leader = await self.lease.leader()
        return {**walk.describe(), "leader": leader, "replica": self.lease.holder}

    async def overview(self) -> list[dict[str, Any]]:
        """Every walk, newest first (``/v1/rollouts``)."""
        return [walk.describe() for walk in await self._walks.all()]

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
            await asyncio.sleep(self._tick_s)

    async def tick(self) -> None:
        """If this replica leads: judge every walk under way, and move it."""
        if not await self.lease.hold():
            return
        for walk in await self._walks.live():
            if walk.status == "walking":
                await self._judge(walk)

    async def _judge(self, walk: Walk) -> None:
        guard = Guard.model_validate(walk.settings)
        states = {s.version: s for s in await self._policies.states()}
        mine = states.get(walk.version)
        if mine is None or mine.status != "canary":  # moved by hand meanwhile
            status = "promoted" if mine is not None and mine.status == "active" else "aborted"
            await self._walks.save(walk.version, status=status, step=walk.step, state=walk.state)
            return
        active = next((s.version for s in states.values() if s.status == "active"), None)
        await self._flush()
        traces = await self._walks.traces_since(walk.step_started_at)
        canary = figures_of(t for t in traces if t.get("policy_version") == walk.version)
        baseline = figures_of(t for t in traces if t.get("policy_version") == active)
        if guard.steps[walk.step] >= 100.0 or baseline.requests < guard.min_requests:
            baseline = Figures(**walk.state.get("baseline", EMPTY.describe()))
        if canary.requests < guard.min_requests or baseline.requests < guard.min_requests:
            return
        figures = {"canary": canary.describe(), "baseline": baseline.describe()}
        broken = breaches(guard, canary, baseline)
        if broken:
            await self._roll_back(walk, figures, [b.describe() for b in broken])
        elif self._clock() - walk.step_started_at >= guard.dwell_s:
            await self._step_up(walk, guard, figures, baseline)

    async def _roll_back(
        self, walk: Walk, figures: dict[str, Any], broken: list[dict[str, Any]]
    ) -> None:
        state = {**walk.state, "breach": broken, "moved_by": self.lease.holder}
        state["steps"] = [*walk.state.get("steps", []), {"step": walk.step, **figures}]
        await self._policies.rollback(walk.version, ACTOR)
        await self._walks.save(walk.version, status="rolled_back", step=walk.step, state=state)
        names = ", ".join(b["guard"] for b in broken)
        await self._audit.record(
            ACTOR, "policy.walk.rollback", walk.version, figures, {"breached": names, **state}
        )
        log.warning(
            "canary %s rolled back: %s", walk.version, "; ".join(b["sentence"] for b in broken)
        )

    async def _step_up(
        self, walk: Walk, guard: Guard, figures: dict[str, Any], baseline: Figures
    ) -> None:
        state = {**walk.state, "baseline": baseline.describe(), "moved_by": self.lease.holder}
        state["steps"] = [*walk.state.get("steps", []), {"step": walk.step, **figures}]
        if walk.step + 1 >= len(guard.steps):
            await self._policies.promote(walk.version, ACTOR)
            await self._walks.save(walk.version, status="promoted", step=walk.step, state=state)
            await self._audit.record(ACTOR, "policy.walk.promote", walk.version, figures, state)
            return
        percent = guard.steps[walk.step + 1]
        await self._policies.canary(walk.version, percent, ACTOR)
        await self._walks.save(
            walk.version,
            status="walking",
            step=walk.step + 1,
            state=state,
            step_started_at=self._clock(),
        )
        await self._audit.record(
            ACTOR, "policy.walk.step", walk.version, figures, {"percent": percent}
        )


__all__ = ["ACTOR", "CanaryWalker", "figures_of"]
