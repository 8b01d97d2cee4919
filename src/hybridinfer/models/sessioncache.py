"""Loaded onnxruntime sessions, least recently used first out, bounded by memory.

A session's memory is estimated by the size of its model file (onnxruntime holds the weights
plus a little). Evicting a session only drops the cache's reference: a call that holds it
finishes, and the next call loads it again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from hybridinfer.models.onnxmodel import OnnxModel


class SessionCache:
    """Thread-safe LRU of ``OnnxModel`` keyed by file path; loads happen in the caller's thread.

    The most recently used session always stays, even if it alone is over ``capacity_bytes``.
    """

    def __init__(self, capacity_bytes: int, threads_per_session: int = 1) -> None:
        self.capacity_bytes = capacity_bytes
        self._threads = threads_per_session
        self._sessions: OrderedDict[Path, tuple[OnnxModel, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[Path, threading.Lock] = {}
        self.loads = 0
        self.evictions = 0

    @property
    def loaded_bytes(self) -> int:
        """Estimated memory held by the cached sessions."""
        with self._lock:
            return sum(size for _, size in self._sessions.values())

    def loaded(self) -> list[Path]:
        """Cached model files, least recently used first."""
        with self._lock:
            return list(self._sessions)

    def holds(self, path: Path) -> bool:
        """Whether ``path``'s session is loaded (``get`` would not load it now)."""
        with self._lock:
            return path in self._sessions

    def get(self, path: Path) -> OnnxModel:
        """The session of ``path``, loading it (once, even under concurrent callers) if needed."""
        with self._lock:
            hit = self._sessions.get(path)
            if hit is not None:
                self._sessions.move_to_end(path)
                return hit[0]
            gate = self._loading.setdefault(path, threading.Lock())
        with gate:
            with self._lock:
                hit = self._sessions.get(path)
                if hit is not None:
                    return hit[0]
            model = OnnxModel(path, threads=self._threads)
            size = path.stat().st_size
            with self._lock:
                self._sessions[path] = (model, size)
                self.loads += 1
                self._loading.pop(path, None)
                self._evict()
            return model

    def discard(self, path: Path) -> None:
        """Forget a session (its file is being removed)."""
        with self._lock:
            self._sessions.pop(path, None)

    def _evict(self) -> None:
        total = sum(size for _, size in self._sessions.values())
        while total > self.capacity_bytes and len(self._sessions) > 1:
            _, (_, size) = self._sessions.popitem(last=False)
            total -= size
            self.evictions += 1
