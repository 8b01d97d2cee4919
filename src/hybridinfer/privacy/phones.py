"""Phone numbers, recognised by Google's libphonenumber (PyPI ``phonenumbers``).

A cheap pattern finds digit runs that could be a number (7 to 15 digits, with the separators
people write); only those reach libphonenumber's matcher, which knows every region's
numbering plan and refuses dates, times and version strings. A number written in
international form (``+44 20 7946 0123``, ``0044 …``) is recognised for every region the
library knows; a national form (``020 7946 0123``) only for the regions in the hint list,
tried in order until one accepts it (a policy or request can put its own first).

Accepted: a number valid in a region; or, when written as phone numbers are or after a
word like "phone" or "电话", one whose length is possible there (libphonenumber's metadata
lags new number ranges, and a scan should not let a phone number through for that).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import phonenumbers
from phonenumbers import Leniency, PhoneNumberMatcher

from hybridinfer.privacy.findings import Finding
from hybridinfer.privacy.recogniser import in_context

DEFAULT_REGIONS = ("US", "GB", "CN", "IN", "DE", "FR", "ES", "IT", "NL", "BR", "JP", "AU")
"""Regions whose national formats are recognised when no hint says otherwise."""
CONTEXT = (
    "phone", "tel", "call", "mobile", "cell", "fax", "whatsapp", "ring", "text me",
    "电话", "手机", "电話", "telefon", "téléphone", "teléfono", "telefone", "portable", "handy",
)  # fmt: skip
_CANDIDATE = re.compile(
    r"(?<![0-9A-Za-z])(?:\+|00)?\(?\d[\d \t().\-/]{5,24}\d"
    r"(?:\s?(?:x|ext\.?|extension)\s?\d{1,6})?(?![0-9])"
)
_PHONE_SHAPED = re.compile(r"(?:\+|00|\(|0\d*[ ./-])|\d{3}[-. ]\d{3}[-. ]\d{4}")
"""How phone numbers are written and other numbers are not: an international prefix, an
area code in brackets, a trunk prefix 0 before a separator, or the NANP 3-3-4 grouping."""
_YEAR, _MONTH, _DAY = r"(?:19|20)\d\d", r"(?:0?[1-9]|1[0-2])", r"(?:0?[1-9]|[12]\d|3[01])"
_DATE = re.compile(
    rf"{_YEAR}([-/.]){_MONTH}\1{_DAY}|{_DAY}([-/.]){_MONTH}\2{_YEAR}|{_MONTH}([-/.]){_DAY}\3{_YEAR}"
)
"""Dates are digit runs with separators too; libphonenumber's lenient match takes some."""


def _digit_count(value: str) -> int:
    return sum(character.isdigit() for character in value)


class PhoneRecogniser:
    """Phone numbers in ``regions``' national formats and every international one."""

    kind = "PHONE"

    def __init__(self, regions: Sequence[str] = DEFAULT_REGIONS) -> None:
        unknown = [r for r in regions if r not in phonenumbers.SUPPORTED_REGIONS]
        if unknown:
            raise ValueError(f"unknown phone regions: {', '.join(unknown)}")
        self.regions = tuple(regions)

    def find(self, text: str) -> list[Finding]:
        found: list[Finding] = []
        lowered: str | None = None
        for candidate in _CANDIDATE.finditer(text):
            if not 7 <= _digit_count(candidate.group()) <= 21 or _DATE.fullmatch(candidate.group()):
                continue
            lowered = text.lower() if lowered is None else lowered
            found.extend(self._numbers_in(candidate.group(), candidate.start(), lowered))
        return found

    def _numbers_in(self, window: str, offset: int, lowered: str) -> list[Finding]:
        international = window.startswith(("+", "00"))
        regions = self.regions[:1] if international else self.regions
        plausible = self._plausible(window, offset, lowered)
        for leniency in (Leniency.VALID, Leniency.POSSIBLE) if plausible else (Leniency.VALID,):
            for region in regions:
                found = self._in_region(window, offset, region, leniency)
                if found:
                    return found
        return []

    @staticmethod
    def _in_region(window: str, offset: int, region: str, leniency: int) -> list[Finding]:
        """The numbers of ``window`` that ``region``'s plan accepts at ``leniency``.

        The matcher (libphonenumber's own checks: national prefixes, groupings, dates) runs
        only where a plain parse already accepts the number, at a fraction of its cost.
        """
        if _digit_count(window) <= 15:
            accept = (
                phonenumbers.is_valid_number
                if leniency == Leniency.VALID
                else phonenumbers.is_possible_number
            )
            try:
                if not accept(phonenumbers.parse(window, region)):
                    return []
            except phonenumbers.NumberParseException:
                return []
        scheme = f"phone.{region.lower()}"
        return [
            Finding("PHONE", offset + m.start, offset + m.end, m.raw_string, scheme)
            for m in PhoneNumberMatcher(window, region, leniency=leniency)
            if 7 <= _digit_count(m.raw_string) <= 21
            and _DATE.fullmatch(m.raw_string.strip()) is None
        ]

    @staticmethod
    def _plausible(value: str, start: int, lowered: str) -> bool:
        """A number of possible length counts when written as phones are, or named as one."""
        if _DATE.fullmatch(value.strip()) is not None:
            return False
        return _PHONE_SHAPED.match(value) is not None or in_context(lowered, start, CONTEXT)
