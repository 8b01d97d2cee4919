"""How placeholders are written and read back.

A placeholder is issued as ``<KIND_N>`` (``<EMAIL_1>``): an upper-case word from
``findings.KINDS``, an underscore and a number in angle brackets. A model that copies it
may reformat it slightly, so reading is tolerant: any case (``<email_1>``), spaces inside
(``< EMAIL_1 >``, ``<EMAIL _1>``), other brackets (``[EMAIL_1]``, ``(EMAIL_1)``), a hyphen
(``EMAIL-1``) or no brackets at all (``EMAIL_1``). Without brackets the underscore or hyphen
is needed, so prose such as "phone 1" is never read as a placeholder; a bracket that prose
may own (a ``(`` or ``[`` without its partner) is kept in the text.

``HOLD`` finds the end of a text that could still grow into a placeholder (``<EMA``,
``PHONE_``, ``[``): a stream holds just that much back until the next piece decides.
"""

from __future__ import annotations

import re

from hybridinfer.privacy.findings import KINDS

_KIND = "|".join(sorted(KINDS, key=len, reverse=True))

TOLERANT = re.compile(
    rf"(?:(?P<open>[<\[({{])\s*|(?<![A-Za-z0-9]))"
    rf"(?P<kind>{_KIND})(?P<sep>\s*[_\-]\s*|\s+)?(?P<number>\d{{1,6}})(?![0-9])"
    r"(?P<close>\s*[>\])}])?",
    re.IGNORECASE,
)
"""A placeholder as a model may have rewritten it (see ``accepted``: not every match is one)."""

_PREFIXES = sorted({kind[:size] for kind in KINDS for size in range(1, len(kind))}, key=len)
_UPPER_PREFIXES = [prefix for prefix in _PREFIXES if len(prefix) >= 2]
_GROWING = rf"(?:{_KIND})\s*(?:[_\-]\s*)?\d*\s*"
HOLD = re.compile(
    rf"(?:[<\[({{]\s*(?i:(?:{'|'.join(reversed(_PREFIXES))})?|{_GROWING})"
    rf"|(?<![A-Za-z0-9])(?:{'|'.join(reversed(_UPPER_PREFIXES))}|(?i:{_GROWING})))\Z"
)
"""The tail of a text that may be the start of a placeholder. Bare (no bracket), a partial
kind is held only in capitals of two letters or more (``PH``), so the words a chunk ends on
("I", "Ph", "name") pass at once; a whole kind word is held in any case (``email_``)."""
HOLD_WINDOW = 40
"""No placeholder start is longer than this: the search for one looks no further back."""


def canonical(kind: str, number: str | int) -> str:
    """The issued form of a placeholder: ``<EMAIL_1>``."""
    return f"<{kind.upper()}_{int(number)}>"


def accepted(match: re.Match[str]) -> tuple[str, str, str] | None:
    """``(prefix kept, canonical placeholder, suffix kept)`` when ``match`` reads as a
    placeholder, else None. Brackets prose may own are kept as text (the prefix and suffix)."""
    opener, closer = match.group("open"), (match.group("close") or "").strip()
    separator = (match.group("sep") or "").strip()
    paired = bool(opener and closer)
    takes_open = paired or opener == "<"
    takes_close = paired or closer == ">"
    if not (takes_open or takes_close or separator in ("_", "-")):
        return None
    prefix = (
        "" if takes_open or not opener else match.group()[: match.start("kind") - match.start()]
    )
    suffix = "" if takes_close or not closer else match.group("close")
    return prefix, canonical(match.group("kind"), match.group("number")), suffix


def placeholders_in(text: str) -> set[str]:
    """The canonical form of every placeholder-like string in ``text``."""
    found: set[str] = set()
    for match in TOLERANT.finditer(text):
        reading = accepted(match)
        if reading is not None:
            found.add(reading[1])
    return found


def held_back(text: str) -> int:
    """Where the tail that may still grow into a placeholder starts (``len(text)``: none)."""
    match = HOLD.search(text, max(0, len(text) - HOLD_WINDOW))
    return len(text) if match is None else match.start()


__all__ = ["HOLD", "TOLERANT", "accepted", "canonical", "held_back", "placeholders_in"]
