"""What a detector reports: one value of personal data, its kind and where it sits."""

from __future__ import annotations

from dataclasses import dataclass

KINDS = (
    "EMAIL",
    "IBAN",
    "NATIONALID",
    "CARD",
    "SSN",
    "NINO",
    "IP",
    "PHONE",
    "NAME",
    "PLACE",
)
"""Every kind a detector reports, in the order overlapping hits of one length are preferred
(a national id's checksum is stronger than Luhn). Kinds are placeholder names too
(``<PHONE_1>``), so they are single upper-case words."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One value of personal data: its kind and where it sits in the text.

    ``scheme`` names the format that matched where a kind has several (``cn.ric``,
    ``br.cpf``, the phone's region), for measurements; it never carries the value.
    """

    kind: str
    start: int
    end: int
    value: str
    scheme: str = ""
    named: bool = False
    """A word naming the kind stood before it: among equal spans, it wins over one without."""


def overlaps(finding: Finding, others: list[Finding]) -> bool:
    """Whether ``finding`` shares a character with any of ``others``."""
    return any(finding.start < other.end and other.start < finding.end for other in others)


def merge(primary: list[Finding], extra: list[Finding]) -> list[Finding]:
    """``primary`` plus the ``extra`` findings that overlap none of it, in order."""
    kept = list(primary)
    for finding in extra:
        if not overlaps(finding, primary):
            kept.append(finding)
    kept.sort(key=lambda finding: finding.start)
    return kept
