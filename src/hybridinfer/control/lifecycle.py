"""The start and stop order of the control plane's parts, written once as a list.

Parts start in list order and stop in reverse, so whatever a part needs (the store, the
registered nodes, the queue) is up before it starts and still up while it stops. Adding a
part is one entry in the right place, not two edits that must agree.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

Step = Callable[[], Awaitable[None] | None]
"""A start or stop: a plain call (starting a background task) or an awaitable one."""


@dataclass(frozen=True, slots=True)
class Part:
    """One thing with a lifecycle; either step may be missing (a store is only closed)."""

    name: str
    start: Step | None = None
    stop: Step | None = None


class Lifecycle:
    """Starts parts in order and stops them in reverse."""

    def __init__(self, parts: Sequence[Part]) -> None:
        self.parts = tuple(parts)

    async def start(self) -> None:
        for part in self.parts:
            if part.start is not None:
                log.debug("starting %s", part.name)
                await _run(part.start)

    async def stop(self) -> None:
        for part in reversed(self.parts):
            if part.stop is not None:
                log.debug("stopping %s", part.name)
                await _run(part.stop)


async def _run(step: Step) -> None:
    result = step()
    if inspect.isawaitable(result):
        await result
