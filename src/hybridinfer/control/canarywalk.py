"""Guarded progressive policy canaries: a walk raises a policy canary step by step (5 → 20 →
50 → 100 % by default) and rolls it back by itself when a guard breaks.

The judging, stepping, leading and auditing are the shared walk machinery's (``walker.py``);
here is what is particular to a policy: the canary's requests are those its version decided,
the baseline's those the active version decided, and a move is a policy canary move
(``policy.canary|promote|rollback``, stored and followed by every replica's policy center).
An operator starts, pauses, resumes and aborts a walk; a canary moved by hand ends it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from hybridinfer.control.audit import AuditLog
from hybridinfer.control.policycenter import PolicyCenter
from hybridinfer.control.walker import ACTOR, Move, Walker, figures_of
from hybridinfer.errors import InvalidInput, InvalidTransition, NotFound
from hybridinfer.policy.guard import Figures, Guard
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.walks import Walk, Walks


class PolicyWalks:
    """Policy canaries as walked things: their walks, window split and moves."""

    kind = "policy"

    def __init__(self, store: SqlStore, policies: PolicyCenter, clock: Callable[[], float]) -> None:
        self.walks = Walks(store, clock)
        self._policies = policies

    async def due(self) -> list[Walk]:
        return await self.walks.live()

    async def ended(self, walk: Walk) -> str | None:
        states = {s.version: s for s in await self._policies.states()}
        mine = states.get(walk.key)
        if mine is not None and mine.status == "canary":
            return None
        return "promoted" if mine is not None and mine.status == "active" else "aborted"

    async def sides(self, walk: Walk, traces: list[dict[str, Any]]) -> tuple[Figures, Figures]:
        states = await self._policies.states()
        active = next((s.version for s in states if s.status == "active"), None)
        canary = figures_of(t for t in traces if t.get("policy_version") == walk.key)
        baseline = figures_of(t for t in traces if t.get("policy_version") == active)
        return canary, baseline

    async def serve(self, walk: Walk, move: Move) -> None:
        if move.kind == "rollback":
            await self._policies.rollback(walk.key, ACTOR)
        elif move.kind == "promote":
            await self._policies.promote(walk.key, ACTOR)
        else:
            await self._policies.canary(walk.key, move.percent, ACTOR)

    async def recorded(self, walk: Walk) -> None:
        """Nothing to do: the policy center serves the canary's moves."""


class CanaryWalker(Walker):
    """The walk machinery, leading policy walks (and any other subject it is given to lead);
    starts, pauses, resumes and aborts policy walks."""

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
        super().__init__(store, audit, flush, tick_s, lease_ttl_s, clock)
        subject = PolicyWalks(store, policies, clock)
        self.lead(subject)
        self._walks = subject.walks
        self._policies = policies

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
        self.nudge()
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
        if status == "walking":
            self.nudge()
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


__all__ = ["ACTOR", "CanaryWalker", "PolicyWalks", "figures_of"]
