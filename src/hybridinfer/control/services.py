"""The services the gateway's handlers call: one per handler family (house rule 12).

A handler gets the one service whose method does its whole use case, never the composition
root: a handler that holds the whole control plane will, in time, reach into all of it.
``gateway.app.create_app`` puts each service on ``app.state`` under its field name here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hybridinfer.control.answers import AnswerService
from hybridinfer.control.artifacts import ArtifactService
from hybridinfer.control.audit import AuditLog
from hybridinfer.control.canarywalk import CanaryWalker
from hybridinfer.control.jobs import JobService
from hybridinfer.control.keyadmin import KeyService
from hybridinfer.control.learning import FeedbackService, LearnerService
from hybridinfer.control.metrics import MetricsService
from hybridinfer.control.nodes import NodeService
from hybridinfer.control.policycenter import PolicyCenter
from hybridinfer.control.replay import ReplayService
from hybridinfer.control.rollout import RolloutMonitor
from hybridinfer.control.rules import RuleService
from hybridinfer.control.stats import StatsService
from hybridinfer.control.traces import TraceService
from hybridinfer.pipeline.pipeline import Pipeline


@dataclass(frozen=True, slots=True)
class GatewayServices:
    """Every service a gateway handler may be given, by the name it is stored under."""

    pipeline: Pipeline
    """``/v1/infer`` and the OpenAI API: one pipeline behind every protocol."""
    nodes: NodeService
    traces: TraceService
    jobs: JobService
    policies: PolicyCenter
    rollouts: RolloutMonitor
    rules: RuleService
    keys: KeyService
    artifacts: ArtifactService
    audit: AuditLog
    metrics: MetricsService
    stats: StatsService
    feedback: FeedbackService
    learners: LearnerService
    replay: ReplayService
    """What-if replay of a stored policy on logged traces."""
    walks: CanaryWalker
    """Guarded canary walks."""
    answers: AnswerService

    def by_name(self) -> dict[str, object]:
        """Field name -> service."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
