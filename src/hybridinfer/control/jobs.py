"""Async tasks: ``POST /v1/tasks`` stores a task and queues it; ``GET /v1/tasks/{id}`` reads it.

The row is written before the message is published, so a worker always finds its task. With an
``Idempotency-Key`` a caller may retry a submission safely: the same key (per API key) gives
the same task, and a task still queued is published again (the queue drops the duplicate
within its window; after it, the worker's idempotency does). The work itself is done by
``worker.JobWorker`` on any replica.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Any

import orjson

from hybridinfer.control.keys import Principal
from hybridinfer.core.schemas import InferRequest
from hybridinfer.decompose.auto import AUTO_TASK, choose_task
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.errors import IdempotencyKeyReused, InvalidRequest, NotFound
from hybridinfer.queue.base import WorkQueue
from hybridinfer.store.jobs import JobStore

_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")


def job_message(task_id: str, key_id: str | None, request: InferRequest) -> bytes:
    """The queue message of a task: everything a worker needs, with no store read."""
    return orjson.dumps(
        {"task_id": task_id, "key_id": key_id, "request": request.model_dump(mode="json")}
    )


class JobService:
    """Submits tasks and answers their status."""

    def __init__(self, tasks: JobStore, queue: WorkQueue, decomposer: Decomposer) -> None:
        self._tasks = tasks
        self._queue = queue
        self._decomposer = decomposer

    async def submit(
        self, request: InferRequest, principal: Principal, idempotency_key: str | None
    ) -> str:
        """Store and enqueue ``request``; its task id. Bad input fails here, not later."""
        if idempotency_key is not None and not _IDEMPOTENCY_KEY.match(idempotency_key):
            raise InvalidRequest("Idempotency-Key must be 1 to 200 visible ASCII characters")
        task, inputs = request.task, request.inputs
        if task == AUTO_TASK:  # the worker picks again; the same rule gives the same plan
            choice = choose_task(inputs)
            task, inputs = choice.task, choice.inputs
        self._decomposer.plan(task, inputs, request.options.privacy)
        body = orjson.dumps(request.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
        digest = hashlib.sha256(body).hexdigest()
        record = await self._tasks.create(
            uuid.uuid4().hex, principal.key_id, idempotency_key, digest, body
        )
        if record["request_hash"] != digest:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was used with a different request body"
            )
        if record["created"] or record["status"] == "queued":
            message = job_message(record["id"], principal.key_id, request)
            await self._queue.publish(message, dedupe_id=record["id"])
        return str(record["id"])

    async def describe(self, task_id: str, principal: Principal) -> dict[str, Any]:
        """``{"task_id", "status", "result"?, "error"?}``; 404 for unknown or others' tasks."""
        record = await self._tasks.get(task_id)
        if record is None or not (
            principal.allows("admin") or record["key_id"] == principal.key_id
        ):
            raise NotFound(f"no task {task_id!r}", code="unknown_task_id")
        body: dict[str, Any] = {"task_id": record["id"], "status": record["status"]}
        if record["result"] is not None:
            body["result"] = orjson.loads(record["result"])
        if record["error"] is not None:
            body["error"] = orjson.loads(record["error"])
        body["attempts"] = record["attempts"]
        return body
