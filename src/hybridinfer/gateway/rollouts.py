"""``GET /v1/rollouts``: each model rollout of the active policy, both versions side by side."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.gateway.routes import plane_of, requires
from hybridinfer.server.responses import JSON


@requires("admin")
async def list_rollouts(request: Request) -> Response:
    return JSON({"rollouts": plane_of(request).rollouts.describe()})


ROLLOUT_ROUTES = [Route("/v1/rollouts", list_rollouts, methods=["GET"])]
