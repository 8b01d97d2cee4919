from __future__ import annotations

import pytest

from hybridinfer.core.plan import Plan, Privacy, Subtask
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.decompose.privacy import apply_privacy_modes, scan_inputs, strings_in
from hybridinfer.decompose.rules import default_rules_path, load_rules
from hybridinfer.policy.privacymodes import PrivacyModes


@pytest.fixture
def decomposer() -> Decomposer:
    return Decomposer(load_rules(default_rules_path()))


def labels(
    decomposer: Decomposer, task: str, inputs: dict[str, object], privacy: Privacy | None = None
) -> dict[str, Privacy]:
    plan = decomposer.plan(task, inputs, privacy)
    return {subtask.id: subtask.privacy for subtask in plan.subtasks}


def test_raw_personal_data_is_sensitive_and_pseudonymised_text_may_leave(
    decomposer: Decomposer,
) -> None:
    got = labels(decomposer, "redact_and_summarize", {"text": "mail me at a@b.io"})
    assert got == {
        "redact": Privacy.SENSITIVE,
        "summarize": Privacy.INTERNAL,
        "restore": Privacy.SENSITIVE,  # reads the mapping, which holds the values
    }


def test_text_without_personal_data_stays_internal(decomposer: Decomposer) -> None:
    got = labels(decomposer, "redact_and_summarize", {"text": "the weather is fine"})
    assert set(got.values()) == {Privacy.INTERNAL}


def test_declared_sensitive_request_lowers_only_after_redaction(decomposer: Decomposer) -> None:
    got = labels(decomposer, "redact_and_summarize", {"text": "plain"}, Privacy.SENSITIVE)
    assert got["redact"] is Privacy.SENSITIVE
    assert got["summarize"] is Privacy.INTERNAL


def test_taint_flows_through_steps_that_saw_raw_data(decomposer: Decomposer) -> None:
    got = labels(decomposer, "document_qa", {"question": "is 10.0.0.1 ours?"})
    assert got["retrieve"] is Privacy.SENSITIVE
    assert got["redact"] is Privacy.SENSITIVE  # reads passages found with the raw question
    assert got["answer"] is Privacy.INTERNAL


def test_single_step_tasks_with_personal_data_become_sensitive(decomposer: Decomposer) -> None:
    assert labels(decomposer, "sentiment", {"text": "call 415-555-2671"}) == {
        "classify": Privacy.SENSITIVE
    }
    messages = [{"role": "user", "content": "my ssn is 123-45-6789"}]
    assert labels(decomposer, "chat", {"messages": messages})["generate"] is Privacy.SENSITIVE


def test_every_string_at_any_depth_is_read() -> None:
    value = {"a": ["x", {"b": "y", "key": ("z",)}], "n": 1.0}
    assert sorted(strings_in(value)) == ["a", "b", "key", "n", "x", "y", "z"]


def test_json_inside_a_string_and_whole_numbers_are_read_too() -> None:
    arguments = '{"city": "Manchester", "call": "\\u7535\\u8bdd13812345678"}'
    found = list(strings_in({"arguments": arguments, "default": 4155550193, "ok": True}))
    assert "Manchester" in found
    assert "电话13812345678" in found
    assert "4155550193" in found
    assert "True" not in found


def test_a_chat_message_name_is_scanned(decomposer: Decomposer) -> None:
    messages = [{"role": "user", "content": "hello", "name": "jane.doe@example.com"}]
    assert labels(decomposer, "chat", {"messages": messages})["generate"] is Privacy.SENSITIVE


def test_scan_reports_kinds_and_counts_never_values() -> None:
    scan = scan_inputs({"text": "a@b.io and c@d.io", "other": "plain"}, Privacy.INTERNAL)
    assert scan.personal == {"text"}
    assert scan.describe()["kinds"] == {"EMAIL": 2}
    assert "a@b.io" not in repr(scan.describe())


class BrokenDetector:
    def detect(self, text: str) -> list[object]:
        raise RuntimeError("model gone")


def test_a_failing_detector_marks_the_input_personal() -> None:
    scan = scan_inputs({"text": "plain"}, Privacy.INTERNAL, BrokenDetector())  # type: ignore[arg-type]
    assert scan.personal == {"text"}
    assert scan.failed == {"text"}


def test_a_failing_detector_keeps_the_subtask_private() -> None:
    decomposer = Decomposer(load_rules(default_rules_path()), BrokenDetector())  # type: ignore[arg-type]
    assert labels(decomposer, "sentiment", {"text": "plain words"}) == {
        "classify": Privacy.SENSITIVE
    }


def test_privacy_modes_follow_the_capability_unless_the_caller_says_sensitive() -> None:
    modes = PrivacyModes(capabilities={"chat": "pseudonymise"})
    chat = Subtask(id="g", capability="chat", task=None, inputs={})
    local = Subtask(id="r", capability="chat", task=None, inputs={}, stays_local=True)
    other = Subtask(id="c", capability="text-classification", task=None, inputs={})
    plan = Plan("chat", [chat, local, other])
    apply_privacy_modes(plan, modes, None)
    assert [s.privacy_mode for s in plan.subtasks] == ["pseudonymise", "private", "private"]
    declared = Plan("chat", [Subtask(id="g", capability="chat", task=None, inputs={})])
    apply_privacy_modes(declared, modes, Privacy.SENSITIVE)
    assert declared.subtasks[0].privacy_mode == "private"
