"""The audit log endpoint: who changed what, newest first (admin only)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.gateway.routes import limit_of, requires
from hybridinfer.gateway.state import audit_of
from hybridinfer.server.responses import JSON


@requires("admin")
async def list_audit(request: Request) -> Response:
    """Query: ``limit`` (1-1000, default 100), ``action`` (e.g. ``policy.rollback``)."""
    action = request.query_params.get("action")
    entries = await audit_of(request).list(limit_of(request, 100), action)
    return JSON({"entries": entries})


AUDIT_ROUTES = [Route("/v1/audit", list_audit, methods=["GET"])]
