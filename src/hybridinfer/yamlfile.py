"""YAML documents validated against a pydantic schema, with errors that name the line.

Operators edit policies and rule tables by hand; an error that says
``rules.yaml:14: tasks.sentiment.subtasks.0.capability: field required`` is fixed in seconds.
"""

from __future__ import annotations

from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from hybridinfer.errors import ConfigError

Model = TypeVar("Model", bound=BaseModel)
Path = tuple[str | int, ...]


def _walk(node: yaml.Node, path: Path, lines: dict[Path, int]) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node)
            if not isinstance(key, str | int):
                raise _BadNode(key_node, "a key must be text or a whole number")
            lines[(*path, key)] = key_node.start_mark.line + 1
            result[key] = _walk(value_node, (*path, key), lines)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_walk(item, (*path, index), lines) for index, item in enumerate(node.value)]
    return _scalar(node)


class _BadNode(Exception):
    def __init__(self, node: yaml.Node, problem: str) -> None:
        super().__init__(problem)
        self.line = node.start_mark.line + 1
        self.problem = problem


def _scalar(node: yaml.Node) -> Any:
    """A node's value as safe_load would build it (``key:`` is None, ``2024-01-01`` a date)."""
    try:
        return yaml.constructor.SafeConstructor().construct_object(node, deep=True)
    except (yaml.YAMLError, ValueError, TypeError) as exc:  # e.g. a date like 2001-13-45
        raise _BadNode(node, f"invalid value: {str(exc).splitlines()[0]}") from None


def load_with_lines(text: str, source: str) -> tuple[Any, dict[Path, int]]:
    """Parse one YAML document; return the data and the line of every key and item."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{source}{line}: invalid YAML: {problem}") from None
    except RecursionError:  # hostile nesting ([[[[...) exhausts the composer's stack
        raise ConfigError(f"{source}:1: invalid YAML: nested too deeply") from None
    if node is None:
        raise ConfigError(f"{source}:1: the document is empty")
    lines: dict[Path, int] = {}
    try:
        return _walk(node, (), lines), lines
    except _BadNode as bad:
        raise ConfigError(f"{source}:{bad.line}: invalid YAML: {bad.problem}") from None
    except RecursionError:
        raise ConfigError(f"{source}:1: invalid YAML: nested too deeply") from None


def line_of(lines: dict[Path, int], path: Path) -> int:
    """The line of ``path``, or of its nearest ancestor the document has."""
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get((), 1)


def parse_document(model: type[Model], text: str, source: str) -> Model:
    """Parse and validate ``text`` as ``model``; a ConfigError names file, line and field."""
    return parse_document_with_lines(model, text, source)[0]


def parse_document_with_lines(
    model: type[Model], text: str, source: str
) -> tuple[Model, dict[Path, int]]:
    """As ``parse_document``, also returning the line of every key (for later checks)."""
    data, lines = load_with_lines(text, source)
    try:
        return model.model_validate(data), lines
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = tuple(error["loc"])
            where = ".".join(str(part) for part in loc) or "document"
            problems.append(f"{source}:{line_of(lines, loc)}: {where}: {error['msg']}")
        raise ConfigError("; ".join(problems)) from None
