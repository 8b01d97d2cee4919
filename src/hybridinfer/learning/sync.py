"""The learner's loop: write this replica's outcomes to the shared log, apply the log's due
outcomes in id order, and follow resets. Every replica applies the same rows in the same
order, so their learners agree; a restart re-reads the log and knows what it knew.

An outcome is due once the policy's feedback window has passed since it was written, so
explicit feedback inside the window replaces its implicit quality before any replica learns
it. A reset (``LearnerLog.reset``) is seen by every replica at its next step.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from hybridinfer.core import background
from hybridinfer.errors import HybridInferError
from hybridinfer.learning.engine import MAX_PENDING, Learners
from hybridinfer.learning.outcomes import with_feedback
from hybridinfer.store.learnerlog import LearnerLog

log = logging.getLogger(__name__)
_PAGE = 1000


class LearnerSync:
    """Every ``interval_s``: flush, follow resets, apply what is due."""

    def __init__(
        self,
        learners: Learners,
        outcome_log: LearnerLog,
        window_s: Callable[[], float],
        interval_s: float = 1.0,
        enabled: Callable[[], bool] = lambda: True,
    ) -> None:
        self._learners = learners
        self._log = outcome_log
        self._window_s = window_s
        self._enabled = enabled
        self._interval_s = interval_s
        self._resets: dict[str, tuple[int, int]] = {}
        self.applied_id = 0
        """The last log row this replica applied."""
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="learner-sync")

    async def stop(self) -> None:
        await background.cancel(self._task)
        self._task = None
        try:
            await self.flush()
        except HybridInferError as exc:
            log.warning("learner: outcomes not written at stop: %s", exc.message)

    async def flush(self) -> int:
        """Write the outcomes finished requests left; kept for the next try if the store
        is away."""
        rows, self._learners.pending = self._learners.pending, []
        try:
            await self._log.append(rows)
        except HybridInferError:
            self._learners.pending = (rows + self._learners.pending)[:MAX_PENDING]
            raise
        return len(rows)

    async def step(self, now: float | None = None) -> int:
        """One round; how many outcomes it applied."""
        await self.flush()
        await self._follow_resets()
        window = self._window_s()
        cutoff = (time.time() if now is None else now) - window
        applied = 0
        while True:
            rows = await self._log.since(self.applied_id, _PAGE)
            due = [row for row in rows if row["created_at"] <= cutoff]
            explicit = await self._log.feedback_for([row["request_id"] for row in due])
            for row in rows:
                if row["created_at"] > cutoff:
                    return applied  # in id order: later rows wait for this one
                self._apply(with_feedback(row, explicit.get(row["request_id"]), window))
                applied += 1
            if len(rows) < _PAGE:
                return applied

    def _apply(self, row: dict[str, Any]) -> None:
        self.applied_id = row["id"]
        forgotten = self._resets.get(row["capability"], (0, 0))[1]
        if row["id"] > forgotten:
            self._learners.apply(row)

    async def _follow_resets(self) -> None:
        """A capability reset elsewhere: forget it, and re-learn what came after the reset."""
        resets = await self._log.resets()
        for capability, state in resets.items():
            if self._resets.get(capability) == state:
                continue
            self._resets[capability] = state
            self._learners.forget(capability)
            rows = [
                row
                for row in await self._log.records(capability)
                if state[1] < row["id"] <= self.applied_id
            ]
            explicit = await self._log.feedback_for([row["request_id"] for row in rows])
            window = self._window_s()
            for row in rows:
                self._learners.apply(with_feedback(row, explicit.get(row["request_id"]), window))

    def idle(self) -> bool:
        """Learning is off and nothing is left to write: a round would read the log for
        nobody. The log keeps every row, so the first round after learning is switched on
        applies everything since the last one applied (resets included), as a restart does."""
        return not self._enabled() and not self._learners.pending

    async def _run(self) -> None:
        while True:
            try:
                if not self.idle():
                    await self.step()
            except HybridInferError as exc:
                log.warning("learner sync: %s", exc.message)
            await asyncio.sleep(self._interval_s)
