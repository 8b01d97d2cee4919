"""Where an answer is filed: the exact key and the semantic index of a subtask's call.

Both start with ``tenant/scope/capability/`` (flushed by prefix). The exact key digests the
canonical inputs (keys sorted, strings stripped, absent values dropped) with the model version
(and the tier, unless the policy lets answers cross tiers). The index digests the same without
the prompt, so only calls that differ in the prompt alone — same model version, same generation
parameters, same earlier turns — are compared by similarity.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from hybridinfer.core.chat import content_text

SCOPE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
"""An explicit ``cache_scope``: no ``/`` (it is a path segment of every key under its tenant)."""
DEFAULT_SCOPE = "_"
PROMPT_FIELDS = ("question", "prompt")
"""Inputs compared semantically (besides a chat's last user message)."""
PLACEHOLDER = "\0prompt\0"


def canonical(value: Any) -> Any:
    """``value`` with strings stripped and ``None`` entries of mappings dropped."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [canonical(item) for item in value]
    return value


def digest(*parts: Any) -> str:
    """A short stable digest of JSON-able parts (sorted keys)."""
    data = orjson.dumps(parts, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    return hashlib.sha256(data).hexdigest()[:32]


def split_prompt(inputs: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The prompt a semantic lookup compares, and the inputs with it replaced by a placeholder
    (None when there is no text prompt)."""
    rest = dict(inputs)
    messages = rest.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], Mapping):
        last = messages[-1]
        text = content_text(last.get("content")) if last.get("role") == "user" else ""
        if text.strip():
            rest["messages"] = [*messages[:-1], {**last, "content": PLACEHOLDER}]
            return text.strip(), rest
        return None, rest
    for name in PROMPT_FIELDS:
        value = rest.get(name)
        if isinstance(value, str) and value.strip():
            rest[name] = PLACEHOLDER
            return value.strip(), rest
    return None, rest


@dataclass(frozen=True, slots=True)
class Filing:
    """The exact key of one call, and its semantic index and prompt when it has one."""

    key: str
    index: str | None
    prompt: str | None


def file_call(namespace: str, model: str, inputs: Mapping[str, Any], semantic: bool) -> Filing:
    """Where the call of ``model`` (``name:version[@tier]``) on ``inputs`` is filed."""
    clean = canonical(inputs)
    key = namespace + digest(model, clean)
    if not semantic:
        return Filing(key, None, None)
    prompt, rest = split_prompt(clean)
    if prompt is None:
        return Filing(key, None, None)
    return Filing(key, namespace + "i" + digest(model, rest), prompt)


def namespace_of(tenant: str, scope: str | None, capability: str) -> str:
    """``tenant/scope/capability/``: every key of a tenant, a scope, a capability below it."""
    return f"{tenant}/{scope or DEFAULT_SCOPE}/{capability}/"
