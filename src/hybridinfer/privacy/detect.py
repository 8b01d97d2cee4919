"""Find personal data in text with patterns plus validators (Luhn, address parsing), so each
hit is precise: a 16-digit order number that fails the Luhn check is not a card.

Kinds: ``EMAIL``, ``PHONE``, ``CARD``, ``SSN`` (US social security numbers), ``IP`` (v4 and
v6). Names and places need an NER model and are not detected here.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass

KINDS = ("EMAIL", "CARD", "SSN", "IP", "PHONE")
"""Every kind this module reports, in the order overlapping hits are preferred."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One value of personal data: its kind and where it sits in the text."""

    kind: str
    start: int
    end: int
    value: str


def luhn_valid(digits: str) -> bool:
    """Whether a digit string passes the Luhn checksum (payment card numbers do)."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        digit = int(char)
        if index % 2 == 1:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _card(value: str) -> bool:
    digits = re.sub(r"[ -]", "", value)
    # Payment networks' numbers start with 2-6 (Mastercard 2/5, Amex 3, Visa 4, Discover 6).
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits)


def _ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _phone(value: str) -> bool:
    return 7 <= sum(char.isdigit() for char in value) <= 15


_PATTERNS: tuple[tuple[str, re.Pattern[str], Callable[[str], bool]], ...] = (
    (
        "EMAIL",
        re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}(?![\w-])"),
        lambda _: True,
    ),
    ("CARD", re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"), _card),
    (
        "SSN",
        re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])"),
        lambda _: True,
    ),
    # A full stop may end the sentence after an address; a fifth number may not follow.
    ("IP", re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)"), _ip),
    ("IP", re.compile(r"(?<![\w:])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])"), _ip),
    (
        "PHONE",
        re.compile(
            r"(?<![\w+])(?:"
            r"\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}"
            r"|\(\d{3}\)[ ]?\d{3}[-. ]\d{4}"
            r"|\d{3}[-. ]\d{3}[-. ]\d{4}"
            r")(?![\w-])"
        ),
        _phone,
    ),
)


def detect(text: str) -> list[Finding]:
    """Every personal value in ``text``, in order, without overlaps (earlier kinds win)."""
    found: list[Finding] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern, valid in _PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if not valid(match.group()):
                continue
            if any(start < other_end and other_start < end for other_start, other_end in taken):
                continue
            taken.append((start, end))
            found.append(Finding(kind, start, end, match.group()))
    found.sort(key=lambda finding: finding.start)
    return found


def merge(primary: list[Finding], extra: list[Finding]) -> list[Finding]:
    """``primary`` plus the ``extra`` findings that overlap none of it, in order."""
    kept = list(primary)
    for finding in extra:
        if all(finding.end <= other.start or other.end <= finding.start for other in primary):
            kept.append(finding)
    kept.sort(key=lambda finding: finding.start)
    return kept
