"""Prompts that let a chat LLM serve a text capability of a composite plan: each turns a
step's inputs into chat messages and names the output field its answer fills.

``backends/openai.py`` uses them for deployments whose capability is one of ``PROMPT_TASKS``
(the cloud LLM registers ``summarization``, ``captioning`` and ``question-answering`` beside
``chat``). Placeholders such as ``<EMAIL_1>`` must survive the model, so every prompt asks to
copy them verbatim.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hybridinfer.errors import InvalidInput

_KEEP = "Copy placeholders in angle brackets (like <KIND_N>) exactly as written."


def _text(inputs: Mapping[str, Any], name: str) -> str:
    value = inputs.get(name)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "\n\n".join(value)
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"input {name!r} must be a non-empty string")
    return value


def _summary(inputs: Mapping[str, Any]) -> str:
    return f"Summarise the text below in two or three sentences. {_KEEP}\n\n{_text(inputs, 'text')}"


def _caption(inputs: Mapping[str, Any]) -> str:
    label, confidence = inputs.get("label"), inputs.get("confidence")
    if label is None:
        raise InvalidInput("input 'label' is missing")
    sure = f" (confidence {confidence:.2f})" if isinstance(confidence, float) else ""
    return (
        f"A classifier recognised a handwritten digit in an 8x8 grey image: {label}{sure}. "
        "Describe the image in one short sentence."
    )


def _answer(inputs: Mapping[str, Any]) -> str:
    return (
        f"Answer the question from the passages only, in one or two sentences. {_KEEP}\n\n"
        f"Passages:\n{_text(inputs, 'passages')}\n\nQuestion: {_text(inputs, 'question')}"
    )


@dataclass(frozen=True, slots=True)
class PromptTask:
    """How one capability asks a chat model: the user message, and where the answer goes."""

    output: str
    build: Callable[[Mapping[str, Any]], str]

    def messages(self, inputs: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat messages for one call; raises InvalidInput if an input is missing."""
        return [{"role": "user", "content": self.build(inputs)}]


PROMPT_TASKS: dict[str, PromptTask] = {
    "summarization": PromptTask("summary", _summary),
    "captioning": PromptTask("caption", _caption),
    "question-answering": PromptTask("answer", _answer),
}
"""Capability → prompt, for chat deployments that serve it."""
