from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hybridinfer.privacy.normalise import fold


def test_ascii_text_is_read_as_it_is() -> None:
    text = "call 415-555-2671"
    folded = fold(text)
    assert folded.text is text
    assert folded.span(5, 17) == (5, 17)


def test_look_alikes_fold_one_to_one() -> None:
    folded = fold("a\u00a0b\u2013c\u2212d\uff20e\uff11\u3000f\u2024")
    assert folded.text == "a b-c-d@e1 f."
    assert folded.starts is None  # one to one: positions are the original's


def test_invisible_characters_are_dropped_and_spans_map_back() -> None:
    text = "id 12\u200b34\u00ad56\ufeff end"
    folded = fold(text)
    assert folded.text == "id 123456 end"
    start = folded.text.index("123456")
    original = folded.span(start, start + 6)
    assert text[original[0] : original[1]] == "12\u200b34\u00ad56"


def test_escapes_read_as_the_character_they_stand_for() -> None:
    text = "mailto:jane%40example.com or jane&#64;example&period;com, 12% & 5%"
    folded = fold(text)
    assert folded.text == "mailto:jane@example.com or jane@example.com, 12% & 5%"
    start = folded.text.index("jane@example.com")
    first, last = folded.span(start, start + len("jane@example.com"))
    assert text[first:last] == "jane%40example.com"


def test_escapes_of_what_no_value_is_written_with_are_read_as_written() -> None:
    text = "%0A line &#10; &#x1F600; &hellip; &nosuchname;"
    assert fold(text).text == text


def some_span(text: str, data: st.DataObject) -> tuple[str, int, int, int, int] | None:
    """The folded text, a span of it drawn at random and its span in ``text``."""
    folded = fold(text)
    if not folded.text:
        return None
    start = data.draw(st.integers(0, len(folded.text) - 1))
    end = data.draw(st.integers(start + 1, len(folded.text)))
    first, last = folded.span(start, end)
    assert 0 <= first < last <= len(text)
    return folded.text, start, end, first, last


@given(st.text(max_size=40), st.data())
def test_every_folded_span_lies_in_the_source(text: str, data: st.DataObject) -> None:
    some_span(text, data)  # escapes included: the bounds are checked there


@given(st.text(alphabet=st.characters(exclude_characters="%&"), max_size=40), st.data())
def test_every_folded_span_maps_to_the_characters_it_was_read_from(
    text: str, data: st.DataObject
) -> None:
    drawn = some_span(text, data)
    if drawn is not None:
        read, start, end, first, last = drawn
        assert fold(text[first:last]).text == read[start:end]
