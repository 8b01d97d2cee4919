"""In-process models run by onnxruntime (design: local tier): on worker threads, or on the
event loop for a quick lone call (``models/inline.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hybridinfer.backends import codec
from hybridinfer.backends.base import Backend
from hybridinfer.core.topology import Deployment, Node
from hybridinfer.errors import DeadlineExceeded, UnknownModel
from hybridinfer.models.batcher import session_batcher
from hybridinfer.models.inline import DEFAULT_BELOW_US
from hybridinfer.models.onnxmodel import OnnxModel
from hybridinfer.models.sessioncache import SessionCache

__all__ = ["OnnxBackend", "OnnxModel"]


class OnnxBackend(Backend):
    """Runs deployments of the in-process node.

    Sessions live in a memory-bounded LRU (``SessionCache``) and concurrent calls of one model
    are coalesced by a ``MicroBatcher`` (``max_wait_s`` 0: only calls already queued are
    joined, so a lone call waits for nothing). Inference runs on a small thread pool, but for
    a lone call of a size seen to run well under a millisecond, which runs on the event loop
    (``models/inline.py``: the thread hand-off would cost more than the run).
    """

    protocol = "onnx"

    def __init__(
        self,
        models: Mapping[str, Path],
        threads: int = 2,
        *,
        cache_bytes: int = 1 << 30,
        max_batch_size: int = 32,
        max_wait_s: float = 0.0,
        inline_below_us: int = DEFAULT_BELOW_US,
    ) -> None:
        self._paths = dict(models)
        self._cache = SessionCache(cache_bytes)
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="onnx")
        self._batchers = {
            key: session_batcher(
                self._cache, path, self._pool, max_batch_size, max_wait_s, threads, inline_below_us
            )
            for key, path in self._paths.items()
        }

    @staticmethod
    def key(model: str, version: str) -> str:
        return f"{model}:{version}"

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        batcher = self._batchers.get(self.key(deployment.model, deployment.version))
        if batcher is None:
            raise UnknownModel(f"model {deployment.model}:{deployment.version} is not loaded")
        feeds = codec.encode(deployment, inputs)
        outputs, size = batcher.run_inline(feeds)  # run on the loop: no wait to bound
        if outputs is None:
            try:
                async with asyncio.timeout(timeout_s):
                    outputs = await batcher.queued(feeds, size)
            except TimeoutError:
                raise DeadlineExceeded(f"{deployment.model} did not answer in time") from None
        return codec.decode(deployment, outputs)

    async def aclose(self) -> None:
        for batcher in self._batchers.values():
            await batcher.aclose()
        self._pool.shutdown(wait=False, cancel_futures=True)
