"""The public-references benchmark (``bench/privacyrefs.py``) with the real NER model: every
text with a private person's name or city is still held, and the figure it publishes compares
two rules that differ."""

from __future__ import annotations

from bench.privacyrefs import PERSONAL, PUBLIC, held

from hybridinfer.privacy.ner import NameFinder


def test_every_personal_text_is_held_and_fewer_public_ones_than_before(
    name_finder: NameFinder,
) -> None:
    personal = held(PERSONAL, name_finder)
    assert personal["held_after"] == personal["texts"] == len(PERSONAL)
    eponyms = held(PUBLIC["eponyms"], name_finder)
    assert eponyms["held_after"] < eponyms["held_before"]
    assert set(eponyms["held_after_texts"]) <= set(PUBLIC["eponyms"])
