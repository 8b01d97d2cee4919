"""Checks for the structured input types of the rule table: chat ``messages``, ``texts`` (one
string or a list of them) and single ``number``/``integer`` values. Each returns the input's size
in characters (or 1 for a number), which the router compares with a deployment's max input."""

from __future__ import annotations

import math
from typing import Any

from hybridinfer.decompose.rules import InputSpec
from hybridinfer.errors import InvalidInput

STRUCTURED_TYPES = frozenset({"messages", "texts", "number", "integer"})
ROLES = frozenset({"system", "user", "assistant", "developer", "tool"})


def check_structured(name: str, spec: InputSpec, value: Any) -> int:
    """Raise InvalidInput unless ``value`` fits ``spec``; return its size."""
    if spec.type == "messages":
        return _check_messages(name, spec, value)
    if spec.type == "texts":
        return _check_texts(name, spec, value)
    return _check_number(name, spec, value)


def _check_messages(name: str, spec: InputSpec, value: Any) -> int:
    if not isinstance(value, list) or not value:
        raise InvalidInput(f"inputs.{name} must be a non-empty list of messages")
    if spec.max_items is not None and len(value) > spec.max_items:
        raise InvalidInput(f"inputs.{name} holds more than {spec.max_items} messages")
    size = 0
    for index, message in enumerate(value):
        where = f"inputs.{name}[{index}]"
        if not isinstance(message, dict) or set(message) - {"role", "content", "name"}:
            raise InvalidInput(f"{where} must be an object with 'role' and 'content'")
        if message.get("role") not in ROLES:
            raise InvalidInput(f"{where}.role must be one of {', '.join(sorted(ROLES))}")
        content = message.get("content")
        if not isinstance(content, str):
            raise InvalidInput(f"{where}.content must be a string")
        size += len(content)
    if spec.max_length is not None and size > spec.max_length:
        raise InvalidInput(f"inputs.{name} is longer than {spec.max_length} characters in all")
    return size


def _check_texts(name: str, spec: InputSpec, value: Any) -> int:
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise InvalidInput(f"inputs.{name} must be a string or a non-empty list of strings")
    if spec.max_items is not None and len(texts) > spec.max_items:
        raise InvalidInput(f"inputs.{name} holds more than {spec.max_items} texts")
    if spec.max_length is not None and any(len(text) > spec.max_length for text in texts):
        raise InvalidInput(f"inputs.{name} holds a text longer than {spec.max_length} characters")
    return sum(len(text) for text in texts)


def _check_number(name: str, spec: InputSpec, value: Any) -> int:
    if spec.type == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidInput(f"inputs.{name} must be a whole number")
    elif not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise InvalidInput(f"inputs.{name} must be a finite number")
    if (spec.minimum is not None and value < spec.minimum) or (
        spec.maximum is not None and value > spec.maximum
    ):
        raise InvalidInput(f"inputs.{name} must lie between {spec.minimum} and {spec.maximum}")
    return 0
