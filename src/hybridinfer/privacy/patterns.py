"""Formats no well-kept library validates, recognised here: e-mail addresses, US social
security numbers, UK National Insurance numbers and IP addresses (checked by ``ipaddress``).

An SSN has no checksum: nine digits are one only in the dashed form (``536-22-4817``, with
the area and group rules of the SSA) or after a word naming it ("SSN 536 22 4817"). A NINO
follows HMRC's prefix and suffix rules (two letters, six digits, A-D).
"""

from __future__ import annotations

import ipaddress
import re

from hybridinfer.privacy.recogniser import PatternRecogniser, digits_of

_SSN_CONTEXT = ("ssn", "social security", "soc sec", "soc. sec", "sozialversicherung")


def _ssn(value: str) -> bool:
    """The SSA's rules: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    digits = digits_of(value)
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


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
