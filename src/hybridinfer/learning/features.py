"""A subtask's context for the learner: four numbers in 0..1 read before the decision."""

from __future__ import annotations

import math

from hybridinfer.core.plan import Subtask

_SIZE_SCALE = math.log1p(100_000)


def context_of(subtask: Subtask) -> tuple[float, float, float, float]:
    """(1, difficulty, complexity, size): the router's difficulty score when it was read
    (else the rule table's complexity), the complexity, and the input size on a log scale
    (100,000 units read as 1)."""
    difficulty = subtask.complexity if subtask.difficulty is None else subtask.difficulty
    size = min(1.0, math.log1p(max(subtask.size, 0)) / _SIZE_SCALE)
    return (1.0, float(difficulty), float(subtask.complexity), size)
