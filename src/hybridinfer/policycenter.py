"""The policy center: versions in the store, validation before apply, hot reload everywhere.

Every replica polls the store's active version (default every second), so a policy applied
through one replica is live on all of them within the poll interval. A policy file named in
the settings seeds the store and is re-applied when the file changes on disk (a ConfigMap
update); an invalid file is logged and the running policy stays.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

import orjson

from hybridinfer import background
from hybridinfer.errors import ConfigError, SchemaViolation
from hybridinfer.registry import NodeRegistry
from hybridinfer.route.calibration import resolve_threshold
from hybridinfer.route.policy import CompiledPolicy, Policy, compile_policy
from hybridinfer.store.sql import SqlStore, StoreConflict, StoreUnavailable
from hybridinfer.topology import Tier

log = logging.getLogger(__name__)


class InvalidPolicy(SchemaViolation):
    code = "invalid_policy"


class PolicyConflict(SchemaViolation):
    status_code = 409
    code = "policy_version_exists"


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


class PolicyCenter:
    """Holds the active compiled policy; applies, lists and reloads versions."""

    def __init__(
        self,
        store: SqlStore,
        registry: NodeRegistry,
        seed_file: Path,
        poll_interval_s: float = 1.0,
    ) -> None:
        self._store = store
        self._registry = registry
        self._seed_file = seed_file
        self._poll_interval = poll_interval_s
        self._seed_mtime = 0.0
        self._task: asyncio.Task[None] | None = None
        self._active = self.compile(self._read_seed(), str(seed_file))

    def current(self) -> CompiledPolicy:
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
        self._active = seeded  # now compiled with the local tier's calibration
        await self.reload()
        self._task = asyncio.create_task(self._poll(), name="policy-poll")

    async def stop(self) -> None:
        await background.cancel(self._task)
        self._task = None

    async def apply(self, text: str, author: str | None) -> CompiledPolicy:
        """Validate and activate a new version; the running one stays if anything is wrong."""
        try:
            compiled = self.compile(text, "policy")
        except ConfigError as exc:
            raise InvalidPolicy(exc.message) from None
        existing = await self._store.get_policy(compiled.version)
        if existing is not None:
            if existing["body"] != text:
                raise PolicyConflict(
                    f"version {compiled.version!r} exists with other content; bump the version"
                )
            await self._store.activate_policy(compiled.version)
        else:
            await self._store.add_policy(compiled.version, text, compiled.thresholds, author)
        self._active = compiled
        log.info("policy %s active", compiled.version)
        return compiled

    async def reload(self) -> None:
        """Adopt the store's active version if it is not the one running."""
        version = await self._store.active_policy_version()
        if version is None or version == self._active.version:
            return
        record = await self._store.get_policy(version)
        if record is None:
            return
        try:
            compiled = self.compile(record["body"], f"policy {version}")
        except ConfigError as exc:  # stored by a newer release, say: keep what runs
            log.error("stored policy %s does not validate here: %s", version, exc.message)
            return
        self._active = compiled
        log.info("policy %s loaded from the store", version)

    async def list(self) -> list[dict[str, Any]]:
        return await self._store.list_policies()

    async def describe(self, version: str) -> dict[str, Any] | None:
        record = await self._store.get_policy(version)
        if record is None:
            return None
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
            await self.apply(self._read_seed(), "file")
        except (InvalidPolicy, PolicyConflict) as exc:
            log.error("policy file %s not applied: %s", self._seed_file, exc.message)
