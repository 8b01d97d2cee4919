"""A small slice of the RouteLLM MMLU outcomes, for the learned router's tests (tests/route)
and its training's (tests/routertraining); the root conftest serves it once per session."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from hybridinfer.routertraining.outcomes import Outcomes, default_data_dir, load_outcomes_dir

SUBJECTS = 6
ROWS_PER_SUBJECT = 40


def router_data() -> Path:
    """The MMLU outcomes beside the checkout; missing is a failure under CI, a skip elsewhere."""
    data_dir = default_data_dir()
    if not data_dir.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"router data not found at {data_dir}")
        pytest.skip(f"router data not found at {data_dir}")
    return data_dir


def mmlu_slice() -> Outcomes:
    """The first ``ROWS_PER_SUBJECT`` prompts of the first ``SUBJECTS`` subjects."""
    everything = load_outcomes_dir(router_data())
    chosen = sorted(set(everything.groups))[:SUBJECTS]
    seen: dict[str, int] = {}
    keep = []
    for group in everything.groups:
        seen[group] = seen.get(group, 0) + 1
        keep.append(group in chosen and seen[group] <= ROWS_PER_SUBJECT)
    return everything.subset(np.asarray(keep))
