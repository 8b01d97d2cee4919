"""The privacy corpus's values disguised as a writer (or a prompt built to leak) might write
them: what a person and a model read as the same value, a pattern may not.

Each valid value of ``bench/privacy.py``'s corpus, in its sentence, is rewritten one way at a
time:

- ``no-break spaces``: its spaces as U+00A0 (values written with spaces only);
- ``unicode dashes``: its hyphens as non-breaking hyphens U+2011 (values with hyphens only);
- ``zero-width inside``: a zero-width space U+200B in its middle;
- ``full width``: its ASCII as full-width forms (U+FF01-U+FF5E);
- ``written out``: an e-mail address as ``local [at] domain [dot] tld`` (e-mail only).

Recall is scored as the corpus's (a finding of the value's kind covering it; *any kind*: a
finding of any kind covering it), once by ``Detector.detect`` and once by the same recognisers
on the text as written (``Detector.detect_as_written``): the difference is what folding the
text adds, measured side by side on the same sentences. (An address written out is found by
a recogniser of its own, both ways.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from bench.privacy import VALID, Label, Sample, Score
from hybridinfer.privacy.detect import Detector


def _no_break_spaces(label: Label) -> str | None:
    return label.value.replace(" ", "\u00a0") if " " in label.value else None


def _unicode_dashes(label: Label) -> str | None:
    return label.value.replace("-", "\u2011") if "-" in label.value else None


def _zero_width(label: Label) -> str | None:
    middle = len(label.value) // 2
    return label.value[:middle] + "\u200b" + label.value[middle:]


def _full_width(label: Label) -> str | None:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in label.value)


def _written_out(label: Label) -> str | None:
    if label.kind != "EMAIL":
        return None
    local, _, domain = label.value.partition("@")
    return f"{local} [at] " + " [dot] ".join(domain.split("."))


DISGUISES: dict[str, Callable[[Label], str | None]] = {
    "no-break spaces": _no_break_spaces,
    "unicode dashes": _unicode_dashes,
    "zero-width inside": _zero_width,
    "full width": _full_width,
    "written out": _written_out,
}


def disguised(samples: list[Sample], disguise: Callable[[Label], str | None]) -> Iterator[Sample]:
    """Each sample with one valid value, that value rewritten by ``disguise``."""
    for sample in samples:
        if len(sample.labels) != 1 or sample.labels[0].validity != VALID:
            continue
        label = sample.labels[0]
        value = disguise(label)
        if value is None or value == label.value:
            continue
        text = sample.text[: label.start] + value + sample.text[label.end :]
        moved = replace(label, end=label.start + len(value), value=value)
        yield replace(sample, text=text, labels=(moved,))


def disguised_section(
    samples: list[Sample], detector: Detector, kinds: tuple[str, ...]
) -> dict[str, Any]:
    """Recall per disguise and kind, folded and as written."""
    section: dict[str, Any] = {}
    for name, disguise in DISGUISES.items():
        rewritten = list(disguised(samples, disguise))
        rows: dict[str, Any] = {}
        for way, find in (("folded", detector.detect), ("as written", detector.detect_as_written)):
            tallies = Score(kinds)
            for sample in rewritten:
                tallies.run(sample, find)
            report = tallies.report()["kinds"]
            rows[way] = {
                kind: {key: report[kind][key] for key in ("n", "recall", "recall_any_kind")}
                for kind in kinds
                if report[kind]["n"]
            }
            rows[way]["misses"] = {
                kind: report[kind]["misses"][:3] for kind in kinds if report[kind]["misses"]
            }
        section[name] = {"sentences": len(rewritten), **rows}
    return section
