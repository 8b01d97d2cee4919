"""The learner's use cases: feedback on one's own requests (``POST /v1/feedback``), and an
admin's view and reset of a capability's learner (``/v1/learners``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from hybridinfer.control.audit import AuditLog
from hybridinfer.control.keys import Principal
from hybridinfer.errors import NotFound, SchemaViolation
from hybridinfer.learning.engine import Learners
from hybridinfer.learning.outcomes import FEEDBACK_MARGIN_S, feedback_quality
from hybridinfer.policy.learning import LearningPolicy
from hybridinfer.store.learnerlog import LearnerLog
from hybridinfer.store.tracesink import TraceSink

_FIELDS = frozenset({"request_id", "score", "label", "correct", "comment"})


class FeedbackService:
    """Stores a caller's feedback on a request it made, beside that request's trace."""

    def __init__(
        self, traces: TraceSink, log: LearnerLog, policy: Callable[[], LearningPolicy]
    ) -> None:
        self._traces = traces
        self._log = log
        self._policy = policy

    async def submit(self, body: dict[str, Any], principal: Principal) -> dict[str, Any]:
        """Feedback on ``body["request_id"]``: 404 unless this key made that request, 409
        for a second feedback; says whether it reaches the learner (within the window)."""
        unknown = sorted(set(body) - _FIELDS)
        if unknown:
            raise SchemaViolation(f"unknown field(s): {', '.join(unknown)}")
        request_id = body.get("request_id")
        if not isinstance(request_id, str) or not 0 < len(request_id) <= 128:
            raise SchemaViolation("request_id must be a string of 1 to 128 characters")
        comment = body.get("comment")
        if comment is not None and (not isinstance(comment, str) or len(comment) > 2000):
            raise SchemaViolation("comment must be a string of at most 2000 characters")
        quality = feedback_quality(body)
        trace = await self._traces.get(request_id)
        if trace is None or trace.get("key_id") != principal.key_id:
            raise NotFound("no request with this id made with this key", code="unknown_trace")
        await self._log.add_feedback(request_id, principal.key_id, quality, body)
        window = self._policy().feedback_window_s
        learns = time.time() <= trace["created_at"] + window - FEEDBACK_MARGIN_S
        learned_decisions = sum(1 for d in trace.get("decisions", []) if d.get("learning"))
        return {
            "request_id": request_id,
            "quality": quality,
            "teaches_learner": learns and learned_decisions > 0,
            "window_s": window,
        }

    async def get(self, request_id: str) -> dict[str, Any] | None:
        """The feedback stored for a request, if any (shown with its trace)."""
        return await self._log.get_feedback(request_id)


class LearnerService:
    """What each capability's learner knows, and forgetting it (audited)."""

    def __init__(self, learners: Learners, log: LearnerLog, audit: AuditLog) -> None:
        self._learners = learners
        self._log = log
        self._audit = audit

    def describe(self, capability: str | None = None) -> dict[str, Any]:
        """This replica's learners (every replica applies the same log)."""
        found = self._learners.describe(capability)
        if capability is not None and capability not in found["learners"]:
            raise NotFound(f"no learner for {capability!r} yet", code="unknown_learner")
        return found

    async def reset(self, capability: str, actor: str) -> dict[str, Any]:
        """Forget a capability's outcomes on every replica; the log keeps them."""
        if not 0 < len(capability) <= 200:
            raise SchemaViolation("capability must be 1 to 200 characters")
        before = self._learners.describe(capability)["learners"].get(capability)
        generation, after_id = await self._log.reset(capability)
        self._learners.forget(capability)
        state = {"generation": generation, "forgotten_through": after_id}
        await self._audit.record(actor, "learner.reset", capability, before=before, after=state)
        return {"capability": capability, **state}

    async def records(self, capability: str, limit: int) -> list[dict[str, Any]]:
        """The logged outcomes since the last reset, for offline evaluation."""
        return await self._log.records(capability, limit)
