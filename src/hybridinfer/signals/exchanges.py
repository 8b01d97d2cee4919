"""The recent exchanges with each remote node, slow answers and timeouts included: the tail
signal a brownout shows in.

A probe round-trip time says nothing about the exchanges that did not come back: a probe that
timed out recorded no time, and a link on which 30 % of exchanges take 1.5 s more kept a
measured RTT of a few milliseconds. Here every probe and call counts, for how long it took (a
timeout for its timeout), and whether it failed. Over the last ``window_s`` seconds a node then
has a p95 and a share of slow or failed exchanges, which policy conditions read as
``network.<tier>.p95_ms`` and ``network.<tier>.slow_share``.

Two kinds of exchange are left out. A failure while the node answered nothing else since it
started is a dead path, not a grey one: breakers and health probes handle it, and counting it
here would keep work off a link for a whole window after it came back. And an exchange that
started while the node was marked down (the probe that finds it back after a cut waited out
TCP's retransmissions) times the outage, not the path.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

Clock = Callable[[], float]
MAX_SAMPLES = 512
"""Per node, whatever the rate: the tail is read per request."""
REFRESH_S = 0.1
"""A node's tail is recomputed at most this often."""


@dataclass(frozen=True, slots=True)
class Tail:
    """One node's recent exchanges, summarised."""

    p95_ms: float = 0.0
    slow_share: float = 0.0
    """Exchanges slower than the slow bound or failed, over all of them (0 with none)."""
    count: int = 0


@dataclass(slots=True)
class _Window:
    samples: deque[tuple[float, float, bool]] = field(
        default_factory=lambda: deque(maxlen=MAX_SAMPLES)
    )
    """(when it ended, latency ms, failed)."""
    last_answer_at: float | None = None
    last_dead_at: float | None = None
    """When a failure last found the path dead (nothing else answered meanwhile)."""
    tail: Tail = field(default_factory=Tail)
    tail_at: float = float("-inf")


class ExchangeWindows:
    """Every remote node's exchanges over the last ``window_s``; an exchange slower than
    ``slow_ms`` counts as slow."""

    def __init__(
        self, window_s: float = 5.0, slow_ms: float = 200.0, clock: Clock = time.monotonic
    ) -> None:
        self._window_s = window_s
        self._slow_ms = slow_ms
        self._clock = clock
        self._by_node: dict[str, _Window] = {}

    def now(self) -> float:
        """The windows' clock: what ``record`` takes as an exchange's start."""
        return self._clock()

    def record(self, node_id: str, latency_ms: float, ok: bool, started: float) -> None:
        """One exchange that began at ``started`` (this clock) and took ``latency_ms``."""
        window = self._by_node.get(node_id)
        if window is None:
            window = self._by_node[node_id] = _Window()
        now = self._clock()
        if ok:
            window.last_answer_at = now
        elif window.last_answer_at is None or window.last_answer_at <= started:
            window.last_dead_at = now
            return  # nothing answered meanwhile: a dead path, not a slow one
        window.samples.append((now, latency_ms, not ok))

    def outage_since(self, node_id: str, started: float) -> bool:
        """Whether an exchange found the node's path dead since ``started`` (this clock)."""
        window = self._by_node.get(node_id)
        return (
            window is not None
            and window.last_dead_at is not None
            and (window.last_dead_at >= started)
        )

    def tail(self, node_id: str) -> Tail:
        """The node's p95 and slow share over the window (zeros without exchanges)."""
        window = self._by_node.get(node_id)
        if window is None:
            return Tail()
        now = self._clock()
        if now - window.tail_at < REFRESH_S:
            return window.tail
        samples = window.samples
        while samples and samples[0][0] < now - self._window_s:
            samples.popleft()
        latencies = sorted(latency for _, latency, _ in samples)
        if latencies:
            slow = sum(failed or latency > self._slow_ms for _, latency, failed in samples)
            p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
            window.tail = Tail(p95, slow / len(latencies), len(latencies))
        else:
            window.tail = Tail()
        window.tail_at = now
        return window.tail
