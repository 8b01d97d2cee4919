"""Question-form features: read from the text, zero where a prompt has no lettered choices."""

from __future__ import annotations

import numpy as np
import pytest

from hybridinfer.route.promptstructure import STRUCTURE_FEATURES, describe, structure_features

NUMERIC = "Let x = 3 and y = 4. Calculate x^2 + y^2.\nA. 7\nB. 12\nC. 25\nD. 49\nAnswer:"
STATEMENTS = (
    "Statement 1 | Every group is abelian. Statement 2 | Not every ring has a unit.\n"
    "A. True, True\nB. False, False\nC. True, False\nD. False, True\nAnswer:"
)


def features(prompt: str) -> dict[str, float]:
    return dict(zip(STRUCTURE_FEATURES, describe(prompt), strict=True))


def test_a_numeric_question_with_four_choices() -> None:
    found = features(NUMERIC)
    assert found["choices"] == 4
    assert found["numeric_choice_share"] == 1.0
    assert found["asks_compute"] == 1.0
    assert found["log_reasoning_words"] == pytest.approx(np.log1p(2))  # "let", "calculate"
    assert found["log_numbers"] == pytest.approx(np.log1p(8))
    assert found["has_statements"] == 0.0


def test_statements_and_negations_are_answer_format_cues() -> None:
    found = features(STATEMENTS)
    assert found["has_statements"] == 1.0
    assert found["log_negations"] == pytest.approx(np.log1p(1))  # "Not"
    assert found["numeric_choice_share"] == 0.0


def test_a_chat_prompt_has_no_choice_features() -> None:
    found = features("hi there, how are you?")
    for name in ("choices", "numeric_choice_share", "log_choice_words", "choice_length_spread"):
        assert found[name] == 0.0
    assert found["log_question_marks"] == pytest.approx(np.log1p(1))


def test_one_row_per_prompt_in_order() -> None:
    matrix = structure_features([NUMERIC, "", STATEMENTS])
    assert matrix.shape == (3, len(STRUCTURE_FEATURES))
    assert np.isfinite(matrix).all()
    assert matrix[1].sum() == 0.0
    assert matrix[2].tolist() == describe(STATEMENTS)
