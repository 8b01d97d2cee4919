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
    assert folded.origin is None  # nothing dropped: positions are the original's


def test_invisible_characters_are_dropped_and_spans_map_back() -> None:
    text = "id 12\u200b34\u00ad56\ufeff end"
    folded = fold(text)
    assert folded.text == "id 123456 end"
    start = folded.text.index("123456")
    original = folded.span(start, start + 6)
    assert text[original[0] : original[1]] == "12\u200b34\u00ad56"


@given(st.text(max_size=40), st.data())
def test_every_folded_span_maps_to_the_characters_it_was_read_from(
    text: str, data: st.DataObject
) -> None:
    folded = fold(text)
    if not folded.text:
        return
    start = data.draw(st.integers(0, len(folded.text) - 1))
    end = data.draw(st.integers(start + 1, len(folded.text)))
    first, last = folded.span(start, end)
    assert 0 <= first < last <= len(text)
    assert fold(text[first:last]).text == folded.text[start:end]
