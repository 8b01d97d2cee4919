"""The privacy gate: the last check before a call leaves the private zone.

The router already keeps ``sensitive`` subtasks in the private zone; the gate holds the rule
again at the only place bytes leave, for every path that can reach a public deployment —
the chosen one, a fallback, a hedge, a cascade escalation, a stream. Before the first such
call of a subtask it reads the raw inputs the subtask sees for names and places (once per
input and request). When it finds some, or the reading fails (fail closed, the policy's
``on_detector_failure``), the subtask becomes ``sensitive`` and the call is refused with
403 ``privacy_violation``; the chain goes on to its private deployments.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from typing import Any

from hybridinfer.core.decision import Candidate
from hybridinfer.core.plan import Plan, Privacy, Subtask
from hybridinfer.core.topology import Zone
from hybridinfer.decompose.names import NameCheck
from hybridinfer.errors import PrivacyViolation
from hybridinfer.policy.document import PrivacyPolicy


class PrivacyGate:
    """One request's gate: what it read, what it found (kinds and counts, never values)."""

    def __init__(
        self,
        plan: Plan,
        request_inputs: Mapping[str, Any],
        names: NameCheck | None,
        policy: PrivacyPolicy,
    ) -> None:
        self._plan = plan
        self._inputs = request_inputs
        self._names = names
        self._policy = policy
        self._reads: dict[str, asyncio.Future[bool]] = {}
        self._kinds_before = Counter(plan.privacy.get("kinds", {}))
        self._found: Counter[str] = Counter()
        self._failed: set[str] = set()

    async def clear(self, subtask: Subtask, candidate: Candidate, deadline: float) -> None:
        """Return when ``subtask`` may be sent to ``candidate``; raise PrivacyViolation else.

        Names are read unless the process runs without a name finder (``privacy_ner`` off)
        or the policy says ``names: false``."""
        if candidate.node.zone is not Zone.PUBLIC:
            return
        reads_names = self._names is not None and self._policy.names
        if subtask.privacy is not Privacy.SENSITIVE and reads_names:
            personal = [
                name for name in sorted(subtask.raw_inputs) if await self._holds(name, deadline)
            ]
            self._note()
            if personal:
                subtask.privacy = Privacy.SENSITIVE
        if subtask.privacy is Privacy.SENSITIVE:
            raise PrivacyViolation(
                f"subtask {subtask.id!r} holds personal data and may not leave the private zone"
            )

    async def _holds(self, name: str, deadline: float) -> bool:
        """Whether request input ``name`` holds a name or a place (read once per request)."""
        read = self._reads.get(name)
        if read is None:
            read = self._reads[name] = asyncio.ensure_future(self._read(name, deadline))
        return await asyncio.shield(read)

    async def _read(self, name: str, deadline: float) -> bool:
        if name not in self._inputs:
            return False
        assert self._names is not None
        try:
            kinds = await self._names.kinds_in(
                self._inputs[name], self._policy.names_timeout_ms / 1000.0, deadline
            )
        except Exception:  # fail closed: a model that errs or is away reads as personal data
            self._failed.add(name)
            return self._policy.on_detector_failure == "sensitive"
        self._found.update(kinds)
        return bool(kinds)

    def _note(self) -> None:
        """Record in the plan's privacy summary what the names reading found."""
        summary = self._plan.privacy
        summary["kinds"] = dict(self._kinds_before + self._found)
        summary["names_checked"] = sorted(self._reads)
        summary["detector_failed"] = sorted(set(summary.get("detector_failed", [])) | self._failed)
