from __future__ import annotations

import pytest

from hybridinfer.decompose.rules import default_rules_path, load_rules, parse_rules
from hybridinfer.errors import ConfigError

VALID = """\
version: 1
tasks:
  sentiment:
    inputs:
      text: {type: string}
    subtasks:
      - id: classify
        capability: text-classification
        inputs: {text: $inputs.text}
    outputs:
      label: $classify.label
"""


def test_the_bundled_rules_are_valid_and_cover_the_demo_tasks() -> None:
    rules = load_rules(default_rules_path())
    assert {"sentiment", "digits"} <= set(rules.tasks)


def test_a_valid_table_parses() -> None:
    rules = parse_rules(VALID)
    assert rules.tasks["sentiment"].subtasks[0].capability == "text-classification"


def test_a_missing_field_names_its_line() -> None:
    broken = VALID.replace("        capability: text-classification\n", "")
    with pytest.raises(ConfigError) as caught:
        parse_rules(broken, "rules.yaml")
    assert "rules.yaml:7:" in caught.value.message
    assert "capability" in caught.value.message


def test_a_wrong_type_names_its_line() -> None:
    broken = VALID.replace("version: 1", "version: one")
    with pytest.raises(ConfigError) as caught:
        parse_rules(broken, "rules.yaml")
    assert caught.value.message.startswith("rules.yaml:1:")


def test_invalid_yaml_names_its_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_rules("version: 1\ntasks: [\n", "r.yaml")
    assert "r.yaml:3" in caught.value.message


def test_reference_to_an_undeclared_input_is_rejected() -> None:
    with pytest.raises(ConfigError, match="does not declare"):
        parse_rules(VALID.replace("$inputs.text}", "$inputs.body}"))


def test_reference_to_a_subtask_that_is_not_a_dependency_is_rejected() -> None:
    two_steps = VALID.replace(
        "    outputs:",
        "      - id: second\n"
        "        capability: chat\n"
        "        inputs: {prompt: $classify.label}\n"
        "    outputs:",
    )
    with pytest.raises(ConfigError, match="not a declared dependency"):
        parse_rules(two_steps)
    fixed = two_steps.replace(
        "inputs: {prompt: $classify.label}",
        "inputs: {prompt: $classify.label}\n        depends_on: [classify]",
    )
    assert len(parse_rules(fixed).tasks["sentiment"].subtasks) == 2


def test_cycles_and_forward_dependencies_are_rejected() -> None:
    forward = VALID.replace(
        "        inputs: {text: $inputs.text}\n",
        "        inputs: {text: $inputs.text}\n        depends_on: [later]\n",
    )
    with pytest.raises(ConfigError, match="not an earlier subtask"):
        parse_rules(forward)
