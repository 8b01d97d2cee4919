"""Submitting async tasks: checked before they are stored, stored before they are queued, one
task per idempotency key and body, and visible to their owner and admins only."""

from __future__ import annotations

import orjson
import pytest

from hybridinfer.control.jobs import JobService, job_message
from hybridinfer.control.keys import Principal
from hybridinfer.core.schemas import InferRequest
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.decompose.rules import default_rules_path, load_rules
from hybridinfer.errors import InvalidInput, InvalidRequest, NotFound
from hybridinfer.queue.memory import MemoryQueue
from hybridinfer.store.jobs import JobStore
from hybridinfer.store.sql import SqlStore

APP = Principal("key-a", frozenset({"infer"}))
OTHER = Principal("key-b", frozenset({"infer"}))
ADMIN = Principal("key-admin", frozenset({"admin"}))


def sentiment(text: str = "a fine day") -> InferRequest:
    return InferRequest(task="sentiment", inputs={"text": text})


@pytest.fixture
def service(store: SqlStore) -> tuple[JobService, JobStore, MemoryQueue]:
    tasks, queue = JobStore(store), MemoryQueue()
    return JobService(tasks, queue, Decomposer(load_rules(default_rules_path()))), tasks, queue


async def test_a_task_is_stored_queued_and_its_message_needs_no_store_read(
    service: tuple[JobService, JobStore, MemoryQueue],
) -> None:
    jobs, tasks, queue = service

    task_id = await jobs.submit(sentiment(), APP, None)

    record = await tasks.get(task_id)
    assert record is not None
    assert (record["status"], record["key_id"]) == ("queued", "key-a")
    (delivery,) = await queue.fetch(1, 0.1)
    assert delivery.body == job_message(task_id, "key-a", sentiment())
    message = orjson.loads(delivery.body)
    assert message["request"]["inputs"] == {"text": "a fine day"}


async def test_bad_input_fails_at_submit_and_nothing_is_stored_or_queued(
    service: tuple[JobService, JobStore, MemoryQueue],
) -> None:
    jobs, tasks, queue = service
    with pytest.raises(InvalidInput):
        await jobs.submit(InferRequest(task="sentiment", inputs={"text": 3}), APP, None)
    with pytest.raises(InvalidRequest, match="Idempotency-Key"):
        await jobs.submit(sentiment(), APP, "has space")
    assert await tasks.count_by_status() == {}
    assert await queue.depth() == 0


async def test_a_retried_submission_gets_its_task_and_a_queued_one_is_published_again(
    service: tuple[JobService, JobStore, MemoryQueue],
) -> None:
    jobs, tasks, queue = service
    first = await jobs.submit(sentiment(), APP, "order-7")
    again = await jobs.submit(sentiment(), APP, "order-7")
    other_key = await jobs.submit(sentiment(), OTHER, "order-7")

    assert again == first
    assert other_key != first
    # The republished message carries the task id as its dedupe id: still one in the queue.
    assert await queue.depth() == 2
    await tasks.start(first)
    await tasks.finish(first, result={"status": "ok"})
    assert await jobs.submit(sentiment(), APP, "order-7") == first
    assert await queue.depth() == 2


async def test_an_auto_task_is_checked_as_the_plan_it_becomes_and_queued_as_sent(
    service: tuple[JobService, JobStore, MemoryQueue],
) -> None:
    jobs, _, queue = service
    with pytest.raises(InvalidInput, match=r"inputs\.question"):  # auto → document_qa
        await jobs.submit(InferRequest(task="auto", inputs={"text": "why? " * 5000}), APP, None)
    await jobs.submit(InferRequest(task="auto", inputs={"text": "a fine day"}), APP, None)
    (delivery,) = await queue.fetch(1, 0.1)
    # The worker picks again from the request as sent (the same rule gives the same plan).
    assert orjson.loads(delivery.body)["request"]["task"] == "auto"


async def test_a_task_is_shown_to_its_owner_and_admins_and_404_to_others(
    service: tuple[JobService, JobStore, MemoryQueue],
) -> None:
    jobs, tasks, _ = service
    task_id = await jobs.submit(sentiment(), APP, None)
    await tasks.start(task_id)
    await tasks.finish(task_id, error={"code": "upstream_unavailable", "message": "down"})

    shown = await jobs.describe(task_id, APP)

    assert shown == {
        "task_id": task_id,
        "status": "failed",
        "error": {"code": "upstream_unavailable", "message": "down"},
        "attempts": 1,
    }
    assert (await jobs.describe(task_id, ADMIN))["status"] == "failed"
    with pytest.raises(NotFound) as hidden:
        await jobs.describe(task_id, OTHER)
    assert hidden.value.error_code == "unknown_task_id"
    with pytest.raises(NotFound):
        await jobs.describe("no-such-task", ADMIN)
