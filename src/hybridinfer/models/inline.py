"""When a model call runs on the event loop itself instead of a worker thread.

Handing a call to a worker thread and back costs two thread wake-ups and a loop wake-up. For a
model that answers in a fraction of a millisecond that hand-off can be the larger part of the
call: ``bench/overhead.py`` times the local sentiment path through two gateways in the same
rounds, one with every model call on a thread, and reports the paired difference
(``docs/benchmarks.md`` §1b). A small call is cheaper run where it is, which blocks the loop
for as long as it runs. ``InlineRuns`` decides, per call, whether that
block is small and rare:

- **small**: an input no larger than one already seen to finish within ``max_s``. The bound
  starts below any input, so the first call of a model goes to a thread and is timed there; a
  call of a new, larger size goes to a thread too, and raises the bound once it finished in
  time. A run of a size within the bound that took longer than ``max_s`` lowers the bound
  below that size (the next ones go to the thread, where they are timed again);
- **rare**: the loop spends at most ``share`` of its time in inline runs (a token bucket of
  ``burst_s``); past it, calls go to the thread, where they run beside the loop's other work.

An input's size is its arrays' bytes, plus each string's length for arrays of strings.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

DEFAULT_BELOW_US = 1000
"""The default of the ``inline_below_us`` setting, for callers built without settings."""
DEFAULT_MAX_S = DEFAULT_BELOW_US / 1_000_000
DEFAULT_SHARE = 0.2
DEFAULT_BURST_S = 0.02


def inline_runs(below_us: int) -> InlineRuns | None:
    """The gate of the ``inline_below_us`` setting (None for 0: every call on a thread)."""
    return InlineRuns(max_s=below_us / 1_000_000) if below_us > 0 else None


def input_size(feeds: Mapping[str, npt.NDArray[Any]]) -> int:
    """Bytes of the numeric arrays plus the characters of string arrays' items."""
    size = 0
    for array in feeds.values():
        if array.dtype == np.object_:
            size += sum(len(item) if isinstance(item, str | bytes) else 8 for item in array.flat)
        else:
            size += array.nbytes
    return size


class InlineRuns:
    """Whether a call may run on the event loop, learnt from how long calls took."""

    def __init__(
        self,
        max_s: float = DEFAULT_MAX_S,
        share: float = DEFAULT_SHARE,
        burst_s: float = DEFAULT_BURST_S,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.max_s = max_s
        self.share = share
        self.burst_s = burst_s
        self._clock = clock
        self._bound = -1
        """The largest input size seen to finish within ``max_s`` (-1: none yet)."""
        self._tokens = burst_s
        self._at = clock()
        self.runs = 0
        """Calls run on the loop so far (a figure for tests and benchmarks)."""

    @property
    def bound(self) -> int:
        return self._bound

    def admits(self, size: int) -> bool:
        """A call of ``size`` may run on the loop now."""
        if size > self._bound:
            return False
        now = self._clock()
        self._tokens = min(self.burst_s, self._tokens + (now - self._at) * self.share)
        self._at = now
        return self._tokens > 0.0

    def observe(self, size: int, seconds: float, *, inline: bool) -> None:
        """One call of ``size`` ran alone for ``seconds`` (on the loop when ``inline``)."""
        if inline:
            self._tokens -= seconds
            self.runs += 1
        if seconds <= self.max_s:
            self._bound = max(self._bound, size)
        elif size <= self._bound:
            self._bound = size - 1
