"""The cache stage as the executor sees it: a hit becomes the subtask's answer (an attempt of
role ``reused``, never listed among the trace's calls), a computed answer is kept.

The stage itself (keys, stores, the semantic guard) lives in ``answers/``; this module maps a
routing decision onto it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from hybridinfer.answers.base import Answer
from hybridinfer.answers.stage import AnswerStage, ReuseRequest
from hybridinfer.core.decision import Candidate, Decision
from hybridinfer.core.plan import Subtask
from hybridinfer.core.trace import Attempt

__all__ = ["AnswerReuse", "ReuseRequest"]


class AnswerReuse:
    """Looks a subtask's call up under its chosen deployment; keeps what was computed."""

    def __init__(self, stage: AnswerStage) -> None:
        self.stage = stage

    async def lookup(
        self,
        subtask: Subtask,
        decision: Decision,
        inputs: Mapping[str, Any],
        request: ReuseRequest,
    ) -> tuple[dict[str, Any], Attempt, dict[str, Any]] | None:
        """The reused outputs, the attempt that stands for the hit, the trace's account."""
        reused = await self.stage.lookup(subtask, decision.chosen, inputs, request)
        if reused is None:
            return None
        answer = reused.answer
        attempt = Attempt(
            subtask_id=subtask.id,
            deployment=answer.deployment,
            tier=answer.tier,
            node=answer.node,
            model=answer.model,
            role="reused",
            latency_ms=reused.lookup_ms,
        )
        return dict(answer.outputs), attempt, reused.describe()

    async def keep(
        self,
        subtask: Subtask,
        decision: Decision,
        inputs: Mapping[str, Any],
        request: ReuseRequest,
        outputs: Mapping[str, Any],
        used: Attempt,
        request_id: str,
    ) -> None:
        """File the answer under the chosen deployment (where the next lookup reads) and, when
        a fallback or a hedge answered, under that deployment too."""
        answering = _candidate(decision, used.deployment) or decision.chosen
        answer = Answer(
            outputs=dict(outputs),
            request_id=request_id,
            deployment=used.deployment,
            tier=used.tier,
            node=used.node,
            model=used.model,
            cost=answering.deployment.cost_per_call,
            created_at=time.time(),
        )
        await self.stage.keep(subtask, decision.chosen, inputs, request, answer)
        if answering is not decision.chosen:
            await self.stage.keep(subtask, answering, inputs, request, answer)


def _candidate(decision: Decision, deployment_id: str) -> Candidate | None:
    escalations = decision.cascade.escalate_to if decision.cascade is not None else []
    candidates: list[Candidate] = [decision.chosen, *decision.fallbacks, *escalations]
    for candidate in candidates:
        if candidate.deployment.id == deployment_id:
            return candidate
    return None
