"""Local admission under CPU saturation.

The in-process local tier shares the host's cores with everything else on it. Off the request
path, every ``interval_s``, the host's busy CPU fraction (all processes, from the kernel's
counters) is read and smoothed (EWMA). The smoothed value is published as the local nodes'
``load`` (policy conditions read it as ``node.local.load``; the default policy's
``busy-local-sends-to-cloud`` rule then prefers the cloud). While it stays at or above
``saturated``, the local node's admission limiter shrinks to ``saturated_in_flight`` slots, so
calls that have another deployment in their chain spill over to it instead of queueing, and
calls whose only path is local still run, a few at a time. It is released below
``saturated - 0.1`` (hysteresis, so a load hovering at the threshold does not flap).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import NamedTuple

import psutil

from hybridinfer.core import background
from hybridinfer.core.topology import Node
from hybridinfer.execute.admission import PriorityLimiter

log = logging.getLogger(__name__)

HYSTERESIS = 0.1


class CpuTimes(NamedTuple):
    busy: float
    total: float


def read_cpu_times() -> CpuTimes:
    """Cumulative busy and total CPU seconds of the host, all cores."""
    times = psutil.cpu_times()
    total = sum(times)
    idle = times.idle + getattr(times, "iowait", 0.0)
    return CpuTimes(total - idle, total)


class LocalCpu:
    """The host's smoothed CPU use, and what it does to local admission."""

    def __init__(
        self,
        nodes: Sequence[Node],
        limiter: PriorityLimiter,
        *,
        interval_s: float = 0.5,
        alpha: float = 0.3,
        saturated: float = 0.9,
        saturated_in_flight: int = 2,
        read: Callable[[], CpuTimes] = read_cpu_times,
    ) -> None:
        self._nodes = list(nodes)
        self._limiter = limiter
        self._interval = interval_s
        self._alpha = alpha
        self._threshold = saturated
        self._saturated_in_flight = saturated_in_flight
        self._read = read
        self._last = read()
        self.cpu = 0.0
        """Smoothed busy fraction of the host, 0..1."""
        self.saturated = False
        self._task: asyncio.Task[None] | None = None

    def sample(self) -> float:
        """Read the counters once; the busy fraction since the previous read."""
        now = self._read()
        spent = now.total - self._last.total
        busy = (now.busy - self._last.busy) / spent if spent > 0 else 0.0
        self._last = now
        return min(max(busy, 0.0), 1.0)

    def update(self, busy: float) -> None:
        """Fold one reading in; publish the load and resize the local limiter."""
        self.cpu = (1 - self._alpha) * self.cpu + self._alpha * busy
        for node in self._nodes:
            node.load = self.cpu
        if not self.saturated and self.cpu >= self._threshold:
            self.saturated = True
            self._limiter.set_limit(min(self._saturated_in_flight, self._limiter.base_limit))
            log.warning("host CPU at %.0f%%: local admission limited", self.cpu * 100)
        elif self.saturated and self.cpu < self._threshold - HYSTERESIS:
            self.saturated = False
            self._limiter.set_limit(self._limiter.base_limit)
            log.info("host CPU at %.0f%%: local admission restored", self.cpu * 100)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            self.update(self.sample())

    def start(self) -> None:
        """Sample in the background until ``stop``."""
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name="local-cpu")

    async def stop(self) -> None:
        await background.cancel(self._task)
        self._task = None
