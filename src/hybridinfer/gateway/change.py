"""Checking a change before and while it serves: ``POST /v1/policies/{version}/replay`` (what-if
on logged traffic), and the guarded walk of a canary — ``/walk`` starts it, ``/pause``,
``/resume`` and ``/abort`` steer it, ``GET /walk`` shows it. Each move is audited."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.errors import InvalidInput
from hybridinfer.gateway.routes import requires
from hybridinfer.gateway.state import json_of, replay_of, walks_of
from hybridinfer.server.responses import JSON


def _number(body: dict[str, object], name: str) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{name} must be a number")
    return float(value)


async def _body(request: Request, allowed: set[str]) -> dict[str, object]:
    body = await json_of(request) if await request.body() else {}
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(f"unknown fields: {', '.join(unknown)}")
    return body


@requires("admin")
async def replay_policy(request: Request) -> Response:
    """Body ``{"since_s": 3600}`` or ``{"traces": 1000}``, optionally ``"router_artifact"``
    (a chat difficulty head's path on the gateway, replayed on the retained prompts); the
    report (``passed`` false when a guard or the privacy check would break)."""
    body = await _body(request, {"since_s", "traces", "router_artifact"})
    traces = _number(body, "traces")
    if traces is not None and traces != int(traces):
        raise InvalidInput("traces must be a whole number")
    artifact = body.get("router_artifact")
    if artifact is not None and not isinstance(artifact, str):
        raise InvalidInput("router_artifact must be a path")
    report = await replay_of(request).replay(
        request.path_params["version"],
        since_s=_number(body, "since_s"),
        traces=None if traces is None else int(traces),
        router_artifact=artifact,
    )
    return JSON(report)


@requires("admin")
async def start_walk(request: Request) -> Response:
    """Body (optional) ``{"dwell_s": 30, "min_requests": 20}`` overriding the guard block."""
    body = await _body(request, {"dwell_s", "min_requests"})
    least = _number(body, "min_requests")
    if least is not None and least != int(least):
        raise InvalidInput("min_requests must be a whole number")
    walk = await walks_of(request).begin(
        request.path_params["version"],
        str(request.state.principal.key_id),
        dwell_s=_number(body, "dwell_s"),
        min_requests=None if least is None else int(least),
    )
    return JSON(walk, status_code=201)


@requires("admin")
async def get_walk(request: Request) -> Response:
    return JSON(await walks_of(request).describe(request.path_params["version"]))


@requires("admin")
async def steer_walk(request: Request) -> Response:
    """``pause``, ``resume`` or ``abort`` (abort rolls the canary back)."""
    walks, version = walks_of(request), request.path_params["version"]
    actor = str(request.state.principal.key_id)
    move = request.url.path.rsplit("/", 1)[-1]
    steer = {"pause": walks.pause, "resume": walks.resume, "abort": walks.abort}[move]
    return JSON(await steer(version, actor))


CHANGE_ROUTES = [
    Route("/v1/policies/{version}/replay", replay_policy, methods=["POST"]),
    Route("/v1/policies/{version}/walk", start_walk, methods=["POST"]),
    Route("/v1/policies/{version}/walk", get_walk, methods=["GET"]),
    *(
        Route(f"/v1/policies/{{version}}/{move}", steer_walk, methods=["POST"])
        for move in ("pause", "resume", "abort")
    ),
]
