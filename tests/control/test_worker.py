"""The task worker on the in-process queue and a real SQLite store: a result is stored once
then acknowledged; a caller's fault fails at once, ours is retried, then dead-lettered."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from hybridinfer.control.jobs import job_message
from hybridinfer.control.worker import JobWorker, RetryPolicy
from hybridinfer.core.schemas import InferRequest
from hybridinfer.core.trace import Trace
from hybridinfer.errors import InvalidInput, UpstreamUnavailable
from hybridinfer.queue.base import Delivery
from hybridinfer.queue.jetstream import JetStreamQueue
from hybridinfer.queue.memory import MemoryQueue
from hybridinfer.store.jobs import JobStore
from hybridinfer.store.sql import SqlStore

REQUEST = InferRequest(task="sentiment", inputs={"text": "a fine day"})
NO_WAIT = RetryPolicy(max_attempts=3, base_s=0.0, max_s=0.0)


class FakePipeline:
    """Answers from a script: a result body, or an error to raise; records each trace."""

    def __init__(self, *outcomes: dict[str, Any] | Exception) -> None:
        self.outcomes = list(outcomes)
        self.traces: list[Trace] = []

    async def infer(self, request: InferRequest, trace: Trace) -> dict[str, Any]:
        self.traces.append(trace)
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


async def setup(
    store: SqlStore, pipeline: FakePipeline, retry: RetryPolicy = NO_WAIT
) -> tuple[JobWorker, MemoryQueue, JobStore]:
    queue, tasks = MemoryQueue(ack_wait_s=30.0), JobStore(store)
    worker = JobWorker(queue, tasks, pipeline, 1, retry)  # type: ignore[arg-type]
    await tasks.create("t1", "key-a", None, "h", b"{}")
    await queue.publish(job_message("t1", "key-a", REQUEST))
    return worker, queue, tasks


async def next_delivery(queue: MemoryQueue) -> Delivery:
    (delivery,) = await queue.fetch(1, 1.0)
    return delivery


async def test_a_result_is_stored_then_acknowledged(store: SqlStore) -> None:
    pipeline = FakePipeline({"status": "ok", "outputs": {"label": "positive"}})
    worker, queue, tasks = await setup(store, pipeline)

    await worker.handle(await next_delivery(queue))

    record = await tasks.get("t1")
    assert record is not None
    assert record["status"] == "done"
    assert orjson.loads(record["result"])["outputs"] == {"label": "positive"}
    (trace,) = pipeline.traces
    assert (trace.request_id, trace.key_id) == ("t1", "key-a")
    assert worker.counts.completed == 1
    assert await queue.fetch(1, 0.05) == []  # acknowledged: never delivered again


async def test_a_callers_fault_fails_the_task_without_a_retry(store: SqlStore) -> None:
    worker, queue, tasks = await setup(store, FakePipeline(InvalidInput("inputs.text")))

    await worker.handle(await next_delivery(queue))

    record = await tasks.get("t1")
    assert record is not None
    assert record["status"] == "failed"
    assert orjson.loads(record["error"]) == {"code": "invalid_input", "message": "inputs.text"}
    assert (worker.counts.failed, worker.counts.retried) == (1, 0)
    assert await queue.fetch(1, 0.05) == []
    assert await queue.dead_letters(10, 0.0) == []


async def test_our_failure_is_retried_then_dead_lettered_at_the_last_attempt(
    store: SqlStore,
) -> None:
    worker, queue, tasks = await setup(store, FakePipeline(UpstreamUnavailable("cloud down")))

    for _ in range(NO_WAIT.max_attempts):
        await worker.handle(await next_delivery(queue))

    record = await tasks.get("t1")
    assert record is not None
    assert (record["status"], record["attempts"]) == ("failed", 3)
    assert (worker.counts.retried, worker.counts.failed, worker.counts.dead_lettered) == (2, 1, 1)
    assert await queue.dead_letters(10, 0.0) == [job_message("t1", "key-a", REQUEST)]
    assert await queue.fetch(1, 0.05) == []


async def test_a_retry_that_succeeds_stores_the_result(store: SqlStore) -> None:
    pipeline = FakePipeline(UpstreamUnavailable("blip"), {"status": "ok"})
    worker, queue, tasks = await setup(store, pipeline)

    await worker.handle(await next_delivery(queue))
    second = await next_delivery(queue)
    assert second.attempt == 2
    await worker.handle(second)

    record = await tasks.get("t1")
    assert record is not None
    assert (record["status"], record["attempts"]) == ("done", 2)
    assert (worker.counts.retried, worker.counts.completed) == (1, 1)


async def test_a_crash_is_retried_like_any_5xx(store: SqlStore) -> None:
    worker, queue, tasks = await setup(store, FakePipeline(RuntimeError("bug"), {"status": "ok"}))
    await worker.handle(await next_delivery(queue))
    assert worker.counts.retried == 1
    record = await tasks.get("t1")
    assert record is not None
    assert record["status"] == "running"


async def test_a_finished_task_delivered_again_is_acknowledged_without_running(
    store: SqlStore,
) -> None:
    pipeline = FakePipeline({"status": "ok"})
    worker, queue, tasks = await setup(store, pipeline)
    await tasks.finish("t1", result={"status": "ok"})

    await worker.handle(await next_delivery(queue))

    assert pipeline.traces == []
    assert worker.counts.duplicates == 1
    assert await queue.fetch(1, 0.05) == []


@pytest.mark.parametrize(
    "body", [b"not json", b'{"task_id": "t1"}', b'{"task_id": "t1", "request": {"task": ""}}']
)
async def test_a_malformed_message_goes_to_the_dead_letters(store: SqlStore, body: bytes) -> None:
    queue, tasks = MemoryQueue(), JobStore(store)
    worker = JobWorker(queue, tasks, FakePipeline({}), 1, NO_WAIT)  # type: ignore[arg-type]
    await queue.publish(body)

    await worker.handle(await next_delivery(queue))

    assert worker.counts.dead_lettered == 1
    assert await queue.dead_letters(10, 0.0) == [body]


async def test_started_workers_drain_the_queue_and_stop(store: SqlStore) -> None:
    pipeline = FakePipeline({"status": "ok"})
    worker, _, tasks = await setup(store, pipeline)
    worker.start()
    try:
        for _ in range(500):  # up to 5 s
            if worker.counts.completed:
                break
            await asyncio.sleep(0.01)
    finally:
        await worker.stop()
    record = await tasks.get("t1")
    assert record is not None
    assert record["status"] == "done"
    assert worker.counts.completed == 1


@pytest.mark.parametrize("attempt", [1, 2, 3, 8])
def test_retry_delays_double_with_jitter_under_the_cap(attempt: int) -> None:
    policy = RetryPolicy(base_s=0.5, max_s=2.0)
    ceiling = min(2.0, 0.5 * 2 ** (attempt - 1))
    delays = [policy.delay(attempt) for _ in range(200)]
    assert all(ceiling / 2 <= delay <= ceiling for delay in delays)
    assert max(delays) - min(delays) > 0.0


async def test_an_idle_worker_waits_as_long_as_its_queue_says(store: SqlStore) -> None:
    """The in-process queue wakes a fetch on a publish, so an idle worker waits there long
    (no wake-up a second per worker); a server's queue keeps its short long-poll."""
    waits: list[float] = []

    class Recording(MemoryQueue):
        async def fetch(self, max_messages: int, timeout_s: float) -> list[Delivery]:
            waits.append(timeout_s)
            return await super().fetch(max_messages, timeout_s)

    queue = Recording()
    pipeline = FakePipeline({"status": "ok", "outputs": {"label": "positive"}})
    tasks = JobStore(store)
    worker = JobWorker(queue, tasks, pipeline, 2, NO_WAIT)  # type: ignore[arg-type]
    worker.start()
    try:
        await asyncio.sleep(0.05)
        assert waits == [MemoryQueue.fetch_wait_s] * 2
        assert MemoryQueue.fetch_wait_s > JetStreamQueue.fetch_wait_s
        await tasks.create("t1", "key-a", None, "h", b"{}")
        await queue.publish(job_message("t1", "key-a", REQUEST))
        for _ in range(200):  # the publish woke a waiting fetch at once
            if worker.counts.completed:
                break
            await asyncio.sleep(0.005)
        assert worker.counts.completed == 1
    finally:
        await worker.stop()
