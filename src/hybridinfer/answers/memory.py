"""Answers kept in this process: bounded by bytes, least recently used out first, with TTLs.

The embedded default, and the private-zone store: nothing written here leaves the process.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hybridinfer.answers.base import Answer, AnswerStore, Neighbour, Vector, best_of

ENTRY_OVERHEAD = 256
"""Bytes an entry costs besides its encoded answer and vector (the key, the bookkeeping)."""


@dataclass(slots=True)
class _Entry:
    answer: Answer
    expires_at: float
    size: int
    index: str | None


class _Index:
    """One index's vectors; the matrix is rebuilt only when a lookup follows a change."""

    def __init__(self) -> None:
        self.vectors: dict[str, Vector] = {}
        self._matrix: npt.NDArray[np.float32] | None = None
        self._keys: list[str] = []

    def add(self, key: str, vector: Vector) -> None:
        self.vectors[key] = vector
        self._matrix = None

    def remove(self, key: str) -> None:
        if self.vectors.pop(key, None) is not None:
            self._matrix = None

    def nearest(self, vector: Vector, floor: float, limit: int) -> list[Neighbour]:
        if self._matrix is None:
            self._keys = list(self.vectors)
            rows = [self.vectors[key] for key in self._keys]
            self._matrix = np.vstack(rows) if rows else np.zeros((0, len(vector)), np.float32)
        return best_of(self._keys, self._matrix, vector, floor, limit)


class MemoryAnswers(AnswerStore):
    """An LRU of answers within ``max_bytes``; expired entries are dropped when met."""

    def __init__(self, max_bytes: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._max_bytes = max_bytes
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._indexes: dict[str, _Index] = {}
        self.used_bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: str) -> Answer | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires_at <= self._clock():
            self._remove(key)
            return None
        self._entries.move_to_end(key)
        return entry.answer

    async def put(
        self,
        key: str,
        answer: Answer,
        ttl_s: float,
        index: str | None = None,
        vector: Vector | None = None,
    ) -> None:
        size = len(answer.encode()) + ENTRY_OVERHEAD + (0 if vector is None else vector.nbytes)
        if size > self._max_bytes:
            return  # larger than the whole store: not kept at all
        self._remove(key)
        indexed = index if vector is not None else None
        self._entries[key] = _Entry(answer, self._clock() + ttl_s, size, indexed)
        self.used_bytes += size
        if indexed is not None and vector is not None:
            self._indexes.setdefault(indexed, _Index()).add(key, vector)
        while self.used_bytes > self._max_bytes:
            self._remove(next(iter(self._entries)))

    async def nearest(
        self, index: str, vector: Vector, floor: float, limit: int = 3
    ) -> list[Neighbour]:
        found = self._indexes.get(index)
        return [] if found is None else found.nearest(vector, floor, limit)

    async def flush(self, prefix: str) -> int:
        keys = [key for key in self._entries if key.startswith(prefix)]
        for key in keys:
            self._remove(key)
        return len(keys)

    def _remove(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        self.used_bytes -= entry.size
        if entry.index is not None:
            index = self._indexes[entry.index]
            index.remove(key)
            if not index.vectors:
                del self._indexes[entry.index]
