"""``GET /v1/rollouts``: each model rollout of the active policy, both versions side by side."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.gateway.routes import requires
from hybridinfer.gateway.state import rollouts_of
from hybridinfer.server.responses import JSON


@requires("admin")
async def list_rollouts(request: Request) -> Response:
    return JSON({"rollouts": rollouts_of(request).describe()})


ROLLOUT_ROUTES = [Route("/v1/rollouts", list_rollouts, methods=["GET"])]
