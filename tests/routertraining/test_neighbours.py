"""The nearest-neighbours router: a prompt's score is its neighbours' gain, shrunk to the mean."""

from __future__ import annotations

import numpy as np
import pytest

from hybridinfer.route.learned import FeatureTable
from hybridinfer.routertraining.neighbours import NeighbourCandidate, fit_neighbours
from hybridinfer.routertraining.outcomes import Outcomes


def two_clusters() -> tuple[FeatureTable, Outcomes]:
    """Rows near (1, 0) where only the strong model is right; rows near (0, 1) where both are."""
    embedding = np.asarray(
        [[1.0, 0.05 * i] for i in range(5)] + [[0.05 * i, 1.0] for i in range(5)]
    )
    strong = np.ones(10, dtype=bool)
    weak = np.asarray([False] * 5 + [True] * 5)
    table = FeatureTable(embedding=embedding, text=np.zeros((10, 7)))
    return table, Outcomes([f"q{i}" for i in range(10)], weak, strong, ["g"] * 10)


def test_score_is_the_shrunk_mean_gain_of_the_nearest_rows() -> None:
    table, outcomes = two_clusters()
    router = fit_neighbours(table, outcomes, NeighbourCandidate(neighbours=3, prior=2.0))
    queries = FeatureTable(embedding=np.asarray([[2.0, 0.0], [0.0, 3.0]]), text=np.zeros((2, 7)))
    scores = router.score_features(queries)
    # Mean gain 0.5; three neighbours of gain 1 (first query) or 0 (second), two prior votes.
    assert scores == pytest.approx([(3 * 1.0 + 2 * 0.5) / 5, (3 * 0.0 + 2 * 0.5) / 5])


def test_more_neighbours_than_rows_uses_them_all() -> None:
    table, outcomes = two_clusters()
    router = fit_neighbours(table, outcomes, NeighbourCandidate(neighbours=50, prior=0.0))
    assert router.score_features(table) == pytest.approx(np.full(10, 0.5))
