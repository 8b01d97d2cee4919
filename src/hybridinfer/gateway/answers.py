"""The answer cache's admin routes: ``GET /v1/answers`` (hit counts per capability) and
``POST /v1/answers/flush`` (a tenant's or a scope's answers). The request side
(``Cache-Control``, ``X-Hybridinfer-Cache``) is ``gateway/cachecontrol.py``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.gateway.routes import requires
from hybridinfer.gateway.state import answers_of, json_of
from hybridinfer.server.responses import JSON, parse_body


class AnswerFlush(BaseModel):
    """``POST /v1/answers/flush``."""

    model_config = ConfigDict(extra="forbid")

    tenant: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")
    """An API key id: the tenant whose answers go."""
    scope: str | None = Field(None, pattern=r"^[A-Za-z0-9._-]{1,64}$")


@requires("admin")
async def answer_counts(request: Request) -> Response:
    return JSON(answers_of(request).summary())


@requires("admin")
async def flush_answers(request: Request) -> Response:
    body = parse_body(AnswerFlush, await json_of(request))
    actor = request.state.principal.key_id
    return JSON(await answers_of(request).flush(body.tenant, body.scope, actor))


ANSWER_ROUTES = [
    Route("/v1/answers", answer_counts, methods=["GET"]),
    Route("/v1/answers/flush", flush_answers, methods=["POST"]),
]
