"""Text as the recognisers read it: look-alike characters folded to the ASCII they stand for,
invisible ones dropped, with a map back to the original positions.

A value written with a no-break space, an en dash, a full-width at sign (U+FF20) or a
zero-width space between its digits reads the same to a person and to a model, but not to a
pattern. Folded, each character to one: Unicode spaces to a space, dashes and the minus sign
to ``-``, full-width forms (U+FF01-U+FF5E) to ASCII, the one-dot leader and small full stop
to ``.``, the small commercial at to ``@``. Dropped: format characters (Unicode category Cf:
zero-width space and joiners, soft hyphen, word joiner, byte-order mark, direction marks,
tags). Read as the character they stand for: URL percent-escapes and HTML character
references of printable ASCII (``jane%40example.com``, ``jane&#64;example.com``).

ASCII text without ``%`` or ``&``, most of it, is returned as it is without a copy.
"""

from __future__ import annotations

import html.entities
import re
import unicodedata
from dataclasses import dataclass, replace

from hybridinfer.privacy.findings import Finding

_PLANES = (*range(0x80, 0x20000), *range(0xE0000, 0xE1000))
"""Where spaces, dashes and format characters are: the basic and supplementary multilingual
planes and the tags (U+E0020-U+E007F, invisible copies of ASCII)."""


_DROP = "\uffff"
"""What an invisible character is folded to (a noncharacter), found by a plain search and
dropped: one character class of every format character is ~50 times slower to match."""


def _fold_table() -> dict[int, str]:
    fold: dict[int, str] = {}
    for code in _PLANES:
        category = unicodedata.category(chr(code))
        if category == "Zs":
            fold[code] = " "
        elif category == "Pd" or code == 0x2212:  # dashes; the minus sign
            fold[code] = "-"
        elif category == "Cf":
            fold[code] = _DROP
    fold.update({code: chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)})  # full width
    fold.update({0x2024: ".", 0xFE52: ".", 0xFE6B: "@"})
    return fold


_FOLD = _fold_table()
_FOLDED = frozenset(map(chr, _FOLD))
_ESCAPE = (
    r"%(?P<percent>[0-9A-Fa-f]{2})|&#(?P<decimal>\d{1,7});|&#[xX](?P<hex>[0-9A-Fa-f]{1,6});"
    r"|&(?P<name>[A-Za-z][A-Za-z0-9]{1,31};)"
)
_READ_APART = re.compile(f"(?P<invisible>{_DROP})|{_ESCAPE}")
"""An invisible character (dropped), or a URL percent-escape or an HTML character reference
(read as the character it stands for: ``jane%40example.com`` and ``jane&#64;example.com`` are
an address)."""


def _escaped(match: re.Match[str]) -> str | None:
    """The printable ASCII character an escape stands for (after folding), else ``None``."""
    if match["name"] is not None:
        character = html.entities.html5.get(match["name"], "")
    else:
        number = match["percent"] or match["decimal"] or match["hex"]
        base = 10 if match["decimal"] is not None else 16
        code = int(number, base)
        character = chr(code) if code <= 0x10FFFF else ""
    character = character.translate(_FOLD)
    return character if len(character) == 1 and " " <= character <= "~" else None


@dataclass(frozen=True, slots=True)
class Folded:
    """``source`` as the recognisers read it (``text``): character ``i`` of ``text`` was read
    from ``source[starts[i]:ends[i]]`` (``None``: one to one, positions are the same)."""

    source: str
    text: str
    starts: list[int] | None = None
    ends: list[int] | None = None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The source's span of ``text[start:end]`` (dropped characters inside it included)."""
        if self.starts is None or self.ends is None:
            return start, end
        return self.starts[start], self.ends[end - 1]

    def in_source(self, found: list[Finding]) -> list[Finding]:
        """Findings made in ``text`` with the source's positions and characters: what a
        pseudonymiser must replace."""
        if self.text is self.source:
            return found
        return [
            replace(finding, start=start, end=end, value=self.source[start:end])
            for finding in found
            for start, end in (self.span(finding.start, finding.end),)
        ]


_ESCAPES = re.compile(_ESCAPE)


def _escapes(text: str) -> bool:
    return _ESCAPES.search(text) is not None


def fold(text: str) -> Folded:
    """``text`` folded; positions map back through ``Folded.span``."""
    ascii_only = text.isascii()
    if ascii_only and "%" not in text and "&" not in text:
        return Folded(text, text)
    folded = text if ascii_only or _FOLDED.isdisjoint(text) else text.translate(_FOLD)
    escaped = ("%" in folded or "&" in folded) and _escapes(folded)
    if _DROP not in folded and not escaped:
        return Folded(text, folded)
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    position = 0
    for match in _READ_APART.finditer(folded):
        begin, finish = match.span()
        pieces.append(folded[position:begin])
        starts.extend(range(position, begin))
        ends.extend(range(position + 1, begin + 1))
        position = finish
        if match["invisible"] is not None:
            continue
        character = _escaped(match)
        if character is None:  # not a character a value is written with: read as written
            pieces.append(folded[begin:finish])
            starts.extend(range(begin, finish))
            ends.extend(range(begin + 1, finish + 1))
        else:
            pieces.append(character)
            starts.append(begin)
            ends.append(finish)
    pieces.append(folded[position:])
    starts.extend(range(position, len(folded)))
    ends.extend(range(position + 1, len(folded) + 1))
    return Folded(text, "".join(pieces), starts, ends)
