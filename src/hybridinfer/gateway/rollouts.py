"""``GET /v1/rollouts``: each model rollout of the active policy, both versions side by side,
and every guarded policy walk with the figures of each step."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.gateway.routes import requires
from hybridinfer.gateway.state import rollouts_of, walks_of
from hybridinfer.server.responses import JSON


@requires("admin")
async def list_rollouts(request: Request) -> Response:
    walks = await walks_of(request).overview()
    return JSON({"rollouts": rollouts_of(request).describe(), "policy_walks": walks})


ROLLOUT_ROUTES = [Route("/v1/rollouts", list_rollouts, methods=["GET"])]
