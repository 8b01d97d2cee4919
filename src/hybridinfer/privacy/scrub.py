"""Text that is stored or logged carries no personal value: each found value becomes its kind.

Error messages name what is wrong, but an upstream may echo what it was sent and a schema error
may name a key the caller chose. Traces, attempts and validation messages pass through
``scrub`` before they are kept or answered: ``"bad value jane@example.com"`` becomes
``"bad value <EMAIL>"``.
"""

from __future__ import annotations

from hybridinfer.privacy.detect import detect


def scrub(text: str) -> str:
    """``text`` with every value the pattern detectors find replaced by ``<KIND>``."""
    findings = detect(text)
    if not findings:
        return text
    pieces: list[str] = []
    position = 0
    for finding in findings:
        pieces.append(text[position : finding.start])
        pieces.append(f"<{finding.kind}>")
        position = finding.end
    pieces.append(text[position:])
    return "".join(pieces)
