"""The trace sink on every SQL store backend (SQLite and PostgreSQL, from the conftest):
batched writes, reads from its memory then the store, and a bounded buffer while the store is
away."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from hybridinfer.core.trace import Trace
from hybridinfer.errors import StoreUnavailable
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.tracesink import TraceSink


def finished(request_id: str, status: str = "ok") -> Trace:
    trace = Trace(request_id=request_id, task="sentiment")
    trace.decisions = [
        {
            "subtask": "classify",
            "chosen": "local/small:1",
            "tier": "local",
            "policy_version": "p1",
            "reason": "because",
        }
    ]
    trace.finish(status)
    return trace


async def test_trace_sink_writes_in_batches_and_reads_back(store: SqlStore) -> None:
    sink = TraceSink(store, batch_size=2)
    for index in range(5):
        sink.record(finished(f"r{index}", "ok" if index % 2 else "error"))
    await sink.flush()
    assert sink.written == 5
    fresh = TraceSink(store)  # a new sink has no memory: reads come from the store
    trace = await fresh.get("r3")
    assert trace is not None
    assert trace["decisions"][0]["reason"] == "because"
    errors = await fresh.recent(10, "error")
    assert [t["request_id"] for t in errors] == ["r4", "r2", "r0"]


async def test_a_reused_request_id_does_not_block_the_writer(store: SqlStore) -> None:
    sink = TraceSink(store)
    sink.record(finished("same", "error"))
    sink.record(finished("same", "ok"))
    await sink.flush()
    trace = await TraceSink(store).get("same")
    assert trace is not None
    assert trace["status"] == "ok"


async def test_failed_writes_stay_buffered_until_the_store_recovers(tmp_path: Path) -> None:
    unmigrated = SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")  # no tables yet
    sink = TraceSink(unmigrated, capacity=2)
    for index in range(3):
        sink.record(finished(f"r{index}"))
    await asyncio.sleep(0)  # recorded just after the step that finished them
    assert sink.dropped == 1  # past the bound: dropped and counted, never blocking
    with pytest.raises(StoreUnavailable):
        await sink.flush()
    assert sink.written == 0
    await unmigrated.migrate()
    await sink.flush()
    assert sink.written == 2
    assert await TraceSink(unmigrated).get("r1") is not None
    await unmigrated.close()


async def test_observers_see_every_trace_and_the_memory_keeps_the_newest(store: SqlStore) -> None:
    seen: list[str] = []
    sink = TraceSink(store, recent=2)
    sink.observers.append(lambda trace: seen.append(trace.request_id))
    for index in range(3):
        sink.record(finished(f"r{index}"))
    assert seen == []  # not while the step that finished them (and writes the answers) runs
    await asyncio.sleep(0)
    assert seen == ["r0", "r1", "r2"]  # just after it, in order
    assert [t["request_id"] for t in sink.latest()] == ["r1", "r2"]
    assert sink.buffered == 3
    assert await sink.get("r0") is None  # neither in memory nor written yet


async def test_a_quiet_sink_sleeps_and_the_first_trace_wakes_it(store: SqlStore) -> None:
    """Idle, the sink does not wake every interval; a trace after a quiet spell is still
    written an interval after it came, and the sink goes on writing after it."""
    sink = TraceSink(store, batch_size=3, flush_interval_s=0.05)
    flushes: list[float] = []
    flush = sink.flush

    async def counted(everything: bool = False, open_snapshots: bool = False) -> None:
        flushes.append(time.monotonic())
        await flush(everything, open_snapshots)

    sink.flush = counted  # type: ignore[method-assign]
    sink.start()
    try:
        await asyncio.sleep(1.5)
        assert len(flushes) <= 2  # at IDLE_WAIT_S (a 0.05 s tick: 30)
        came = time.monotonic()
        sink.record(finished("quiet"))
        while sink.written < 1:  # noqa: ASYNC110 -- the sink's own counter
            await asyncio.sleep(0.01)
        assert 0.04 <= time.monotonic() - came < 0.5  # gathered for an interval, not IDLE_WAIT_S
        await asyncio.sleep(0.5)
        for index in range(3):
            sink.record(finished(f"batch-{index}"))
        while sink.written < 4:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
    finally:
        await sink.stop()
    assert await TraceSink(store).get("batch-2") is not None


async def test_a_flush_hands_the_store_batches_no_larger_than_it_asks(store: SqlStore) -> None:
    sizes: list[int] = []
    save = store.save_traces

    async def counting(traces: list[dict[str, object]]) -> None:
        sizes.append(len(traces))
        await save(traces)

    store.save_traces = counting  # type: ignore[method-assign]
    store.trace_batch_size = 7
    sink = TraceSink(store)
    for index in range(17):
        sink.record(finished(f"r{index}"))
    await sink.flush()
    assert sizes == [7, 7, 3]
    assert sink.written == 17


async def test_a_flush_writes_what_was_pending_not_what_arrives_meanwhile(
    store: SqlStore,
) -> None:
    """Under load traces arrive during every write: a flush that chased them would write
    batches of one or two, a transaction each."""
    sizes: list[int] = []
    save = store.save_traces
    sink = TraceSink(store)

    async def busy(traces: list[dict[str, object]]) -> None:
        sizes.append(len(traces))
        if len(sizes) <= 3:
            sink.record(finished(f"meanwhile-{len(sizes)}"))
            sink.settle()
        await save(traces)

    store.save_traces = busy  # type: ignore[method-assign]
    store.trace_batch_size = 4
    for index in range(10):
        sink.record(finished(f"r{index}"))
    await sink.flush()
    assert sizes == [4, 4, 2]
    assert sink.buffered == 3  # the next flush's
    await sink.flush(everything=True)
    assert sink.buffered == 0


async def test_a_reader_sees_a_trace_recorded_in_its_own_step(store: SqlStore) -> None:
    """The recording waits for the step to end; a reader in that step does not."""
    sink = TraceSink(store)
    sink.record(finished("r0"))
    found = await sink.get("r0")
    assert found is not None
    assert found["request_id"] == "r0"
    sink.record(finished("r1"))
    assert [t["request_id"] for t in sink.latest()] == ["r0", "r1"]


async def test_an_observer_that_raises_costs_no_other_trace_its_record(
    store: SqlStore, caplog: pytest.LogCaptureFixture
) -> None:
    sink = TraceSink(store)

    def fails_on_r1(trace: Trace) -> None:
        if trace.request_id == "r1":
            raise RuntimeError("observer broke")

    sink.observers.append(fails_on_r1)
    for index in range(3):
        sink.record(finished(f"r{index}"))
    await asyncio.sleep(0)
    assert [t["request_id"] for t in sink.latest()] == ["r0", "r2"]
    assert "recording trace r1 failed" in caplog.text
