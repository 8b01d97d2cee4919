"""How a request reaches a language model: chat messages for an instruction-tuned model, a
completion prompt for a base model.

``PROMPT_TASKS`` lets an LLM serve a text capability of a composite plan: each turns a step's
inputs into chat messages (or, for a base model, a few-shot completion prompt) and names the
output field its answer fills. ``backends/openai.py`` uses them for deployments whose
capability is one of them (the cloud LLM registers ``summarization``, ``captioning`` and
``question-answering`` beside ``chat``). Placeholders such as ``<EMAIL_1>`` must survive the
model, so every prompt asks to copy them verbatim, or shows it done.

A base model (label ``base-model``, such as Gemma-3-270m) was never taught to follow
instructions or a chat template: asked in chat format it repeats the question. It continues
text, so ``chat_prompt`` writes the conversation as a "Question: … Answer:" document after two
worked examples, and stops it where the next question would begin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hybridinfer.core.chat import content_text
from hybridinfer.errors import InvalidInput

_KEEP = "Copy placeholders in angle brackets (like <KIND_N>) exactly as written."


@dataclass(frozen=True, slots=True)
class CompletionPrompt:
    """A base model's request: the text it continues, and where its answer ends."""

    prompt: str
    stop: tuple[str, ...]


CHAT_EXAMPLES = (
    "Question: What is the capital of Italy?\nAnswer: The capital of Italy is Rome.\n\n"
    "Question: How many legs does a spider have?\nAnswer: A spider has eight legs.\n\n"
)
"""The worked examples before every chat: they show the format and the length of an answer."""
CHAT_STOP = ("\n\n", "\nQuestion:")
_ROLE_PREFIX = {"user": "Question", "assistant": "Answer", "tool": "Result"}


def chat_prompt(messages: Sequence[Mapping[str, Any]]) -> CompletionPrompt:
    """A chat as a base model reads it: system text first, the worked examples, then each turn
    as ``Question:`` / ``Answer:``, ending in ``Answer:`` (or in the assistant's own unfinished
    turn, which the model then continues)."""
    preamble: list[str] = []
    turns: list[tuple[str, str]] = []
    for message in messages:
        role, text = str(message.get("role")), content_text(message.get("content")).strip()
        if role in {"system", "developer"}:
            preamble.append(text)
        else:
            turns.append((role, text))
    if not turns:
        raise InvalidInput("a chat needs at least one user message")
    lines: list[str] = []
    for role, text in turns:
        lines.append(f"{_ROLE_PREFIX.get(role, 'Question')}: {text}")
        if role == "assistant":
            lines.append("")
    if turns[-1][0] == "assistant":
        lines.pop()  # the model continues the assistant's turn
    else:
        lines.append("Answer:")
    head = "".join(f"{text}\n\n" for text in preamble if text)
    return CompletionPrompt(head + CHAT_EXAMPLES + "\n".join(lines), CHAT_STOP)


def _text(inputs: Mapping[str, Any], name: str) -> str:
    value = inputs.get(name)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "\n\n".join(value)
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"input {name!r} must be a non-empty string")
    return value


def _label(inputs: Mapping[str, Any]) -> str:
    label, confidence = inputs.get("label"), inputs.get("confidence")
    if label is None:
        raise InvalidInput("input 'label' is missing")
    sure = f" (confidence {confidence:.2f})" if isinstance(confidence, float) else ""
    return f"{label}{sure}"


def _summary(inputs: Mapping[str, Any]) -> str:
    return f"Summarise the text below in two or three sentences. {_KEEP}\n\n{_text(inputs, 'text')}"


def _caption(inputs: Mapping[str, Any]) -> str:
    return (
        f"A classifier recognised a handwritten digit in an 8x8 grey image: {_label(inputs)}. "
        "Describe the image in one short sentence."
    )


def _answer(inputs: Mapping[str, Any]) -> str:
    return (
        f"Answer the question from the passages only, in one or two sentences. {_KEEP}\n\n"
        f"Passages:\n{_text(inputs, 'passages')}\n\nQuestion: {_text(inputs, 'question')}"
    )


def _summary_completion(inputs: Mapping[str, Any]) -> CompletionPrompt:
    example = (
        "Text: <NAME_1> called from <PHONE_1> to say the parcel arrived broken. He wants a "
        "refund to <CARD_1> by Monday.\nSummary: <NAME_1> (<PHONE_1>) reports a broken parcel "
        "and asks for a refund to <CARD_1> by Monday.\n\n"
    )
    text = _text(inputs, "text")
    return CompletionPrompt(f"{example}Text: {text}\nSummary:", ("\n\n", "\nText:", "\nSummary:"))


def _caption_completion(inputs: Mapping[str, Any]) -> CompletionPrompt:
    # Digits as numerals in the examples: with digit names, the model copied the example's name.
    examples = (
        "Digit: 7 (confidence 0.97)\nCaption: A small, blurry grey image of a handwritten 7.\n\n"
        "Digit: 2 (confidence 0.64)\n"
        "Caption: A coarse grey picture of what is probably a handwritten 2.\n\n"
    )
    return CompletionPrompt(f"{examples}Digit: {_label(inputs)}\nCaption:", ("\n",))


def _answer_completion(inputs: Mapping[str, Any]) -> CompletionPrompt:
    # No worked example: with one, the model answered with the example's answer.
    asked = f"Passages:\n{_text(inputs, 'passages')}\n\nQuestion: {_text(inputs, 'question')}"
    return CompletionPrompt(f"{asked}\nAnswer:", ("\n\n", "\nQuestion:", "\nPassages:"))


@dataclass(frozen=True, slots=True)
class PromptTask:
    """How one capability asks a model: the user message or the base-model prompt, and where
    the answer goes."""

    output: str
    build: Callable[[Mapping[str, Any]], str]
    complete: Callable[[Mapping[str, Any]], CompletionPrompt]

    def messages(self, inputs: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat messages for one call; raises InvalidInput if an input is missing."""
        return [{"role": "user", "content": self.build(inputs)}]

    def completion(self, inputs: Mapping[str, Any]) -> CompletionPrompt:
        """The same call for a base model; raises InvalidInput if an input is missing."""
        return self.complete(inputs)


PROMPT_TASKS: dict[str, PromptTask] = {
    "summarization": PromptTask("summary", _summary, _summary_completion),
    "captioning": PromptTask("caption", _caption, _caption_completion),
    "question-answering": PromptTask("answer", _answer, _answer_completion),
}
"""Capability → prompt, for LLM deployments that serve it."""
