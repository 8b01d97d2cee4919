"""The shape every recogniser shares: find candidates by pattern, keep those a validator
accepts, or those that stand next to a word naming their kind ("SSN", "IBAN", "电话").

Validators come from well-kept libraries where the field has them (``phonenumbers``,
``python-stdnum``); patterns only say where a candidate may start and end. A context word
lets a value through that its validator refuses (an unassigned area code, a checksum the
writer mistyped): a privacy scan should not hand personal data to a public model because
it is not quite well formed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from hybridinfer.privacy.findings import Finding

CONTEXT_WINDOW = 40
"""Characters before a candidate searched for a context word."""


@dataclass(frozen=True)
class PatternRecogniser:
    """One format of one kind: a pattern, a validator and the words that name it.

    ``validate`` gets the matched text and answers the scheme that matched, or ``""`` for
    none. ``needs_context``: the pattern alone is too common (nine bare digits), so only a
    context word makes a hit.
    """

    kind: str
    scheme: str
    pattern: re.Pattern[str]
    validate: Callable[[str], bool]
    context: tuple[str, ...] = ()
    needs_context: bool = False

    def find(self, text: str) -> list[Finding]:
        found = []
        lowered: str | None = None
        for match in self.pattern.finditer(text):
            value = match.group("value") if "value" in self.pattern.groupindex else match.group()
            start = match.start("value") if "value" in self.pattern.groupindex else match.start()
            accepted = not self.needs_context and self.validate(value)
            if not accepted and self.context:
                lowered = text.lower() if lowered is None else lowered
                accepted = in_context(lowered, start, self.context)
            if accepted:
                found.append(Finding(self.kind, start, start + len(value), value, self.scheme))
        return found


def in_context(lowered: str, start: int, words: tuple[str, ...]) -> bool:
    """Whether one of ``words`` (lower case) stands shortly before ``start``."""
    before = lowered[max(0, start - CONTEXT_WINDOW) : start]
    return any(word in before for word in words)


def digits_of(value: str) -> str:
    """The digits of ``value``, separators dropped."""
    return "".join(character for character in value if character.isdigit())
