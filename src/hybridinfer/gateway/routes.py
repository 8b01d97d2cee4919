"""HTTP handlers: each translates HTTP and calls one service method (house rules 3 and 12)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.control.keys import NODE_SCOPE, Principal
from hybridinfer.core.schemas import Heartbeat, InferRequest, NodeRegistration
from hybridinfer.core.trace import Trace
from hybridinfer.errors import Forbidden, InvalidInput
from hybridinfer.gateway.cachecontrol import cache_header, with_cache_control
from hybridinfer.gateway.state import json_of, nodes_of, options_of, pipeline_of, traces_of
from hybridinfer.server.responses import JSON, parse_body, request_header
from hybridinfer.server.serving import client_certificate

Endpoint = Callable[[Request], Awaitable[Response]]

ROUTING_KEY_HEADER = "X-Routing-Key"
"""Sent by a caller who wants its requests on one side of a canary (a user or session id)."""
_ROUTING_KEY = ROUTING_KEY_HEADER.lower().encode()
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
    if options_of(request).node_mtls and client_certificate(request.scope) is None:
        raise Forbidden(
            "node routes need a client certificate signed by the gateway's CA (mutual TLS)",
            code="client_certificate_required",
        )


async def healthz(request: Request) -> Response:
    return JSON({"status": "ok"})


async def readyz(request: Request) -> Response:
    await nodes_of(request).check_ready()
    return JSON({"status": "ready"})


@requires("infer")
async def infer(request: Request) -> Response:
    trace = request_trace(request)
    body = with_cache_control(parse_body(InferRequest, await json_of(request)), request)
    result = await pipeline_of(request).infer(body, trace)
    headers = {POLICY_HEADER: trace.policy_version or ""} | cache_header(result)
    return JSON(result, headers=headers)


def request_trace(request: Request) -> Trace:
    """A new trace for the request, carrying the caller's routing key if it sent one."""
    state = request.state
    trace = Trace(request_id=state.request_id, started=state.started, key_id=state.principal.key_id)
    trace.routing_key = request_header(request.scope, _ROUTING_KEY) or None
    return trace


@requires("infer")
async def get_trace(request: Request) -> Response:
    principal: Principal = request.state.principal
    return JSON(await traces_of(request).get(request.path_params["request_id"], principal))


def limit_of(request: Request, default: int = 50) -> int:
    """The ``limit`` query parameter of a listing: a whole number from 1 to 1000."""
    limit_text = request.query_params.get("limit", str(default))
    if not (limit_text.isascii() and limit_text.isdigit()) or not 1 <= int(limit_text) <= 1000:
        raise InvalidInput("limit must be a whole number from 1 to 1000")
    return int(limit_text)


@requires("admin")
async def list_traces(request: Request) -> Response:
    status = request.query_params.get("status")
    traces = await traces_of(request).recent(limit_of(request), status)
    return JSON({"traces": traces})


@requires("admin")
async def list_nodes(request: Request) -> Response:
    return JSON({"nodes": nodes_of(request).describe_all()})


@requires("node")
async def register_node(request: Request) -> Response:
    registration = parse_body(NodeRegistration, await json_of(request))
    actor = request.state.principal.key_id
    return JSON(await nodes_of(request).register(registration, actor), status_code=201)


@requires("node")
async def heartbeat(request: Request) -> Response:
    beat = parse_body(Heartbeat, await json_of(request))
    return JSON(nodes_of(request).heartbeat(request.path_params["node_id"], beat))


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
