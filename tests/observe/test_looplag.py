"""The loop lag probe sees a blocking call as lag, times collections apart, and is off by
default (it is a periodic wake-up itself)."""

from __future__ import annotations

import asyncio
import gc
import logging
import time

import pytest
from prometheus_client import CollectorRegistry

from hybridinfer.observe.looplag import LoopLag
from hybridinfer.settings import Settings


def _count(registry: CollectorRegistry, name: str) -> float:
    return sum(
        sample.value
        for metric in registry.collect()
        for sample in metric.samples
        if sample.name == f"{name}_count"
    )


async def test_a_blocking_call_shows_as_lag_and_is_logged_as_a_stall(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    probe = LoopLag(registry, interval_s=0.01, stall_s=0.05)
    probe.start()
    try:
        await asyncio.sleep(0.05)
        assert probe.worst_s < 0.05  # nothing holds the loop yet
        with caplog.at_level(logging.WARNING, "hybridinfer.observe.looplag"):
            time.sleep(0.12)  # noqa: ASYNC251 -- holds the loop, as a synchronous call would
            await asyncio.sleep(0.05)
    finally:
        await probe.stop()
    assert probe.worst_s >= 0.1
    assert _count(registry, "hybridinfer_event_loop_lag_seconds") >= 3
    assert any("event loop stalled" in record.message for record in caplog.records)


async def test_collections_are_timed_while_it_runs_and_not_after() -> None:
    registry = CollectorRegistry()
    probe = LoopLag(registry, interval_s=1.0, stall_s=1.0)
    probe.start()
    gc.collect()
    counted = _count(registry, "hybridinfer_gc_pause_seconds")
    await probe.stop()
    gc.collect()
    assert counted >= 1
    assert _count(registry, "hybridinfer_gc_pause_seconds") == counted


def test_off_by_default() -> None:
    assert Settings().loop_lag_interval_ms == 0.0
