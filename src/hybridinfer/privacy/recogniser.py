"""The shape every recogniser shares: find candidates by pattern, keep those a validator
accepts, or those that stand next to a word naming their kind ("SSN", "IBAN", "电话").

Validators come from well-kept libraries where the field has them (``phonenumbers``,
``python-stdnum``); patterns only say where a candidate may start and end. A context word
lets a value through that its validator refuses (an unassigned area code, a checksum the
writer mistyped): a privacy scan should not hand personal data to a public model because
it is not quite well formed. Latin-script context words match at the start of a word ("tel"
is not in "Bestellung", "karte" is in "Kartennummer"); words in other scripts match where
they stand.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hybridinfer.privacy.findings import Finding

CONTEXT_WINDOW = 40
"""Characters before a candidate searched for a context word."""
Span = tuple[int, int]


def context_pattern(words: Sequence[str]) -> re.Pattern[str]:
    """One pattern for ``words`` (lower case): Latin ones only at the start of a word."""
    parts = [
        rf"(?<![^\W\d_]){re.escape(word)}" if word[:1].isascii() else re.escape(word)
        for word in words
    ]
    return re.compile("|".join(parts) or r"(?!)")


def in_context(lowered: str, start: int, words: re.Pattern[str]) -> bool:
    """Whether one of ``words`` stands shortly before ``start`` in ``lowered``."""
    return words.search(lowered, max(0, start - CONTEXT_WINDOW), start) is not None


def covered(start: int, end: int, spans: Sequence[Span]) -> bool:
    """Whether ``start..end`` lies inside one of ``spans`` (a finding already made) and is
    shorter: it could not win against it (an equal span still can, if a word names it)."""
    return any(s <= start and end <= e and e - s > end - start for s, e in spans)


@dataclass(frozen=True)
class PatternRecogniser:
    """One format of one kind: a pattern, a validator and the words that name it.

    A hit is a match that the validator accepts or that a context word names. With
    ``needs_context`` the pattern alone is too common (nine bare digits): a hit needs both
    the word and the validator.
    """

    kind: str
    scheme: str
    pattern: re.Pattern[str]
    validate: Callable[[str], bool]
    context: tuple[str, ...] = ()
    needs_context: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "_words", context_pattern(self.context))

    def find(self, text: str, taken: Sequence[Span] = ()) -> list[Finding]:
        found: list[Finding] = []
        lowered: str | None = None
        words: re.Pattern[str] = getattr(self, "_words")  # noqa: B009 - set in __post_init__
        if self.needs_context:
            lowered = text.lower()
            if not any(word in lowered for word in self.context):
                return found  # no word names this kind anywhere: no candidate can be a hit
        for match in self.pattern.finditer(text):
            value, start = match.group(), match.start()
            if covered(start, match.end(), taken):
                continue
            named = False
            if self.context:
                lowered = text.lower() if lowered is None else lowered
                named = in_context(lowered, start, words)
            accepted = named and self.validate(value) if self.needs_context else named
            if accepted or (not self.needs_context and self.validate(value)):
                end = start + len(value)
                found.append(Finding(self.kind, start, end, value, self.scheme, named))
        return found


def digits_of(value: str) -> str:
    """The digits of ``value``, separators dropped."""
    return "".join(character for character in value if character.isdigit())
