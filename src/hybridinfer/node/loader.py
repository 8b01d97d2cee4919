"""Loads the models a node is configured to serve, and keeps trying those that fail.

Each model's built versions are added with their sessions loaded up front (a file onnxruntime
refuses is refused, with its reason, like a bad checksum). A model no version of which loads,
or that is not built yet, is never silently missing: it is listed with the reason in
``ModelRepository.unavailable``, which ``/v2/health/ready``, ``/v2/models/{name}/ready`` and the
heartbeats report, and it is tried again with backoff (1 s doubling to 64 s, ``backoff.py``)
until it loads; the node then re-registers with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

from hybridinfer.core import background
from hybridinfer.core.backoff import Backoff
from hybridinfer.models.catalog import versions as catalog_versions
from hybridinfer.node.repository import ModelRepository

log = logging.getLogger("hybridinfer.node")


class ModelLoader:
    """Brings ``names`` into ``repository`` from ``models_dir``, retrying failures."""

    def __init__(
        self,
        repository: ModelRepository,
        models_dir: Path,
        names: list[str],
        backoff: Callable[[], Backoff] = Backoff,
    ) -> None:
        self._repository = repository
        self._models_dir = models_dir
        self._names = list(names)
        self._backoff = backoff

    async def load(self, name: str) -> bool:
        """Add every built version of ``name`` not served yet; whether one of them serves."""
        repository = self._repository
        built = catalog_versions(self._models_dir, name)
        if not built:
            repository.unavailable[name] = f"model {name!r} is not built in {self._models_dir}"
            return False
        for version in built[-repository.keep_versions :]:
            if version not in repository.versions(name):
                await repository.add_loaded(name, version, self._models_dir / name / version)
        if repository.active_version(name) is None:
            refused = repository.refused.get(name, {})
            reasons = "; ".join(f"version {v}: {reason}" for v, reason in refused.items())
            repository.unavailable[name] = reasons or "no version could be loaded"
            return False
        repository.unavailable.pop(name, None)
        return True

    async def load_all(self) -> None:
        """One try of every model (at start, before serving)."""
        for name in self._names:
            if not await self.load(name):
                log.error("model %s is not available: %s", name, self._repository.unavailable[name])

    async def _retry(self, name: str) -> None:
        backoff = self._backoff()
        while name in self._repository.unavailable:
            log.warning("retrying model %s in %.0f s", name, backoff.current_s)
            await backoff.wait()
            if await self.load(name):
                log.info("model %s loaded after %d retries", name, backoff.step)

    async def run(self) -> None:
        """Retry every model that did not load, each on its own backoff, until all serve."""
        failing = [name for name in self._names if name in self._repository.unavailable]
        await asyncio.gather(*(self._retry(name) for name in failing))

    def running(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Retry for the duration of a block (the node app's lifespan)."""
        return background.running(self.run(), "model-loader")
