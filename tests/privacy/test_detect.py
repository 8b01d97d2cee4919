from __future__ import annotations

import pytest

from hybridinfer.privacy.detect import detect, luhn_valid


def kinds(text: str) -> list[tuple[str, str]]:
    return [(finding.kind, finding.value) for finding in detect(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail jane.doe+x@example.co.uk now", [("EMAIL", "jane.doe+x@example.co.uk")]),
        ("card 4111 1111 1111 1111.", [("CARD", "4111 1111 1111 1111")]),
        ("card 5500-0000-0000-0004", [("CARD", "5500-0000-0000-0004")]),
        ("ssn 123-45-6789", [("SSN", "123-45-6789")]),
        ("call +44 20 7946 0958 today", [("PHONE", "+44 20 7946 0958")]),
        ("call (415) 555-2671", [("PHONE", "(415) 555-2671")]),
        ("call 415-555-2671", [("PHONE", "415-555-2671")]),
        ("host 192.168.10.254 up", [("IP", "192.168.10.254")]),
        ("it came from 203.0.113.77.", [("IP", "203.0.113.77")]),
        ("host 2001:db8::8a2e:370:7334 up", [("IP", "2001:db8::8a2e:370:7334")]),
    ],
)
def test_finds_each_kind(text: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "order 4111 1111 1111 1112",  # fails Luhn
        "order 7911807944210807",  # passes Luhn, but no card network starts with 7
        "ssn 000-12-3456",  # invalid area
        "version 1.2.3.4.5 and 999.1.1.1",
        "at 12:30:45 on 2024-01-15",
        "total 1234 items",
        "see C:\\dir and 1:2",
    ],
)
def test_ignores_lookalikes(text: str) -> None:
    assert kinds(text) == []


def test_luhn() -> None:
    assert luhn_valid("4111111111111111")
    assert not luhn_valid("4111111111111112")


def test_several_in_order() -> None:
    text = "Mail a@b.io, call +1 415 555 2671, pay with 4111111111111111."
    assert [kind for kind, _ in kinds(text)] == ["EMAIL", "PHONE", "CARD"]
