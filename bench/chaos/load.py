"""Bounded load for the chaos scenarios, and the one result row each scenario prints.

Open loop: request ``i`` is due at ``i / rate`` seconds for a fixed time whatever the answers
do (at most ``max_in_flight`` outstanding; a request due past that is counted, not sent), so a
slow or failing path shows up as latency and errors instead of silently lowering the offered
load. Latency is counted from each request's *scheduled* time, not from when the generator got
round to sending it: a generator whose loop fell behind (it shares the cores with the system
under test) would otherwise hide the wait in its own lag (coordinated omission), as
``bench/loadgen.py`` also avoids. The generator measures its own elapsed time, achieved rate
and dispatch lag; ``record`` fails the scenario when it fell behind.
Closed loop (``peak``) measures throughput.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import json
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import orjson

from bench.chaos.cluster import KEY
from bench.harness import RESULTS, machine

RESULTS_FILE = RESULTS / "chaos.json"


MAX_LAG_MS = 250.0
"""A generator whose p99 dispatch lag is past this fell behind its schedule."""
MIN_PACE = 0.95
"""A generator that sent (or counted as unsent) less than this share of its rate fell behind."""


class GeneratorBehind(AssertionError):
    """The load generator did not keep its schedule: the figures would flatter the system."""


class FaultNotExercised(AssertionError):
    """The faulty path carried no traffic before the fault: the scenario proves nothing."""


@dataclass(slots=True)
class Outcome:
    """One request: when it was due (seconds since the load started), how it ended, where it
    ran. Its latency runs from when it was due."""

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
    late_ms: float = 0.0
    """How long after it was due the generator sent it."""
    role: str | None = None
    """The answering attempt's role: ``primary``, ``fallback``, ``hedge`` or ``escalation``."""
    degraded: bool = False
    """Answered, but below the quality the decision wanted (a failed escalation)."""

    @property
    def ok(self) -> bool:
        return self.status == 200


def read_answer(outcome: Outcome, body: dict[str, Any]) -> None:
    """The tier, role and degradation of the first subtask, or the error code, from a
    ``/v1/infer`` answer."""
    if outcome.ok:
        subtask = (body.get("subtasks") or [{}])[0]
        tier, role = subtask.get("tier"), subtask.get("role")
        outcome.tier = str(tier) if tier is not None else None
        outcome.role = str(role) if role is not None else None
        outcome.degraded = bool(subtask.get("degraded"))
    else:
        outcome.code = str((body.get("error") or {}).get("code"))


@dataclass(slots=True)
class Pace:
    """How well the generator kept its schedule."""

    rate: float
    """Requests per second it was asked for."""
    scheduled: int
    elapsed_s: float
    """From the start until the last request was sent (or counted as unsent)."""
    lag_p50_ms: float
    lag_p99_ms: float

    @property
    def achieved_rate(self) -> float:
        return self.scheduled / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def behind(self) -> str | None:
        """Why the generator fell behind, or None if it kept pace."""
        if self.achieved_rate < MIN_PACE * self.rate:
            return f"achieved {self.achieved_rate:.1f}/s of {self.rate:.1f}/s"
        if self.lag_p99_ms > MAX_LAG_MS:
            return f"p99 dispatch lag {self.lag_p99_ms:.0f} ms > {MAX_LAG_MS:.0f} ms"
        return None

    def describe(self) -> dict[str, float]:
        return {
            "rate_per_s": round(self.rate, 1),
            "achieved_per_s": round(self.achieved_rate, 1),
            "elapsed_s": round(self.elapsed_s, 2),
            "lag_p50_ms": self.lag_p50_ms,
            "lag_p99_ms": self.lag_p99_ms,
        }


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
        self.lags_ms: list[float] = []
        self._bodies: dict[int, tuple[dict[str, Any], bytes]] = {}
        self.elapsed_s = 0.0
        """Measured: from the start until the last request was dispatched."""

    def clock(self) -> float:
        """Seconds since the load started (the time base of every outcome)."""
        return time.monotonic() - self.started

    def session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            base_url=self.url,
            headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=20.0),
            connector=aiohttp.TCPConnector(limit=self.max_in_flight),
            cookie_jar=aiohttp.DummyCookieJar(),
        )

    def _encoded(self, body: dict[str, Any]) -> bytes:
        """``body`` as JSON, encoded once (the body is kept, so its id is never reused)."""
        known = self._bodies.get(id(body))
        if known is None:
            known = self._bodies[id(body)] = (body, orjson.dumps(body))
        return known[1]

    def pace(self) -> Pace:
        """The schedule as kept: measured elapsed time, achieved rate, dispatch lag."""
        return Pace(
            self.rate,
            len(self.lags_ms),
            self.elapsed_s,
            percentile(self.lags_ms, 50),
            percentile(self.lags_ms, 99),
        )

    async def send(
        self, session: aiohttp.ClientSession, body: dict[str, Any], due: float | None = None
    ) -> None:
        """One request, due at ``due`` (seconds since the start; default: now)."""
        now = self.clock()
        due = now if due is None else due
        route = str(body.get("options", {}).get("route", "auto"))
        outcome = Outcome(due, 0.0, 0, str(body["task"]), route, late_ms=(now - due) * 1000.0)
        try:
            # Bodies are encoded once and answers parsed with orjson: the generator shares
            # the cores with the system under test and must keep its schedule.
            async with session.post("/v1/infer", data=self._encoded(body)) as response:
                outcome.status = response.status
                outcome.retry_after = response.headers.get("Retry-After")
                with contextlib.suppress(orjson.JSONDecodeError):
                    read_answer(outcome, orjson.loads(await response.read()))
        except (aiohttp.ClientError, TimeoutError) as error:
            outcome.code = type(error).__name__
        outcome.latency_ms = (self.clock() - due) * 1000.0
        self.outcomes.append(outcome)

    async def run(self, seconds: float) -> list[Outcome]:
        """Send on schedule for ``seconds`` (a request due while ``max_in_flight`` are out is
        counted in ``unsent``); every outcome, sorted by due time, once all have ended."""
        pending: set[asyncio.Task[None]] = set()
        self.started = time.monotonic()
        bodies = itertools.cycle(self.bodies)
        # The cyclic collector's passes over thousands of outcomes and connections stall the
        # loop: in scenario 6 the p99 dispatch lag was 354 ms with it on, 37 ms off.
        collecting = gc.isenabled()
        gc.disable()
        try:
            await self._run(seconds, pending, bodies)
        finally:
            if collecting:
                gc.enable()
        return sorted(self.outcomes, key=lambda outcome: outcome.sent_s)

    async def _run(
        self,
        seconds: float,
        pending: set[asyncio.Task[None]],
        bodies: Iterator[dict[str, Any]],
    ) -> None:
        async with self.session() as session:
            for index in range(int(self.rate * seconds)):
                due = index / self.rate
                delay = due - self.clock()
                if delay > 0:
                    await asyncio.sleep(delay)
                self.lags_ms.append(max(0.0, self.clock() - due) * 1000.0)
                body = next(bodies)
                if len(pending) >= self.max_in_flight:
                    self.unsent += 1
                    continue
                task = asyncio.create_task(self.send(session, body, due))
                pending.add(task)
                task.add_done_callback(pending.discard)
            self.elapsed_s = self.clock()
            await asyncio.gather(*pending)


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


def require_traffic(outcomes: Sequence[Outcome], tier: str, fault_at_s: float) -> int:
    """How many requests sent before the fault ``tier`` answered; FaultNotExercised if none
    did (a scenario whose faulty path carried nothing would pass by accident)."""
    carried = sum(o.ok and o.tier == tier for o in outcomes if o.sent_s < fault_at_s)
    if carried == 0:
        raise FaultNotExercised(f"the {tier} tier answered nothing before the fault")
    return carried


def percentile(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 1) if values else float("nan")


@dataclass
class Row:
    """What each scenario reports: sent, succeeded (of them degraded), failed, p50, p99 (from
    each request's scheduled time), time to reroute; and how the generator kept pace."""

    scenario: str
    sent: int
    succeeded: int
    failed: int
    p50_ms: float
    p99_ms: float
    reroute_s: float | None
    details: dict[str, Any] = field(default_factory=dict)
    degraded: int = 0
    """Answered below the decision's quality: an escalation failed and the first answer stood."""
    generator: dict[str, float] = field(default_factory=dict)

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
            degraded=sum(outcome.ok and outcome.degraded for outcome in outcomes),
        )

    def line(self) -> str:
        reroute = "-" if self.reroute_s is None else f"{self.reroute_s:.2f} s"
        return (
            f"{self.scenario}: sent {self.sent}, succeeded {self.succeeded} ({self.degraded} "
            f"degraded), failed {self.failed}, p50 {self.p50_ms} ms, p99 {self.p99_ms} ms, "
            f"reroute {reroute}, generator {self.generator}"
        )


def record(row: Row, impairment: str, load: Load, path: Path = RESULTS_FILE) -> None:
    """Print the row with ``load``'s pace and store it (replacing an earlier row of the same
    scenario); then GeneratorBehind if the load fell behind its schedule."""
    pace = load.pace()
    row.generator = pace.describe()
    print(row.line())
    stored: dict[str, Any] = {}
    if path.exists():
        stored = json.loads(path.read_text())
    rows = stored.get("rows", {})
    rows[row.scenario] = {**asdict(row), "date": machine()["date"], "commit": commit()}
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine(), "impairment": impairment, "rows": rows}
    path.write_text(json.dumps(payload, indent=2) + "\n")
    behind = pace.behind()
    if behind is not None:
        raise GeneratorBehind(f"{row.scenario}: the load generator fell behind ({behind})")


def commit() -> str:
    """The commit checked out, short (the working tree may hold changes on top of it)."""
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    return done.stdout.strip() or "unknown"
