"""``POST /v1/tasks`` and ``GET /v1/tasks/{id}``: thin handlers over ``tasks.JobService``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.core.schemas import InferRequest
from hybridinfer.gateway.routes import requires
from hybridinfer.gateway.state import jobs_of, json_of
from hybridinfer.server.responses import JSON, parse_body


@requires("infer")
async def submit_task(request: Request) -> Response:
    body = parse_body(InferRequest, await json_of(request))
    task_id = await jobs_of(request).submit(
        body, request.state.principal, request.headers.get("idempotency-key")
    )
    return JSON({"task_id": task_id}, status_code=202)


@requires("infer")
async def get_task(request: Request) -> Response:
    jobs = jobs_of(request)
    return JSON(await jobs.describe(request.path_params["task_id"], request.state.principal))


TASK_ROUTES = [
    Route("/v1/tasks", submit_task, methods=["POST"]),
    Route("/v1/tasks/{task_id}", get_task, methods=["GET"]),
]
