"""``POST /v1/tasks`` and ``GET /v1/tasks/{id}``: thin handlers over ``tasks.JobService``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.core.schemas import InferRequest
from hybridinfer.gateway.routes import plane_of, requires
from hybridinfer.server.responses import JSON, parse_body, read_json


@requires("infer")
async def submit_task(request: Request) -> Response:
    plane = plane_of(request)
    body = parse_body(InferRequest, await read_json(request, plane.settings.max_body_bytes))
    task_id = await plane.tasks.submit(
        body, request.state.principal, request.headers.get("idempotency-key")
    )
    return JSON({"task_id": task_id}, status_code=202)


@requires("infer")
async def get_task(request: Request) -> Response:
    plane = plane_of(request)
    return JSON(await plane.tasks.describe(request.path_params["task_id"], request.state.principal))


TASK_ROUTES = [
    Route("/v1/tasks", submit_task, methods=["POST"]),
    Route("/v1/tasks/{task_id}", get_task, methods=["GET"]),
]
