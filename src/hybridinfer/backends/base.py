"""The interface every backend implements (in-process ONNX, Open Inference Protocol, …)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from hybridinfer.topology import Deployment, Node


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

    async def aclose(self) -> None:  # noqa: B027 - optional hook; most backends hold nothing
        """Release connections and threads."""
