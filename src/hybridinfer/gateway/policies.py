"""Policy endpoints: list, read, diff, apply or stage (validated first; the running policy
stays on error), canary, promote and rollback. Each change is audited under the caller's key."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.errors import InvalidInput
from hybridinfer.gateway.routes import requires
from hybridinfer.gateway.state import json_of, policies_of, yaml_of
from hybridinfer.server.responses import JSON


def _actor(request: Request) -> str:
    return str(request.state.principal.key_id)


@requires("admin")
async def list_policies(request: Request) -> Response:
    return JSON(await policies_of(request).overview())


@requires("admin")
async def get_policy(request: Request) -> Response:
    """``?against=OTHER`` answers the diff from OTHER to this version instead."""
    version = request.path_params["version"]
    against = request.query_params.get("against")
    if against is not None:
        return await _diff(request, against, version)
    return JSON(await policies_of(request).describe(version))


@requires("admin")
async def diff_policies(request: Request) -> Response:
    return await _diff(request, request.path_params["version"], request.path_params["other"])


async def _diff(request: Request, first: str, second: str) -> Response:
    diff = await policies_of(request).diff(first, second)
    return JSON({"from": first, "to": second, "diff": diff})


@requires("admin")
async def apply_policy(request: Request) -> Response:
    """Body: the policy YAML (``application/yaml``) or ``{"policy": "<yaml>"}``.

    ``?stage=true`` stores the version without activating it, for a canary to start from."""
    stage = request.query_params.get("stage", "false").lower() in ("1", "true", "yes")
    text = await yaml_of(request, "policy")
    compiled = await policies_of(request).apply(text, _actor(request), stage=stage)
    return JSON(
        {
            "version": compiled.version,
            "status": "staged" if stage else "active",
            "thresholds": compiled.thresholds,
        },
        status_code=201,
    )


async def _percent(request: Request) -> float | None:
    """``{"percent": 20}``; an empty body means the next step (5 → 20 → 50 → 100)."""
    if not await request.body():
        return None
    percent = (await json_of(request)).get("percent")
    if percent is None:
        return None
    if isinstance(percent, bool) or not isinstance(percent, int | float):
        raise InvalidInput("percent must be a number above 0 and at most 100")
    return float(percent)


@requires("admin")
async def canary_policy(request: Request) -> Response:
    version = request.path_params["version"]
    percent = await _percent(request)
    return JSON(await policies_of(request).canary(version, percent, _actor(request)))


@requires("admin")
async def promote_policy(request: Request) -> Response:
    version = request.path_params["version"]
    return JSON(await policies_of(request).promote(version, _actor(request)))


@requires("admin")
async def rollback_policy(request: Request) -> Response:
    version = request.path_params["version"]
    return JSON(await policies_of(request).rollback(version, _actor(request)))


POLICY_ROUTES = [
    Route("/v1/policies", list_policies, methods=["GET"]),
    Route("/v1/policies", apply_policy, methods=["POST"]),
    Route("/v1/policies/{version}", get_policy, methods=["GET"]),
    Route("/v1/policies/{version}/diff/{other}", diff_policies, methods=["GET"]),
    Route("/v1/policies/{version}/canary", canary_policy, methods=["POST"]),
    Route("/v1/policies/{version}/promote", promote_policy, methods=["POST"]),
    Route("/v1/policies/{version}/rollback", rollback_policy, methods=["POST"]),
]
