"""An open-loop HTTP/1.1 load generator: requests go out on a fixed schedule, whatever the server.

A closed loop (each connection waits for its answer before sending again, as ``wrk`` does) slows
down with the server and so hides its queueing ("coordinated omission"). Here request *i* is due
at ``start + i / rate``; its latency is counted from that scheduled time, so a server that falls
behind shows it in the tail. Requests ride on a pool of keep-alive connections (at most
``connections``); a request with no free connection waits in a queue, and that wait counts too.

Written on bare ``asyncio.Protocol`` (one pre-built request, a minimal response parser) so its
own CPU stays small: on 2 cores the generator competes with the server it measures, so every
run reports the generator's CPU use and how late its pacer dispatched (``pacer_lag_ms``).

    python -m bench.loadgen --url http://127.0.0.1:9100/v1/chat/completions \
        --rate 300 --duration 5 --body '{"model": "bench-chat", "messages": [...]}'

Prints one JSON object. Standard library only, so it starts fast in a process of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import resource
import sys
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass(slots=True)
class Schedule:
    """Request *i* is due at ``start + i / rate``; the first ``first_recorded`` are warm-up."""

    start: float
    rate: float
    total: int
    first_recorded: int
    lags: list[float] = field(default_factory=list)
    """Milliseconds between a dispatch's first due time and the loop sending it."""

    def due(self, index: int) -> float:
        return self.start + index / self.rate


@dataclass(slots=True)
class Request:
    """One scheduled request; ``recorded`` is False during the warm-up."""

    scheduled: float
    recorded: bool
    index: int = 0
    done: bool = False


def response_length(buffer: bytearray, head_end: int, head: bytes) -> int | None:
    """Bytes of the whole response in ``buffer`` once complete, else None."""
    lowered = head.lower()
    body_start = head_end + 4
    if b"transfer-encoding: chunked" not in lowered:
        length = 0
        marker = lowered.find(b"content-length:")
        if marker >= 0:
            length = int(lowered[marker + 15 :].split(b"\r\n", 1)[0])
        total = body_start + length
        return total if len(buffer) >= total else None
    position = body_start
    while True:  # chunk-size CRLF data CRLF ... 0 CRLF CRLF
        line_end = buffer.find(b"\r\n", position)
        if line_end < 0:
            return None
        size = int(bytes(buffer[position:line_end]).split(b";")[0], 16)
        position = line_end + 2 + size + 2
        if len(buffer) < position:
            return None
        if size == 0:
            return position


BARE_503 = -503
"""The status a 503 is recorded with when it came without ``Retry-After``."""


class ClientConnection(asyncio.Protocol):
    """One keep-alive connection carrying one request at a time."""

    def __init__(self, generator: OpenLoop) -> None:
        self.generator = generator
        self.buffer = bytearray()
        self.current: Request | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.generator.connected(self)

    def send(self, request: Request) -> None:
        assert self.transport is not None
        self.current = request
        self.transport.write(self.generator.payload_of(request.index))

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        head_end = self.buffer.find(b"\r\n\r\n")
        if head_end < 0:
            return
        head = bytes(self.buffer[:head_end])
        total = response_length(self.buffer, head_end, head)
        if total is None:
            return
        del self.buffer[:total]
        request, self.current = self.current, None
        if request is not None:
            lowered = head.lower()
            status = int(head[9:12])
            if status == 503 and b"\r\nretry-after:" not in lowered:
                status = BARE_503
            self.generator.answered(self, request, status, b"connection: close" in lowered)

    def abandon(self) -> None:
        """Drop the connection (its request timed out); it is not reused."""
        self.current = None
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        request, self.current = self.current, None
        self.transport = None
        self.generator.lost(self, request)


class OpenLoop:
    """Sends ``rate`` requests per second for a fixed time and keeps their latencies."""

    def __init__(
        self,
        url: str,
        body: bytes,
        headers: list[str],
        connections: int,
        timeout_s: float,
        vary: bytes = b"",
        vary_start: int | None = None,
    ) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        lines = [f"POST {parts.path or '/'} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}", *headers]
        self.payload = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
        # With ``vary``, that marker in the body becomes a word of its own length per request
        # (letters only: no digit wakes the number recognisers), so no two bodies are equal.
        self.head, _, self.tail = self.payload.partition(vary) if vary else (b"", b"", b"")
        self.vary_width = len(vary)
        # Each run starts its words at a random index (unless told), so a later run at another
        # rate does not resend an earlier run's words and meet what the gateway remembered.
        self.vary_start = (
            random.randrange(26**self.vary_width) if vary_start is None else vary_start
        )
        self.max_connections = connections
        self.timeout_s = timeout_s
        self.idle: deque[ClientConnection] = deque()
        self.busy: set[ClientConnection] = set()
        self.opening = 0
        self.pending: deque[Request] = deque()
        self.latencies_ms: list[float] = []
        self.errors: Counter[str] = Counter()
        self.finished = 0
        self.loop = asyncio.get_running_loop()

    def payload_of(self, index: int) -> bytes:
        """The request bytes of request ``index``: the same each time unless ``vary`` is set."""
        if not self.vary_width:
            return self.payload
        word = unique_word(self.vary_start + index, self.vary_width)
        return self.head + word + self.tail

    # --- connections -------------------------------------------------------------------------
    def open_connection(self) -> None:
        self.opening += 1
        self.loop.create_task(self._connect())

    async def _connect(self) -> None:
        try:
            await self.loop.create_connection(lambda: ClientConnection(self), self.host, self.port)
        except OSError as exc:
            self.opening -= 1
            if self.pending:
                self.fail(self.pending.popleft(), f"connect: {type(exc).__name__}")

    def connected(self, connection: ClientConnection) -> None:
        self.opening -= 1
        self.release(connection)

    def release(self, connection: ClientConnection) -> None:
        """A connection is free: give it the oldest waiting request, or park it."""
        if self.pending:
            self.busy.add(connection)
            connection.send(self.pending.popleft())
        else:
            self.busy.discard(connection)
            self.idle.append(connection)

    def lost(self, connection: ClientConnection, request: Request | None) -> None:
        self.busy.discard(connection)
        if connection in self.idle:
            self.idle.remove(connection)
        if request is not None:
            self.fail(request, "connection lost")
        if self.pending and len(self.busy) + self.opening < self.max_connections:
            self.open_connection()

    # --- requests ----------------------------------------------------------------------------
    def dispatch(self, request: Request) -> None:
        if self.idle:
            connection = self.idle.pop()
            self.busy.add(connection)
            connection.send(request)
            return
        self.pending.append(request)
        if len(self.busy) + self.opening < self.max_connections:
            self.open_connection()

    def answered(
        self, connection: ClientConnection, request: Request, status: int, closing: bool
    ) -> None:
        if not request.done:
            request.done = True
            self.finished += 1
            if request.recorded:
                if 200 <= status < 300:
                    self.latencies_ms.append((self.loop.time() - request.scheduled) * 1000.0)
                elif status == BARE_503:
                    self.errors["HTTP 503 without Retry-After"] += 1
                else:
                    self.errors[f"HTTP {status}"] += 1
        if closing:
            self.busy.discard(connection)
            connection.abandon()
        else:
            self.release(connection)

    def fail(self, request: Request, reason: str) -> None:
        if request.done:
            return
        request.done = True
        self.finished += 1
        if request.recorded:
            self.errors[reason] += 1

    def expire(self) -> None:
        """Fail every request older than the timeout, waiting or in flight."""
        cutoff = self.loop.time() - self.timeout_s
        while self.pending and self.pending[0].scheduled < cutoff:
            self.fail(self.pending.popleft(), "timeout")
        for connection in list(self.busy):
            request = connection.current
            if request is not None and request.scheduled < cutoff:
                self.busy.discard(connection)
                connection.abandon()
                self.fail(request, "timeout")

    # --- the run -----------------------------------------------------------------------------
    async def run(self, rate: float, duration_s: float, warmup_s: float) -> dict[str, Any]:
        total = int(rate * (warmup_s + duration_s))
        first_recorded = int(rate * warmup_s)
        start = self.loop.time() + 0.05
        schedule = Schedule(start, rate, total, first_recorded)
        paced = asyncio.Event()
        cpu_before = _cpu_seconds()
        pacer = threading.Thread(target=self.pace, args=(schedule, paced), daemon=True)
        pacer.start()
        await paced.wait()
        give_up = start + total / rate + self.timeout_s + 0.1
        while self.finished < total and self.loop.time() < give_up:
            await asyncio.sleep(0.01)
            self.expire()
        wall = self.loop.time() - start
        cpu = _cpu_seconds() - cpu_before
        for connection in [*self.idle, *self.busy]:
            connection.abandon()
        return self.summary(rate, duration_s, total - first_recorded, schedule.lags, cpu / wall)

    def pace(self, schedule: Schedule, paced: asyncio.Event) -> None:
        """The pacer thread: ``time.sleep`` wakes within ~0.1 ms, where the event loop's own
        timers wake up to 1 ms late (epoll's millisecond timeout); each wake hands every request
        now due to the loop in one call."""
        sent = 0
        while sent < schedule.total:
            delay = schedule.due(sent) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            due_now = min(
                schedule.total, int((time.monotonic() - schedule.start) * schedule.rate) + 1
            )
            self.loop.call_soon_threadsafe(self.dispatch_range, schedule, sent, due_now)
            sent = due_now
        self.loop.call_soon_threadsafe(paced.set)

    def dispatch_range(self, schedule: Schedule, first: int, end: int) -> None:
        schedule.lags.append((self.loop.time() - schedule.due(first)) * 1000.0)
        for index in range(first, end):
            self.dispatch(Request(schedule.due(index), index >= schedule.first_recorded, index))
        self.expire()

    def summary(
        self, rate: float, duration_s: float, recorded: int, lags: list[float], cpu: float
    ) -> dict[str, Any]:
        errors = sum(self.errors.values())
        return {
            "rate": rate,
            "duration_s": duration_s,
            "requests": recorded,
            "ok": len(self.latencies_ms),
            "errors": errors,
            "error_rate": round(errors / recorded, 5) if recorded else 0.0,
            "error_kinds": dict(self.errors),
            "latency_ms": quantiles(self.latencies_ms),
            "pacer_lag_ms": quantiles(lags),
            "generator_cpu": round(cpu, 4),
        }


def quantiles(samples: list[float]) -> dict[str, float]:
    """p50/p90/p95/p99/p99.9, mean and max (nearest rank), in the samples' unit."""
    if not samples:
        return {}
    ordered = sorted(samples)

    def at(q: float) -> float:
        # Nearest rank: the smallest sample with at least q of them at or below it.
        rank = max(1, math.ceil(q * len(ordered) - 1e-9))
        return round(ordered[rank - 1], 4)

    return {
        "p50": at(0.50),
        "p90": at(0.90),
        "p95": at(0.95),
        "p99": at(0.99),
        "p999": at(0.999),
        "max": round(ordered[-1], 4),
        "mean": round(sum(ordered) / len(ordered), 4),
        "n": len(ordered),
    }


def unique_word(index: int, width: int) -> bytes:
    """``index`` in base 26 as ``width`` lowercase letters (distinct for 26**width indices;
    higher indices wrap)."""
    letters = bytearray(b"a" * width)
    for position in range(width - 1, -1, -1):
        index, digit = divmod(index, 26)
        letters[position] = 97 + digit
    return bytes(letters)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def generate(arguments: argparse.Namespace) -> dict[str, Any]:
    generator = OpenLoop(
        arguments.url,
        arguments.body.encode(),
        arguments.header,
        arguments.connections,
        arguments.timeout,
        arguments.vary.encode(),
    )
    return await generator.run(arguments.rate, arguments.duration, arguments.warmup)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rate", type=float, required=True, help="Requests per second.")
    parser.add_argument("--duration", type=float, default=5.0, help="Measured seconds.")
    parser.add_argument("--warmup", type=float, default=1.0, help="Unrecorded seconds first.")
    parser.add_argument("--body", default="{}")
    parser.add_argument("--header", action="append", default=[], help="'Name: value'")
    parser.add_argument("--connections", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=5.0, help="Seconds from schedule.")
    parser.add_argument(
        "--vary", default="", help="A marker in the body replaced by a unique word per request."
    )
    return parser.parse_args(argv)


def main() -> None:
    sys.setswitchinterval(0.0005)  # the pacer thread waits at most this long for the GIL
    result = asyncio.run(generate(parse(sys.argv[1:])))
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
