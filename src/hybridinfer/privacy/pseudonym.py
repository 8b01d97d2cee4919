"""Reversible pseudonymisation: each personal value becomes a stable placeholder
(``<EMAIL_1>``) before text leaves the private zone, and comes back in the answer.

The mapping lives only in the ``Pseudonymiser`` of one request, in memory: it is never
persisted, logged or traced (``describe`` and ``outcome`` report counts only). Placeholders
are read back tolerantly (``placeholders.py``: case, spaces and brackets a model changed).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from hybridinfer.errors import InvalidInput
from hybridinfer.privacy.detect import Detector, Finding, default_detector, merge
from hybridinfer.privacy.placeholders import TOLERANT, accepted, placeholders_in

PLACEHOLDER = re.compile(r"<(?P<kind>[A-Z]+)_(?P<number>\d+)>")
"""A placeholder as it is issued."""


class Pseudonymiser:
    """One request's mapping between personal values and their placeholders."""

    def __init__(
        self,
        find_more: Callable[[str], list[Finding]] | None = None,
        detector: Detector | None = None,
    ) -> None:
        """``find_more``: an extra finder (NER names and places) besides the patterns of
        ``detector`` (default: every recogniser, the default phone regions)."""
        self._find_more = find_more
        self._detector = detector or default_detector()
        self.restored = 0
        """Placeholders put back so far (each occurrence)."""
        self.unissued = 0
        """Placeholder-like strings read back that this mapping never issued (left as is)."""
        self._placeholder_of: dict[str, str] = {}
        self._value_of: dict[str, str] = {}
        self._counts: Counter[str] = Counter()
        self._reserved: set[str] = set()

    def redact(self, text: str) -> str:
        """``text`` with each personal value replaced; the same value always gets the same
        placeholder. Placeholder-like strings already in the text are never issued, so
        ``restore(redact(text)) == text``."""
        self._reserved.update(placeholders_in(text))
        pieces: list[str] = []
        position = 0
        findings = self._detector.detect(text)
        if self._find_more is not None:
            findings = merge(findings, self._find_more(text))
        for finding in findings:
            pieces.append(text[position : finding.start])
            pieces.append(self._placeholder(finding.kind, finding.value))
            position = finding.end
        pieces.append(text[position:])
        return "".join(pieces)

    def restore(self, value: Any) -> Any:
        """``value`` (a string, or lists and dicts holding strings) with placeholders this
        mapping issued replaced by the original values; other text is left as it is. A
        tool call's ``arguments`` (JSON text) gets the values JSON-escaped."""
        if isinstance(value, str):
            return self.restore_text(value)
        if isinstance(value, list):
            return [self.restore(item) for item in value]
        if isinstance(value, dict):
            return {
                key: self.restore_text(item, json_text=True)
                if key == "arguments" and isinstance(item, str)
                else self.restore(item)
                for key, item in value.items()
            }
        return value

    def restore_text(self, text: str, json_text: bool = False) -> str:
        """``text`` with each issued placeholder, however reformatted, replaced by its value
        (escaped for a JSON string when ``json_text``)."""
        if not any(character.isdigit() for character in text):
            return text  # every placeholder has a number: most pieces of an answer stop here
        return TOLERANT.sub(lambda match: self._put_back(match, json_text), text)

    def _put_back(self, match: re.Match[str], json_text: bool) -> str:
        reading = accepted(match)
        if reading is None:
            return match.group()
        prefix, placeholder, suffix = reading
        value = self._value_of.get(placeholder)
        if value is None:
            if placeholder not in self._reserved:
                self.unissued += 1
            return match.group()
        self.restored += 1
        if json_text:
            value = orjson.dumps(value).decode()[1:-1]
        return f"{prefix}{value}{suffix}"

    def outcome(self) -> dict[str, Any]:
        """What was replaced and put back (kinds and counts, never values; safe to trace)."""
        return {
            "kinds": self.describe(),
            "values": len(self._value_of),
            "restored": self.restored,
            "unissued": self.unissued,
        }

    def __repr__(self) -> str:  # never the values: a mapping may end up in a log line
        return f"Pseudonymiser({self.describe()})"

    def describe(self) -> dict[str, int]:
        """How many distinct values of each kind were replaced (safe to trace)."""
        return dict(Counter(placeholder[1:].rsplit("_", 1)[0] for placeholder in self._value_of))

    def _placeholder(self, kind: str, value: str) -> str:
        existing = self._placeholder_of.get(value)
        if existing is not None:
            return existing
        while True:
            self._counts[kind] += 1
            placeholder = f"<{kind}_{self._counts[kind]}>"
            if placeholder not in self._reserved:
                break
        self._placeholder_of[value] = placeholder
        self._value_of[placeholder] = value
        return placeholder


def redact_step(
    inputs: Mapping[str, Any], find_more: Callable[[str], list[Finding]] | None = None
) -> dict[str, Any]:
    """The ``redact`` step: every text input (a string or a list of strings) pseudonymised
    under one mapping, returned under its own name, plus ``pseudonyms`` (the mapping, kept in
    this request's memory for ``restore``) and ``found`` (counts per kind)."""
    mapping = Pseudonymiser(find_more)
    outputs: dict[str, Any] = {}
    for name, value in inputs.items():
        if isinstance(value, str):
            outputs[name] = mapping.redact(value)
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            outputs[name] = [mapping.redact(item) for item in value]
        elif value is not None:
            raise InvalidInput(f"redact: input {name!r} must be a string or a list of strings")
    outputs["pseudonyms"] = mapping
    outputs["found"] = mapping.describe()
    return outputs


def restore_step(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The ``restore`` step: ``text`` with the placeholders of ``pseudonyms`` put back."""
    mapping = inputs.get("pseudonyms")
    if not isinstance(mapping, Pseudonymiser):
        raise InvalidInput("restore: input 'pseudonyms' must come from a redact step")
    return {"text": mapping.restore(inputs.get("text"))}
