"""The interface every object store implements (filesystem, S3, …).

Keys are ``/``-separated relative paths (``models/sentiment-small/3/model.onnx``); a key with
``..``, a leading ``/`` or an empty part is refused. Every implementation can hand out a
short-lived signed URL for a key, so a reader (a model node) needs no store credentials.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from hybridinfer.errors import InvalidInput


def check_key(key: str) -> str:
    """``key`` if it is a safe relative object key, else InvalidInput."""
    parts = key.split("/")
    if not key or key.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise InvalidInput(f"invalid object key {key!r}")
    return key


class ObjectStore(ABC):
    """Blobs by key. Implementations map their dependency's errors into ``hybridinfer.errors``
    (a missing key is ``NotFound``, an unreachable store ``UpstreamUnavailable``)."""

    @abstractmethod
    async def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``, replacing what was there (readers never see a part)."""

    @abstractmethod
    async def get(self, key: str) -> bytes:
        """The bytes under ``key``; NotFound if there are none."""

    @abstractmethod
    async def exists(self, key: str) -> bool:
        """Whether ``key`` holds an object."""

    @abstractmethod
    async def list(self, prefix: str = "") -> list[str]:
        """Every key starting with ``prefix``, sorted."""

    @abstractmethod
    async def delete(self, key: str) -> None:
        """Remove ``key`` (no error if it is already gone)."""

    @abstractmethod
    async def signed_url(self, key: str, expires_s: int) -> str:
        """A URL that serves ``key`` with a plain GET until ``expires_s`` seconds from now."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
