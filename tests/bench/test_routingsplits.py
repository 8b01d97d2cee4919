"""The routing benchmark's splits: every MMLU subject has a category, and folds are disjoint."""

from __future__ import annotations

import numpy as np
import pytest
from bench.routingsplits import CATEGORIES, category, category_folds, subject_folds

from hybridinfer.routertraining.outcomes import load_outcomes_dir, merge_duplicate_groups
from tests.routerdata import router_data


def test_every_subject_group_has_one_category() -> None:
    data = load_outcomes_dir(router_data())
    groups = merge_duplicate_groups(data.prompts, data.groups)
    found = {group: category(group) for group in set(groups)}
    assert found["clinical_knowledge+college_medicine"] == "other"
    assert found["abstract_algebra"] == "stem"
    assert set(found.values()) == set(CATEGORIES)
    covered = np.zeros(len(groups), dtype=int)
    for _, train, test in category_folds(groups):
        assert not (train & test).any()
        covered += test
    assert (covered == 1).all()


def test_a_group_across_categories_is_an_error() -> None:
    with pytest.raises(ValueError, match="spans categories"):
        category("abstract_algebra+philosophy")


def test_subject_folds_are_named_and_keep_groups_whole() -> None:
    groups = [f"g{i % 10}" for i in range(100)]
    names = []
    for name, train, test in subject_folds(groups, 5):
        names.append(name)
        assert not set(np.asarray(groups)[train]) & set(np.asarray(groups)[test])
    assert names == ["0", "1", "2", "3", "4"]
