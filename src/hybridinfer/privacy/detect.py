"""Find personal data in text: the recognisers of ``patterns``, ``identifiers`` and
``phones``, run together, overlaps resolved by kind (``findings.KINDS`` order).

Kinds: ``EMAIL``, ``CARD``, ``IBAN``, ``NATIONALID`` (stdnum-validated national numbers),
``SSN`` (US), ``NINO`` (UK), ``IP`` (v4 and v6), ``PHONE``. Names and places need an NER
model (``ner.py``) and are not found here. A ``Detector`` is immutable and safe to share
(its memo of clean texts is a cache of a pure function).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Sequence
from typing import Protocol

from hybridinfer.privacy import identifiers, patterns
from hybridinfer.privacy.digest import text_digest
from hybridinfer.privacy.findings import KINDS, Finding, merge, overlaps
from hybridinfer.privacy.normalise import fold
from hybridinfer.privacy.phones import DEFAULT_REGIONS, PhoneRecogniser
from hybridinfer.privacy.recogniser import Span

__all__ = ["Detector", "Finding", "Recogniser", "default_detector", "detect", "merge"]


class Recogniser(Protocol):
    """Finds one kind of personal data; may skip candidates inside spans already ``taken``."""

    @property
    def kind(self) -> str: ...

    def find(self, text: str, taken: Sequence[Span] = ()) -> list[Finding]: ...


def standard_recognisers(regions: Sequence[str] = DEFAULT_REGIONS) -> list[Recogniser]:
    """Every recogniser this package has, phone numbers for ``regions``."""
    return [*patterns.RECOGNISERS, *identifiers.RECOGNISERS, PhoneRecogniser(regions)]


UUID = re.compile(
    r"(?<![0-9A-Za-z-])[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}(?![0-9A-Za-z-])"
)
"""A UUID (a request, order or trace id): never personal, but a group of its digits reads as a
phone number or an ID often enough to matter (2.8 % of random UUIDs were taken for one). The
recognisers skip what lies inside one; a value that reaches past it is still theirs."""

CLEAN_MEMO_SIZE = 16_384
"""How many texts found clean a detector remembers (by digest): the keys of every chat
message (``role``, ``content``, ``user``), small numbers (``max_tokens`` 256 reads as "256"
and goes through every recogniser: ~20 us), a system prompt, a conversation resent turn
after turn. ~2 MB at most; the oldest is dropped first."""
CLEAN_MEMO_MAX_CHARS = 16_384
"""Longer texts are scanned every time (hashing them would be most of a scan's cost)."""


class Detector:
    """A set of recognisers; ``detect`` runs them all on one text.

    Texts found clean are remembered by a 16-byte digest, never their text, so a text seen
    before (a message key, a repeated system prompt) costs a hash and a lookup. A text with
    personal data is scanned every time: the findings hold the values, and no value is kept
    beyond the request."""

    def __init__(self, recognisers: Iterable[Recogniser]) -> None:
        rank = {kind: position for position, kind in enumerate(KINDS)}
        self.recognisers = sorted(recognisers, key=lambda r: rank.get(r.kind, len(rank)))
        self._clean: dict[bytes, None] = {}

    def without(self, kind: str) -> Detector:
        """The same detector with every recogniser of ``kind`` switched off."""
        return Detector(r for r in self.recognisers if r.kind != kind)

    def detect(self, text: str) -> list[Finding]:
        """Every personal value in ``text``, in order, without overlaps: the longer finding
        wins, then one a word named, then the earlier kind. A recogniser skips candidates
        shorter than a finding already made around them (they could not win), which keeps
        the costly phone check off cards and IBANs. The recognisers read the text folded
        (``normalise``: look-alike spaces, dashes and full-width forms as ASCII, invisible
        characters dropped); findings give the original's positions and characters."""
        if len(text) > CLEAN_MEMO_MAX_CHARS:
            return self.scan(text)
        digest = text_digest(text)
        if digest in self._clean:
            return []
        found = self.scan(text)
        if not found:
            self._remember_clean(digest)
        return found

    def scan(self, text: str) -> list[Finding]:
        """``detect`` without the memo: what a text not seen before costs."""
        folded = fold(text)
        return folded.in_source(self.detect_as_written(folded.text))

    def _remember_clean(self, digest: bytes) -> None:
        """File ``digest``, dropping the oldest past the bound. Another thread may detect at
        the same time (the names process's pseudonymiser): a drop it made first is fine."""
        self._clean[digest] = None
        if len(self._clean) > CLEAN_MEMO_SIZE:
            with contextlib.suppress(StopIteration, RuntimeError, KeyError):
                del self._clean[next(iter(self._clean))]

    def detect_as_written(self, text: str) -> list[Finding]:
        """The recognisers on ``text`` as it is, look-alike and invisible characters
        unfolded (``bench/privacy.py`` measures what folding adds with it)."""
        if not any(character.isdigit() or character == "@" for character in text):
            # Every format here has a digit or an @ but a written-out address: most prose
            # stops here.
            if not patterns.written_email_sign(text):
                return []
            recognisers = [r for r in self.recognisers if r.kind == "EMAIL"]
        else:
            recognisers = self.recognisers
        ids = [match.span() for match in UUID.finditer(text)] if "-" in text else []
        candidates: list[Finding] = []
        for recogniser in recognisers:
            taken = ids + [(finding.start, finding.end) for finding in candidates]
            candidates.extend(recogniser.find(text, taken))
        rank = {kind: position for position, kind in enumerate(KINDS)}
        candidates.sort(key=lambda f: (f.start - f.end, not f.named, rank.get(f.kind, 99)))
        found: list[Finding] = []
        for finding in candidates:
            if not overlaps(finding, found):
                found.append(finding)
        found.sort(key=lambda finding: finding.start)
        return found


_DEFAULT = Detector(standard_recognisers())


def default_detector() -> Detector:
    """The detector with every recogniser and the default phone regions."""
    return _DEFAULT


def detect(text: str) -> list[Finding]:
    """``default_detector().detect(text)``."""
    return _DEFAULT.detect(text)
