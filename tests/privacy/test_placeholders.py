from __future__ import annotations

import pytest

from hybridinfer.privacy.placeholders import TOLERANT, accepted, held_back, placeholders_in


def readings(text: str) -> list[tuple[str, str, str] | None]:
    return [accepted(match) for match in TOLERANT.finditer(text)]


@pytest.mark.parametrize(
    "written",
    [
        "<EMAIL_1>",
        "<email_1>",
        "< EMAIL_1 >",
        "<EMAIL _1>",
        "[EMAIL_1]",
        "(Email_1)",
        "EMAIL_1",
        "EMAIL-1",
        "<EMAIL1>",
        "{EMAIL_1}",
        "EMAIL_1>",
        "<EMAIL 1>",
    ],
)
def test_a_reformatted_placeholder_reads_as_issued(written: str) -> None:
    assert readings(written) == [("", "<EMAIL_1>", "")]


@pytest.mark.parametrize("prose", ["phone 1", "EMAIL1", "xEMAIL_1", "IPv4", "CARDS_1", "name 2."])
def test_prose_is_not_a_placeholder(prose: str) -> None:
    assert placeholders_in(prose) == set()


def test_a_bracket_prose_owns_is_kept() -> None:
    assert readings("(see EMAIL_1)") == [("", "<EMAIL_1>", ")")]
    assert readings("(EMAIL_1 and more") == [("(", "<EMAIL_1>", "")]


@pytest.mark.parametrize(
    ("text", "held"),
    [
        ("hello <EM", "<EM"),
        ("hello [", "["),
        ("x <EMAIL_1", "<EMAIL_1"),
        ("x <EMAIL_1 ", "<EMAIL_1 "),
        ("my email_", "email_"),
        ("call PH", "PH"),
        ("EMAIL_12", "EMAIL_12"),
        ("x <EMAIL_1>", ""),
        ("hello Ph", ""),
        ("I", ""),
        ("done.", ""),
        ("a long sentence with no placeholder at all", ""),
    ],
)
def test_only_a_tail_that_may_grow_into_a_placeholder_is_held(text: str, held: str) -> None:
    assert text[held_back(text) :] == held
