"""Training the learned router, and choosing its recipe without looking at the test data.

Every candidate recipe (feature sets x target x regularisation, and ensembles) is scored by
APGR on held-out *groups*: k folds over MMLU subjects (subjects sharing a prompt joined), then
each MMLU category held out whole. A router scored on subjects it was trained on learns which
subjects are hard and looks better than it will be on new prompts; one that wins on average
by swinging between folds transfers worse, so the choice is mean APGR less half its spread.
The best candidate is then fitted on all the data given. sklearn is needed here only; the
artifact it produces is scored with numpy (``route/learned.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from hybridinfer.route.choices import stem_of
from hybridinfer.route.learned import TEXT_STATISTICS, FeatureTable, Head, LearnedRouter
from hybridinfer.routertraining.deferral import curve_metrics, deferral_curve
from hybridinfer.routertraining.fingerprint import prompt_fingerprint
from hybridinfer.routertraining.mmlusubjects import known_categories
from hybridinfer.routertraining.outcomes import Outcomes, merge_duplicate_groups

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Candidate:
    """One recipe: which features, which target, how strongly regularised (logistic ``C``).

    Targets: ``gain`` fits P(strong correct) and P(weak correct) and scores their difference;
    ``needed`` fits P(only the strong model is correct) directly; ``pairwise`` fits P(strong
    right | the two disagree) on the disagreeing prompts only — RouteLLM's matrix factorisation
    with two models (its score ``w·((v_strong - v_weak) ⊙ Wx)`` is linear in the features, so a
    Bradley-Terry logistic head on them is the same model family).
    """

    features: tuple[str, ...]
    target: str
    regularization: float
    stems: bool = False
    """Also fitted on every prompt's stem (its answer choices removed) with the same outcomes:
    weights that hold when the choices are not there, as in a chat or another benchmark."""

    @property
    def label(self) -> str:
        """A short name for tables and cards."""
        stems = "/stems" if self.stems else ""
        return f"{'+'.join(self.features)}/{self.target}/C={self.regularization:g}{stems}"


@dataclass(frozen=True)
class Ensemble:
    """Candidates whose scores are averaged: one artifact, each member's heads scaled by 1/n
    and padded with zero weights to the union of their feature sets."""

    members: tuple[Candidate, ...]

    @property
    def label(self) -> str:
        """The members' labels joined by `` & ``."""
        return " & ".join(member.label for member in self.members)


@dataclass(frozen=True)
class LengthPrior:
    """A recipe's score plus the prompt's log length (``log_chars``), ``weight`` of the
    recipe's spread per spread of log length on the training prompts: one more head, linear.

    Inside an MMLU subject no feature orders the prompts (``within_r`` is ~0 for every
    router, length included); what the learned weights carry is which subjects are hard. A
    benchmark of one domain has all its signal inside it, where the prompt-length heuristic
    is a known, if weak, order. The prior keeps that order in the score, where the learned
    part alone swaps it for topic noise; the weight is chosen like any recipe, on held-out
    subjects, categories and stems."""

    member: Candidate | Ensemble
    weight: float

    @property
    def label(self) -> str:
        """The member's label and the prior's weight."""
        return f"{self.member.label} + length x{self.weight:g}"


Recipe = Candidate | Ensemble | LengthPrior

EMBEDDING_FEATURES = ("embedding", "text", "structure")
TOPIC_FREE = ("text", "structure")
WITH_CHOICES = ("text", "structure", "choicetext")
"""The answer choices read from trigrams: the MiniLM reading (``choices``) scores about a point
higher but costs 8-14 ms a prompt, over the live budget; ``bench/routing.py`` reports it."""
# The embedding has 384 dimensions and the signal that carries across subjects is weak: strong
# regularisation there (C >= 1e-2 was worse everywhere in a first exploration); the 7 text
# statistics and 21 structure features take a weaker one. Explored and left out (bench/routing.py
# still reports them): the `pairwise` (matrix factorisation) and `weak_wrong` targets, k nearest
# neighbours, gradient-boosted trees on the topic-free features.
CANDIDATES: tuple[Recipe, ...] = (
    Candidate(("embedding", "text"), "gain", 1e-3),
    Candidate(EMBEDDING_FEATURES, "gain", 1e-4),
    Candidate(("text",), "gain", 1e-1),
    Candidate(TOPIC_FREE, "gain", 1e-2),
    Ensemble((Candidate(EMBEDDING_FEATURES, "gain", 1e-4), Candidate(("text",), "gain", 1e-2))),
    Ensemble((Candidate(EMBEDDING_FEATURES, "gain", 1e-4), Candidate(TOPIC_FREE, "gain", 1e-2))),
    Candidate(WITH_CHOICES, "gain", 1e-2),
    Candidate(WITH_CHOICES, "gain", 1e-2, stems=True),
    Candidate(("text", "choicetext"), "gain", 3e-2, stems=True),
    Ensemble(
        (
            Candidate(WITH_CHOICES, "gain", 1e-2, stems=True),
            Candidate(EMBEDDING_FEATURES, "gain", 1e-4, stems=True),
        )
    ),
    LengthPrior(Candidate(WITH_CHOICES, "gain", 1e-2, stems=True), 0.5),
    LengthPrior(Candidate(WITH_CHOICES, "gain", 1e-2, stems=True), 1.0),
    LengthPrior(Candidate(("text", "choicetext"), "gain", 3e-2, stems=True), 0.5),
)


def fit_router(table: FeatureTable, outcomes: Outcomes, candidate: Recipe) -> LearnedRouter:
    """Fit one recipe on all the rows given."""
    if isinstance(candidate, Ensemble):
        return fit_ensemble(table, outcomes, candidate)
    if isinstance(candidate, LengthPrior):
        return fit_length_prior(table, outcomes, candidate)
    matrix = table.matrix(candidate.features)
    if candidate.stems:
        if table.stems is None:
            raise ValueError(f"{candidate.label} trains on stems: compute the table with them")
        matrix = np.vstack([matrix, table.stems.matrix(candidate.features)])
        outcomes = outcomes.followed_by([stem_of(prompt) for prompt in outcomes.prompts])
    rows = np.ones(len(outcomes), dtype=bool)
    if candidate.target == "gain":
        targets = [("strong_correct", 1.0, outcomes.strong), ("weak_correct", -1.0, outcomes.weak)]
    elif candidate.target == "needed":
        targets = [("only_strong_correct", 1.0, outcomes.strong & ~outcomes.weak)]
    elif candidate.target == "weak_wrong":
        targets = [("weak_correct", -1.0, outcomes.weak)]
    elif candidate.target == "pairwise":
        rows = outcomes.strong != outcomes.weak
        targets = [("strong_wins", 1.0, outcomes.strong[rows])]
    else:
        raise ValueError(f"unknown router target {candidate.target!r}")
    heads = [
        fit_head(matrix[rows], labels, candidate.regularization, name, sign)
        for name, sign, labels in targets
    ]
    return LearnedRouter(features=candidate.features, heads=heads)


def fit_ensemble(table: FeatureTable, outcomes: Outcomes, ensemble: Ensemble) -> LearnedRouter:
    """Every member fitted, its heads re-expressed on the union of the members' features."""
    named = [name for member in ensemble.members for name in member.features]
    # the shipped sets in their fixed order, then any other set (a benchmark's) as it comes
    features = tuple(name for name in EMBEDDING_FEATURES if name in named) + tuple(
        dict.fromkeys(name for name in named if name not in EMBEDDING_FEATURES)
    )
    widths = {name: table.matrix((name,)).shape[1] for name in features}
    heads = []
    for member in ensemble.members:
        for head in fit_router(table, outcomes, member).heads:
            parts, start = [], 0
            for name in features:
                if name in member.features:
                    parts.append(head.weights[start : start + widths[name]])
                    start += widths[name]
                else:
                    parts.append(np.zeros(widths[name]))
            sign = head.sign / len(ensemble.members)
            heads.append(Head(head.predicts, sign, np.concatenate(parts), head.bias))
    return LearnedRouter(features=features, heads=heads)


def fit_length_prior(table: FeatureTable, outcomes: Outcomes, prior: LengthPrior) -> LearnedRouter:
    """The member fitted, then a linear head on its ``log_chars`` feature scaled so that one
    spread of log length moves the score by ``weight`` spreads of the member's own score."""
    router = fit_router(table, outcomes, prior.member)
    if "text" not in router.features:
        raise ValueError(f"{prior.label}: the length prior reads the text statistics")
    spread = float(router.score_features(table).std())
    log_chars = table.text[:, TEXT_STATISTICS.index("log_chars")]
    scale = float(log_chars.std()) or 1.0
    slope = prior.weight * spread / scale
    before = router.features[: router.features.index("text")]
    at = sum(table.matrix((name,)).shape[1] for name in before) + TEXT_STATISTICS.index("log_chars")
    weights = np.zeros(table.matrix(router.features).shape[1])
    weights[at] = slope
    head = Head("log_chars", 1.0, weights, -slope * float(log_chars.mean()), link="identity")
    return LearnedRouter(features=router.features, heads=[*router.heads, head])


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


def split_groups(outcomes: Outcomes) -> list[str]:
    """The groups every split keeps whole: subjects, joined where they share a prompt."""
    return merge_duplicate_groups(outcomes.prompts, outcomes.groups)


def validation_splits(
    outcomes: Outcomes, folds: int = 4, seed: int = 0
) -> Iterator[tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]]:
    """(train, test) masks a recipe is judged on: ``folds`` folds over subject groups, then,
    when the groups are MMLU subjects of two or more categories, each category held out whole
    (a larger shift than random subjects: what a recipe that transfers must survive)."""
    groups = split_groups(outcomes)
    yield from group_folds(groups, folds, seed)
    categories = known_categories(groups)
    if categories is None or len(set(categories)) < 2:
        return
    labels = np.asarray(categories)
    for name in sorted(set(categories)):
        yield labels != name, labels == name


def cross_validate(
    table: FeatureTable, outcomes: Outcomes, candidate: Recipe, folds: int = 4, seed: int = 0
) -> list[dict[str, float | None]]:
    """The candidate's metrics on each of ``validation_splits`` (duplicates never straddle);
    when the table has the prompts' stems, each subject-group fold is scored a second time on
    its test prompts with their answer choices removed (a change of format: what a router
    that learned the multiple-choice form rather than the question loses on another domain)."""
    results = []
    for index, (train, test) in enumerate(validation_splits(outcomes, folds, seed)):
        router = fit_router(table.rows(train), outcomes.subset(train), candidate)
        test_outcomes = outcomes.subset(test)
        tables = [table.rows(test)]
        if index < folds and tables[0].stems is not None:
            tables.append(tables[0].stems)
        for scored in tables:
            scores = router.score_features(scored)
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


def robust_apgr(results: list[dict[str, float | None]]) -> float:
    """Mean held-out APGR less half its spread over folds: a recipe that wins on average by
    doing very well on some subjects and badly on others is not what transfers."""
    values = [float(r["apgr"]) for r in results if r["apgr"] is not None]
    return float(np.mean(values) - 0.5 * np.std(values)) if values else float("nan")


def select_candidate(
    table: FeatureTable,
    outcomes: Outcomes,
    candidates: tuple[Recipe, ...] = CANDIDATES,
    folds: int = 4,
    progress: Progress | None = None,
) -> tuple[Recipe, list[dict[str, Any]]]:
    """The candidate with the best ``robust_apgr`` on held-out groups, and every one's scores."""
    scored: list[dict[str, Any]] = []
    for candidate in candidates:
        results = cross_validate(table, outcomes, candidate, folds)
        metrics = mean_metrics(results)
        apgrs = [r["apgr"] for r in results if r["apgr"] is not None]
        scored.append(
            {
                "candidate": candidate.label,
                **metrics,
                "apgr_min": round(float(min(apgrs)), 4) if apgrs else float("nan"),
                "apgr_std": round(float(np.std(apgrs)), 4) if apgrs else float("nan"),
                "robust_apgr": round(robust_apgr(results), 4),
            }
        )
        if progress is not None:
            progress(
                f"{candidate.label}: APGR {metrics['apgr']:.4f}, "
                f"robust {scored[-1]['robust_apgr']:.4f}"
            )
    best = max(range(len(candidates)), key=lambda index: scored[index]["robust_apgr"])
    return candidates[best], scored


def train_router(
    table: FeatureTable,
    outcomes: Outcomes,
    candidates: tuple[Recipe, ...] = CANDIDATES,
    folds: int = 4,
    progress: Progress | None = None,
    embed_words: int | None = None,
) -> LearnedRouter:
    """Choose a recipe by grouped cross-validation, fit it on everything, and write its card."""
    started = time.perf_counter()
    chosen, scored = select_candidate(table, outcomes, candidates, folds, progress)
    router = fit_router(table, outcomes, chosen)
    router.embed_words = embed_words
    chosen_metrics = next(row for row in scored if row["candidate"] == chosen.label)
    router.card = {
        "name": "router-mmlu",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "score": "higher = strong model more needed; " + describe_score(chosen),
        "training_data": {
            "rows": len(outcomes),
            "groups": len(set(outcomes.groups)),
            "split_groups": len(set(split_groups(outcomes))),
            "weak_quality": round(float(outcomes.weak.mean()), 4),
            "strong_quality": round(float(outcomes.strong.mean()), 4),
            "prompts": prompt_fingerprint(outcomes.prompts),
        },
        "recipe": {
            "label": chosen.label,
            **asdict(chosen),
            "embed_words": embed_words,
            "model": "logistic regression (L2), standardised features",
        },
        "selection": {
            "folds": folds,
            "by": "mean APGR - 0.5 x its spread over held-out folds: subject groups "
            "(subjects sharing a prompt joined"
            + ("; each also scored without its answer choices" if table.stems is not None else "")
            + "), then each MMLU category",
            "scores": scored,
        },
        "metrics": {k: v for k, v in chosen_metrics.items() if k != "candidate"},
        "train_seconds": round(time.perf_counter() - started, 1),
    }
    return router


_SCORES = {
    "gain": "P(strong correct) - P(weak correct)",
    "needed": "P(only strong correct)",
    "pairwise": "P(strong right | the models disagree)",
    "weak_wrong": "-P(weak correct)",
}


def describe_score(recipe: Recipe) -> str:
    """What the recipe's score estimates, for the card."""
    if isinstance(recipe, LengthPrior):
        return (
            f"{describe_score(recipe.member)}, plus {recipe.weight:g} x its training spread "
            "per training spread of log(1 + characters)"
        )
    if isinstance(recipe, Ensemble):
        return "mean of: " + "; ".join(_SCORES[member.target] for member in recipe.members)
    return _SCORES[recipe.target]
