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

from hybridinfer.control.keys import key_id_of
from hybridinfer.gateway.routes import plane_of, requires
from hybridinfer.server.responses import JSON, parse_body, read_json

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


async def _optional_json(request: Request, max_bytes: int) -> dict[str, object]:
    """A JSON object body, or ``{}`` when there is none."""
    if request.headers.get("content-length", "0") == "0" and "chunked" not in request.headers.get(
        "transfer-encoding", ""
    ):
        return {}
    return await read_json(request, max_bytes)


@requires("admin")
async def list_keys(request: Request) -> Response:
    return JSON({"keys": await plane_of(request).keys.list()})


@requires("admin")
async def create_key(request: Request) -> Response:
    plane = plane_of(request)
    body = parse_body(KeyCreate, await read_json(request, plane.settings.max_body_bytes))
    key = await plane.keys.create(
        body.name, set(body.scopes), None, body.rate_limit_per_minute, body.budget
    )
    record = await plane.keys.get(key_id_of(key))
    await plane.audit.record(
        request.state.principal.key_id, "key.create", record["id"], None, record
    )
    return JSON({"key": key, **record}, status_code=201)


@requires("admin")
async def rotate_key(request: Request) -> Response:
    plane = plane_of(request)
    body = parse_body(KeyRotate, await _optional_json(request, plane.settings.max_body_bytes))
    key_id = request.path_params["key_id"]
    grace_s = plane.settings.key_rotation_grace_s if body.grace_s is None else body.grace_s
    before = await plane.keys.get(key_id)
    key = await plane.keys.rotate(key_id, grace_s)
    after = await plane.keys.get(key_id)
    await plane.audit.record(request.state.principal.key_id, "key.rotate", key_id, before, after)
    return JSON({"key": key, **await plane.keys.get(key_id_of(key))}, status_code=201)


@requires("admin")
async def revoke_key(request: Request) -> Response:
    plane = plane_of(request)
    key_id = request.path_params["key_id"]
    before = await plane.keys.get(key_id)
    await plane.keys.revoke(key_id)
    after = await plane.keys.get(key_id)
    await plane.audit.record(request.state.principal.key_id, "key.revoke", key_id, before, after)
    return JSON(after)


KEY_ROUTES = [
    Route("/v1/keys", list_keys, methods=["GET"]),
    Route("/v1/keys", create_key, methods=["POST"]),
    Route("/v1/keys/{key_id}/rotate", rotate_key, methods=["POST"]),
    Route("/v1/keys/{key_id}/revoke", revoke_key, methods=["POST"]),
]
