"""Rule-table endpoints: list the running tasks, hot-reload a new table (validated first; the
running table stays on error)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.gateway.routes import requires
from hybridinfer.gateway.state import rules_of, yaml_of
from hybridinfer.server.responses import JSON


@requires("admin")
async def list_rules(request: Request) -> Response:
    return JSON(rules_of(request).describe())


@requires("admin")
async def replace_rules(request: Request) -> Response:
    """Body: the rule YAML (``application/yaml``) or ``{"rules": "<yaml>"}``."""
    text = await yaml_of(request, "rules")
    return JSON(await rules_of(request).replace(text, request.state.principal.key_id))


RULE_ROUTES = [
    Route("/v1/rules", list_rules, methods=["GET"]),
    Route("/v1/rules", replace_rules, methods=["PUT"]),
]
