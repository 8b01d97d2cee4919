"""Event-loop lag: how late the gateway's loop runs a timer, and how long the collector stops it.

Opt-in (``loop_lag_interval_ms``; off by default, since a probe is itself a periodic wake-up).
A task sleeps ``interval`` and measures how much later than asked it woke: anything that holds
the loop (a synchronous call, a big serialisation, a collection of many objects) shows up as
lag, whatever caused it. Collections are timed apart through ``gc.callbacks`` so a stall can be
told from the collector's pauses. A stall at or over ``stall_ms`` is logged at warning with its
length, so their times can be read against the periodic tasks'.

Figures: ``hybridinfer_event_loop_lag_seconds`` and ``hybridinfer_gc_pause_seconds``
(histograms, the latter by generation).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from typing import Any

from prometheus_client import CollectorRegistry, Histogram

from hybridinfer.core import background

log = logging.getLogger(__name__)

BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)


class LoopLag:
    """A lag probe on the running loop and a timer on every garbage collection."""

    def __init__(self, registry: CollectorRegistry, interval_s: float, stall_s: float) -> None:
        self._interval = interval_s
        self._stall = stall_s
        self.lag = Histogram(
            "hybridinfer_event_loop_lag_seconds",
            "How much later than asked the event loop ran the lag probe's timer.",
            buckets=BUCKETS,
            registry=registry,
        )
        self.gc_pause = Histogram(
            "hybridinfer_gc_pause_seconds",
            "Length of each garbage collection, by generation.",
            ["generation"],
            buckets=BUCKETS,
            registry=registry,
        )
        self.worst_s = 0.0
        """The longest lag seen."""
        self._gc_started = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        gc.callbacks.append(self._on_gc)
        self._task = asyncio.create_task(self._run(), name="loop-lag")

    async def stop(self) -> None:
        await background.cancel(self._task)
        self._task = None
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)

    def observe(self, lag_s: float) -> None:
        """One probe's lateness."""
        self.lag.observe(lag_s)
        self.worst_s = max(self.worst_s, lag_s)
        if lag_s >= self._stall:
            log.warning("event loop stalled %.1f ms", lag_s * 1000.0)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time() + self._interval
            await asyncio.sleep(self._interval)
            self.observe(max(loop.time() - asked, 0.0))

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self._gc_started:
            pause = time.perf_counter() - self._gc_started
            self.gc_pause.labels(str(info.get("generation", "?"))).observe(pause)
            if pause >= self._stall:
                log.warning("garbage collection (generation %s) took %.1f ms",
                            info.get("generation"), pause * 1000.0)  # fmt: skip
