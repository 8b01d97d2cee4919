"""Formats no well-kept library validates, recognised here: e-mail addresses (also written to
dodge a scraper: ``jane.doe [at] example [dot] com``, ``JANE(AT)EXAMPLE.COM``,
``jane at example dot com``, ``jane . doe @ example . com``), US social security numbers, UK
National Insurance numbers and IP addresses (checked by ``ipaddress``).

An SSN has no checksum: nine digits are one only in the dashed form (``536-22-4817``, with
the area and group rules of the SSA) or after a word naming it ("SSN 536 22 4817"). A NINO
follows HMRC's prefix and suffix rules (two letters, six digits, A-D).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

from hybridinfer.privacy.findings import Finding
from hybridinfer.privacy.recogniser import PatternRecogniser, Span, covered, digits_of

_SSN_CONTEXT = ("ssn", "social security", "soc sec", "soc. sec", "sozialversicherung")


def _ssn(value: str) -> bool:
    """The SSA's rules: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    digits = digits_of(value)
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


_LABEL = r"[A-Za-z0-9_%+-]+"


def _bracketed(inside: str) -> str:
    return rf"\s*[\[({{<]\s*{inside}\s*[\])}}>]\s*"


def _address(at: str, dot: str) -> str:
    local = rf"{_LABEL}(?:(?:{_SPELLED_DOT}|{_BARE_DOT}){_LABEL})*"
    return rf"{local}(?:{at}){_LABEL}(?:(?:{dot}){_LABEL})*(?:{dot})(?!(?:dot|at)\b)[A-Za-z]{{2,}}"


_SPELLED_DOT = _bracketed(r"(?:dot|\.)") + r"|\s+dot\s+"
_BARE_DOT = r"\.|\s+\.\s+"
"""A full stop inside an address, or spaced on both sides ("meet @ 5pm. Then" is prose)."""
_WRITTEN_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])(?=("
    # A bracketed or spaced @: any dots.
    + _address(_bracketed("(?:at|@)") + r"|\s*@\s*", rf"{_SPELLED_DOT}|{_BARE_DOT}")
    # The bare word "at": the domain's dots spelled too ("look at example.com" is prose).
    + "|"
    + _address(r"\s+at\s+", _SPELLED_DOT)
    + r")(?![A-Za-z0-9-]))",
    re.IGNORECASE,
)
"""Matched at every word start (a lookahead): "me at jane dot doe" must not hide "jane dot doe
at example dot com"; overlapping matches are joined."""
_BRACKET_SIGN = re.compile(r"[\[({<]\s*(?:at|@|dot)\s*[\])}>]", re.IGNORECASE)


def written_email_sign(text: str) -> bool:
    """Whether ``text`` has what every written-out address has and most prose does not: an
    @, the word "dot" or a bracketed "at" or "dot" (plain string tests first: they are cheap)."""
    return "@" in text or "dot" in text.lower() or _BRACKET_SIGN.search(text) is not None


GENERIC_DOMAINS = frozenset((
    "com", "net", "org", "edu", "gov", "mil", "int", "info", "biz", "name", "pro", "mobi", "app",
    "dev", "io", "ai", "xyz", "online", "site", "tech", "store", "blog", "cloud", "email", "mail",
    "shop", "club", "live", "news", "page", "space", "website", "world", "today", "agency",
    "digital", "network", "systems", "group", "company", "global", "media", "life",
))  # fmt: skip
"""The generic top-level domains an address written out ends in, besides every two-letter
country domain: ``weights @ inputs.transpose`` (a matrix product in code) is not one."""


def _plausible_domain(address: str) -> bool:
    top = address[len(address.rstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")) :]
    return len(top) == 2 or top.lower() in GENERIC_DOMAINS


class WrittenEmailRecogniser:
    """E-mail addresses written out: every match at every word start, overlaps joined (the
    whole run is personal; which "at" is the address's cannot be told from the text)."""

    kind = "EMAIL"
    scheme = "email.written"

    def find(self, text: str, taken: Sequence[Span] = ()) -> list[Finding]:
        if not written_email_sign(text):
            return []  # the lookahead at every word start is costly: most text has no sign
        spans: list[Span] = []
        for match in _WRITTEN_EMAIL.finditer(text):
            start, end = match.span(1)
            if not _plausible_domain(match[1]):
                continue
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
            else:
                spans.append((start, end))
        return [
            Finding(self.kind, start, end, text[start:end], self.scheme)
            for start, end in spans
            if not covered(start, end, taken)
        ]


def _ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


RECOGNISERS = (
    PatternRecogniser(
        "EMAIL",
        "email",
        re.compile(
            r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}"
            r"(?![A-Za-z0-9-])"
        ),
        lambda _: True,
    ),
    WrittenEmailRecogniser(),
    PatternRecogniser(
        "SSN",
        "us.ssn",
        re.compile(r"(?<![0-9-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![0-9-])"),
        lambda _: True,
    ),
    PatternRecogniser(
        "SSN",
        "us.ssn",
        re.compile(r"(?<![0-9-])\d{3}[ .]?\d{2}[ .]?\d{4}(?![0-9-])"),
        _ssn,
        context=_SSN_CONTEXT,
        needs_context=True,
    ),
    PatternRecogniser(
        "NINO",
        "gb.nino",
        re.compile(
            r"(?<![A-Za-z0-9])(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
            r" ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])"
        ),
        lambda _: True,
    ),
    PatternRecogniser(
        "IP",
        "ipv4",
        # A full stop may end the sentence after an address; a fifth number may not follow.
        re.compile(r"(?<![0-9A-Za-z.])(?:\d{1,3}\.){3}\d{1,3}(?![0-9A-Za-z]|\.\d)"),
        _ip,
    ),
    PatternRecogniser(
        "IP",
        "ipv6",
        re.compile(r"(?<![0-9A-Za-z:])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![0-9A-Za-z:])"),
        _ip,
    ),
)
