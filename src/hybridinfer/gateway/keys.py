"""The key admin API: create, list, rotate, revoke (admin only; every change audited).

The key itself appears once, in the answer that creates it; lists and audit entries carry
only key ids.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.gateway.routes import requires
from hybridinfer.gateway.state import json_of, keys_of
from hybridinfer.server.responses import JSON, parse_body

Scope = Literal["infer", "admin", "node"]


def _infer_only() -> list[Scope]:
    return ["infer"]


class KeyCreate(BaseModel):
    """``POST /v1/keys``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="Who or what the key is for.")
    scopes: list[Scope] = Field(default_factory=_infer_only, min_length=1, max_length=3)
    rate_limit_per_minute: int | None = Field(
        None, gt=0, le=10_000_000, description="Own request rate (default: the gateway's)."
    )
    budget: float | None = Field(
        None, ge=0.0, le=1e12, description="Own cloud spend limit per budget period."
    )


class KeyRotate(BaseModel):
    """``POST /v1/keys/{key_id}/rotate``."""

    model_config = ConfigDict(extra="forbid")

    grace_s: float | None = Field(
        None, ge=0.0, le=90 * 86_400, description="How long the old key keeps working."
    )


async def _optional_json(request: Request) -> dict[str, object]:
    """A JSON object body, or ``{}`` when there is none."""
    if request.headers.get("content-length", "0") == "0" and "chunked" not in request.headers.get(
        "transfer-encoding", ""
    ):
        return {}
    return await json_of(request)


@requires("admin")
async def list_keys(request: Request) -> Response:
    return JSON({"keys": await keys_of(request).list()})


@requires("admin")
async def create_key(request: Request) -> Response:
    body = parse_body(KeyCreate, await json_of(request))
    created = await keys_of(request).create(
        body.name,
        set(body.scopes),
        request.state.principal.key_id,
        rate_limit_per_minute=body.rate_limit_per_minute,
        budget=body.budget,
    )
    return JSON(created, status_code=201)


@requires("admin")
async def rotate_key(request: Request) -> Response:
    body = parse_body(KeyRotate, await _optional_json(request))
    actor = request.state.principal.key_id
    rotated = await keys_of(request).rotate(request.path_params["key_id"], actor, body.grace_s)
    return JSON(rotated, status_code=201)


@requires("admin")
async def revoke_key(request: Request) -> Response:
    actor = request.state.principal.key_id
    return JSON(await keys_of(request).revoke(request.path_params["key_id"], actor))


KEY_ROUTES = [
    Route("/v1/keys", list_keys, methods=["GET"]),
    Route("/v1/keys", create_key, methods=["POST"]),
    Route("/v1/keys/{key_id}/rotate", rotate_key, methods=["POST"]),
    Route("/v1/keys/{key_id}/revoke", revoke_key, methods=["POST"]),
]
