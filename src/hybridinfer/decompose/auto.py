"""``task: "auto"``: a transparent rule picks the plan for a free-form request.

- ``pixels`` (64 numbers) → ``describe_image``;
- ``text`` that asks something (ends with ``?`` or starts with a question word) →
  ``document_qa``, the text becoming the ``question``;
- ``text`` that holds personal data, asks for a summary, or is longer than a tweet-sized
  message (``SUMMARY_MIN_CHARS``) → ``redact_and_summarize``;
- any other ``text`` → ``sentiment``.

A rule rather than a model: it costs microseconds, and the trace can say exactly why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hybridinfer.errors import InvalidInput
from hybridinfer.privacy.detect import detect

AUTO_TASK = "auto"
SUMMARY_MIN_CHARS = 400
_QUESTION = re.compile(r"^\s*(how|what|when|where|who|why|which|can|does|is|are)\b", re.I)
_SUMMARY = re.compile(r"\b(summari[sz]e|summary|tl;?dr)\b", re.I)


@dataclass(frozen=True, slots=True)
class AutoChoice:
    """The task picked, its inputs, and why."""

    task: str
    inputs: dict[str, Any]
    reason: str


def choose_task(inputs: dict[str, Any]) -> AutoChoice:
    """The plan for a free-form request; InvalidInput if it has neither text nor pixels."""
    if set(inputs) == {"pixels"}:
        return AutoChoice("describe_image", inputs, "pixels given: an image")
    text = inputs.get("text")
    if set(inputs) != {"text"} or not isinstance(text, str) or not text.strip():
        raise InvalidInput('task "auto" takes inputs {"text": "..."} or {"pixels": [...]}')
    stripped = text.strip()
    if stripped.endswith("?") or _QUESTION.match(stripped):
        return AutoChoice("document_qa", {"question": text}, "the text asks a question")
    if detect(text):
        return AutoChoice("redact_and_summarize", inputs, "the text holds personal data")
    if _SUMMARY.search(text) or len(text) >= SUMMARY_MIN_CHARS:
        return AutoChoice("redact_and_summarize", inputs, "a long text or a summary request")
    return AutoChoice("sentiment", inputs, "a short statement")
