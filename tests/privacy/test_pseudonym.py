from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hybridinfer.privacy.pseudonym import Pseudonymiser

VALUES = st.sampled_from(
    [
        "jane@example.com",
        "bob.smith@corp.example.org",
        "4111 1111 1111 1111",
        "+44 20 7946 0958",
        "123-45-6789",
        "10.0.0.1",
        "<EMAIL_1>",
        # Look-alike and invisible characters, and an address written out.
        "4111\u00a01111\u00a01111\u00a01111",
        "jane\u200b.doe@example.com",
        "+1\u00a0415\u2011555\u20112671",
        "jane.doe [at] example [dot] com",
        "jane%40example.com",
    ]
)
FILLER = st.text(alphabet=st.characters(codec="utf-8"), max_size=20).map(lambda s: f" {s} ")


@given(st.lists(st.one_of(VALUES, FILLER), max_size=12))
def test_round_trip(parts: list[str]) -> None:
    text = "".join(parts)
    mapping = Pseudonymiser()
    assert mapping.restore(mapping.redact(text)) == text


@given(st.lists(VALUES, min_size=1, max_size=6))
def test_no_value_survives(values: list[str]) -> None:
    text = " and ".join(values)
    redacted = Pseudonymiser().redact(text)
    for value in values:
        if not value.startswith("<"):
            assert value not in redacted


def test_stable_placeholders_and_counts() -> None:
    mapping = Pseudonymiser()
    first = mapping.redact("write to a@b.io or a@b.io, not c@d.io")
    assert first == "write to <EMAIL_1> or <EMAIL_1>, not <EMAIL_2>"
    assert mapping.redact("again a@b.io") == "again <EMAIL_1>"
    assert mapping.describe() == {"EMAIL": 2}


def test_restore_walks_structures_and_skips_unknown_placeholders() -> None:
    mapping = Pseudonymiser()
    mapping.redact("a@b.io")
    restored = mapping.restore({"text": ["<EMAIL_1> and <EMAIL_9>"], "n": 3})
    assert restored == {"text": ["a@b.io and <EMAIL_9>"], "n": 3}
