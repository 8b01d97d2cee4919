"""Prompts that let a chat model serve a step of a composite plan: each keeps placeholders,
fills its own output field, and refuses missing inputs; and the completion prompts a base
model is asked with instead."""

from __future__ import annotations

import pytest

from hybridinfer.backends.prompts import CHAT_EXAMPLES, CHAT_STOP, PROMPT_TASKS, chat_prompt
from hybridinfer.errors import InvalidInput

KEEP = "Copy placeholders in angle brackets (like <KIND_N>) exactly as written."


def content(capability: str, inputs: dict[str, object]) -> str:
    (message,) = PROMPT_TASKS[capability].messages(inputs)
    assert message["role"] == "user"
    return message["content"]


def test_each_capability_fills_its_own_output_field() -> None:
    assert {name: task.output for name, task in PROMPT_TASKS.items()} == {
        "summarization": "summary",
        "captioning": "caption",
        "question-answering": "answer",
    }


def test_a_summary_prompt_carries_the_text_and_asks_to_keep_placeholders() -> None:
    prompt = content("summarization", {"text": "Mail <EMAIL_1> about the invoice."})
    assert prompt.endswith("\n\nMail <EMAIL_1> about the invoice.")
    assert KEEP in prompt


def test_an_answer_prompt_joins_the_passages_and_asks_the_question() -> None:
    prompt = content(
        "question-answering",
        {"passages": ["First passage.", "Second passage."], "question": "Who is <PERSON_1>?"},
    )
    assert "Passages:\nFirst passage.\n\nSecond passage.\n\nQuestion: Who is <PERSON_1>?" in prompt
    assert KEEP in prompt


def test_a_caption_prompt_names_the_digit_and_a_float_confidence() -> None:
    assert "digit in an 8x8 grey image: 7 (confidence 0.93)." in content(
        "captioning", {"label": 7, "confidence": 0.9312}
    )
    assert "image: 7. Describe" in content("captioning", {"label": 7, "confidence": "high"})


@pytest.mark.parametrize(
    ("capability", "inputs", "message"),
    [
        ("summarization", {}, "'text' must be a non-empty string"),
        ("summarization", {"text": ""}, "'text' must be a non-empty string"),
        ("summarization", {"text": ["a", 1]}, "'text' must be a non-empty string"),
        ("question-answering", {"passages": ["p"]}, "'question' must be a non-empty string"),
        ("captioning", {"confidence": 0.5}, "'label' is missing"),
    ],
)
def test_missing_inputs_are_invalid(
    capability: str, inputs: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        PROMPT_TASKS[capability].messages(inputs)
    with pytest.raises(InvalidInput, match=message):
        PROMPT_TASKS[capability].completion(inputs)


def test_a_chat_becomes_questions_and_answers_after_the_worked_examples() -> None:
    prompt = chat_prompt(
        [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "What is 2 + 2?"},
            {"role": "assistant", "content": "4."},
            {"role": "user", "content": [{"type": "text", "text": "And 3 + 3?"}]},
        ]
    )
    assert prompt.prompt == (
        f"You are terse.\n\n{CHAT_EXAMPLES}"
        "Question: What is 2 + 2?\nAnswer: 4.\n\nQuestion: And 3 + 3?\nAnswer:"
    )
    assert prompt.stop == CHAT_STOP
    assert CHAT_EXAMPLES.endswith("\n\n")


def test_an_unfinished_assistant_turn_is_continued_and_a_chat_needs_a_turn() -> None:
    prompt = chat_prompt(
        [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "Bl"}]
    )
    assert prompt.prompt.endswith("Question: Name a colour.\nAnswer: Bl")
    with pytest.raises(InvalidInput, match="at least one user message"):
        chat_prompt([{"role": "system", "content": "Be nice."}])


def test_completion_prompts_end_where_the_answer_begins_and_show_placeholders_kept() -> None:
    summary = PROMPT_TASKS["summarization"].completion({"text": "Mail <EMAIL_1> today."})
    assert summary.prompt.endswith("Text: Mail <EMAIL_1> today.\nSummary:")
    assert "<PHONE_1>" in summary.prompt.split("Text: Mail")[0]  # the example copies one
    assert "\nText:" in summary.stop
    answer = PROMPT_TASKS["question-answering"].completion(
        {"passages": ["First.", "Second."], "question": "Who is <PERSON_1>?"}
    )
    assert answer.prompt.endswith(
        "Passages:\nFirst.\n\nSecond.\n\nQuestion: Who is <PERSON_1>?\nAnswer:"
    )
    caption = PROMPT_TASKS["captioning"].completion({"label": 4, "confidence": 0.912})
    assert caption.prompt.endswith("Digit: 4 (confidence 0.91)\nCaption:")
    assert caption.stop == ("\n",)
