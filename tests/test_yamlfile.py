"""YAML documents whose every error names its line: syntax, values, keys and schema."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from hybridinfer.errors import ConfigError
from hybridinfer.yamlfile import line_of, load_with_lines, parse_document


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    weight: float = 1.0


class Document(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str
    steps: list[Step]


TEXT = "version: '1'\nsteps:\n  - name: a\n  - name: b\n    weight: 2\n"


def test_every_key_and_item_has_its_line() -> None:
    data, lines = load_with_lines(TEXT, "d.yaml")
    assert data == {"version": "1", "steps": [{"name": "a"}, {"name": "b", "weight": 2}]}
    assert lines[("version",)] == 1
    assert lines[("steps", 0)] == 3
    assert lines[("steps", 1, "weight")] == 5


def test_a_path_the_document_lacks_takes_its_nearest_ancestors_line() -> None:
    _, lines = load_with_lines(TEXT, "d.yaml")
    assert line_of(lines, ("steps", 1, "missing", 0)) == lines[("steps", 1)]
    assert line_of(lines, ("nowhere",)) == 1
    assert line_of({}, ("a",)) == 1


def test_schema_errors_name_file_line_and_field() -> None:
    bad = "version: '1'\nsteps:\n  - name: a\n  - name: b\n    weight: heavy\n    colour: red\n"
    with pytest.raises(ConfigError) as caught:
        parse_document(Document, bad, "d.yaml")
    assert "d.yaml:5: steps.1.weight:" in caught.value.message
    assert "d.yaml:6: steps.1.colour: Extra inputs are not permitted" in caught.value.message
    with pytest.raises(ConfigError, match=r"d\.yaml:1: steps: Field required"):
        parse_document(Document, "version: '1'\n", "d.yaml")


def test_a_valid_document_is_the_model() -> None:
    parsed = parse_document(Document, TEXT, "d.yaml")
    assert [(step.name, step.weight) for step in parsed.steps] == [("a", 1.0), ("b", 2.0)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: '1'\nsteps: [a, b\n", r"d.yaml:3: invalid YAML"),
        ("", r"d.yaml:1: the document is empty"),
        ("version: 1\n? [a, b]\n: value\n", r"d.yaml:2: invalid YAML: a key must be text"),
        ("when: 2001-13-45\n", r"d.yaml:1: invalid YAML: invalid value"),
        ("[" * 1_000 + "]" * 1_000, r"d.yaml:1: invalid YAML: nested too deeply"),
    ],
    ids=["syntax", "empty", "list-key", "bad-date", "deep-nesting"],
)
def test_what_is_not_yaml_is_a_config_error_with_its_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_with_lines(text, "d.yaml")
