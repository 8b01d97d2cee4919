"""Every string field a request schema has, that can reach a backend, is scanned.

The walk builds requests from the schemas themselves (pydantic's JSON schema, every branch
of every union), puts a personal value into one string field at a time, and follows the
request to its plan: where the value reaches the inputs a subtask sends, that subtask must be
``sensitive``. A field added to a schema later is walked without a change here.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from hybridinfer.core.plan import Privacy
from hybridinfer.core.schemas import InferRequest
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.decompose.rules import default_rules_path, load_rules
from hybridinfer.errors import HybridInferError
from hybridinfer.gateway.openai_schemas import ChatCompletionRequest, EmbeddingRequest

CANARY = "a@b.io"
PLAIN = "plain"
Path = tuple[str | int, ...]


class Fixed(str):
    """A value the schema fixes (an enum, a literal): no free text, so never a canary."""

    __slots__ = ()


def fixed(value: Any) -> Any:
    return Fixed(value) if isinstance(value, str) else value


def instances(schema: dict[str, Any], defs: dict[str, Any]) -> Iterator[Any]:
    """One value per branch of ``schema``: every union member, each object with all fields."""
    if "$ref" in schema:
        yield from instances(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
        return
    for union in ("anyOf", "oneOf"):
        if union in schema:
            for branch in schema[union]:
                yield from instances(branch, defs)
            return
    if "const" in schema:
        yield fixed(schema["const"])
    elif "enum" in schema:
        yield fixed(schema["enum"][0])
    elif schema.get("type") == "string":
        yield PLAIN
    elif schema.get("type") == "integer":
        yield max(1, int(schema.get("minimum", 1)))
    elif schema.get("type") == "number":
        yield 0.5
    elif schema.get("type") == "boolean":
        yield False
    elif schema.get("type") == "null":
        yield None
    elif schema.get("type") == "array":
        for item in instances(schema.get("items", {"type": "string"}), defs):
            yield [item]
    elif schema.get("type") == "object" or "properties" in schema:
        yield from _objects(schema, defs)
    else:  # Any
        yield {"free": PLAIN}


def _objects(schema: dict[str, Any], defs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    properties = schema.get("properties", {})
    if not properties:
        yield {"free": PLAIN}
        return
    first = {name: next(instances(sub, defs)) for name, sub in properties.items()}
    yield first
    for name, sub in properties.items():  # every other branch of each field, one at a time
        for value in list(instances(sub, defs))[1:]:
            yield first | {name: value}


def string_paths(value: Any, path: Path = ()) -> Iterator[Path]:
    if isinstance(value, Fixed):
        return
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from string_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from string_paths(item, (*path, index))


def with_canary(value: Any, path: Path) -> Any:
    if not path:
        return CANARY
    changed = copy.deepcopy(value)
    target = changed
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = CANARY
    return changed


def requests_of(model: type[BaseModel]) -> Iterator[tuple[dict[str, Any], Path]]:
    """Valid bodies of ``model`` with the canary in one string field each."""
    schema = model.model_json_schema()
    for body in instances(schema, schema.get("$defs", {})):
        for path in string_paths(body):
            yield with_canary(body, path), path


@pytest.fixture(scope="module")
def decomposer() -> Decomposer:
    return Decomposer(load_rules(default_rules_path()))


def check(decomposer: Decomposer, request: InferRequest, path: Path) -> bool:
    """Whether the canary reaches a subtask's inputs; assert that subtask is sensitive."""
    try:
        plan = decomposer.plan(request.task, request.inputs, request.options.privacy)
    except HybridInferError:
        return False  # refused before any plan (an unsupported part, a wrong type)
    reached = {name for name, value in request.inputs.items() if CANARY in json.dumps(value)}
    for subtask in plan.subtasks:
        if subtask.raw_inputs & reached:
            assert subtask.privacy is Privacy.SENSITIVE, (path, subtask.id)
    return bool(reached)


@pytest.mark.parametrize("model", [ChatCompletionRequest, EmbeddingRequest])
def test_every_openai_string_field_that_reaches_a_backend_is_scanned(
    decomposer: Decomposer, model: type[BaseModel]
) -> None:
    reached, kept_back = set(), set()
    for body, path in requests_of(model):
        try:
            request = model.model_validate(body).to_infer()  # type: ignore[attr-defined]
        except (HybridInferError, ValidationError):
            continue  # a body the schema refuses (a pattern the canary breaks) reaches nothing
        field = ".".join(str(part) for part in path if not isinstance(part, int))
        (reached if check(decomposer, request, path) else kept_back).add(field)
    assert reached, "the walk reached no field: it tests nothing"
    if model is ChatCompletionRequest:
        assert {"messages.content", "messages.name", "messages.content.text"} <= reached
        assert "messages.tool_calls.function.arguments" in reached
        assert "tools.function.description" in reached
        assert "user" in kept_back  # accepted, never forwarded


def test_every_task_input_is_scanned(decomposer: Decomposer) -> None:
    rules = load_rules(default_rules_path())
    chat_schema = ChatCompletionRequest.model_json_schema()
    messages = chat_schema["properties"]["messages"]
    samples = {
        "string": [PLAIN],
        "texts": [PLAIN, [PLAIN, PLAIN]],
        "messages": list(instances(messages, chat_schema["$defs"])),
        "json": [{"free": [PLAIN]}],
    }
    walked = 0
    for task, rule in rules.tasks.items():
        for name, spec in rule.inputs.items():
            for sample in samples.get(spec.type, []):
                for path in string_paths(sample):
                    inputs = {
                        other: samples[s.type][0] if s.type in samples else _number(s.type)
                        for other, s in rule.inputs.items()
                        if s.required or other == name
                    }
                    inputs[name] = with_canary(sample, path)
                    request = InferRequest(task=task, inputs=inputs)
                    walked += check(decomposer, request, (task, name, *path))
    assert walked > 20


def _number(kind: str) -> Any:
    return [0.0] * 64 if kind == "numbers" else 1
