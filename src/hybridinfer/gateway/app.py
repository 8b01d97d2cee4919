"""The gateway ASGI application."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from hybridinfer.control.plane import ControlPlane
from hybridinfer.errors import HybridInferError, MethodNotAllowed, NotFound
from hybridinfer.gateway.answers import ANSWER_ROUTES
from hybridinfer.gateway.artifacts import artifact_routes
from hybridinfer.gateway.audit import AUDIT_ROUTES
from hybridinfer.gateway.bodytimeout import BodyTimeoutMiddleware
from hybridinfer.gateway.change import CHANGE_ROUTES
from hybridinfer.gateway.dashboard import DASHBOARD_ROUTES
from hybridinfer.gateway.jobs import TASK_ROUTES
from hybridinfer.gateway.keys import KEY_ROUTES
from hybridinfer.gateway.learning import LEARNING_ROUTES
from hybridinfer.gateway.metrics import METRICS_ROUTES
from hybridinfer.gateway.middleware import (
    AccessLogMiddleware,
    AuthMiddleware,
    ErrorMiddleware,
    RateLimitMiddleware,
    RequestIdMiddleware,
)
from hybridinfer.gateway.openai import OPENAI_ROUTES
from hybridinfer.gateway.openapi import OPENAPI_ROUTES
from hybridinfer.gateway.policies import POLICY_ROUTES
from hybridinfer.gateway.rollouts import ROLLOUT_ROUTES
from hybridinfer.gateway.routes import ROUTES
from hybridinfer.gateway.rules import RULE_ROUTES
from hybridinfer.gateway.state import HttpOptions
from hybridinfer.server.responses import error_response
from hybridinfer.server.shedding import LoadShedder


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    error: HybridInferError
    if exc.status_code == 405:
        error = MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}")
    else:
        error = NotFound(f"no route {request.url.path}")
    return error_response(error, request.state.request_id)


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

    The middleware gets the parts it guards with; each handler gets only its service (from
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

    app = Starlette(
        routes=[*SERVICE_ROUTES, *artifact_routes(plane.objects)],
        middleware=_middleware(plane),
        exception_handlers={HTTPException: _http_exception},
        lifespan=lifespan,
    )
    settings = plane.settings
    app.state.http = HttpOptions(
        max_body_bytes=settings.max_body_bytes, node_mtls=settings.node_mtls
    )
    for name, service in plane.services.by_name().items():
        setattr(app.state, name, service)
    return app


def _middleware(plane: ControlPlane) -> list[Middleware]:
    """Outermost first: load shedding refuses before anything else runs (a body read, a key
    checked, a log line: ``server/shedding.py`` renders its own 503); then request id, access
    log and the error envelope wrap the rest; then the body timeout, auth, and the caller's
    rate limit."""
    return [
        Middleware(LoadShedder, load=plane.gateway_load),
        Middleware(RequestIdMiddleware),
        Middleware(AccessLogMiddleware),
        Middleware(ErrorMiddleware),
        Middleware(BodyTimeoutMiddleware, timeout_s=plane.settings.body_timeout_s),
        Middleware(AuthMiddleware, keys=plane.keys),
        Middleware(RateLimitMiddleware, limiter=plane.rate_limiter),
    ]
