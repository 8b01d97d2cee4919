"""Training a learned router on a small slice of the MMLU outcomes: candidates are selected on
held-out groups, which folds never split."""

from __future__ import annotations

import numpy as np

from hybridinfer.route.learned import FeatureTable
from hybridinfer.routertraining.outcomes import Outcomes
from hybridinfer.routertraining.training import Candidate, group_folds, train_router

QUICK = (
    Candidate(("embedding",), "gain", 1e-3),
    Candidate(("embedding", "text"), "needed", 1e-2),
)


def test_train_selects_by_held_out_groups_and_writes_a_card(
    outcomes: Outcomes, table: FeatureTable
) -> None:
    router = train_router(table, outcomes, candidates=QUICK, folds=3)
    assert router.card["recipe"]["target"] in {"gain", "needed"}
    assert len(router.card["selection"]["scores"]) == len(QUICK)
    assert set(router.card["metrics"]) == {"apgr", "cpt50", "cpt80", "strong_share_at_95"}
    scores = router.score_features(table)
    assert scores.shape == (len(outcomes),)
    assert np.isfinite(scores).all()


def test_group_folds_never_split_a_group(outcomes: Outcomes) -> None:
    groups = np.asarray(outcomes.groups)
    tested = []
    for train, test in group_folds(outcomes.groups, 3):
        assert not set(groups[train]) & set(groups[test])
        tested.extend(groups[test])
    assert sorted(tested) == sorted(outcomes.groups)
