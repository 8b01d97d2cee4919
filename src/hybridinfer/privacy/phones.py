"""Phone numbers, recognised by Google's libphonenumber (PyPI ``phonenumbers``).

A cheap pattern finds digit runs that could be a number (7 to 15 digits, with the separators
people write); only those reach libphonenumber, which knows every region's numbering plan. A
number written in international form (``+44 20 7946 0123``, ``0044 …``) is recognised for
every region the library knows. A national form is tried in the regions of the hint list, in
order; text in Chinese, Japanese or Hindi script puts that script's region first.

Which national forms count: a bare run of digits (``4155550193``) only when it is valid in
the first region or a word such as "phone" or "电话" names it — the numbering plans of a
dozen regions together cover most 9- and 10-digit strings, order numbers included. A number
written as phones are (an area code in brackets, a trunk prefix ``0``, the NANP 3-3-4
grouping) counts when it is valid in any hint region, or of a possible length there after a
naming word (the library's metadata lags new ranges). A word naming another kind of number
("order", "invoice", "ISBN") right before a candidate keeps it out, unless a phone word is
nearer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import phonenumbers
from phonenumbers import Leniency, PhoneNumberMatcher

from hybridinfer.privacy.findings import Finding
from hybridinfer.privacy.recogniser import Span, context_pattern, covered

DEFAULT_REGIONS = ("US", "GB", "CN", "IN", "DE", "FR", "ES", "IT", "NL", "BR", "JP", "AU")
"""Regions whose national formats are recognised when no hint says otherwise."""
PHONE_WORDS = context_pattern(
    (
        "phone", "tel", "tél", "call", "mobile", "cell", "fax", "whatsapp", "ring", "text me",
        "reach me", "reach us", "contact", "dial", "number is", "erreichen", "anrufen", "rufen",
        "handy", "joindre", "appelez", "portable", "llámame", "llamar", "localizarme",
        "móvil", "movil", "ligue", "ligar", "celular", "chiamami", "chiamare", "trovarmi",
        "cellulare", "电话", "手机", "電話", "联系", "फ़ोन", "फोन",
    )
)  # fmt: skip
OTHER_NUMBER_WORDS = context_pattern(
    (
        "order", "invoice", "ticket", "tracking", "isbn", "ean", "sku", "ref", "reference",
        "batch", "serial", "account", "iban", "barcode", "code", "item", "article", "artikel",
        "version", "build", "release", "parcel", "package", "shipment", "bestellung",
        "rechnung", "sendung", "commande", "facture", "suivi", "pedido", "factura", "envío",
        "fattura", "spedizione", "订单", "发票", "单号", "快递",
    )
)  # fmt: skip
"""Words that name another kind of number."""
SCRIPT_REGIONS = (
    (re.compile(r"[\u3040-\u30ff]"), "JP"),  # kana before Han: Japanese text uses both
    (re.compile(r"[\u4e00-\u9fff]"), "CN"),
    (re.compile(r"[\u0900-\u097f]"), "IN"),
)
_CANDIDATE = re.compile(
    r"(?<![0-9A-Za-z+])(?:\+|00)?\(?\d[\d \t().\-/]{5,24}\d"
    r"(?:\s?(?:x|ext\.?|extension)\s?\d{1,6})?(?![0-9A-Za-z])"
)
"""A run of digits and the separators people write, alone in its word: letters glued to either
end make it part of a token (a hex id, a hash, a UUID's group: ``0820465761be``), not a number
someone wrote. Other scripts may touch it (Chinese text writes ``电话13812345678`` unspaced)."""
_EXTENSION = re.compile(r"\s?(?:x|ext\.?|extension)\s?\d{1,6}$")
_PHONE_SHAPED = re.compile(r"\(|0[1-9]|\d{1,4}(?:[ .-]\d{2,4}){2,}$")
"""How national numbers are written and other numbers are not: an area code in brackets, a
trunk prefix 0, or three groups and more (3-3-4, 3-2-2-2, 2-4-4…)."""
_YEAR, _MONTH, _DAY = r"(?:19|20)\d\d", r"(?:0?[1-9]|1[0-2])", r"(?:0?[1-9]|[12]\d|3[01])"
_DATE = re.compile(
    rf"{_YEAR}([-/.]){_MONTH}\1{_DAY}|{_DAY}([-/.]){_MONTH}\2{_YEAR}|{_MONTH}([-/.]){_DAY}\3{_YEAR}"
)
"""Dates are digit runs with separators too; libphonenumber's lenient match takes some."""


def _digit_count(value: str) -> int:
    return sum(character.isdigit() for character in value)


def _nearest(lowered: str, start: int) -> str | None:
    """Which kind of word stands nearest before ``start``: "phone", "other" or None."""
    window_start = max(0, start - 40)
    phone = [m.end() for m in PHONE_WORDS.finditer(lowered, window_start, start)]
    other = [m.end() for m in OTHER_NUMBER_WORDS.finditer(lowered, window_start, start)]
    if not phone and not other:
        return None
    return "phone" if max(phone, default=-1) >= max(other, default=-1) else "other"


class PhoneRecogniser:
    """Phone numbers in ``regions``' national formats and every international one."""

    kind = "PHONE"

    def __init__(self, regions: Sequence[str] = DEFAULT_REGIONS) -> None:
        unknown = [r for r in regions if r not in phonenumbers.SUPPORTED_REGIONS]
        if unknown:
            raise ValueError(f"unknown phone regions: {', '.join(unknown)}")
        self.regions = tuple(regions)

    def find(self, text: str, taken: Sequence[Span] = ()) -> list[Finding]:
        found: list[Finding] = []
        lowered: str | None = None
        for candidate in _CANDIDATE.finditer(text):
            window, start = candidate.group(), candidate.start()
            digits = _digit_count(_EXTENSION.sub("", window))
            if digits < 7 or _DATE.fullmatch(window) or covered(start, candidate.end(), taken):
                continue
            lowered = text.lower() if lowered is None else lowered
            named = _nearest(lowered, start)
            if named == "other":
                continue
            regions = self._regions_near(text, start)
            if digits > 15:  # several numbers side by side: libphonenumber's matcher splits them
                found.extend(self._matched(window, start, regions[0]))
            else:
                found.extend(self._number(window, start, regions, named == "phone"))
        return found

    def _regions_near(self, text: str, start: int) -> tuple[str, ...]:
        """The hint regions, with the region of the script around ``start`` first."""
        around = text[max(0, start - 20) : start + 40]
        for script, region in SCRIPT_REGIONS:
            if script.search(around):
                return (region, *(r for r in self.regions if r != region))
        return self.regions

    @staticmethod
    def _number(window: str, offset: int, regions: Sequence[str], named: bool) -> list[Finding]:
        """``window`` as one phone number, or nothing."""
        international = window.startswith(("+", "00"))
        if international:
            regions, text = ("ZZ",), "+" + window[2:] if window.startswith("00") else window
        else:
            text = window
        shaped = international or _PHONE_SHAPED.match(window) is not None
        for position, region in enumerate(regions):
            try:
                number = phonenumbers.parse(text, region)
            except phonenumbers.NumberParseException:
                continue
            valid = phonenumbers.is_valid_number(number)
            counts = (valid and (shaped or named or position == 0)) or (
                named and phonenumbers.is_possible_number(number)
            )
            if counts:
                scheme = f"phone.{phonenumbers.region_code_for_number(number) or region}".lower()
                return [Finding("PHONE", offset, offset + len(window), window, scheme)]
        return []

    @staticmethod
    def _matched(window: str, offset: int, region: str) -> list[Finding]:
        return [
            Finding("PHONE", offset + m.start, offset + m.end, m.raw_string, f"phone.{region}")
            for m in PhoneNumberMatcher(window, region, leniency=Leniency.VALID)
            if _DATE.fullmatch(m.raw_string.strip()) is None
        ]
