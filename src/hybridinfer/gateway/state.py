"""What a handler may read from ``app.state``: the HTTP options, and the one service it calls.

``create_app`` stores each of ``control.services.GatewayServices`` under its field name; the
accessors below are the only readers, so each handler module names the service it uses and
no handler can reach the control plane (house rule 12). Tests may put a fake service under
the same name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

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
from hybridinfer.server.responses import read_json, read_yaml_document


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """The settings that shape how requests are read, not what they do."""

    max_body_bytes: int
    """Largest request body accepted (413 past it)."""
    node_mtls: bool
    """Node routes also need a verified client certificate."""


def options_of(request: Request) -> HttpOptions:
    options: HttpOptions = request.app.state.http
    return options


async def json_of(request: Request) -> dict[str, Any]:
    """The body as a JSON object, bounded by ``max_body_bytes``."""
    return await read_json(request, options_of(request).max_body_bytes)


async def yaml_of(request: Request, field: str) -> str:
    """A YAML document sent as ``application/yaml`` or as ``{field: "<yaml>"}``."""
    return await read_yaml_document(request, options_of(request).max_body_bytes, field)


def pipeline_of(request: Request) -> Pipeline:
    pipeline: Pipeline = request.app.state.pipeline
    return pipeline


def nodes_of(request: Request) -> NodeService:
    nodes: NodeService = request.app.state.nodes
    return nodes


def traces_of(request: Request) -> TraceService:
    traces: TraceService = request.app.state.traces
    return traces


def jobs_of(request: Request) -> JobService:
    jobs: JobService = request.app.state.jobs
    return jobs


def policies_of(request: Request) -> PolicyCenter:
    policies: PolicyCenter = request.app.state.policies
    return policies


def replay_of(request: Request) -> ReplayService:
    replay: ReplayService = request.app.state.replay
    return replay


def walks_of(request: Request) -> CanaryWalker:
    walks: CanaryWalker = request.app.state.walks
    return walks


def rollouts_of(request: Request) -> RolloutMonitor:
    rollouts: RolloutMonitor = request.app.state.rollouts
    return rollouts


def rules_of(request: Request) -> RuleService:
    rules: RuleService = request.app.state.rules
    return rules


def keys_of(request: Request) -> KeyService:
    keys: KeyService = request.app.state.keys
    return keys


def artifacts_of(request: Request) -> ArtifactService:
    artifacts: ArtifactService = request.app.state.artifacts
    return artifacts


def audit_of(request: Request) -> AuditLog:
    audit: AuditLog = request.app.state.audit
    return audit


def metrics_of(request: Request) -> MetricsService:
    metrics: MetricsService = request.app.state.metrics
    return metrics


def answers_of(request: Request) -> AnswerService:
    answers: AnswerService = request.app.state.answers
    return answers


def stats_of(request: Request) -> StatsService:
    stats: StatsService = request.app.state.stats
    return stats


def feedback_of(request: Request) -> FeedbackService:
    feedback: FeedbackService = request.app.state.feedback
    return feedback


def learners_of(request: Request) -> LearnerService:
    learners: LearnerService = request.app.state.learners
    return learners
