"""``GET /openapi.json``: the gateway's OpenAPI 3.1 document, built from the route table.

Every route the gateway serves is described (the walk covers mounts), with its auth (bearer,
and the scope in ``x-required-scope``, or none for the public ones), its request body and
query parameters, its success response and the one error envelope every error uses. Routes
nobody described here still appear, with a generic body, so the document cannot silently
miss one; the test suite checks that none is generic and fuzzes every operation against it.

Public, like ``/healthz``: it tells nothing the docs do not, and clients generate from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from hybridinfer import __version__
from hybridinfer.core.schemas import Heartbeat, InferRequest, NodeRegistration
from hybridinfer.gateway.answers import AnswerFlush
from hybridinfer.gateway.keys import KeyCreate, KeyRotate
from hybridinfer.gateway.learning import FeedbackBody
from hybridinfer.gateway.middleware import PUBLIC_PATHS, PUBLIC_PREFIXES
from hybridinfer.gateway.openai_schemas import ChatCompletionRequest, EmbeddingRequest
from hybridinfer.gateway.openapi_schemas import COMPONENTS, ref
from hybridinfer.server.responses import JSON

OBJECT: dict[str, Any] = {"type": "object"}


@dataclass(frozen=True)
class Query:
    name: str
    schema: dict[str, Any]
    description: str = ""


LIMIT = Query("limit", {"type": "integer", "minimum": 1, "maximum": 1000}, "1 to 1000")


@dataclass(frozen=True)
class Operation:
    """What the route table does not say about one method of one path."""

    summary: str
    body: type[BaseModel] | dict[str, Any] | None = None
    status: int = 200
    response: dict[str, Any] = field(default_factory=lambda: OBJECT)
    media: Sequence[str] = ("application/json",)
    query: Sequence[Query] = ()
    optional_body: bool = False
    upstream: bool = False
    """Runs inference: may answer 502/503/504 (upstream failed, no capacity, deadline)."""


def _yaml_document(field_name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [field_name],
        "properties": {field_name: {"type": "string", "description": "the YAML text"}},
        "additionalProperties": False,
    }


OPERATIONS: dict[tuple[str, str], Operation] = {
    ("GET", "/healthz"): Operation("Liveness", response=ref("Status")),
    ("GET", "/readyz"): Operation(
        "Readiness: store reachable, a node ready", response=ref("Status")
    ),
    ("GET", "/openapi.json"): Operation("This document"),
    ("POST", "/v1/infer"): Operation(
        "Run one inference request", InferRequest, response=ref("InferResponse"), upstream=True
    ),
    ("POST", "/v1/tasks"): Operation(
        "Submit an asynchronous inference request",
        InferRequest,
        202,
        ref("TaskAccepted"),
    ),
    ("GET", "/v1/tasks/{task_id}"): Operation("An asynchronous task", response=ref("Task")),
    ("GET", "/v1/traces"): Operation(
        "Recent traces",
        response=ref("TraceList"),
        query=(LIMIT, Query("status", {"type": "string"}, "ok, partial or failed")),
    ),
    ("GET", "/v1/traces/{request_id}"): Operation("The trace of one request"),
    ("GET", "/v1/nodes"): Operation("Registered nodes", response=ref("NodeList")),
    ("POST", "/v1/nodes"): Operation("Register a node (node scope)", NodeRegistration, 201),
    ("POST", "/v1/nodes/{node_id}/heartbeat"): Operation("A node's heartbeat", Heartbeat),
    ("GET", "/metrics"): Operation("Prometheus metrics", response={}, media=("text/plain",)),
    ("GET", "/v1/policies"): Operation("Policy versions", response=ref("PolicyList")),
    ("POST", "/v1/policies"): Operation(
        "Validate, store and activate (or stage) a policy",
        _yaml_document("policy"),
        201,
        query=(Query("stage", {"type": "string", "enum": ["true", "false"]}),),
    ),
    ("GET", "/v1/policies/{version}"): Operation(
        "One policy version", query=(Query("against", {"type": "string"}, "diff from"),)
    ),
    ("GET", "/v1/policies/{version}/diff/{other}"): Operation("Diff of two policy versions"),
    ("POST", "/v1/policies/{version}/canary"): Operation(
        "Start or widen a canary",
        {
            "type": "object",
            "properties": {"percent": {"type": "number", "exclusiveMinimum": 0, "maximum": 100}},
            "additionalProperties": False,
        },
        optional_body=True,
    ),
    ("POST", "/v1/policies/{version}/promote"): Operation("Promote a canary to all traffic"),
    ("POST", "/v1/policies/{version}/rollback"): Operation("Roll back to a policy version"),
    ("GET", "/v1/rollouts"): Operation("Model rollouts of the active policy"),
    ("POST", "/v1/policies/{version}/replay"): Operation(
        "What-if replay of a stored version on logged traces",
        {
            "type": "object",
            "properties": {
                "since_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 2_592_000},
                "traces": {"type": "integer", "minimum": 1, "maximum": 100_000},
            },
            "additionalProperties": False,
        },
    ),
    ("POST", "/v1/policies/{version}/walk"): Operation(
        "Start a guarded canary walk",
        {
            "type": "object",
            "properties": {
                "dwell_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 86_400},
                "min_requests": {"type": "integer", "minimum": 1},
            },
            "additionalProperties": False,
        },
        201,
        optional_body=True,
    ),
    ("GET", "/v1/policies/{version}/walk"): Operation("A guarded canary walk"),
    ("POST", "/v1/policies/{version}/pause"): Operation("Pause a guarded canary walk"),
    ("POST", "/v1/policies/{version}/resume"): Operation("Resume a paused walk"),
    ("POST", "/v1/policies/{version}/abort"): Operation("Abort a walk, rolling the canary back"),
    ("GET", "/v1/rules"): Operation("The running task rule table"),
    ("PUT", "/v1/rules"): Operation("Replace the task rule table", _yaml_document("rules")),
    ("GET", "/v1/keys"): Operation("API keys (never the keys themselves)", response=ref("KeyList")),
    ("POST", "/v1/keys"): Operation("Create an API key", KeyCreate, 201, ref("NewKey")),
    ("POST", "/v1/keys/{key_id}/rotate"): Operation(
        "Rotate a key: a new key now, the old one until the grace period ends",
        KeyRotate,
        201,
        ref("NewKey"),
        optional_body=True,
    ),
    ("POST", "/v1/keys/{key_id}/revoke"): Operation("Revoke a key now", response=ref("Key")),
    ("GET", "/v1/audit"): Operation(
        "The audit log, newest first",
        response=ref("AuditList"),
        query=(LIMIT, Query("action", {"type": "string"}, "e.g. key.rotate")),
    ),
    ("GET", "/v1/answers"): Operation(
        "Answer reuse per capability: lookups, hits, hit ratio, saved spend",
        response=ref("AnswerCounts"),
    ),
    ("POST", "/v1/answers/flush"): Operation(
        "Flush a tenant's (an API key id's) reused answers, or one of its scopes",
        AnswerFlush,
        response=ref("AnswerFlushed"),
    ),
    ("POST", "/v1/chat/completions"): Operation(
        "OpenAI-compatible chat",
        ChatCompletionRequest,
        media=("application/json", "text/event-stream"),
        upstream=True,
    ),
    ("POST", "/v1/embeddings"): Operation(
        "OpenAI-compatible embeddings", EmbeddingRequest, upstream=True
    ),
    ("GET", "/v1/models"): Operation("OpenAI-compatible model list"),
    ("POST", "/v1/feedback"): Operation("Feedback on a request made with this key", FeedbackBody),
    ("GET", "/v1/learners"): Operation("What each capability's online learner knows"),
    ("GET", "/v1/learners/{capability}"): Operation(
        "One capability's learner, or (with records) its logged outcomes",
        query=(LIMIT, Query("records", {"type": "string"}, "list the logged outcomes")),
    ),
    ("POST", "/v1/learners/{capability}/reset"): Operation(
        "Forget a capability's learner on every replica"
    ),
    ("GET", "/ui"): Operation("The dashboard page", response={}, media=("text/html",)),
    ("GET", "/ui/static/{path}"): Operation("Dashboard assets", response={}, media=("*/*",)),
    ("GET", "/v1/stats"): Operation("Traffic summary for the dashboard"),
    ("GET", "/v1/artifacts/{name}"): Operation(
        "Signed URLs of a model's versions (node scope)", response={"type": "array"}
    ),
    ("GET", "/v1/objects/{key}"): Operation(
        "An object by signed URL (the signature is the authorisation)",
        response={},
        media=("application/octet-stream",),
        query=(
            Query("expires", {"type": "string"}),
            Query("signature", {"type": "string"}),
        ),
    ),
}


def endpoints(routes: Sequence[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str, Any]]:
    """(method, path, endpoint) of every route, mounts included; HEAD is implied by GET."""
    for route in routes:
        if isinstance(route, Mount):
            inner = getattr(route.app, "routes", None)
            if inner is None:  # a plain ASGI app (static files): one GET for anything below
                yield "GET", f"{prefix}{route.path}/{{path}}", route.app
            else:
                yield from endpoints(inner, prefix + route.path)
        elif isinstance(route, Route):
            path = prefix + route.path.replace(":path}", "}")
            for method in sorted((route.methods or {"GET"}) - {"HEAD"}):
                yield method, path, route.endpoint


def is_public(path: str) -> bool:
    concrete = path.split("{", 1)[0]
    return path in PUBLIC_PATHS or concrete.startswith(PUBLIC_PREFIXES) or path == "/openapi.json"


def _request_body(operation: Operation, schemas: dict[str, Any]) -> dict[str, Any] | None:
    """The body's schema; a pydantic model's nested models join the components."""
    if operation.body is None:
        return None
    if isinstance(operation.body, dict):
        schema = operation.body
    else:
        schema = operation.body.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
    return {
        "required": not operation.optional_body,
        "content": {"application/json": {"schema": schema}},
    }


def _responses(operation: Operation, public: bool, path: str) -> dict[str, Any]:
    error = {
        "description": "the error envelope",
        "content": {"application/json": {"schema": ref("Error")}},
    }
    if path.startswith("/v1/objects/"):
        either = {"anyOf": [ref("ObjectError"), ref("Error")]}  # a key the mount cannot route
        error = {"description": "refused", "content": {"application/json": {"schema": either}}}
    success = {
        "description": operation.summary,
        "content": {m: {"schema": operation.response} for m in operation.media},
    }
    responses: dict[str, Any] = {str(operation.status): success}
    codes = ["400", "404", "405", "408", "413", "422"]
    if not public:
        codes += ["401", "403", "429"]
    if operation.upstream:
        codes += ["502", "503", "504"]
    if path == "/readyz":
        codes.append("503")
    if path.startswith("/v1/objects/"):
        codes.append("403")  # the signature does not verify
    for code in codes:
        responses[code] = error
    return responses


def _operation(method: str, path: str, endpoint: Any, schemas: dict[str, Any]) -> dict[str, Any]:
    operation = OPERATIONS.get((method, path)) or Operation(
        "(undescribed)", OBJECT if method in ("POST", "PUT") else None, optional_body=True
    )
    public = is_public(path)
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
        for name in _path_parameters(path)
    ]
    parameters += [
        {
            "name": q.name,
            "in": "query",
            "required": False,
            "schema": q.schema,
            "description": q.description,
        }
        for q in operation.query
    ]
    document: dict[str, Any] = {
        "summary": operation.summary,
        "operationId": method.lower() + re.sub(r"[^A-Za-z0-9]+", "_", path).rstrip("_"),
        "security": [] if public else [{"bearer": []}],
        "parameters": parameters,
        "responses": _responses(operation, public, path),
    }
    scope = getattr(endpoint, "required_scope", None)
    if scope is not None:
        document["x-required-scope"] = scope
    body = _request_body(operation, schemas)
    if body is not None:
        document["requestBody"] = body
    return document


def _path_parameters(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{") and part.endswith("}")]


def openapi_document(routes: Sequence[BaseRoute]) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    schemas = dict(COMPONENTS)
    for method, path, endpoint in endpoints(routes):
        paths.setdefault(path, {})[method.lower()] = _operation(method, path, endpoint, schemas)
    return {
        "openapi": "3.1.0",
        "info": {"title": "hybridinfer gateway", "version": __version__},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


async def openapi(request: Request) -> Response:
    state = request.app.state
    if getattr(state, "openapi", None) is None:
        state.openapi = openapi_document(request.app.routes)
    return JSON(state.openapi)


OPENAPI_ROUTES = [Route("/openapi.json", openapi, methods=["GET"])]
