"""Training the learned router, and choosing its recipe without looking at the test data.

Every candidate recipe (feature sets x target x regularisation) is scored by APGR in k-fold
cross-validation over *groups* (MMLU subjects): a router scored on subjects it was trained on
learns which subjects are hard and looks better than it will be on new prompts. The best
candidate is then fitted on all the data given. sklearn is needed here only; the artifact it
produces is scored with numpy (``route/learned.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from hybridinfer.route.learned import FeatureTable, Head, LearnedRouter
from hybridinfer.routertraining.deferral import curve_metrics, deferral_curve
from hybridinfer.routertraining.outcomes import Outcomes

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Candidate:
    """One recipe: which features, which target, how strongly regularised (logistic ``C``).

    Targets: ``gain`` fits P(strong correct) and P(weak correct) and scores their difference;
    ``needed`` fits P(only the strong model is correct) directly.
    """

    features: tuple[str, ...]
    target: str
    regularization: float

    @property
    def label(self) -> str:
        """A short name for tables and cards."""
        return f"{'+'.join(self.features)}/{self.target}/C={self.regularization:g}"


# Strong regularisation only: the embedding has 384 dimensions and the signal that carries
# across subjects is weak (a first exploration found C >= 1e-2 worse everywhere).
CANDIDATES: tuple[Candidate, ...] = tuple(
    Candidate(features, target, regularization)
    for features in (("embedding",), ("embedding", "text"))
    for target in ("gain", "needed")
    for regularization in (1e-4, 1e-3)
)


def fit_router(table: FeatureTable, outcomes: Outcomes, candidate: Candidate) -> LearnedRouter:
    """Fit one candidate on all the rows given."""
    matrix = table.matrix(candidate.features)
    if candidate.target == "gain":
        targets = [("strong_correct", 1.0, outcomes.strong), ("weak_correct", -1.0, outcomes.weak)]
    elif candidate.target == "needed":
        targets = [("only_strong_correct", 1.0, outcomes.strong & ~outcomes.weak)]
    else:
        raise ValueError(f"unknown router target {candidate.target!r}")
    heads = [
        fit_head(matrix, labels, candidate.regularization, name, sign)
        for name, sign, labels in targets
    ]
    return LearnedRouter(features=candidate.features, heads=heads)


def fit_head(
    matrix: npt.NDArray[np.float64],
    labels: npt.NDArray[np.bool_],
    regularization: float,
    name: str,
    sign: float,
) -> Head:
    from sklearn.linear_model import LogisticRegression

    mean = matrix.mean(axis=0)
    scale = matrix.std(axis=0)
    scale[scale < 1e-12] = 1.0
    if labels.all() or not labels.any():
        # One class only (tiny data): a constant probability, no preference between prompts.
        rate = float(np.clip(labels.mean(), 1e-6, 1 - 1e-6))
        return Head(name, sign, np.zeros(matrix.shape[1]), float(np.log(rate / (1 - rate))))
    model = LogisticRegression(C=regularization, max_iter=5000)
    model.fit((matrix - mean) / scale, labels)
    # Fold the standardisation into the weights so serving is one dot product.
    weights = model.coef_[0] / scale
    bias = float(model.intercept_[0] - np.sum(model.coef_[0] * mean / scale))
    return Head(name, sign, weights, bias)


def group_folds(
    groups: list[str], folds: int, seed: int = 0
) -> Iterator[tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]]:
    """(train, test) row masks with whole groups on one side; rows when there is one group."""
    labels = np.asarray(groups)
    names = np.unique(labels)
    rng = np.random.default_rng(seed)
    if len(names) >= folds:
        shuffled = rng.permutation(names)
        for fold in range(folds):
            test = np.isin(labels, shuffled[fold::folds])
            yield ~test, test
        return
    assignment = rng.permutation(len(labels)) % folds
    for fold in range(folds):
        test = assignment == fold
        yield ~test, test


def cross_validate(
    table: FeatureTable, outcomes: Outcomes, candidate: Candidate, folds: int = 4, seed: int = 0
) -> list[dict[str, float | None]]:
    """The candidate's metrics on each held-out fold."""
    results = []
    for train, test in group_folds(outcomes.groups, folds, seed):
        router = fit_router(table.rows(train), outcomes.subset(train), candidate)
        scores = router.score_features(table.rows(test))
        test_outcomes = outcomes.subset(test)
        results.append(
            curve_metrics(deferral_curve(scores, test_outcomes.weak, test_outcomes.strong))
        )
    return results


def mean_metrics(results: list[dict[str, float | None]]) -> dict[str, float]:
    """Per-key mean over folds, ignoring folds where a metric is undefined (nan if all are)."""
    means = {}
    for key in results[0] if results else []:
        values = [value for value in (result[key] for result in results) if value is not None]
        means[key] = round(float(np.mean(values)), 4) if values else float("nan")
    return means


def select_candidate(
    table: FeatureTable,
    outcomes: Outcomes,
    candidates: tuple[Candidate, ...] = CANDIDATES,
    folds: int = 4,
    progress: Progress | None = None,
) -> tuple[Candidate, list[dict[str, Any]]]:
    """The candidate with the best mean held-out APGR, and every candidate's scores."""
    scored: list[dict[str, Any]] = []
    for candidate in candidates:
        metrics = mean_metrics(cross_validate(table, outcomes, candidate, folds))
        scored.append({"candidate": candidate.label, **metrics})
        if progress is not None:
            progress(f"{candidate.label}: APGR {metrics['apgr']:.4f}")
    best = max(range(len(candidates)), key=lambda index: scored[index]["apgr"])
    return candidates[best], scored


def train_router(
    table: FeatureTable,
    outcomes: Outcomes,
    candidates: tuple[Candidate, ...] = CANDIDATES,
    folds: int = 4,
    progress: Progress | None = None,
) -> LearnedRouter:
    """Choose a recipe by grouped cross-validation, fit it on everything, and write its card."""
    started = time.perf_counter()
    chosen, scored = select_candidate(table, outcomes, candidates, folds, progress)
    router = fit_router(table, outcomes, chosen)
    chosen_metrics = next(row for row in scored if row["candidate"] == chosen.label)
    router.card = {
        "name": "router-mmlu",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "score": "higher = strong model more needed; "
        + ("P(strong correct) - P(weak correct)" if chosen.target == "gain" else "P(only strong)"),
        "training_data": {
            "rows": len(outcomes),
            "groups": len(set(outcomes.groups)),
            "weak_quality": round(float(outcomes.weak.mean()), 4),
            "strong_quality": round(float(outcomes.strong.mean()), 4),
        },
        "recipe": {**asdict(chosen), "model": "logistic regression (L2), standardised features"},
        "selection": {"folds": folds, "by": "mean APGR over held-out groups", "scores": scored},
        "metrics": {k: v for k, v in chosen_metrics.items() if k != "candidate"},
        "train_seconds": round(time.perf_counter() - started, 1),
    }
    return router
