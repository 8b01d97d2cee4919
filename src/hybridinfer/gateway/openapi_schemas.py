"""Response schemas of the OpenAPI document (the request bodies come from the pydantic models)."""

from __future__ import annotations

from typing import Any


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(
    required: list[str], properties: dict[str, Any], closed: bool = False
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "required": required, "properties": properties}
    if closed:
        schema["additionalProperties"] = False
    return schema


def _list_of(field: str, item: dict[str, Any]) -> dict[str, Any]:
    return _object([field], {field: {"type": "array", "items": item}})


STRING = {"type": "string"}
NUMBER = {"type": "number"}
OPTIONAL_NUMBER = {"type": ["number", "null"]}

KEY_FIELDS: dict[str, Any] = {
    "id": STRING,
    "name": STRING,
    "scopes": {"type": "array", "items": {"enum": ["infer", "admin", "node"]}},
    "created_at": NUMBER,
    "revoked_at": OPTIONAL_NUMBER,
    "expires_at": OPTIONAL_NUMBER,
    "replaced_by": {"type": ["string", "null"]},
    "rate_limit_per_minute": {"type": ["integer", "null"]},
    "budget": OPTIONAL_NUMBER,
}
KEY_REQUIRED = ["id", "name", "scopes", "created_at", "revoked_at", "expires_at"]

COMPONENTS: dict[str, Any] = {
    "Error": _object(
        ["error"],
        {
            "error": _object(
                ["code", "message", "request_id"],
                {"code": STRING, "message": STRING, "request_id": STRING, "details": {}},
                closed=True,
            )
        },
        closed=True,
    ),
    "ObjectError": _object(["error"], {"error": STRING}, closed=True),
    "Status": _object(["status"], {"status": STRING}),
    "InferResponse": _object(
        ["request_id", "status", "outputs", "subtasks", "timings_ms"],
        {
            "request_id": STRING,
            "status": {"enum": ["ok", "partial"]},
            "outputs": {"type": "object"},
            "subtasks": {"type": "array", "items": {"type": "object"}},
            "timings_ms": {"type": "object", "additionalProperties": NUMBER},
        },
    ),
    "TaskAccepted": _object(["task_id"], {"task_id": STRING}),
    "Task": _object(
        ["task_id", "status"],
        {"task_id": STRING, "status": {"enum": ["queued", "running", "done", "failed"]}},
    ),
    "TraceList": _list_of("traces", {"type": "object"}),
    "NodeList": _list_of("nodes", {"type": "object"}),
    "PolicyList": _object(
        ["active", "policies"], {"active": STRING, "policies": {"type": "array"}}
    ),
    "Key": _object(KEY_REQUIRED, KEY_FIELDS, closed=True),
    "NewKey": _object([*KEY_REQUIRED, "key"], {**KEY_FIELDS, "key": STRING}, closed=True),
    "KeyList": _list_of("keys", ref("Key")),
    "AnswerCounts": _object(
        ["enabled", "capabilities"], {"enabled": {"type": "boolean"}, "capabilities": {}}
    ),
    "AnswerFlushed": _object(
        ["tenant", "scope", "removed"],
        {"tenant": STRING, "scope": {"type": ["string", "null"]}, "removed": {"type": "integer"}},
    ),
    "AuditList": _list_of(
        "entries",
        _object(
            ["id", "at", "actor", "action", "target", "before", "after"],
            {
                "id": {"type": "integer"},
                "at": NUMBER,
                "actor": STRING,
                "action": STRING,
                "target": STRING,
                "before": {},
                "after": {},
            },
        ),
    ),
}
