"""The answer store interface: exact entries by key, and a similarity index of prompt vectors.

Keys are paths ``tenant/scope/capability/…`` so that a tenant's or a scope's entries can be
flushed by prefix (``flush``). An index groups the vectors of prompts whose answers may serve
each other (same tenant, scope, capability, model version and generation parameters); a
semantic lookup searches one index only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Answer:
    """One stored answer: the outputs, who produced it, and what a semantic hit must match."""

    outputs: dict[str, Any]
    request_id: str
    """The request whose answer this is (a hit's trace names it)."""
    deployment: str
    tier: str
    node: str
    model: str
    cost: float
    """What producing it cost (a hit saves that much)."""
    created_at: float
    signature: tuple[str, ...] = ()
    """What a semantic match must agree on, read from the prompt (``answers/signature.py``)."""

    def encode(self) -> bytes:
        """The answer as JSON (for stores that keep bytes)."""
        return orjson.dumps(
            {
                "outputs": self.outputs,
                "request_id": self.request_id,
                "deployment": self.deployment,
                "tier": self.tier,
                "node": self.node,
                "model": self.model,
                "cost": self.cost,
                "created_at": self.created_at,
                "signature": list(self.signature),
            },
            option=orjson.OPT_SERIALIZE_NUMPY,
        )

    @classmethod
    def decode(cls, data: bytes) -> Answer:
        """The answer ``encode`` wrote."""
        fields = orjson.loads(data)
        fields["signature"] = tuple(fields.get("signature", ()))
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class Neighbour:
    """An indexed prompt near the one looked up: its entry's key and the cosine similarity."""

    key: str
    similarity: float


class AnswerStore(ABC):
    """Where answers live: in this process (``memory.py``) or shared by replicas (``redis.py``)."""

    @abstractmethod
    async def get(self, key: str) -> Answer | None:
        """The live answer under ``key`` (None when absent or expired)."""

    @abstractmethod
    async def put(
        self,
        key: str,
        answer: Answer,
        ttl_s: float,
        index: str | None = None,
        vector: Vector | None = None,
    ) -> None:
        """Store ``answer`` for ``ttl_s`` seconds; with ``index``, index ``vector`` (unit
        length) for semantic lookups."""

    @abstractmethod
    async def nearest(
        self, index: str, vector: Vector, floor: float, limit: int = 3
    ) -> list[Neighbour]:
        """Up to ``limit`` indexed prompts of ``index`` at or above cosine ``floor``, nearest
        first (their entries may have expired since: the caller reads them with ``get``)."""

    @abstractmethod
    async def flush(self, prefix: str) -> int:
        """Remove every entry and index under ``prefix`` (a tenant or a scope); how many."""

    async def aclose(self) -> None:  # noqa: B027 (a store without connections has none to close)
        """Release connections."""


def best_of(
    keys: list[str], matrix: npt.NDArray[np.float32], vector: Vector, floor: float, limit: int
) -> list[Neighbour]:
    """The rows of ``matrix`` nearest ``vector`` (both unit length: the dot is the cosine)."""
    if not keys:
        return []
    similarities = matrix @ vector
    order = np.argsort(-similarities)[:limit]
    return [Neighbour(keys[i], float(similarities[i])) for i in order if similarities[i] >= floor]
