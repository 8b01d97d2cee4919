"""Steps that run inside the gateway process, on the local tier in the private zone:
redaction, restoring values, extractive summaries and retrieval (protocol ``inproc``).

Each deployment's model name selects one ``LocalOperation``. Operations that run a model
(embeddings) are called in a worker thread; the cheap ones (regexes) inline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hybridinfer.backends.base import Backend
from hybridinfer.core.topology import Deployment, Node
from hybridinfer.errors import DeadlineExceeded, UpstreamError


@dataclass(frozen=True, slots=True)
class LocalOperation:
    """One in-process step: what it is called and registered as, and the function it runs."""

    model: str
    capability: str
    run: Callable[[Mapping[str, Any]], dict[str, Any]]
    blocking: bool = False
    """Runs a model: call it in a thread so the event loop stays free."""
    latency_ms: float = 1.0
    max_input: int = 100_000
    quality: float = 0.5

    def deployment(self, node_id: str) -> Deployment:
        """The deployment the local node registers for this operation."""
        return Deployment(
            node_id=node_id,
            model=self.model,
            version="1",
            capability=self.capability,
            task=None,
            quality=self.quality,
            latency_ms=self.latency_ms,
            max_input=self.max_input,
        )


class InProcessBackend(Backend):
    """Calls ``LocalOperation``s by model name; their errors are already ours."""

    protocol = "inproc"

    def __init__(self, operations: list[LocalOperation]) -> None:
        self.operations = {operation.model: operation for operation in operations}

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """The operation's outputs."""
        operation = self.operations.get(deployment.model)
        if operation is None:
            raise UpstreamError(f"no in-process operation named {deployment.model!r}")
        if not operation.blocking:
            return operation.run(inputs)
        try:
            async with asyncio.timeout(timeout_s):
                return await asyncio.to_thread(operation.run, inputs)
        except TimeoutError:
            raise DeadlineExceeded(f"{deployment.model} did not finish in time") from None
