"""The interface every backend implements (in-process ONNX, Open Inference Protocol, …)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

from hybridinfer.core.topology import Deployment, Node


class Backend(ABC):
    """Runs a subtask's inputs through one deployment and returns its decoded outputs.

    Implementations map their dependency's errors into ``hybridinfer.errors`` (timeouts to
    ``DeadlineExceeded``, refused connections to ``UpstreamUnavailable``, …): nothing else may
    escape ``infer``.
    """

    protocol: ClassVar[str]

    @abstractmethod
    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """The outputs (for classifiers: ``label``, ``confidence``, ``scores``)."""

    async def probe(self, node: Node, timeout_s: float) -> bool:
        """Whether ``node`` answers its health check (remote backends override this)."""
        return True

    async def aclose(self) -> None:  # noqa: B027 - optional hook; most backends hold nothing
        """Release connections and threads."""


@runtime_checkable
class StreamingBackend(Protocol):
    """A backend that can also answer piece by piece (chat over SSE); optional, beside Backend.

    ``infer_stream`` yields ``{"delta": {...}, "finish_reason": str | None, "usage": ...}`` and
    raises a ``hybridinfer.errors`` error if the upstream fails, before or after the first piece.
    """

    def infer_stream(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> AsyncIterator[dict[str, Any]]:
        """The answer's pieces, in order."""
        ...
