"""The nearest-labelled-neighbours router: a prompt's gain is its neighbours' observed gain.

For each prompt, the ``k`` training prompts closest in embedding space (cosine) vote with
their outcome ``strong correct - weak correct``, shrunk towards the training mean by a prior
of ``prior`` pseudo-votes so sparse neighbourhoods do not swing the score. A benchmark
candidate: serving it would mean shipping every training embedding (14k x 384 floats), so it
must earn that before it is an artifact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hybridinfer.route.learned import FeatureTable
from hybridinfer.routertraining.outcomes import Outcomes

FloatMatrix = npt.NDArray[np.float64]
_BLOCK = 2048  # rows of similarities held at once (2048 x 11k doubles ~ 180 MB)


@dataclass(frozen=True)
class NeighbourCandidate:
    """k nearest neighbours on the embedding; ``prior`` pseudo-votes of the mean gain."""

    neighbours: int
    prior: float = 10.0

    @property
    def label(self) -> str:
        """A short name for tables."""
        return f"knn/k={self.neighbours}"


@dataclass(frozen=True)
class NeighbourRouter:
    """Unit-normalised training embeddings and their gains."""

    embedding: FloatMatrix
    gain: FloatMatrix
    candidate: NeighbourCandidate

    def score_features(self, table: FeatureTable) -> FloatMatrix:
        """The shrunk mean gain of each prompt's nearest training prompts."""
        queries = _normalised(table.embedding)
        k = min(self.candidate.neighbours, len(self.gain))
        prior_mean = float(self.gain.mean())
        scores = np.empty(len(queries), dtype=np.float64)
        for start in range(0, len(queries), _BLOCK):
            similarity = queries[start : start + _BLOCK] @ self.embedding.T
            nearest = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
            votes = self.gain[nearest].sum(axis=1)
            shrunk = (votes + self.candidate.prior * prior_mean) / (k + self.candidate.prior)
            scores[start : start + _BLOCK] = shrunk
        return scores


def fit_neighbours(
    table: FeatureTable, outcomes: Outcomes, candidate: NeighbourCandidate
) -> NeighbourRouter:
    """Remember the training prompts' embeddings and gains."""
    gain = outcomes.strong.astype(np.float64) - outcomes.weak.astype(np.float64)
    return NeighbourRouter(_normalised(table.embedding), gain, candidate)


def _normalised(matrix: FloatMatrix) -> FloatMatrix:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    normalised: FloatMatrix = matrix / np.maximum(norms, 1e-12)
    return normalised
