"""Policy endpoints: list, read, apply (validated first; the running policy stays on error)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.errors import NotFound
from hybridinfer.gateway.responses import JSON, read_yaml_document
from hybridinfer.gateway.routes import plane_of, requires


@requires("admin")
async def list_policies(request: Request) -> Response:
    plane = plane_of(request)
    return JSON(
        {"active": plane.policies.current().version, "policies": await plane.policies.list()}
    )


@requires("admin")
async def get_policy(request: Request) -> Response:
    policy = await plane_of(request).policies.describe(request.path_params["version"])
    if policy is None:
        raise NotFound("no policy with this version", code="unknown_policy")
    return JSON(policy)


@requires("admin")
async def apply_policy(request: Request) -> Response:
    """Body: the policy YAML (``application/yaml``) or ``{"policy": "<yaml>"}``."""
    plane = plane_of(request)
    text = await read_yaml_document(request, plane.settings.max_body_bytes, "policy")
    compiled = await plane.policies.apply(text, request.state.principal.key_id)
    return JSON(
        {"version": compiled.version, "status": "active", "thresholds": compiled.thresholds},
        status_code=201,
    )


POLICY_ROUTES = [
    Route("/v1/policies", list_policies, methods=["GET"]),
    Route("/v1/policies", apply_policy, methods=["POST"]),
    Route("/v1/policies/{version}", get_policy, methods=["GET"]),
]
