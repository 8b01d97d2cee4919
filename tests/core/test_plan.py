"""A plan's labels: privacy only tightens, and the trace's view of a plan is a copy."""

from __future__ import annotations

import pytest

from hybridinfer.core.plan import Plan, Privacy, Subtask


@pytest.mark.parametrize(
    ("label", "other", "stricter"),
    [
        (Privacy.PUBLIC, Privacy.INTERNAL, Privacy.INTERNAL),
        (Privacy.SENSITIVE, Privacy.PUBLIC, Privacy.SENSITIVE),
        (Privacy.INTERNAL, Privacy.SENSITIVE, Privacy.SENSITIVE),
        (Privacy.INTERNAL, Privacy.INTERNAL, Privacy.INTERNAL),
    ],
)
def test_at_least_keeps_the_stricter_label(
    label: Privacy, other: Privacy, stricter: Privacy
) -> None:
    assert label.at_least(other) is stricter
    assert other.at_least(label) is stricter


def test_ranks_order_public_internal_sensitive() -> None:
    assert [p.rank for p in (Privacy.PUBLIC, Privacy.INTERNAL, Privacy.SENSITIVE)] == [0, 1, 2]


def test_describe_lists_each_subtasks_labels_and_copies_the_outputs() -> None:
    redact = Subtask(
        "redact", "redaction", None, {"text": "$inputs.text"}, stays_local=True, soft=True
    )
    classify = Subtask(
        "classify",
        "text-classification",
        "sentiment",
        {"text": "$redact.text"},
        depends_on=("redact",),
        privacy=Privacy.SENSITIVE,
        size=12,
        complexity=0.25,
        latency_sensitive=True,
    )
    plan = Plan("sentiment", [redact, classify], {"label": "$classify.label"})

    described = plan.describe()
    described["outputs"]["extra"] = "$classify.confidence"

    assert plan.outputs == {"label": "$classify.label"}
    assert described["task"] == "sentiment"
    first, second = described["subtasks"]
    assert (first["id"], first["stays_local"], first["soft"], first["task"]) == (
        "redact",
        True,
        True,
        None,
    )
    assert second == {
        "id": "classify",
        "capability": "text-classification",
        "task": "sentiment",
        "depends_on": ["redact"],
        "privacy": "sensitive",
        "size": 12,
        "complexity": 0.25,
        "soft": False,
        "latency_sensitive": True,
        "stays_local": False,
        "difficulty": None,
        "privacy_mode": "private",
    }
