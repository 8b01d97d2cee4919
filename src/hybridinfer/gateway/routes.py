"""HTTP handlers: each translates HTTP and calls one control-plane method (house rule 3)."""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.control.keys import NODE_SCOPE, Principal
from hybridinfer.control.plane import ControlPlane
from hybridinfer.core.schemas import Heartbeat, InferRequest, NodeRegistration
from hybridinfer.core.trace import Trace
from hybridinfer.errors import Forbidden, InvalidInput, NoCapacity, NotFound
from hybridinfer.server.responses import JSON, parse_body, read_json
from hybridinfer.server.serving import client_certificate
from hybridinfer.signals.registry import node_from_registration

Endpoint = Callable[[Request], Awaitable[Response]]

ROUTING_KEY_HEADER = "X-Routing-Key"
"""Sent by a caller who wants its requests on one side of a canary (a user or session id)."""
POLICY_HEADER = "X-Hybridinfer-Policy"
"""The policy version that decided the request (a canary's, for its share of traffic)."""


def requires(scope: str) -> Callable[[Endpoint], Endpoint]:
    """Refuse (403) callers whose key lacks ``scope``; the route table can read the scope."""

    def wrap(endpoint: Endpoint) -> Endpoint:
        @functools.wraps(endpoint)
        async def checked(request: Request) -> Response:
            principal: Principal = request.state.principal
            if not principal.allows(scope):
                raise Forbidden(f"this API key lacks the {scope!r} scope")
            if scope == NODE_SCOPE:
                check_node_certificate(request)
            return await endpoint(request)

        checked.required_scope = scope  # type: ignore[attr-defined]
        return checked

    return wrap


def check_node_certificate(request: Request) -> None:
    """With ``node_mtls``, node routes also need a verified client certificate."""
    if plane_of(request).settings.node_mtls and client_certificate(request.scope) is None:
        raise Forbidden(
            "node routes need a client certificate signed by the gateway's CA (mutual TLS)",
            code="client_certificate_required",
        )


def plane_of(request: Request) -> ControlPlane:
    plane: ControlPlane = request.app.state.control_plane
    return plane


async def healthz(request: Request) -> Response:
    return JSON({"status": "ok"})


async def readyz(request: Request) -> Response:
    plane = plane_of(request)
    if not await plane.store.ping():
        raise NoCapacity("the store is unreachable", code="not_ready")
    if not plane.registry.any_ready():
        raise NoCapacity("no node is ready", code="not_ready")
    return JSON({"status": "ready"})


@requires("infer")
async def infer(request: Request) -> Response:
    plane = plane_of(request)
    trace = request_trace(request)
    body = parse_body(InferRequest, await read_json(request, plane.settings.max_body_bytes))
    result = await plane.pipeline.infer(body, trace)
    return JSON(result, headers={POLICY_HEADER: trace.policy_version or ""})


def request_trace(request: Request) -> Trace:
    """A new trace for the request, carrying the caller's routing key if it sent one."""
    state = request.state
    trace = Trace(request_id=state.request_id, started=state.started, key_id=state.principal.key_id)
    trace.routing_key = request.headers.get(ROUTING_KEY_HEADER) or None
    return trace


@requires("infer")
async def get_trace(request: Request) -> Response:
    principal: Principal = request.state.principal
    trace = await plane_of(request).traces.get(request.path_params["request_id"])
    if trace is None or not (principal.allows("admin") or trace.get("key_id") == principal.key_id):
        raise NotFound("no trace with this request id", code="unknown_trace")
    return JSON(trace)


def limit_of(request: Request, default: int = 50) -> int:
    """The ``limit`` query parameter of a listing: a whole number from 1 to 1000."""
    limit_text = request.query_params.get("limit", str(default))
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= 1000:
        raise InvalidInput("limit must be a whole number from 1 to 1000")
    return int(limit_text)


@requires("admin")
async def list_traces(request: Request) -> Response:
    status = request.query_params.get("status")
    traces = await plane_of(request).traces.recent(limit_of(request), status)
    return JSON({"traces": traces})


@requires("admin")
async def list_nodes(request: Request) -> Response:
    plane = plane_of(request)
    nodes = [node.describe() for node in plane.registry.nodes()]
    for node in nodes:
        for deployment in node["deployments"]:
            deployment.update(plane.breakers.describe(deployment["id"]))
    return JSON({"nodes": nodes})


@requires("node")
async def register_node(request: Request) -> Response:
    plane = plane_of(request)
    registration = parse_body(
        NodeRegistration, await read_json(request, plane.settings.max_body_bytes)
    )
    node = node_from_registration(registration)
    before = next((n.describe() for n in plane.registry.nodes() if n.id == node.id), None)
    plane.registry.add(node)
    await plane.store.save_node(
        node.id,
        node.tier.value,
        node.zone.value,
        node.url,
        orjson.dumps(registration.model_dump(mode="json")),
    )
    actor = request.state.principal.key_id
    await plane.audit.record(actor, "node.register", node.id, before, node.describe())
    body: dict[str, Any] = {
        "id": node.id,
        "heartbeat_interval_s": plane.settings.heartbeat_interval_s,
        "registered_at": time.time(),
    }
    return JSON(body, status_code=201)


@requires("node")
async def heartbeat(request: Request) -> Response:
    plane = plane_of(request)
    beat = parse_body(Heartbeat, await read_json(request, plane.settings.max_body_bytes))
    node = plane.registry.heartbeat(
        request.path_params["node_id"],
        beat.load,
        beat.in_flight,
        queue_depth=beat.queue_depth,
        memory=beat.memory,
        memory_bytes=beat.memory_bytes,
        models_not_ready=beat.models_not_ready,
    )
    return JSON({"id": node.id, "status": node.status.value})


ROUTES = [
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
    Route("/v1/infer", infer, methods=["POST"]),
    Route("/v1/traces", list_traces, methods=["GET"]),
    Route("/v1/traces/{request_id}", get_trace, methods=["GET"]),
    Route("/v1/nodes", list_nodes, methods=["GET"]),
    Route("/v1/nodes", register_node, methods=["POST"]),
    Route("/v1/nodes/{node_id}/heartbeat", heartbeat, methods=["POST"]),
]
