"""Public names do not move with the code: the gateway's routes, the CLI's commands, the
settings and their environment variables are those of the release before the packages were
re-laid (recorded from it), or more."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from starlette.routing import Mount, Route

from hybridinfer.cli import main
from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.app import create_app
from hybridinfer.settings import NodeSettings, Settings

ROUTES = {
    "GET /healthz", "GET /metrics", "GET /openapi.json", "GET /readyz", "GET /ui",
    "GET /v1/artifacts/{name}", "GET /v1/audit", "GET /v1/keys", "GET /v1/models",
    "GET /v1/nodes", "GET /v1/policies", "GET /v1/policies/{version}",
    "GET /v1/policies/{version}/diff/{other}", "GET /v1/rollouts", "GET /v1/rules",
    "GET /v1/stats", "GET /v1/tasks/{task_id}", "GET /v1/traces", "GET /v1/traces/{request_id}",
    "MOUNT /ui/static", "MOUNT /v1/objects", "POST /v1/chat/completions", "POST /v1/embeddings",
    "POST /v1/infer", "POST /v1/keys", "POST /v1/keys/{key_id}/revoke",
    "POST /v1/keys/{key_id}/rotate", "POST /v1/nodes", "POST /v1/nodes/{node_id}/heartbeat",
    "POST /v1/policies", "POST /v1/policies/{version}/canary",
    "POST /v1/policies/{version}/promote", "POST /v1/policies/{version}/rollback",
    "POST /v1/tasks", "PUT /v1/rules",
}  # fmt: skip
COMMANDS = {
    "gateway", "keys", "keys create", "keys list", "keys revoke", "keys rotate", "models",
    "models build", "models publish", "node", "policy", "policy apply", "policy canary",
    "policy diff", "policy list", "policy promote", "policy rollback", "policy validate",
    "router", "router eval", "router train", "trace", "up",
}  # fmt: skip
SETTINGS = {
    "admission_max_in_flight", "admission_max_queued", "artifact_url_ttl_s",
    "attempt_timeout_factor", "attempt_timeout_floor_ms", "attempt_timeout_ms", "body_timeout_s",
    "bootstrap_key", "bootstrap_key_file", "breaker_failures", "breaker_max_open_s",
    "breaker_open_s", "cache", "cache_prefix", "cloud_cost_per_call", "cloud_models",
    "cloud_port", "data_dir", "gc_young_threshold", "header_timeout_s", "heartbeat_interval_s",
    "hedge_below_latency_ms", "hedge_delay_ms", "host", "inference_threads", "inline_below_us",
    "keep_model_versions", "key_rotation_grace_s", "listen_backlog", "llm", "llm_context_tokens",
    "llm_local_max_input", "llm_threads", "local_cpu_alpha", "local_cpu_in_flight",
    "local_cpu_interval_s", "local_cpu_saturated", "local_models", "log_format", "log_level",
    "max_body_bytes", "models_dir", "names_process", "nats_url", "nats_url_file", "node_mtls",
    "node_sync_interval_s", "node_token", "node_token_file", "object_signing_key",
    "object_store", "objects_dir", "otel_endpoint", "otel_exporter", "otel_sample_ratio",
    "otel_service_name", "policy_file", "port", "privacy_ner", "probe_interval_s", "public_url",
    "queue", "queue_stream", "rate_limit_mode", "rate_limit_per_minute", "redis_url",
    "redis_url_file", "request_timeout_ms", "retry_attempts", "retry_base_ms", "retry_max_ms",
    "rules_file", "s3_bucket", "s3_endpoint_url", "s3_prefix", "session_cache_bytes",
    "shed_busy_in_flight", "shed_max_busy", "shed_max_in_flight", "shed_max_queued",
    "shed_max_wait_ms", "shed_retry_after_s", "static_nodes", "store_url", "store_url_file",
    "task_ack_wait_s", "task_max_attempts",
    "task_retry_base_s", "task_retry_max_s", "task_workers", "tls_ca_file", "tls_cert_file",
    "tls_client_cert_file", "tls_client_key_file", "tls_key_file",
}  # fmt: skip
NODE_SETTINGS = {
    "advertise_url", "cache_dir", "control_plane", "cost_per_call", "heartbeat_interval_s",
    "host", "id", "inline_below_us", "keep_versions", "max_batch_size", "max_batch_wait_us",
    "models", "models_dir",
    "port", "preload", "pull_interval_s", "pull_models", "session_cache_bytes", "threads", "tier",
    "tls_ca_file", "tls_cert_file", "tls_key_file", "tls_require_client_cert", "token",
    "token_file", "zone",
}  # fmt: skip


def commands(group: click.Group, prefix: str = "") -> set[str]:
    found = set()
    for name, command in group.commands.items():
        found.add(f"{prefix}{name}")
        if isinstance(command, click.Group):
            found |= commands(command, f"{prefix}{name} ")
    return found


def test_the_gateway_routes_are_kept(tmp_path: Path) -> None:
    app = create_app(ControlPlane(Settings(data_dir=tmp_path, local_models=[])))
    served = set()
    for route in app.routes:
        if isinstance(route, Route):
            served |= {
                f"{method} {route.path}" for method in route.methods or () if method != "HEAD"
            }
        elif isinstance(route, Mount):
            served.add(f"MOUNT {route.path}")
    assert served >= ROUTES, sorted(ROUTES - served)


def test_the_cli_commands_are_kept() -> None:
    assert isinstance(main, click.Group)
    assert commands(main) >= COMMANDS, sorted(COMMANDS - commands(main))


def test_the_settings_and_their_environment_variables_are_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert set(Settings.model_fields) >= SETTINGS, sorted(SETTINGS - set(Settings.model_fields))
    assert set(NodeSettings.model_fields) >= NODE_SETTINGS
    assert Settings.model_config.get("env_prefix") == "HYBRIDINFER_"
    assert NodeSettings.model_config.get("env_prefix") == "HYBRIDINFER_NODE_"
    monkeypatch.setenv("HYBRIDINFER_REQUEST_TIMEOUT_MS", "4321")
    monkeypatch.setenv("HYBRIDINFER_NODE_MAX_BATCH_SIZE", "7")
    assert Settings(data_dir=tmp_path).request_timeout_ms == 4321
    assert NodeSettings().max_batch_size == 7
