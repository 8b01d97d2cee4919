"""The NATS JetStream work queue: tasks shared by every gateway replica, durable on the server.

Layout: a work-queue stream ``<stream>`` on subject ``<stream>.work`` read by one durable pull
consumer (``workers``) that every replica shares, so each message goes to one replica at a
time; a stream ``<stream>_DEAD`` on ``<stream>.dead`` holds dead letters. The consumer
acknowledges explicitly: a message not acked within ``ack_wait`` (its replica was killed) is
redelivered to another. ``max_deliver`` is left unlimited on purpose: the worker counts
attempts itself (``num_delivered``) and dead-letters, so no message is silently dropped by
the server. Publishing sets ``Nats-Msg-Id`` so the stream drops duplicates within its window.
Every nats-py error is mapped into ``QueueUnavailable`` here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StreamConfig

from hybridinfer.errors import QueueUnavailable
from hybridinfer.queue.base import Delivery, WorkQueue

WORKERS = "workers"
READERS = "readers"


@asynccontextmanager
async def _mapped(action: str) -> AsyncIterator[None]:
    try:
        yield
    except (nats.errors.Error, nats.js.errors.Error) as exc:
        raise QueueUnavailable(f"nats {action}: {type(exc).__name__}: {exc}") from exc
    except OSError as exc:
        raise QueueUnavailable(f"nats {action}: {exc.strerror or exc}") from exc


class JetStreamDelivery(Delivery):
    """A delivery from ``JetStreamQueue``; settles through the message's reply subject."""

    def __init__(self, queue: JetStreamQueue, message: Msg) -> None:
        self._queue = queue
        self._message = message
        self.body = message.data
        self.attempt = message.metadata.num_delivered

    async def ack(self) -> None:
        async with _mapped("ack"):
            await self._message.ack_sync(timeout=5.0)  # confirmed: the server removed it

    async def retry(self, delay_s: float) -> None:
        async with _mapped("nak"):
            await self._message.nak(delay=delay_s)

    async def extend(self) -> None:
        async with _mapped("in_progress"):
            await self._message.in_progress()

    async def dead_letter(self, reason: str) -> None:
        await self._queue.publish_dead(self.body, reason)
        async with _mapped("term"):
            await self._message.term()


class JetStreamQueue(WorkQueue):
    """Connects lazily in ``connect``; reconnects by itself after the server comes back."""

    def __init__(self, url: str, stream: str = "HYBRIDINFER_TASKS", ack_wait_s: float = 30.0):
        self.ack_wait_s = ack_wait_s
        self._url = url
        self._stream = stream
        self._subject = f"{stream.lower()}.work"
        self._dead_subject = f"{stream.lower()}.dead"
        self._client: Client | None = None
        self._js: JetStreamContext | None = None
        self._work: JetStreamContext.PullSubscription | None = None
        self._dead: JetStreamContext.PullSubscription | None = None

    async def connect(self) -> None:
        async with _mapped("connect"):
            self._client = await nats.connect(
                self._url, connect_timeout=2, max_reconnect_attempts=-1, reconnect_time_wait=0.5
            )
            self._js = self._client.jetstream(timeout=5.0)
            await self._ensure_stream(self._stream, self._subject, duplicate_window=120.0)
            await self._ensure_stream(f"{self._stream}_DEAD", self._dead_subject)
            self._work = await self._js.pull_subscribe(
                self._subject,
                durable=WORKERS,
                stream=self._stream,
                config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=self.ack_wait_s),
            )
            self._dead = await self._js.pull_subscribe(
                self._dead_subject, durable=READERS, stream=f"{self._stream}_DEAD"
            )

    async def _ensure_stream(self, name: str, subject: str, duplicate_window: float = 0) -> None:
        assert self._js is not None
        try:
            await self._js.stream_info(name)
        except nats.js.errors.NotFoundError:
            await self._js.add_stream(
                StreamConfig(
                    name=name,
                    subjects=[subject],
                    retention=RetentionPolicy.WORK_QUEUE,
                    duplicate_window=duplicate_window,
                )
            )

    def _context(self) -> JetStreamContext:
        if self._js is None:
            raise QueueUnavailable("the queue is not connected")
        return self._js

    async def publish(self, body: bytes, dedupe_id: str | None = None) -> None:
        headers: dict[str, Any] | None = None if dedupe_id is None else {"Nats-Msg-Id": dedupe_id}
        async with _mapped("publish"):
            await self._context().publish(self._subject, body, headers=headers)

    async def publish_dead(self, body: bytes, reason: str) -> None:
        """Put ``body`` on the dead-letter subject, with the reason in a header."""
        async with _mapped("publish"):
            await self._context().publish(
                self._dead_subject, body, headers={"Hybridinfer-Reason": reason[:500]}
            )

    async def fetch(self, max_messages: int, timeout_s: float) -> list[Delivery]:
        if self._work is None:
            raise QueueUnavailable("the queue is not connected")
        try:
            async with _mapped("fetch"):
                messages = await self._work.fetch(max_messages, timeout=timeout_s)
        except QueueUnavailable as exc:
            # nats-py raises its TimeoutError for one message, asyncio's for a batch.
            if isinstance(exc.__cause__, TimeoutError):
                return []  # nothing arrived within timeout_s
            raise
        return [JetStreamDelivery(self, message) for message in messages]

    async def dead_letters(self, max_messages: int, timeout_s: float) -> list[bytes]:
        if self._dead is None:
            raise QueueUnavailable("the queue is not connected")
        try:
            async with _mapped("fetch"):
                messages = await self._dead.fetch(max_messages, timeout=timeout_s)
                for message in messages:
                    await message.ack()
        except QueueUnavailable as exc:
            # nats-py raises its TimeoutError for one message, asyncio's for a batch.
            if isinstance(exc.__cause__, TimeoutError):
                return []
            raise
        return [message.data for message in messages]

    async def depth(self) -> int:
        async with _mapped("consumer_info"):
            info = await self._context().consumer_info(self._stream, WORKERS)
        return int(info.num_pending or 0)

    async def close(self) -> None:
        if self._client is not None and not self._client.is_closed:
            async with _mapped("close"):
                await self._client.close()
        self._client = self._js = self._work = self._dead = None

    async def delete_streams(self) -> None:
        """Remove both streams (tests and benchmarks clean up after themselves)."""
        async with _mapped("delete_stream"):
            for name in (self._stream, f"{self._stream}_DEAD"):
                with suppress(nats.js.errors.NotFoundError):
                    await self._context().delete_stream(name)
