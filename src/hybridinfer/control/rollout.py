"""Model rollouts in steps: a new model version serves a share of a task's traffic, both
versions are measured side by side, and the better one wins when the policy asks for it.

The policy names the rollout (``rollouts: [{task, model, candidate, percent, promote_when}]``);
the router splits the traffic (``route/rolloutsplit.py``).

What is compared comes from the traces of this replica: answers, errors, median and p95
latency, and the mean confidence of the answers. Confidence is the model's own (calibrated)
probability for its answer, not accuracy: no labels exist online, so "quality" here means how
sure each version is on the same traffic. A version that is more confident on the same inputs
is not proven more accurate; the offline accuracy from each model card is shown next to it.

With ``promote_when``, once both versions have answered ``min_requests`` times the rollout is
decided: the candidate is promoted (all traffic) when it is fast enough and at least as
confident, else rolled back (no traffic). The decision is stored (``model_rollouts``), read by
every replica, and audited as ``model.rollout`` by ``system``.

With a ``guard:`` block instead, the rollout is walked as a policy canary is: the guard's steps
one by one, each judged on the guard metrics of every replica's stored traces, by the replica
leading walks (``control/rolloutwalk.py``). This monitor serves the step the stored walk row is
at, and the walk's final decision is stored and audited as above.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import insert, select

from hybridinfer.control.audit import SYSTEM, AuditLog
from hybridinfer.core import background
from hybridinfer.core.trace import Trace
from hybridinfer.errors import StoreConflict, StoreUnavailable
from hybridinfer.policy.document import CompiledPolicy, ModelRollout, PromoteWhen
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store import tables
from hybridinfer.store.sql import SqlStore, record_of
from hybridinfer.store.walks import LIVE, Walk, Walks

log = logging.getLogger(__name__)

_KEPT_LATENCIES = 2000


@dataclass(slots=True)
class VersionFigures:
    """What one model version did on live traffic, on this replica."""

    answers: int = 0
    errors: int = 0
    confidence_sum: float = 0.0
    confident_answers: int = 0
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=_KEPT_LATENCIES))

    def add(self, status: str, latency_ms: float, confidence: float | None) -> None:
        if status != "ok":
            if status == "error":  # a lost hedge race is not the version's fault
                self.errors += 1
            return
        self.answers += 1
        self.latencies_ms.append(latency_ms)
        if confidence is not None:
            self.confidence_sum += confidence
            self.confident_answers += 1

    def latency_p50(self) -> float | None:
        return statistics.median(self.latencies_ms) if self.latencies_ms else None

    def confidence(self) -> float | None:
        if not self.confident_answers:
            return None
        return self.confidence_sum / self.confident_answers

    def describe(self) -> dict[str, Any]:
        latencies = sorted(self.latencies_ms)
        p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else None
        return {
            "answers": self.answers,
            "errors": self.errors,
            "latency_p50_ms": _round(self.latency_p50()),
            "latency_p95_ms": _round(p95),
            "mean_confidence": _round(self.confidence()),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def verdict(rule: PromoteWhen, baseline: VersionFigures, candidate: VersionFigures) -> str | None:
    """``promoted``, ``rolled_back``, or None while either side has too few answers."""
    if min(baseline.answers, candidate.answers) < rule.min_requests:
        return None
    base_latency, cand_latency = baseline.latency_p50(), candidate.latency_p50()
    fast = (
        base_latency is None
        or cand_latency is None
        or cand_latency <= rule.max_latency_ratio * max(base_latency, 1e-6)
    )
    base_conf, cand_conf = baseline.confidence(), candidate.confidence()
    sure = base_conf is None or cand_conf is None or cand_conf - base_conf >= rule.min_quality_delta
    return "promoted" if fast and sure else "rolled_back"


class RolloutMonitor:
    """Measures the versions under rollout, decides them, and tells the router the split."""

    def __init__(
        self,
        store: SqlStore,
        policy: Callable[[], CompiledPolicy],
        audit: AuditLog | None = None,
        interval_s: float = 1.0,
        registry: NodeRegistry | None = None,
    ) -> None:
        # Every second, as policy centers poll: a walk's move is served on every replica
        # within about a second of the leader's (two small tables read per check).
        self._store = store
        self.walks = Walks(store, table=tables.rollout_walks)
        self._policy = policy
        self._audit = audit
        self._registry = registry
        self._interval = interval_s
        self._figures: dict[tuple[str, str], VersionFigures] = {}
        self._decided: dict[str, dict[str, Any]] = {}
        self._walked: dict[str, Walk] = {}
        self._task: asyncio.Task[None] | None = None

    def percent(self, rollout: ModelRollout) -> float:
        """The candidate's share now: 100/0 once decided, else the step its walk is at, else
        the policy's."""
        walk = self._walking(rollout)
        if walk is not None:
            return walk.percent
        decided = self._decided.get(rollout.id)
        if decided is not None:
            return 100.0 if decided["status"] == "promoted" else 0.0
        return rollout.start_percent

    def _walking(self, rollout: ModelRollout) -> Walk | None:
        """The rollout's walk while its row says it is under way. The row is what is served
        until it records the end: the decision is stored just before it, and a replica reading
        between the two must not serve (nor show) the one without the other."""
        walk = self._walked.get(rollout.id) if rollout.guard is not None else None
        return walk if walk is not None and walk.status in LIVE else None

    def decided(self, rollout_id: str) -> dict[str, Any] | None:
        """The stored decision on the rollout (as last read), if any."""
        return self._decided.get(rollout_id)

    def record(self, trace: Trace) -> None:
        """Trace-sink observer: add each answer of a model under rollout to its version."""
        rollouts = self._policy().policy.rollouts
        if not rollouts:
            return
        for attempt in trace.attempts:
            for rollout in rollouts:
                if attempt.model == rollout.model and trace.task == rollout.task:
                    version = attempt.deployment.rpartition(":")[2]
                    side = "candidate" if version == rollout.candidate else "baseline"
                    figures = self._figures.setdefault((rollout.id, side), VersionFigures())
                    figures.add(attempt.status, attempt.latency_ms, attempt.confidence)

    def describe(self) -> list[dict[str, Any]]:
        """Every rollout of the active policy, both versions side by side."""
        described = []
        for rollout in self._policy().policy.rollouts:
            walk = self._walked.get(rollout.id) if rollout.guard is not None else None
            decided = None if self._walking(rollout) else self._decided.get(rollout.id)
            described.append(
                {
                    "id": rollout.id,
                    "task": rollout.task,
                    "model": rollout.model,
                    "candidate": rollout.candidate,
                    "percent": self.percent(rollout),
                    "status": "running" if decided is None else decided["status"],
                    "decision": decided,
                    "promote_when": None
                    if rollout.promote_when is None
                    else rollout.promote_when.model_dump(),
                    "guard": None if rollout.guard is None else rollout.guard.model_dump(),
                    "walk": None if walk is None else walk.describe(),
                    "baseline": self._figures_of(rollout.id, "baseline").describe(),
                    "candidate_figures": self._figures_of(rollout.id, "candidate").describe(),
                    "deployments": self._deployments(rollout),
                }
            )
        return described

    def _deployments(self, rollout: ModelRollout) -> list[dict[str, Any]]:
        """Where each version runs, with the accuracy its model card measured offline."""
        if self._registry is None:
            return []
        return [
            {
                "id": deployment.id,
                "side": "candidate" if deployment.version == rollout.candidate else "baseline",
                "card_accuracy": deployment.quality,
                "status": node.status.value,
            }
            for node in self._registry.nodes()
            for deployment in node.deployments
            if deployment.model == rollout.model and deployment.task == rollout.task
        ]

    def _figures_of(self, rollout_id: str, side: str) -> VersionFigures:
        return self._figures.get((rollout_id, side)) or VersionFigures()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="rollout-monitor")

    async def stop(self) -> None:
        await background.cancel(self._task)
        self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self.check()
            except StoreUnavailable as exc:
                log.warning("rollout monitor: %s", exc.message)
            await asyncio.sleep(self._interval)

    async def refresh(self) -> None:
        """Read the decisions and the walks' steps the store holds (any replica's)."""
        async with self._store.transaction() as connection:
            rows = await connection.execute(select(tables.model_rollouts))
            self._decided = {str(row.id): record_of(row) for row in rows}
        self._walked = {walk.key: walk for walk in await self.walks.all()}

    async def check(self) -> None:
        """Follow what is stored; decide ``promote_when`` rollouts whose figures suffice.
        A policy with no rollout has nothing to follow: the store is not read (what was read
        last is kept, and the first check under a policy with rollouts reads it again)."""
        if not self._policy().policy.rollouts:
            return
        await self.refresh()
        for rollout in self._policy().policy.rollouts:
            if rollout.promote_when is None or rollout.id in self._decided:
                continue
            baseline = self._figures_of(rollout.id, "baseline")
            candidate = self._figures_of(rollout.id, "candidate")
            status = verdict(rollout.promote_when, baseline, candidate)
            if status is not None:
                await self._decide(rollout, status, baseline, candidate)

    async def _decide(
        self,
        rollout: ModelRollout,
        status: str,
        baseline: VersionFigures,
        candidate: VersionFigures,
    ) -> None:
        comparison = {"baseline": baseline.describe(), "candidate": candidate.describe()}
        winner = f"version {rollout.candidate}" if status == "promoted" else "the current version"
        reason = f"{winner} wins under promote_when {rollout.promote_when}"
        row = await self.decide(rollout, status, reason, comparison)
        if row is not None:
            self._decided[rollout.id] = row

    async def decide(
        self, rollout: ModelRollout, status: str, reason: str, comparison: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Store the decision once for every replica, log it and audit it; the row stored
        (None: another replica decided first, and its decision stands). This replica serves
        it from its next :meth:`refresh`, with the walk's row that records it."""
        before = {"status": "running", "percent": self.percent(rollout)}
        row = {
            "id": rollout.id,
            "status": status,
            "reason": reason,
            "comparison": orjson.dumps(comparison).decode(),
            "decided_at": time.time(),
        }
        try:
            async with self._store.transaction() as connection:
                await connection.execute(insert(tables.model_rollouts).values(**row))
        except StoreConflict:
            return None
        log.info("model rollout %s %s: %s", rollout.id, status, reason)
        if self._audit is not None:
            share = 100.0 if status == "promoted" else 0.0
            after = {"status": status, "percent": share, **comparison}
            await self._audit.record(SYSTEM, "model.rollout", rollout.id, before, after)
        return row
