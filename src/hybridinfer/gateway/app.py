"""The gateway ASGI application."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.routing import BaseRoute

from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.answers import ANSWER_ROUTES
from hybridinfer.gateway.artifacts import artifact_routes
from hybridinfer.gateway.audit import AUDIT_ROUTES
from hybridinfer.gateway.change import CHANGE_ROUTES
from hybridinfer.gateway.dashboard import DASHBOARD_ROUTES
from hybridinfer.gateway.exactroutes import ExactRoutes
from hybridinfer.gateway.frontdoor import FrontDoor
from hybridinfer.gateway.jobs import TASK_ROUTES
from hybridinfer.gateway.keys import KEY_ROUTES
from hybridinfer.gateway.learning import LEARNING_ROUTES
from hybridinfer.gateway.metrics import METRICS_ROUTES
from hybridinfer.gateway.openai import OPENAI_ROUTES
from hybridinfer.gateway.openapi import OPENAPI_ROUTES
from hybridinfer.gateway.policies import POLICY_ROUTES
from hybridinfer.gateway.rollouts import ROLLOUT_ROUTES
from hybridinfer.gateway.routes import ROUTES
from hybridinfer.gateway.rules import RULE_ROUTES
from hybridinfer.gateway.state import HttpOptions

SERVICE_ROUTES: list[BaseRoute] = [
    *ROUTES,
    *TASK_ROUTES,
    *METRICS_ROUTES,
    *POLICY_ROUTES,
    *CHANGE_ROUTES,
    *ROLLOUT_ROUTES,
    *RULE_ROUTES,
    *KEY_ROUTES,
    *OPENAPI_ROUTES,
    *DASHBOARD_ROUTES,
    *AUDIT_ROUTES,
    *ANSWER_ROUTES,
    *OPENAI_ROUTES,
    *LEARNING_ROUTES,
]
"""Every route but the object store's, which depends on the store (``artifact_routes``)."""


def create_app(
    plane: ControlPlane, on_start: Callable[[str | None], None] | None = None
) -> Starlette:
    """The gateway; its lifespan starts and stops ``plane``.

    The front door gets the parts it guards with; each handler gets only its service (from
    ``plane.services``, on ``app.state`` by name), never the plane. ``on_start`` receives the
    admin key generated at first start (None when there was none to generate), so the CLI
    can print it once.
    """

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        generated = await plane.start()
        if on_start is not None:
            on_start(generated)
        try:
            yield
        finally:
            await plane.stop()

    app = Starlette(routes=[*SERVICE_ROUTES, *artifact_routes(plane.objects)], lifespan=lifespan)
    # The front door instead of Starlette's fold (its error pair and a chain of middleware):
    # one callable, one send wrapper, the envelope for every error (gateway/frontdoor.py).
    front_door = FrontDoor(
        ExactRoutes(app.router),
        load=plane.gateway_load,
        keys=plane.keys,
        limiter=plane.rate_limiter,
        body_timeout_s=plane.settings.body_timeout_s,
    )
    app.middleware_stack = front_door
    # The server's protocol refuses with it before a refused request becomes an ASGI task.
    app.state.refuse_now = front_door.refuse_now
    settings = plane.settings
    app.state.http = HttpOptions(
        max_body_bytes=settings.max_body_bytes, node_mtls=settings.node_mtls
    )
    for name, service in plane.services.by_name().items():
        setattr(app.state, name, service)
    return app
