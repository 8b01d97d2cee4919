"""Exponential backoff: the delays background loops wait between tries, and the full-jitter
waits of request retries.

Background work (node registration, model pulls and loads, restarting a crashed child) waits
1 s, 2 s, 4 s … up to 64 s, each ±20 % so that many nodes cut off together do not come back in
lock step. Request retries sit inside a deadline, so they wait a random time between zero and
the capped exponential step ("full jitter", which spreads a burst of retries best).
"""

from __future__ import annotations

import asyncio
import random


def exponential_s(first_s: float, max_s: float, step: int) -> float:
    """``first_s`` doubled ``step`` times, capped at ``max_s`` (step 0 → ``first_s``)."""
    return min(max_s, first_s * 2.0 ** min(step, 62))


def full_jitter_s(first_s: float, max_s: float, step: int, rng: random.Random) -> float:
    """A wait drawn uniformly from [0, the capped exponential step]."""
    return rng.uniform(0.0, exponential_s(first_s, max_s, step))


class Backoff:
    """Delays that double from ``first_s`` to ``max_s`` (±``jitter``); ``reset`` after success."""

    def __init__(
        self,
        first_s: float = 1.0,
        max_s: float = 64.0,
        jitter: float = 0.2,
        rng: random.Random | None = None,
    ) -> None:
        self.first_s = first_s
        self.max_s = max_s
        self._jitter = jitter
        self._rng = rng or random.Random()
        self.step = 0

    @property
    def current_s(self) -> float:
        """The delay the next ``wait`` is centred on."""
        return exponential_s(self.first_s, self.max_s, self.step)

    def next_s(self) -> float:
        """The next delay (jittered), and move one step up."""
        delay = self.current_s * self._rng.uniform(1.0 - self._jitter, 1.0 + self._jitter)
        self.step += 1
        return delay

    async def wait(self) -> float:
        """Sleep the next delay; returns how long it was."""
        delay = self.next_s()
        await asyncio.sleep(delay)
        return delay

    def reset(self) -> None:
        self.step = 0
