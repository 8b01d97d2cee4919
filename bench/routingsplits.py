"""The splits the routing benchmark scores on: subject groups, and MMLU's four categories
held out one at a time (``routertraining/mmlusubjects.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from hybridinfer.routertraining.mmlusubjects import CATEGORIES, category
from hybridinfer.routertraining.training import group_folds

__all__ = ["CATEGORIES", "Folds", "category", "category_folds", "subject_folds"]

Folds = Iterator[tuple[str, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]]


def subject_folds(groups: list[str], folds: int, seed: int = 0) -> Folds:
    """``folds`` folds over whole subject groups: (name, train mask, test mask)."""
    for index, (train, test) in enumerate(group_folds(groups, folds, seed)):
        yield str(index), train, test


def category_folds(groups: list[str]) -> Folds:
    """One fold per MMLU category, that category held out whole."""
    labels = np.asarray([category(group) for group in groups])
    for name in CATEGORIES:
        test = labels == name
        yield name, ~test, test
