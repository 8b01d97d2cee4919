"""The near-miss guard: numbers, negation, operators and names must match exactly."""

from __future__ import annotations

import pytest

from hybridinfer.answers.signature import names_of, signature


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("What is 2 + 2?", "What is 2 + 3?"),
        ("What is two plus two?", "What is two plus three?"),
        ("Is Paris in France?", "Is Paris not in France?"),
        ("Should I take ibuprofen?", "Shouldn't I take ibuprofen?"),
        ("Who founded Microsoft?", "Who founded Apple?"),
        ("Convert 100 km to miles", "Convert 10 km to miles"),
        ("What is 6 * 7?", "What is 6 + 7?"),
    ],
)
def test_near_misses_differ(first: str, second: str) -> None:
    assert signature(first) != signature(second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("What is the capital of France?", "Tell me France's capital."),
        ("How do I boil an egg?", "What's the way to boil an egg?"),
        ("What is 2 + 2?", "Calculate 2 + 2"),
        ("Explain photosynthesis simply", "Can you explain photosynthesis in simple terms?"),
    ],
)
def test_paraphrases_agree(first: str, second: str) -> None:
    assert signature(first) == signature(second)


def test_openers_and_common_words_are_not_names() -> None:
    assert names_of("What does Marie Curie's work mean? Tell me.") == {"marie", "curie"}
