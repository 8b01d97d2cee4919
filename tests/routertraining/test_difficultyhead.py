"""The chat difficulty head: labelled prompts read strictly, the recipe chosen in stratified
cross-validation, and the shipped artifact trained on the shipped prompts."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from hybridinfer.errors import ConfigError
from hybridinfer.route.learned import FeatureTable, LearnedRouter, bundled_router_path
from hybridinfer.routertraining.calibration import QUANTILES
from hybridinfer.routertraining.difficultyhead import (
    EMBED_WORDS,
    Labelled,
    default_prompts_path,
    load_labelled,
    train_difficulty_head,
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prompts.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_labelled_prompts_are_read_with_their_labels(tmp_path: Path) -> None:
    data = load_labelled(write(tmp_path, 'easy: ["hi", "thanks"]\nhard: ["Prove it."]\n'))
    assert data.prompts == ["hi", "thanks", "Prove it."]
    assert data.hard.tolist() == [False, False, True]
    assert data.source == "prompts.yaml"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('easy: ["hi"]\n', "expected the lists 'easy' and 'hard'"),
        ('easy: ["hi"]\nhard: ["hi"]\n', "a prompt appears twice"),
        ('easy: ["hi", ""]\nhard: ["x"]\n', "non-empty string"),
        ('easy: [3]\nhard: ["x"]\n', "non-empty string"),
        ("easy: [\n", "not a readable prompt file"),
    ],
)
def test_a_broken_prompt_file_is_a_clear_error(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        load_labelled(write(tmp_path, text))


def separable(rows: int = 120, seed: int = 3) -> tuple[FeatureTable, Labelled]:
    """Hard rows shifted along the first embedding dimension, with noise."""
    rng = np.random.default_rng(seed)
    hard = np.arange(rows) % 2 == 1
    embedding = rng.normal(size=(rows, 8))
    embedding[:, 0] += np.where(hard, 2.5, -2.5)
    text = rng.normal(size=(rows, 7))
    prompts = [f"prompt {i}" for i in range(rows)]
    return FeatureTable(embedding=embedding, text=text), Labelled(prompts, hard, "x.yaml", "0")


def test_training_chooses_by_held_out_folds_and_cards_the_calibration() -> None:
    table, data = separable()
    head = train_difficulty_head(table, data, folds=4)
    card = head.card
    assert card["kind"] == "difficulty"
    assert len(card["selection"]) == 10  # 2 feature sets x 5 regularisations
    chosen = min(card["selection"], key=lambda row: row["log_loss"])
    assert card["recipe"]["C"] == float(chosen["recipe"].rsplit("=", 1)[1])
    assert card["metrics"]["auc"] > 0.95
    assert len(card["metrics"]["per_fold"]) == 4
    quantiles = card["calibration"]["complexity"]
    assert len(quantiles) == len(QUANTILES)
    assert quantiles == sorted(quantiles)
    probability = head.score_features(table)
    assert ((probability >= 0.5) == data.hard).mean() > 0.95
    assert head.embed_words == EMBED_WORDS


def test_the_shipped_head_is_trained_on_the_shipped_prompts() -> None:
    head = LearnedRouter.load(bundled_router_path("chat"))
    raw = default_prompts_path().read_bytes()
    trained_on = head.card["training_data"]
    assert trained_on["sha256"] == hashlib.sha256(raw).hexdigest(), (
        "the prompts changed since the head was trained: run "
        "`hybridinfer router train-difficulty --out src/hybridinfer/defaults/router-chat.json`"
    )
    data = load_labelled(default_prompts_path())
    assert trained_on["easy"] == int((~data.hard).sum())
    assert trained_on["hard"] == int(data.hard.sum())
    assert head.embed_words == EMBED_WORDS
    assert head.card["metrics"]["auc"] > 0.95
