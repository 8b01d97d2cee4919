from __future__ import annotations

import pytest

from hybridinfer.decompose.auto import choose_task
from hybridinfer.errors import InvalidInput


@pytest.mark.parametrize(
    ("inputs", "task"),
    [
        ({"pixels": [0] * 64}, "describe_image"),
        ({"text": "How do I reach support?"}, "document_qa"),
        ({"text": "what does billing cost"}, "document_qa"),
        ({"text": "Refund the charge on 4111 1111 1111 1111 please."}, "redact_and_summarize"),
        ({"text": "Please summarise the meeting notes below. We met."}, "redact_and_summarize"),
        ({"text": "The meeting went well. " * 30}, "redact_and_summarize"),
        ({"text": "I love this phone, the battery lasts for days"}, "sentiment"),
    ],
)
def test_picks_the_plan(inputs: dict[str, object], task: str) -> None:
    assert choose_task(dict(inputs)).task == task


def test_question_becomes_the_question_input() -> None:
    choice = choose_task({"text": "Where is the office?"})
    assert choice.inputs == {"question": "Where is the office?"}
    assert choice.reason


@pytest.mark.parametrize("inputs", [{}, {"text": "  "}, {"text": "x", "other": 1}, {"text": 3}])
def test_refuses_what_it_cannot_read(inputs: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        choose_task(dict(inputs))
