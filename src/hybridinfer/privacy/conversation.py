"""Every field of a request pseudonymised under one mapping, before it leaves the private zone.

The walk reads what the privacy scan reads (``decompose/privacy.py:strings_in``): every string
at any depth, dictionary keys too, whole numbers as their digits, and JSON held in strings (a
tool call's arguments, a tool's result) parsed and walked again, up to ``JSON_DEPTH`` deep, so
an escape such as ``\\u0040`` hides nothing. One mapping covers the whole conversation: the
same value is the same placeholder in every turn and field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from hybridinfer.privacy.pseudonym import Pseudonymiser

JSON_DEPTH = 4
"""How deep JSON inside JSON strings is read (each level is a string holding JSON)."""


def redact_inputs(mapping: Pseudonymiser, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``inputs`` with every personal value replaced by its placeholder."""
    return {name: redact_value(mapping, value) for name, value in inputs.items()}


def redact_value(mapping: Pseudonymiser, value: Any, depth: int = 0) -> Any:
    """``value`` pseudonymised; its shape is kept (a number holding personal data, such as
    a phone number sent as a JSON number, becomes its placeholder string)."""
    if isinstance(value, str):
        if depth < JSON_DEPTH and value.lstrip()[:1] in ("{", "["):
            parsed = _json_in(value)
            if isinstance(parsed, dict | list):
                return orjson.dumps(redact_value(mapping, parsed, depth + 1)).decode()
        return mapping.redact(value)
    if isinstance(value, int) and not isinstance(value, bool):
        digits = str(value)
        redacted = mapping.redact(digits)
        return value if redacted == digits else redacted
    if isinstance(value, Mapping):
        return {
            mapping.redact(key) if isinstance(key, str) else key: redact_value(mapping, item, depth)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(mapping, item, depth) for item in value]
    return value


def _json_in(text: str) -> Any:
    """The JSON ``text`` holds, or None when it is not JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
