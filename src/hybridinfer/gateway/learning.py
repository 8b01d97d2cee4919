"""Feedback and learner endpoints.

``POST /v1/feedback`` (scope ``infer``, own requests only) → ``{"request_id", "quality",
"teaches_learner", "window_s"}``; ``GET /v1/learners``, ``GET /v1/learners/{capability}``
(with ``?records&limit=N``: the logged outcomes for offline evaluation) and ``POST
/v1/learners/{capability}/reset`` (scope ``admin``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.gateway.routes import limit_of, requires
from hybridinfer.gateway.state import feedback_of, json_of, learners_of
from hybridinfer.server.responses import JSON, parse_body


class FeedbackBody(BaseModel):
    """``POST /v1/feedback``: exactly one of ``score``, ``label`` or ``correct``."""

    model_config = ConfigDict(extra="forbid")

    request_id: str = Field(min_length=1, max_length=128, description="A request you made.")
    score: float | None = Field(None, ge=0.0, le=1.0, strict=True, description="0 bad, 1 good.")
    label: Literal["good", "neutral", "bad"] | None = None
    correct: bool | None = Field(None, strict=True)
    comment: str | None = Field(None, max_length=2000)


@requires("infer")
async def submit_feedback(request: Request) -> Response:
    body = parse_body(FeedbackBody, await json_of(request)).model_dump(exclude_none=True)
    return JSON(await feedback_of(request).submit(body, request.state.principal))


@requires("admin")
async def list_learners(request: Request) -> Response:
    return JSON(learners_of(request).describe())


@requires("admin")
async def get_learner(request: Request) -> Response:
    capability = request.path_params["capability"]
    service = learners_of(request)
    if "records" in request.query_params:
        records = await service.records(capability, limit_of(request, 1000))
        return JSON({"capability": capability, "records": records})
    return JSON(service.describe(capability))


@requires("admin")
async def reset_learner(request: Request) -> Response:
    capability = request.path_params["capability"]
    actor = request.state.principal.key_id
    return JSON(await learners_of(request).reset(capability, actor))


LEARNING_ROUTES = [
    Route("/v1/feedback", submit_feedback, methods=["POST"]),
    Route("/v1/learners", list_learners, methods=["GET"]),
    Route("/v1/learners/{capability}", get_learner, methods=["GET"]),
    Route("/v1/learners/{capability}/reset", reset_learner, methods=["POST"]),
]
