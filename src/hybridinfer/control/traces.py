"""The trace use cases behind ``/v1/traces``: one caller's trace, and the recent ones.

Whose trace a caller may read is decided here, once: an admin reads any, an ``infer`` key
only its own. Another key's trace answers 404 like a missing one, so ids cannot be probed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from hybridinfer.control.keys import Principal
from hybridinfer.errors import NotFound
from hybridinfer.store.tracesink import TraceSink


class TraceService:
    """Reads finished traces from the trace sink (its buffer first, then the store)."""

    def __init__(
        self,
        sink: TraceSink,
        feedback: Callable[[str], Awaitable[dict[str, Any] | None]] | None = None,
    ) -> None:
        """``feedback``: the caller's feedback on a request, shown with its trace."""
        self._sink = sink
        self._feedback = feedback

    async def get(self, request_id: str, principal: Principal) -> dict[str, Any]:
        """The trace of ``request_id`` if ``principal`` may read it; else 404."""
        trace = await self._sink.get(request_id)
        mine = trace is not None and trace.get("key_id") == principal.key_id
        if trace is None or not (principal.allows("admin") or mine):
            raise NotFound("no trace with this request id", code="unknown_trace")
        given = None if self._feedback is None else await self._feedback(request_id)
        return trace if given is None else {**trace, "feedback": given}

    async def recent(self, limit: int, status: str | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` traces, optionally only those that ended with ``status``."""
        return await self._sink.recent(limit, status)
