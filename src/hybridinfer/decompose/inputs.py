"""Checks for the structured input types of the rule table: chat ``messages`` (the OpenAI
schema of ``core/chat.py``), ``texts`` (one string or a list of them), ``json`` (any JSON value:
tools, a response format) and single ``number``/``integer`` values. Each returns the input's
size in characters (0 for a number), which the router compares with a deployment's max input.

Messages name the field that is wrong, never its value: a value may be personal data."""

from __future__ import annotations

import math
from typing import Any

import orjson
from pydantic import TypeAdapter, ValidationError

from hybridinfer.core.chat import ChatMessage, content_text, unsupported_parts
from hybridinfer.decompose.rules import InputSpec
from hybridinfer.errors import InvalidInput
from hybridinfer.privacy.scrub import scrub

STRUCTURED_TYPES = frozenset({"messages", "texts", "number", "integer", "json"})
_MESSAGES = TypeAdapter(list[ChatMessage])


def check_structured(name: str, spec: InputSpec, value: Any) -> int:
    """Raise InvalidInput unless ``value`` fits ``spec``; return its size."""
    if spec.type == "messages":
        return _check_messages(name, spec, value)
    if spec.type == "texts":
        return _check_texts(name, spec, value)
    if spec.type == "json":
        return _check_json(name, spec, value)
    return _check_number(name, spec, value)


def _check_messages(name: str, spec: InputSpec, value: Any) -> int:
    if not isinstance(value, list) or not value:
        raise InvalidInput(f"inputs.{name} must be a non-empty list of messages")
    if spec.max_items is not None and len(value) > spec.max_items:
        raise InvalidInput(f"inputs.{name} holds more than {spec.max_items} messages")
    try:
        messages = _MESSAGES.validate_python(value)
    except ValidationError as error:
        first = error.errors(include_input=False, include_url=False)[0]
        where = scrub(".".join(str(part) for part in (name, *first["loc"])))
        raise InvalidInput(f"inputs.{where}: {scrub(first['msg'])}") from None
    unsupported = unsupported_parts(value)
    if unsupported:
        raise InvalidInput(
            f"inputs.{name} holds {', '.join(unsupported)} parts, which no chat deployment "
            "here reads: send text parts only",
            code="unsupported_content",
        )
    size = sum(_message_size(message) for message in messages)
    if spec.max_length is not None and size > spec.max_length:
        raise InvalidInput(f"inputs.{name} is longer than {spec.max_length} characters in all")
    return size


def _message_size(message: ChatMessage) -> int:
    calls = message.tool_calls or []
    text = content_text(message.model_dump(exclude_none=True).get("content"))
    return len(text) + sum(len(call.function.arguments) for call in calls)


def _check_json(name: str, spec: InputSpec, value: Any) -> int:
    size = len(orjson.dumps(value))
    if spec.max_length is not None and size > spec.max_length:
        raise InvalidInput(f"inputs.{name} is longer than {spec.max_length} characters")
    return 0


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
