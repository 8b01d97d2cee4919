"""The rule-table use cases behind ``/v1/rules``: what the running table holds, and a hot
reload that validates first (the running table stays on error) and is audited."""

from __future__ import annotations

from typing import Any

from hybridinfer.control.audit import AuditLog
from hybridinfer.decompose.decomposer import Decomposer


class RuleService:
    """Reads and replaces the decomposer's rule table."""

    def __init__(self, decomposer: Decomposer, audit: AuditLog) -> None:
        self._decomposer = decomposer
        self._audit = audit

    def describe(self) -> dict[str, Any]:
        """``{"version", "tasks": {name: description}}`` of the running table."""
        rules = self._decomposer.rules
        tasks = {name: rule.description for name, rule in sorted(rules.tasks.items())}
        return {"version": rules.version, "tasks": tasks}

    async def replace(self, text: str, actor: str) -> dict[str, Any]:
        """Validate the rule YAML ``text``, run it, audit the change; ``{"version", "tasks"}``
        with the new table's task names."""
        before = self._decomposer.rules.version
        rules = self._decomposer.reload(text)
        await self._audit.record(actor, "rules.replace", str(rules.version), before, rules.version)
        return {"version": rules.version, "tasks": sorted(rules.tasks)}
