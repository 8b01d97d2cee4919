"""Table definitions (SQLAlchemy Core); Alembic migrations in ``migrations/`` create them."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(32), primary_key=True, doc="sha256 prefix of the key: the lookup index"),
    Column("name", String(200), nullable=False),
    Column("hash", String(300), nullable=False, doc="scrypt hash with its salt and parameters"),
    Column("scopes", String(200), nullable=False, doc="space-separated scopes"),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float, nullable=True),
    Column("rate_limit_per_minute", Integer, nullable=True, doc="own limit; null: the default"),
    Column("budget", Float, nullable=True, doc="own spend limit per budget period; null: policy's"),
    Column("expires_at", Float, nullable=True, doc="refused from then on (set by rotation)"),
    Column("replaced_by", String(32), nullable=True, doc="id of the key it was rotated to"),
)

nodes = Table(
    "nodes",
    metadata,
    Column("id", String(128), primary_key=True),
    Column("tier", String(16), nullable=False),
    Column("zone", String(16), nullable=False),
    Column("url", String(500), nullable=False),
    Column("registration", Text, nullable=False, doc="the registration body, JSON"),
    Column("registered_at", Float, nullable=False),
)

requests = Table(
    "requests",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("request_id", String(128), nullable=False, doc="not unique: callers may reuse ids"),
    Column("task", String(200), nullable=True),
    Column("status", String(16), nullable=False),
    Column("key_id", String(32), nullable=True),
    Column("created_at", Float, nullable=False),
    Column("total_ms", Float, nullable=False),
    Column("trace", Text, nullable=False, doc="the whole trace, JSON"),
    Index("ix_requests_request_id", "request_id"),
    Index("ix_requests_created_at", "created_at"),
    Index("ix_requests_status_created_at", "status", "created_at"),
)

decisions = Table(
    "decisions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("request_id", String(128), nullable=False, index=True),
    Column("subtask_id", String(128), nullable=False),
    Column("deployment", String(300), nullable=False),
    Column("tier", String(16), nullable=False),
    Column("policy_version", String(100), nullable=False),
    Column("reason", Text, nullable=False),
)

policies = Table(
    "policies",
    metadata,
    Column("version", String(100), primary_key=True),
    Column("body", Text, nullable=False, doc="the policy YAML as applied"),
    Column("status", String(16), nullable=False, doc="staged | canary | active | retired"),
    Column("thresholds", Text, nullable=False, doc="cascade thresholds resolved at apply, JSON"),
    Column("author", String(64), nullable=True, doc="key id of who applied it"),
    Column("created_at", Float, nullable=False),
    Column("activated_at", Float, nullable=True),
    Column("canary_percent", Float, nullable=True, doc="share of traffic while in canary"),
    Index("ix_policies_status", "status"),
)

tasks = Table(
    "tasks",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("key_id", String(32), nullable=True, doc="who submitted it"),
    Column("idempotency_key", String(200), nullable=True, doc="the caller's Idempotency-Key"),
    Column("request_hash", String(64), nullable=False, doc="sha256 of the request body"),
    Column("status", String(16), nullable=False, doc="queued | running | done | failed"),
    Column("request", Text, nullable=False, doc="the /v1/infer body, JSON"),
    Column("result", Text, nullable=True, doc="the /v1/infer response once done, JSON"),
    Column("error", Text, nullable=True, doc='{"code", "message"} once failed, JSON'),
    Column("attempts", Integer, nullable=False, doc="deliveries that started running it"),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("finished_at", Float, nullable=True),
    UniqueConstraint("key_id", "idempotency_key", name="uq_tasks_key_idempotency"),
    Index("ix_tasks_status", "status"),
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False, doc="unix time of the action"),
    Column("actor", String(64), nullable=False, doc="key id of who acted, or 'system'"),
    Column("action", String(64), nullable=False, doc="dotted name: policy.apply, key.revoke, ..."),
    Column("target", String(300), nullable=False, doc="what it acted on: a version, a key id, ..."),
    Column("before", Text, nullable=True, doc="the state before, JSON"),
    Column("after", Text, nullable=True, doc="the state after, JSON"),
    Index("ix_audit_log_action_at", "action", "at"),
)

model_rollouts = Table(
    "model_rollouts",
    metadata,
    Column("id", String(300), primary_key=True, doc="task/model:candidate of the rollout"),
    Column("status", String(16), nullable=False, doc="promoted | rolled_back"),
    Column("reason", Text, nullable=False, doc="why, in one sentence"),
    Column("comparison", Text, nullable=False, doc="both versions' figures at the decision, JSON"),
    Column("decided_at", Float, nullable=False),
)

learner_outcomes = Table(
    "learner_outcomes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("capability", String(200), nullable=False),
    Column("arm", String(300), nullable=False, doc="the deployment the decision chose"),
    Column("context", Text, nullable=False, doc="the subtask's features, JSON"),
    Column("propensity", Float, nullable=False, doc="the probability the choice had"),
    Column("candidates", Text, nullable=False, doc="the arms it chose among, JSON"),
    Column("public", Integer, nullable=False, doc="1: the arm is in the public zone"),
    Column("quality", Float, nullable=False),
    Column("latency", Float, nullable=False),
    Column("cost", Float, nullable=False),
    Column("source", String(16), nullable=False, doc="implicit | explicit"),
    Column("mode", String(16), nullable=False, doc="static | learned | explore | rule"),
    Column("prefer", String(16), nullable=False),
    Column("key_id", String(32), nullable=True),
    Column("request_id", String(128), nullable=False),
    Column("subtask_id", String(128), nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_learner_outcomes_request_id", "request_id"),
    Index("ix_learner_outcomes_capability_id", "capability", "id"),
)

learner_resets = Table(
    "learner_resets",
    metadata,
    Column("capability", String(200), primary_key=True),
    Column("generation", Integer, nullable=False, doc="bumped by every reset"),
    Column("after_id", Integer, nullable=False, doc="outcomes up to this id are forgotten"),
)

feedback = Table(
    "feedback",
    metadata,
    Column("request_id", String(128), primary_key=True, doc="one feedback per request"),
    Column("key_id", String(32), nullable=True),
    Column("quality", Float, nullable=False, doc="the feedback as a quality in 0..1"),
    Column("body", Text, nullable=False, doc="what the caller sent, JSON"),
    Column("created_at", Float, nullable=False),
)

signal_snapshots = Table(
    "signal_snapshots",
    metadata,
    Column("ref", String(64), primary_key=True, doc="second-replica: what decisions point at"),
    Column("at", Float, nullable=False, doc="unix second the snapshot covers"),
    Column("body", Text, nullable=False, doc="node/network maps per capability/task, JSON"),
    Index("ix_signal_snapshots_at", "at"),
)

leases = Table(
    "leases",
    metadata,
    Column("name", String(64), primary_key=True, doc="what is led: canary-walk, ..."),
    Column("holder", String(64), nullable=False, doc="the replica leading it"),
    Column("expires_at", Float, nullable=False, doc="unix time another replica may take over"),
)

policy_walks = Table(
    "policy_walks",
    metadata,
    Column("version", String(100), primary_key=True, doc="the canary policy version walked"),
    Column("status", String(16), nullable=False, doc="walking|paused|promoted|rolled_back|aborted"),
    Column("step", Integer, nullable=False, doc="index into the steps"),
    Column("step_started_at", Float, nullable=False),
    Column("settings", Text, nullable=False, doc="the guard it walks by, JSON"),
    Column("state", Text, nullable=False, doc="figures of each step, the breach, JSON"),
    Column("started_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)

rollout_walks = Table(
    "rollout_walks",
    metadata,
    Column("id", String(300), primary_key=True, doc="task/model:candidate of the rollout walked"),
    Column("status", String(16), nullable=False, doc="walking|promoted|rolled_back|aborted"),
    Column("step", Integer, nullable=False, doc="index into the steps"),
    Column("step_started_at", Float, nullable=False),
    Column("settings", Text, nullable=False, doc="the guard it walks by, JSON"),
    Column("state", Text, nullable=False, doc="figures of each step, the breach, JSON"),
    Column("started_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)

retained_prompts = Table(
    "retained_prompts",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True, doc="insertion order"),
    Column("request_id", String(128), nullable=False),
    Column("subtask_id", String(200), nullable=False),
    Column("capability", String(100), nullable=False),
    Column("at", Float, nullable=False, doc="unix second the prompt was scored"),
    Column("text", Text, nullable=False, doc="the prompt the difficulty scorer read"),
    Index("ix_retained_prompts_request", "request_id"),
    Index("ix_retained_prompts_at", "at"),
)
