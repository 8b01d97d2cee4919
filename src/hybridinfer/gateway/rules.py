"""Rule-table endpoints: list the running tasks, hot-reload a new table (validated first; the
running table stays on error)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.gateway.routes import plane_of, requires
from hybridinfer.server.responses import JSON, read_yaml_document


@requires("admin")
async def list_rules(request: Request) -> Response:
    rules = plane_of(request).decomposer.rules
    tasks = {name: rule.description for name, rule in sorted(rules.tasks.items())}
    return JSON({"version": rules.version, "tasks": tasks})


@requires("admin")
async def replace_rules(request: Request) -> Response:
    """Body: the rule YAML (``application/yaml``) or ``{"rules": "<yaml>"}``."""
    plane = plane_of(request)
    text = await read_yaml_document(request, plane.settings.max_body_bytes, "rules")
    before = plane.decomposer.rules.version
    rules = plane.decomposer.reload(text)
    actor = request.state.principal.key_id
    await plane.audit.record(actor, "rules.replace", str(rules.version), before, rules.version)
    return JSON({"version": rules.version, "tasks": sorted(rules.tasks)})


RULE_ROUTES = [
    Route("/v1/rules", list_rules, methods=["GET"]),
    Route("/v1/rules", replace_rules, methods=["PUT"]),
]
