"""Text as the recognisers read it: look-alike characters folded to the ASCII they stand for,
invisible ones dropped, with a map back to the original positions.

A value written with a no-break space, an en dash, a full-width at sign (U+FF20) or a
zero-width space between its digits reads the same to a person and to a model, but not to a
pattern. Folded, each character to one: Unicode spaces to a space, dashes and the minus sign
to ``-``, full-width forms (U+FF01-U+FF5E) to ASCII, the one-dot leader and small full stop
to ``.``, the small commercial at to ``@``. Dropped: format characters (Unicode category Cf:
zero-width space and joiners, soft hyphen, word joiner, byte-order mark, direction marks,
tags).

ASCII text, most of it, is returned as it is without a copy.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace

from hybridinfer.privacy.findings import Finding

_PLANES = (*range(0x80, 0x20000), *range(0xE0000, 0xE1000))
"""Where spaces, dashes and format characters are: the basic and supplementary multilingual
planes and the tags (U+E0020-U+E007F, invisible copies of ASCII)."""


def _tables() -> tuple[dict[int, str], re.Pattern[str]]:
    fold: dict[int, str] = {}
    invisible = []
    for code in _PLANES:
        category = unicodedata.category(chr(code))
        if category == "Zs":
            fold[code] = " "
        elif category == "Pd" or code == 0x2212:  # dashes; the minus sign
            fold[code] = "-"
        elif category == "Cf":
            invisible.append(re.escape(chr(code)))
    fold.update({code: chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)})  # full width
    fold.update({0x2024: ".", 0xFE52: ".", 0xFE6B: "@"})
    return fold, re.compile("[" + "".join(invisible) + "]")


_FOLD, _INVISIBLE = _tables()


@dataclass(frozen=True, slots=True)
class Folded:
    """``source`` as the recognisers read it (``text``); ``origin[i]`` is where character ``i``
    of ``text`` stood in ``source`` (``None``: nothing was dropped, positions are the same)."""

    source: str
    text: str
    origin: list[int] | None = None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The source's span of ``text[start:end]`` (dropped characters inside it included)."""
        if self.origin is None:
            return start, end
        return self.origin[start], self.origin[end - 1] + 1

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


def fold(text: str) -> Folded:
    """``text`` folded; positions map back through ``Folded.span``."""
    if text.isascii():
        return Folded(text, text)
    folded = text.translate(_FOLD)
    if _INVISIBLE.search(folded) is None:
        return Folded(text, folded)
    kept = [index for index, character in enumerate(folded) if not _INVISIBLE.match(character)]
    return Folded(text, "".join(folded[index] for index in kept), kept)
