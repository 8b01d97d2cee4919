"""The policy center: versions in the store, validation before apply, hot reload everywhere,
canaries by percentage of traffic, promotion, rollback, and an audit entry for each change.

Every replica polls the store's active and canary versions (default every second), so a change
made through one replica is live on all of them within the poll interval. A policy file named
in the settings seeds the store and is re-applied when the file changes on disk (a ConfigMap
update); an invalid file is logged and the running policy stays. The state machine of versions
and the traffic split are in ``canary.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from hybridinfer.control.audit import SYSTEM, AuditLog
from hybridinfer.core import background
from hybridinfer.core.topology import Tier
from hybridinfer.errors import (
    ConfigError,
    InvalidPolicy,
    NotFound,
    PolicyConflict,
    StoreConflict,
    StoreUnavailable,
)
from hybridinfer.policy.canary import (
    Change,
    VersionState,
    on_canary_side,
    plan_canary,
    plan_promote,
    plan_rollback,
    summary,
)
from hybridinfer.policy.document import CompiledPolicy, Policy, compile_policy
from hybridinfer.route.calibration import resolve_threshold
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store.policystates import PolicyStates
from hybridinfer.store.sql import SqlStore

log = logging.getLogger(__name__)

_COMPILED_KEPT = 16
"""Compiled versions kept per replica, so a rollback swaps objects instead of compiling."""


def cascade_thresholds(policy: Policy, registry: NodeRegistry) -> dict[str, float]:
    """Thresholds for knobs given in user terms, from the local model's calibration."""
    resolved: dict[str, float] = {}
    for task, rule in policy.cascade.items():
        local = [
            deployment
            for node in registry.nodes()
            if node.tier is Tier.LOCAL
            for deployment in node.deployments
            if deployment.task == task
        ]
        for deployment in sorted(local, key=lambda d: (d.cost_per_call, d.latency_ms)):
            threshold = resolve_threshold(rule, deployment.calibration)
            if threshold is not None:
                resolved[task] = round(threshold, 6)
                break
    return resolved


@dataclass(frozen=True, slots=True)
class Canary:
    """A version serving ``percent`` of the traffic next to the active one."""

    policy: CompiledPolicy
    percent: float


class PolicyCenter:
    """Holds the active (and canary) compiled policy; applies, moves, lists and reloads
    versions."""

    def __init__(
        self,
        store: SqlStore,
        registry: NodeRegistry,
        seed_file: Path,
        poll_interval_s: float = 1.0,
        audit: AuditLog | None = None,
    ) -> None:
        self._store = store
        self._states = PolicyStates(store)
        self._registry = registry
        self._seed_file = seed_file
        self._poll_interval = poll_interval_s
        self._audit = audit
        self._seed_mtime = 0.0
        self._task: asyncio.Task[None] | None = None
        self._active = self.compile(self._read_seed(), str(seed_file))
        self._canary: Canary | None = None
        self._compiled: dict[str, CompiledPolicy] = {}
        self._changes = 0
        """Changes made here (apply, canary moves); a reload that read the store before one
        of them adopts nothing, or it would put back what the change just replaced."""

    def current(self) -> CompiledPolicy:
        """The active version (budgets and defaults read it; requests go through ``choose``)."""
        return self._active

    def canary_state(self) -> Canary | None:
        return self._canary

    async def overview(self) -> dict[str, Any]:
        """``{"active", "canary", "policies"}``: what serves traffic, and every version."""
        canary = self._canary
        return {
            "active": self._active.version,
            "canary": None
            if canary is None
            else {"version": canary.policy.version, "percent": canary.percent},
            "policies": await self.list(),
        }

    def choose(self, routing_key: str) -> CompiledPolicy:
        """The version that decides a request: the canary for its share of routing keys."""
        canary = self._canary
        if canary is not None and on_canary_side(
            routing_key, canary.policy.version, canary.percent
        ):
            return canary.policy
        return self._active

    def compile(self, text: str, source: str = "policy") -> CompiledPolicy:
        first = compile_policy(text, source)
        return compile_policy(text, source, cascade_thresholds(first.policy, self._registry))

    def _read_seed(self) -> str:
        try:
            self._seed_mtime = self._seed_file.stat().st_mtime
            return self._seed_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read policy {self._seed_file}: {exc.strerror}") from None

    async def start(self) -> None:
        """Seed the store from the policy file if its version is new; load the active one."""
        seeded = self.compile(self._active.text, str(self._seed_file))
        if await self._store.get_policy(seeded.version) is None:
            with contextlib.suppress(StoreConflict):  # replicas starting together: one seeds
                await self._store.add_policy(seeded.version, seeded.text, seeded.thresholds, "file")
                await self._record(SYSTEM, "policy.apply", seeded.version, None)
        self._active = seeded  # now compiled with the local tier's calibration
        await self.reload()
        self._task = asyncio.create_task(self._poll(), name="policy-poll")

    async def stop(self) -> None:
        await background.cancel(self._task)
        self._task = None

    async def apply(self, text: str, author: str, stage: bool = False) -> CompiledPolicy:
        """Validate and activate a new version (or only store it, ``stage``: a canary can
        start from it); the running one stays if anything is wrong."""
        try:
            compiled = self.compile(text, "policy")
        except ConfigError as exc:
            raise InvalidPolicy(exc.message) from None
        before = summary(await self._states.all())
        existing = await self._store.get_policy(compiled.version)
        if existing is not None and existing["body"] != text:
            raise PolicyConflict(
                f"version {compiled.version!r} exists with other content; bump the version"
            )
        if stage:
            if existing is None:
                await self._states.stage(compiled.version, text, compiled.thresholds, author)
                await self._record(author, "policy.stage", compiled.version, before)
            return compiled
        if existing is not None:
            await self._store.activate_policy(compiled.version)
        else:
            await self._store.add_policy(compiled.version, text, compiled.thresholds, author)
        self._changes += 1
        self._active = self._compiled[compiled.version] = compiled
        log.info("policy %s active", compiled.version)
        await self._record(author, "policy.apply", compiled.version, before)
        return compiled

    async def canary(self, version: str, percent: float | None, actor: str) -> dict[str, object]:
        """Send ``percent`` of the traffic (the next step of 5/20/50/100 when None) to
        ``version``; returns what serves traffic now."""
        return await self._move(
            "policy.canary", version, actor, lambda s: plan_canary(s, version, percent)
        )

    async def promote(self, version: str, actor: str) -> dict[str, object]:
        """The canary becomes the active version for all traffic."""
        return await self._move(
            "policy.promote", version, actor, lambda s: plan_promote(s, version)
        )

    async def rollback(self, version: str, actor: str) -> dict[str, object]:
        """End the canary ``version``, or put back the version active before ``version``."""
        return await self._move(
            "policy.rollback", version, actor, lambda s: plan_rollback(s, version)
        )

    async def _move(
        self,
        action: str,
        version: str,
        actor: str,
        plan: Callable[[list[VersionState]], list[Change]],
    ) -> dict[str, object]:
        states = await self._states.all()
        changes = plan(states)
        for change in changes:  # whatever will serve must compile on this release first
            if change.after in ("canary", "active") and await self._load(change.version) is None:
                raise InvalidPolicy(f"stored policy {change.version!r} does not validate here")
        await self._states.move(changes)
        self._changes += 1
        await self.reload()
        after = await self._record(actor, action, version, summary(states))
        log.info("%s %s by %s: %s", action, version, actor, after)
        return after

    async def _record(
        self, actor: str, action: str, target: str, before: object
    ) -> dict[str, object]:
        """Audit one change with what served traffic before and after it; returns after."""
        after = summary(await self._states.all())
        if self._audit is not None:
            await self._audit.record(actor, action, target, before, after)
        return after

    async def diff(self, first: str, second: str) -> str:
        """A unified diff of two stored versions' YAML."""
        texts = []
        for version in (first, second):
            record = await self._store.get_policy(version)
            if record is None:
                raise NotFound(f"no policy with version {version!r}", code="unknown_policy")
            texts.append(str(record["body"]).splitlines())
        old, new = texts
        lines = difflib.unified_diff(old, new, fromfile=first, tofile=second, lineterm="")
        return "".join(f"{line}\n" for line in lines)

    async def reload(self) -> None:
        """Adopt the store's active and canary versions where they differ from what runs;
        nothing when a change was made here while the store was read (the next poll reads
        again)."""
        seen = self._changes
        states = await self._states.serving()
        active = next((s for s in states if s.status == "active"), None)
        if active is not None and active.version != self._active.version:
            compiled = await self._load(active.version)
            if compiled is not None and seen == self._changes:
                self._active = compiled
                log.info("policy %s loaded from the store", active.version)
        canary = next((s for s in states if s.status == "canary"), None)
        running = self._canary
        if seen != self._changes:
            return
        if canary is None:
            self._canary = None
        elif running is None or (running.policy.version, running.percent) != (
            canary.version,
            canary.percent,
        ):
            compiled = await self._load(canary.version)
            if seen == self._changes:
                self._canary = None if compiled is None else Canary(compiled, canary.percent or 0.0)

    async def _load(self, version: str) -> CompiledPolicy | None:
        """A stored version compiled here (cached), or None if it does not validate here."""
        compiled = self._compiled.get(version)
        if compiled is not None:
            return compiled
        record = await self._store.get_policy(version)
        if record is None:
            return None
        try:
            compiled = self.compile(record["body"], f"policy {version}")
        except ConfigError as exc:  # stored by a newer release, say: keep what runs
            log.error("stored policy %s does not validate here: %s", version, exc.message)
            return None
        if len(self._compiled) >= _COMPILED_KEPT:
            self._compiled.pop(next(iter(self._compiled)))
        self._compiled[version] = compiled
        return compiled

    async def load_version(self, version: str) -> CompiledPolicy:
        """A stored version compiled here: 404 if unknown, 400 if it does not validate here."""
        if await self._store.get_policy(version) is None:
            raise NotFound(f"no policy with version {version!r}", code="unknown_policy")
        compiled = await self._load(version)
        if compiled is None:
            raise InvalidPolicy(f"stored policy {version!r} does not validate here")
        return compiled

    async def states(self) -> list[VersionState]:
        """Every stored version's state (what a walk checks before it moves)."""
        return await self._states.all()

    async def list(self) -> list[dict[str, Any]]:
        return await self._store.list_policies()

    async def describe(self, version: str) -> dict[str, Any]:
        """One stored version with its thresholds; 404 ``unknown_policy`` if there is none."""
        record = await self._store.get_policy(version)
        if record is None:
            raise NotFound("no policy with this version", code="unknown_policy")
        record["thresholds"] = orjson.loads(record["thresholds"])
        return record

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self._poll_interval)
            try:
                await self._reload_seed_if_changed()
                await self.reload()
            except StoreUnavailable as exc:
                log.warning("policy poll: %s", exc.message)

    async def _reload_seed_if_changed(self) -> None:
        try:
            mtime = self._seed_file.stat().st_mtime
        except OSError:
            return
        if mtime == self._seed_mtime:
            return
        try:
            await self.apply(self._read_seed(), SYSTEM)
        except (InvalidPolicy, PolicyConflict) as exc:
            log.error("policy file %s not applied: %s", self._seed_file, exc.message)
