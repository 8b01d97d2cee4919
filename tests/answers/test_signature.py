"""The near-miss guard: numbers, negation, operators and names must match exactly."""

from __future__ import annotations

import pytest

from hybridinfer.answers.signature import agree, names_of, signature


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
        ("Convert Celsius to Fahrenheit", "Convert Fahrenheit to Celsius"),
        ("What are the pros of remote work?", "What are the cons of remote work?"),
        ("How do I install Python?", "How do I uninstall Python?"),
        ("How do I encrypt a file?", "How do I decrypt a file?"),
        # Lower-case words swapped in order, and a graded form of a marked adjective.
        ("Convert dollars to euros.", "Convert euros to dollars."),
        ("Which is the strongest metal?", "Which is the weakest metal?"),
        ("Who is the youngest player?", "Who is the oldest player?"),
    ],
)
def test_near_misses_differ(first: str, second: str) -> None:
    assert not agree(signature(first), signature(second))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("What is the capital of France?", "Tell me France's capital."),
        ("How do I boil an egg?", "What's the way to boil an egg?"),
        ("What is 2 + 2?", "Calculate 2 + 2"),
        ("Explain photosynthesis simply", "Can you explain photosynthesis in simple terms?"),
        ("How do I convert dollars to euros?", "How can I convert dollars into euros?"),
    ],
)
def test_paraphrases_agree(first: str, second: str) -> None:
    assert agree(signature(first), signature(second))


def test_openers_and_common_words_are_not_names() -> None:
    assert names_of("What does Marie Curie's work mean? Tell me.") == ["marie", "curie"]


def test_a_prefix_clashes_only_with_the_plain_word_in_the_other_prompt() -> None:
    assert agree(signature("Define a prime number."), signature("What is a prime number?"))
    assert not agree(signature("Is it fine?"), signature("Is it define?"))
