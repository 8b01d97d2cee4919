"""Training the chat difficulty head: the probability that a prompt needs the strong tier.

MMLU outcomes (``training.py``) say which exam questions a weak model misses, which is mostly
a matter of subject; they say nothing about a greeting or a request to design a database. The
difficulty head learns from hand-labelled chat prompts instead
(``routertraining/prompts/chat-difficulty.yaml``: ``easy`` = a 135M chat model answers it well,
``hard`` = it needs the stronger model). Features: the MiniLM embedding of the prompt's first
``EMBED_WORDS`` words (what serving embeds, within its time budget) and the text statistics
of the whole prompt.

The recipe (feature sets x regularisation) is chosen by stratified k-fold cross-validation
log loss on the labelled prompts only, then fitted on all of them. The card keeps each
candidate's figures, the chosen one's per-fold AUC and accuracy at 0.5, and 101 quantiles of
the out-of-fold probabilities: the reference a ``target_cloud_share`` is read against before
live ranks exist. The head is logistic, so its output is a probability and a fixed threshold
(``max_quality_drop``) means the same on any mix of traffic.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from hybridinfer.errors import ConfigError
from hybridinfer.route.learned import FeatureTable, LearnedRouter
from hybridinfer.routertraining.calibration import QUANTILES
from hybridinfer.routertraining.training import Progress, fit_head

EMBED_WORDS = 32
"""MiniLM costs ~7 ms for a short sentence and ~65 ms for 200 words on 2 cores."""
REGULARIZATIONS = (0.01, 0.03, 0.1, 0.3, 1.0)
FEATURE_SETS: tuple[tuple[str, ...], ...] = (("embedding",), ("embedding", "text"))


def default_prompts_path() -> Path:
    """The labelled prompts that ship with the package."""
    return Path(__file__).resolve().parent / "prompts" / "chat-difficulty.yaml"


@dataclass(frozen=True)
class Labelled:
    """Prompts and whether each needs the strong tier."""

    prompts: list[str]
    hard: npt.NDArray[np.bool_]
    source: str
    sha256: str


def load_labelled(path: Path) -> Labelled:
    """Read an ``easy:``/``hard:`` YAML file; duplicates and empty prompts are errors."""
    try:
        raw = path.read_bytes()
        document = yaml.safe_load(raw)
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: not a readable prompt file ({error})") from None
    if not isinstance(document, dict) or not {"easy", "hard"} <= set(document):
        raise ConfigError(f"{path}: expected the lists 'easy' and 'hard'")
    prompts: list[str] = []
    labels: list[bool] = []
    for key in ("easy", "hard"):
        for prompt in document[key] or []:
            if not isinstance(prompt, str) or not prompt.strip():
                raise ConfigError(f"{path}: every {key} prompt must be a non-empty string")
            prompts.append(prompt)
            labels.append(key == "hard")
    if len(set(prompts)) != len(prompts):
        raise ConfigError(f"{path}: a prompt appears twice")
    return Labelled(prompts, np.asarray(labels), path.name, hashlib.sha256(raw).hexdigest())


def _folds(labels: npt.NDArray[np.bool_], folds: int, seed: int) -> list[npt.NDArray[np.bool_]]:
    """Stratified test masks: each fold holds its share of easy and of hard prompts."""
    rng = np.random.default_rng(seed)
    assignment = np.empty(len(labels), dtype=np.int64)
    for value in (False, True):
        rows = np.flatnonzero(labels == value)
        assignment[rng.permutation(rows)] = np.arange(len(rows)) % folds
    return [assignment == fold for fold in range(folds)]


def _auc(probability: npt.NDArray[np.float64], labels: npt.NDArray[np.bool_]) -> float:
    """The chance a hard prompt scores above an easy one (ties count half)."""
    hard, easy = probability[labels], probability[~labels]
    above = (hard[:, None] > easy[None, :]).sum() + 0.5 * (hard[:, None] == easy[None, :]).sum()
    return float(above / max(1, len(hard) * len(easy)))


def _fold_figures(
    probability: npt.NDArray[np.float64], labels: npt.NDArray[np.bool_]
) -> dict[str, float]:
    clipped = np.clip(probability, 1e-6, 1 - 1e-6)
    loss = -np.mean(np.where(labels, np.log(clipped), np.log(1 - clipped)))
    return {
        "log_loss": float(loss),
        "auc": _auc(probability, labels),
        "accuracy": float(np.mean((probability >= 0.5) == labels)),
        "hard_recall": float(np.mean(probability[labels] >= 0.5)),
        "easy_recall": float(np.mean(probability[~labels] < 0.5)),
    }


def _fit(
    table: FeatureTable, labels: npt.NDArray[np.bool_], recipe: dict[str, Any]
) -> LearnedRouter:
    features = tuple(recipe["features"])
    head = fit_head(table.matrix(features), labels, recipe["C"], "needs_strong", 1.0)
    return LearnedRouter(features=features, heads=[head], embed_words=EMBED_WORDS)


def cross_validate(
    table: FeatureTable, labels: npt.NDArray[np.bool_], recipe: dict[str, Any], folds: int
) -> tuple[list[dict[str, float]], npt.NDArray[np.float64]]:
    """Per-fold figures and the out-of-fold probability of every prompt."""
    out_of_fold = np.zeros(len(labels), dtype=np.float64)
    figures = []
    for test in _folds(labels, folds, seed=0):
        head = _fit(table.rows(~test), labels[~test], recipe)
        out_of_fold[test] = head.score_features(table.rows(test))
        figures.append(_fold_figures(out_of_fold[test], labels[test]))
    return figures, out_of_fold


def _mean(figures: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(float(np.mean([f[key] for f in figures])), 4) for key in figures[0]}


def train_difficulty_head(
    table: FeatureTable, data: Labelled, folds: int = 5, progress: Progress | None = None
) -> LearnedRouter:
    """Choose the recipe by cross-validated log loss, fit it on every prompt, and card it."""
    scored = []
    best: tuple[float, dict[str, Any], list[dict[str, float]], Any] | None = None
    for features in FEATURE_SETS:
        for regularization in REGULARIZATIONS:
            recipe = {"features": list(features), "C": regularization}
            figures, out_of_fold = cross_validate(table, data.hard, recipe, folds)
            mean = _mean(figures)
            scored.append({"recipe": f"{'+'.join(features)}/C={regularization:g}", **mean})
            if progress is not None:
                progress(
                    f"{scored[-1]['recipe']}: log loss {mean['log_loss']:.4f} AUC {mean['auc']:.4f}"
                )
            if best is None or mean["log_loss"] < best[0]:
                best = (mean["log_loss"], recipe, figures, out_of_fold)
    assert best is not None
    _, recipe, figures, out_of_fold = best
    head = _fit(table, data.hard, recipe)
    head.card = {
        "kind": "difficulty",
        "predicts": "P(the prompt needs the strong tier)",
        "trained": datetime.now(UTC).isoformat(timespec="seconds"),
        "training_data": {
            "source": data.source,
            "sha256": data.sha256,
            "easy": int((~data.hard).sum()),
            "hard": int(data.hard.sum()),
        },
        "recipe": {**recipe, "embed_words": EMBED_WORDS, "folds": folds},
        "selection": scored,
        "metrics": {
            **_mean(figures),
            "per_fold": [{k: round(v, 4) for k, v in f.items()} for f in figures],
        },
        "calibration": {
            "prompts": len(data.prompts),
            "source": "out-of-fold probabilities of the training prompts",
            "complexity": [round(float(q), 6) for q in np.quantile(out_of_fold, QUANTILES)],
        },
    }
    return head
