"""The rule table: which plan each task type becomes, validated before it is used."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hybridinfer.core.plan import Privacy
from hybridinfer.yamlfile import parse_document

REFERENCE = re.compile(r"^\$(?P<source>[A-Za-z_][\w-]*)\.(?P<field>[A-Za-z_][\w-]*)$")
"""``$inputs.text`` (a request input) or ``$classify.label`` (a subtask's output)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputSpec(_Strict):
    """What one request input must look like."""

    type: Literal["string", "numbers", "number", "integer", "texts", "messages", "json"]
    """``texts``: one string or a list of them; ``messages``: chat messages (the OpenAI
    schema); ``json``: any JSON value (its size counts nothing toward the input limit);
    ``number``/``integer``: one value within minimum..maximum."""
    required: bool = True
    max_length: int | None = Field(
        default=None, gt=0, description="Longest string (texts, messages: all of them) allowed."
    )
    max_items: int | None = Field(default=None, gt=0, description="Most texts or messages.")
    length: int | None = Field(default=None, gt=0, description="Exact count of numbers.")
    minimum: float | None = None
    maximum: float | None = None


class SubtaskRule(_Strict):
    """One step of a plan template."""

    id: str = Field(pattern=r"^[A-Za-z_][\w-]*$")
    capability: str
    task: str | None = None
    inputs: dict[str, str]
    depends_on: list[str] = []
    privacy: Privacy | None = None
    complexity: float = Field(default=0.5, ge=0.0, le=1.0)
    soft: bool = False
    latency_sensitive: bool = False
    clean_outputs: list[str] = []
    """Outputs free of raw personal data even when the inputs hold some (a redactor's texts)."""
    stays_local: bool = False
    """Runs on the local tier whatever ``options.route`` says (redaction, restoring values)."""

    @field_validator("inputs")
    @classmethod
    def _references(cls, inputs: dict[str, str]) -> dict[str, str]:
        for name, value in inputs.items():
            if not REFERENCE.match(value):
                raise ValueError(f"input {name!r}: {value!r} is not a $source.field reference")
        return inputs


class TaskRule(_Strict):
    """A task type and the plan template it becomes."""

    description: str = ""
    inputs: dict[str, InputSpec]
    subtasks: list[SubtaskRule] = Field(min_length=1)
    outputs: dict[str, str]
    timeout_ms: int | None = Field(
        default=None, gt=0, description="Deadline ceiling for this task (default: the gateway's)."
    )

    def step(self, step_id: str) -> SubtaskRule:
        """The subtask rule with this id (references were checked at load)."""
        return next(step for step in self.subtasks if step.id == step_id)

    @model_validator(mode="after")
    def _dag(self) -> TaskRule:
        seen: set[str] = set()
        for subtask in self.subtasks:
            if subtask.id in seen or subtask.id == "inputs":
                raise ValueError(f"subtask id {subtask.id!r} is used twice or reserved")
            for dependency in subtask.depends_on:
                if dependency not in seen:
                    raise ValueError(
                        f"subtask {subtask.id!r} depends on {dependency!r}, "
                        "which is not an earlier subtask (plans are acyclic, listed in order)"
                    )
            for value in subtask.inputs.values():
                self._check_reference(value, allowed=set(subtask.depends_on))
            seen.add(subtask.id)
        for value in self.outputs.values():
            self._check_reference(value, allowed=seen)
        return self

    def _check_reference(self, value: str, allowed: set[str]) -> None:
        match = REFERENCE.match(value)
        if match is None:
            raise ValueError(f"{value!r} is not a $source.field reference")
        source, field = match["source"], match["field"]
        if source == "inputs":
            if field not in self.inputs:
                raise ValueError(f"{value!r} names an input the task does not declare")
        elif source not in allowed:
            raise ValueError(f"{value!r} reads a subtask that is not a declared dependency")


class RuleTable(_Strict):
    """The whole rule file."""

    version: int = Field(ge=1)
    tasks: dict[str, TaskRule] = Field(min_length=1)


def parse_rules(text: str, source: str = "rules.yaml") -> RuleTable:
    """Validate a rule file; a ConfigError names the line of each problem."""
    return parse_document(RuleTable, text, source)


def load_rules(path: Path) -> RuleTable:
    """Read and validate a rule file."""
    return parse_rules(path.read_text(encoding="utf-8"), str(path))


def default_rules_path() -> Path:
    return Path(__file__).resolve().parent.parent / "defaults" / "rules.yaml"


@functools.cache  # a rule table's few references, split on every request otherwise
def split_reference(value: str) -> tuple[str, str]:
    """``$classify.label`` → ``("classify", "label")``; the table was validated, so it matches."""
    match = REFERENCE.match(value)
    assert match is not None, value
    return match["source"], match["field"]


def describe_input(spec: InputSpec) -> dict[str, Any]:
    return spec.model_dump(exclude_none=True)
