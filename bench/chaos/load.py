"""Bounded load for the chaos scenarios, and the one result row each scenario prints.

Open loop: requests leave at a fixed rate for a fixed time whatever the answers do (at most
``max_in_flight`` outstanding; a request due past that is counted, not sent), so a slow or
failing path shows up as latency and errors instead of silently lowering the offered load.
Closed loop (``peak``) measures throughput.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

from bench.chaos.cluster import KEY
from bench.harness import RESULTS, machine

RESULTS_FILE = RESULTS / "chaos.json"


@dataclass(slots=True)
class Outcome:
    """One request: when it left (seconds since the load started), how it ended, where it ran."""

    sent_s: float
    latency_ms: float
    status: int
    """HTTP status; 0 when the request got no answer at all."""
    task: str
    route: str = "auto"
    """The tier the caller asked for (``options.route``)."""
    tier: str | None = None
    code: str | None = None
    """The error envelope's code of a failed request."""
    retry_after: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200


def read_answer(outcome: Outcome, body: dict[str, Any]) -> None:
    """The tier of the first subtask, or the error code, from a ``/v1/infer`` answer."""
    if outcome.ok:
        tier = (body.get("subtasks") or [{}])[0].get("tier")
        outcome.tier = str(tier) if tier is not None else None
    else:
        outcome.code = str((body.get("error") or {}).get("code"))


class Load:
    """Sends ``bodies`` round-robin to ``/v1/infer`` at ``rate`` per second.

    aiohttp rather than httpx: the load runs on the same cores as the system under test, and
    aiohttp costs a fraction of the CPU per request.
    """

    def __init__(
        self, url: str, bodies: Sequence[dict[str, Any]], rate: float, max_in_flight: int = 256
    ) -> None:
        self.url = url
        self.bodies = list(bodies)
        self.rate = rate
        self.max_in_flight = max_in_flight
        self.started = time.monotonic()
        self.outcomes: list[Outcome] = []
        self.unsent = 0
        """Requests not sent because ``max_in_flight`` were outstanding at their time."""

    def clock(self) -> float:
        """Seconds since the load started (the time base of every outcome)."""
        return time.monotonic() - self.started

    def session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            base_url=self.url,
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=aiohttp.ClientTimeout(total=20.0),
            connector=aiohttp.TCPConnector(limit=self.max_in_flight),
        )

    async def send(self, session: aiohttp.ClientSession, body: dict[str, Any]) -> None:
        sent = self.clock()
        route = str(body.get("options", {}).get("route", "auto"))
        outcome = Outcome(sent, 0.0, 0, str(body["task"]), route)
        try:
            async with session.post("/v1/infer", json=body) as response:
                outcome.status = response.status
                outcome.retry_after = response.headers.get("Retry-After")
                with contextlib.suppress(ValueError, aiohttp.ContentTypeError):
                    read_answer(outcome, await response.json())
        except (aiohttp.ClientError, TimeoutError) as error:
            outcome.code = type(error).__name__
        outcome.latency_ms = (self.clock() - sent) * 1000.0
        self.outcomes.append(outcome)

    async def run(self, seconds: float) -> list[Outcome]:
        """Send on schedule for ``seconds`` (a request due while ``max_in_flight`` are out is
        counted in ``unsent``); every outcome, sorted by send time, once all have ended."""
        pending: set[asyncio.Task[None]] = set()
        self.started = time.monotonic()
        bodies = itertools.cycle(self.bodies)
        async with self.session() as session:
            for index in range(int(self.rate * seconds)):
                delay = index / self.rate - self.clock()
                if delay > 0:
                    await asyncio.sleep(delay)
                body = next(bodies)
                if len(pending) >= self.max_in_flight:
                    self.unsent += 1
                    continue
                task = asyncio.create_task(self.send(session, body))
                pending.add(task)
                task.add_done_callback(pending.discard)
            await asyncio.gather(*pending)
        return sorted(self.outcomes, key=lambda outcome: outcome.sent_s)


async def peak(
    url: str, bodies: Sequence[dict[str, Any]], connections: int, seconds: float
) -> float:
    """Answered requests per second with ``connections`` callers each waiting for its answer."""
    load = Load(url, bodies, rate=1.0, max_in_flight=connections)
    cycle = itertools.cycle(bodies)
    async with load.session() as session:
        stop = time.monotonic() + seconds

        async def caller() -> None:
            while time.monotonic() < stop:
                await load.send(session, next(cycle))

        started = time.monotonic()
        await asyncio.gather(*(caller() for _ in range(connections)))
        elapsed = time.monotonic() - started
    return sum(outcome.ok for outcome in load.outcomes) / elapsed


def settled_after(outcomes: Sequence[Outcome], since_s: float, good: Any) -> float | None:
    """Seconds from ``since_s`` until the first request after which every request is ``good``;
    None if the last request is not good (traffic never settled)."""
    after = [outcome for outcome in outcomes if outcome.sent_s >= since_s]
    if not after or not good(after[-1]):
        return None
    settled = after[-1]
    for outcome in reversed(after):
        if not good(outcome):
            break
        settled = outcome
    return settled.sent_s - since_s


def first_after(outcomes: Sequence[Outcome], since_s: float, good: Any) -> float | None:
    """Seconds from ``since_s`` until the first request sent after it that is ``good``."""
    for outcome in outcomes:
        if outcome.sent_s >= since_s and good(outcome):
            return outcome.sent_s - since_s
    return None


def percentile(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 1) if values else float("nan")


@dataclass
class Row:
    """What each scenario reports: sent, succeeded, failed, p50, p99, time to reroute."""

    scenario: str
    sent: int
    succeeded: int
    failed: int
    p50_ms: float
    p99_ms: float
    reroute_s: float | None
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls, scenario: str, outcomes: Sequence[Outcome], reroute_s: float | None, **details: Any
    ) -> Row:
        latencies = [outcome.latency_ms for outcome in outcomes if outcome.ok]
        succeeded = len(latencies)
        return cls(
            scenario,
            len(outcomes),
            succeeded,
            len(outcomes) - succeeded,
            percentile(latencies, 50),
            percentile(latencies, 99),
            None if reroute_s is None else round(reroute_s, 2),
            details,
        )

    def line(self) -> str:
        reroute = "-" if self.reroute_s is None else f"{self.reroute_s:.2f} s"
        return (
            f"{self.scenario}: sent {self.sent}, succeeded {self.succeeded}, failed "
            f"{self.failed}, p50 {self.p50_ms} ms, p99 {self.p99_ms} ms, reroute {reroute}"
        )


def record(row: Row, impairment: str, path: Path = RESULTS_FILE) -> None:
    """Print the row and store it (replacing an earlier row of the same scenario)."""
    print(row.line())
    stored: dict[str, Any] = {}
    if path.exists():
        stored = json.loads(path.read_text())
    rows = stored.get("rows", {})
    rows[row.scenario] = {**asdict(row), "date": machine()["date"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine(), "impairment": impairment, "rows": rows}
    path.write_text(json.dumps(payload, indent=2) + "\n")
