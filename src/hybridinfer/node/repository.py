"""The model versions a node serves: verified, loaded through a memory-bounded LRU, switched
atomically.

A version is added from files on disk (the models directory, or artifacts the puller fetched)
and only after its sha256 matches what its publisher recorded; a mismatch is refused and
kept as a reason that the V2 metadata, readiness and repository index show. Switching the
active version is one assignment on the event loop: requests already holding the old version
finish on it, new ones get the new one. Old versions stay addressable by
``/versions/{v}`` until more than ``keep_versions`` exist.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy.typing as npt

from hybridinfer.errors import HybridInferError, UnknownModel
from hybridinfer.models.artifact import file_sha256
from hybridinfer.models.batcher import MicroBatcher, session_batcher
from hybridinfer.models.catalog import versions as catalog_versions
from hybridinfer.models.inline import DEFAULT_BELOW_US
from hybridinfer.models.sessioncache import SessionCache
from hybridinfer.node.history import RequestHistory
from hybridinfer.node.served import ServedModel, check_inputs

log = logging.getLogger("hybridinfer.node")


class ModelRepository:
    """Model versions by name; inference through one micro-batcher per version."""

    def __init__(
        self,
        models_dir: Path | None,
        names: list[str],
        threads: int = 2,
        *,
        max_batch_size: int = 64,
        max_wait_s: float = 0.0005,
        cache_bytes: int = 1 << 30,
        keep_versions: int = 3,
        inline_below_us: int = DEFAULT_BELOW_US,
    ) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="node-infer")
        self._threads = threads
        self.cache = SessionCache(cache_bytes)
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.inline_below_us = inline_below_us
        self.keep_versions = keep_versions
        self._versions: dict[str, dict[str, ServedModel]] = {}
        self._active: dict[str, str] = {}
        self.refused: dict[str, dict[str, str]] = {}
        self.unavailable: dict[str, str] = {}
        """Models this node should serve but cannot yet, with why (``node/loader.py``)."""
        self.in_flight = 0
        self._closing: set[asyncio.Task[None]] = set()
        self.history: RequestHistory | None = None
        for name in names:
            if models_dir is None:
                continue
            available = catalog_versions(models_dir, name)
            if not available:
                raise UnknownModel(f"model {name!r} is not built in {models_dir}")
            for version in available[-keep_versions:]:
                self.add(name, version, models_dir / name / version)

    # -- what is served ------------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(self._active)

    def versions(self, name: str) -> list[str]:
        """Versions of ``name`` that can serve, oldest first."""
        return sorted(self._versions.get(name, {}), key=lambda v: (len(v), v))

    def active_version(self, name: str) -> str | None:
        return self._active.get(name)

    def cards(self) -> list[dict[str, Any]]:
        return [self.get(name).card for name in self.names()]

    def get(self, name: str, version: str | None = None) -> ServedModel:
        """A servable version (the active one unless named); UnknownModel with the reason."""
        versions = self._versions.get(name)
        if not versions:
            refused = self.refused.get(name, {})
            if version is not None and version in refused:
                raise UnknownModel(
                    f"model {name!r} version {version!r} was refused: {refused[version]}"
                )
            raise UnknownModel(f"unknown model {name!r}")
        chosen = version if version is not None else self._active[name]
        model = versions.get(chosen)
        if model is None:
            reason = self.refused.get(name, {}).get(chosen)
            if reason is not None:
                raise UnknownModel(f"model {name!r} version {chosen!r} was refused: {reason}")
            raise UnknownModel(f"model {name!r} has no version {chosen!r}")
        return model

    def metadata(self, name: str, version: str | None = None) -> dict[str, Any]:
        """The V2 model metadata, listing every servable version (and refused ones, if any)."""
        body = self.get(name, version).metadata(self.versions(name))
        refused = self.refused.get(name)
        if refused:
            body["parameters"] = {
                "refused_versions": [{"version": v, "reason": r} for v, r in refused.items()]
            }
        return body

    def index(self) -> list[dict[str, str]]:
        """Every version with its state, as Triton's repository index extension lists them."""
        rows = [
            {"name": name, "version": version, "state": "READY"}
            for name in sorted(self._versions)
            for version in self.versions(name)
        ]
        rows += [
            {"name": name, "version": version, "state": "UNAVAILABLE", "reason": reason}
            for name, refused in sorted(self.refused.items())
            for version, reason in refused.items()
        ]
        return rows

    @property
    def queue_depth(self) -> int:
        """Requests waiting in every micro-batcher."""
        return sum(m.batcher.queue_depth for vs in self._versions.values() for m in vs.values())

    # -- changing what is served ---------------------------------------------------------

    def add(
        self, name: str, version: str, folder: Path, sha256: str | None = None
    ) -> ServedModel | None:
        """Add a version from ``folder`` (``model.onnx`` + ``card.json``), verifying its sha256
        when one is expected; the newest version becomes active. None when refused."""
        path = folder / "model.onnx"
        try:
            model = ServedModel.from_folder(name, version, folder, self._batcher(path))
            if sha256 is not None and file_sha256(path) != sha256:
                raise HybridInferError("sha256 of model.onnx does not match its manifest")
        except (HybridInferError, OSError, ValueError) as exc:
            reason = exc.message if isinstance(exc, HybridInferError) else str(exc)
            self.refused.setdefault(name, {})[version] = reason
            log.error("refused %s version %s: %s", name, version, reason)
            return None
        self.refused.get(name, {}).pop(version, None)
        self._versions.setdefault(name, {})[version] = model
        newest = self.versions(name)[-1]
        if self._active.get(name) != newest:
            self._active[name] = newest  # the atomic switch: one assignment on the loop
        self._prune(name)
        return model

    async def add_loaded(
        self, name: str, version: str, folder: Path, sha256: str | None = None
    ) -> ServedModel | None:
        """``add``, but load the session first (off the loop) so the switch costs no request
        a cold start; a file onnxruntime refuses is refused like a bad checksum."""
        loop = asyncio.get_running_loop()
        path = folder / "model.onnx"
        if sha256 is not None:
            digest = await loop.run_in_executor(self._pool, file_sha256, path)
            if digest != sha256:
                reason = "sha256 of model.onnx does not match its manifest"
                self.refused.setdefault(name, {})[version] = reason
                log.error("refused %s version %s: %s", name, version, reason)
                return None
        try:
            await loop.run_in_executor(self._pool, self.cache.get, path)
        except HybridInferError as exc:
            self.refused.setdefault(name, {})[version] = exc.message
            return None
        return self.add(name, version, folder)

    def preload(self, names: list[str]) -> None:
        """Load the active sessions of ``names`` now (most needed first) rather than on first
        request, stopping when the session cache is full."""
        for name in names:
            if name not in self._active:
                continue
            path = self.get(name).path
            if self.cache.loaded_bytes + path.stat().st_size > self.cache.capacity_bytes:
                break
            self.cache.get(path)

    def _prune(self, name: str) -> None:
        versions = self.versions(name)
        for version in versions[: max(0, len(versions) - self.keep_versions)]:
            model = self._versions[name][version]
            if version == self._active[name] or model.in_flight:
                continue
            del self._versions[name][version]
            self.cache.discard(model.path)
            self._close_later(model.batcher)
            log.info("dropped %s version %s (keeping %d)", name, version, self.keep_versions)

    def _close_later(self, batcher: MicroBatcher) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not serving yet: the batcher never started a worker
            return
        task = loop.create_task(batcher.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _batcher(self, path: Path) -> MicroBatcher:
        return session_batcher(
            self.cache,
            path,
            self._pool,
            self.max_batch_size,
            self.max_wait_s,
            self._threads,
            self.inline_below_us,
        )

    # -- inference ----------------------------------------------------------------------

    async def infer(
        self, model: ServedModel, arrays: Mapping[str, npt.NDArray[Any]]
    ) -> dict[str, npt.NDArray[Any]]:
        """Check the inputs against the card, then run them through the version's batcher."""
        try:
            check_inputs(model, arrays)
            self.in_flight += 1
            model.in_flight += 1
            try:
                outputs = await model.batcher.infer(arrays)
            finally:
                self.in_flight -= 1
                model.in_flight -= 1
        except Exception:
            model.failure += 1
            raise
        model.success += 1
        if self.history is not None:
            self.history.record(model.name)
        return outputs

    async def aclose(self) -> None:
        for versions in self._versions.values():
            for model in versions.values():
                await model.batcher.aclose()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
