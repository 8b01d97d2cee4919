"""Rule-table endpoints: list the running tasks, hot-reload a new table (validated first; the
running table stays on error)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.errors import SchemaViolation
from hybridinfer.gateway.responses import JSON, read_json, read_text
from hybridinfer.gateway.routes import plane_of, requires


@requires("admin")
async def list_rules(request: Request) -> Response:
    rules = plane_of(request).decomposer.rules
    tasks = {name: rule.description for name, rule in sorted(rules.tasks.items())}
    return JSON({"version": rules.version, "tasks": tasks})


@requires("admin")
async def replace_rules(request: Request) -> Response:
    """Body: the rule YAML (``application/yaml``) or ``{"rules": "<yaml>"}``."""
    plane = plane_of(request)
    limit = plane.settings.max_body_bytes
    if "yaml" in request.headers.get("content-type", ""):
        text = await read_text(request, limit)
    else:
        given = (await read_json(request, limit)).get("rules")
        if not isinstance(given, str):
            raise SchemaViolation('send the rules as YAML, or as {"rules": "<yaml text>"}')
        text = given
    rules = plane.decomposer.reload(text)
    return JSON({"version": rules.version, "tasks": sorted(rules.tasks)})


RULE_ROUTES = [
    Route("/v1/rules", list_rules, methods=["GET"]),
    Route("/v1/rules", replace_rules, methods=["PUT"]),
]
