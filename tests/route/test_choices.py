"""The answer-choice features: what they read from the similarities, and what they cost."""

from __future__ import annotations

import numpy as np
import pytest

from hybridinfer.route.choices import (
    CHOICE_FEATURES,
    choice_features,
    describe,
    stem_of,
    trigram_vectors,
)

QUESTION = "Which gas do plants take in?\nA. Oxygen\nB. Carbon dioxide\nC. Helium\nD. Neon\nAnswer:"


def unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float64)
    return vector / np.linalg.norm(vector)


def test_the_stem_is_the_prompt_without_its_choices() -> None:
    assert stem_of(QUESTION) == "Which gas do plants take in?"
    assert stem_of("How are you today?") == "How are you today?"


def test_alike_choices_and_a_standout_answer_read_as_such() -> None:
    named = dict.fromkeys(CHOICE_FEATURES, 0.0)
    stem = unit(1, 0, 0)
    alike = np.vstack([stem, unit(0, 1, 0.01), unit(0, 1, 0.02), unit(0, 1, 0.03)])
    named.update(zip(CHOICE_FEATURES, describe(alike), strict=True))
    assert named["choice_similarity_min"] > 0.99
    assert named["stem_choice_max"] == pytest.approx(0.0, abs=1e-9)
    assert named["stem_choice_entropy"] > 0.99  # nothing stands out against the stem
    standout = np.vstack([stem, stem, unit(0, 1, 0), unit(0, 0, 1)])
    named.update(zip(CHOICE_FEATURES, describe(standout), strict=True))
    assert named["stem_choice_max"] == pytest.approx(1.0)
    assert named["stem_choice_gap"] == pytest.approx(1.0)
    assert named["stem_choice_entropy"] < 0.01
    assert named["choice_similarity_mean"] == pytest.approx(0.0)


def test_every_text_is_embedded_in_one_call_and_a_chat_runs_no_model() -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        rng = np.random.default_rng(len(texts))
        vectors = rng.normal(size=(len(texts), 8))
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    rows = choice_features([QUESTION, "Tell me a joke", QUESTION.replace("Neon", "Argon")], embed)
    assert rows.shape == (3, len(CHOICE_FEATURES))
    assert len(calls) == 1
    assert len(calls[0]) == 10
    assert calls[0][:5] == [
        "Which gas do plants take in?",
        "Oxygen",
        "Carbon dioxide",
        "Helium",
        "Neon",
    ]
    assert not rows[1].any()
    assert rows[0].any()
    assert choice_features(["Tell me a joke"], embed).shape == (1, len(CHOICE_FEATURES))
    assert len(calls) == 1


def test_trigram_vectors_fold_case_and_spaces_and_leave_an_empty_text_at_zero() -> None:
    vectors = trigram_vectors(["Carbon dioxide", "carbon   DIOXIDE", "Helium", ""])
    assert vectors[0] @ vectors[1] == pytest.approx(1.0)
    assert vectors[0] @ vectors[2] < 0.2
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0)
    assert not vectors[3].any()
    rows = choice_features([QUESTION.replace("Neon", "Carbon monoxide")], trigram_vectors)
    named = dict(zip(CHOICE_FEATURES, rows[0], strict=True))
    # "Carbon dioxide" and "Carbon monoxide" share most of their trigrams
    assert named["choice_similarity_max"] > 0.5
