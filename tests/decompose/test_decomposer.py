from __future__ import annotations

import pytest

from hybridinfer.core.plan import Privacy
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.decompose.rules import default_rules_path, load_rules
from hybridinfer.errors import InvalidInput, UnknownTask


@pytest.fixture
def decomposer() -> Decomposer:
    return Decomposer(load_rules(default_rules_path()))


def test_sentiment_becomes_one_labelled_subtask(decomposer: Decomposer) -> None:
    plan = decomposer.plan("sentiment", {"text": "I love this"}, None)
    [classify] = plan.subtasks
    assert classify.capability == "text-classification"
    assert classify.task == "sentiment"
    assert classify.privacy is Privacy.INTERNAL
    assert classify.size == len("I love this")
    assert plan.outputs["label"] == "$classify.label"


def test_the_request_can_raise_privacy(decomposer: Decomposer) -> None:
    plan = decomposer.plan("sentiment", {"text": "x"}, Privacy.SENSITIVE)
    assert plan.subtasks[0].privacy is Privacy.SENSITIVE


def test_unknown_task(decomposer: Decomposer) -> None:
    with pytest.raises(UnknownTask) as caught:
        decomposer.plan("astrology", {}, None)
    assert caught.value.error_code == "unknown_task"
    assert "sentiment" in caught.value.message


@pytest.mark.parametrize(
    ("task", "inputs", "problem"),
    [
        ("sentiment", {}, "required"),
        ("sentiment", {"text": 5}, "must be a string"),
        ("sentiment", {"text": "x", "extra": 1}, "unknown inputs"),
        ("digits", {"pixels": [0] * 63}, "exactly 64"),
        ("digits", {"pixels": [17] * 64}, "between"),
        ("digits", {"pixels": ["a"] * 64}, "list of numbers"),
        ("digits", {"pixels": [True] * 64}, "list of numbers"),
    ],
)
def test_bad_inputs_are_refused(
    decomposer: Decomposer, task: str, inputs: dict[str, object], problem: str
) -> None:
    with pytest.raises(InvalidInput, match=problem):
        decomposer.plan(task, inputs, None)  # type: ignore[arg-type]


RELOADED = """\
version: 1
tasks:
  sentiment:
    inputs:
      text: {type: string}
      note: {type: string, required: false}
    subtasks:
      - id: classify
        capability: text-classification
        task: sentiment
        inputs: {text: $inputs.text, note: $inputs.note}
    outputs:
      label: $classify.label
"""


def test_a_reloaded_table_brings_its_own_exposed_inputs(decomposer: Decomposer) -> None:
    before = decomposer.plan("sentiment", {"text": "fine"}, None)
    assert before.subtasks[0].raw_inputs == {"text"}
    decomposer.reload(RELOADED)
    after = decomposer.plan("sentiment", {"text": "fine", "note": "mail a@b.io"}, None)
    assert after.subtasks[0].raw_inputs == {"text", "note"}
    assert after.subtasks[0].privacy is Privacy.SENSITIVE
