"""Typed configuration, documented in one place.

Sources, strongest first: command-line flags, ``HYBRIDINFER_*`` environment variables, the YAML
file given with ``--config``, then these defaults. Secrets come from the environment (or a file
named by ``*_file``), never from the YAML in clear.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from hybridinfer.core.schemas import NodeRegistration
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.errors import ConfigError
from hybridinfer.yamlfile import load_with_lines, parse_document


class Settings(BaseSettings):
    """Everything the control plane (gateway + router + local runtime) is configured by."""

    model_config = SettingsConfigDict(env_prefix="HYBRIDINFER_", extra="forbid")

    host: str = Field("127.0.0.1", description="Address the gateway listens on.")
    port: int = Field(8080, ge=1, le=65535, description="Port the gateway listens on.")
    data_dir: Path = Field(Path(".hybridinfer"), description="Where state and models live.")
    store_url: str | None = Field(
        None, description="SQLAlchemy async URL; default SQLite in data_dir."
    )
    models_dir: Path | None = Field(None, description="Built models; default data_dir/models.")
    rules_file: Path | None = Field(None, description="Task rule table; default the bundled one.")
    policy_file: Path | None = Field(None, description="Routing policy; default the bundled one.")
    bootstrap_key: SecretStr | None = Field(
        None, description="API key created with admin scope at start (else one is generated)."
    )
    node_token: SecretStr | None = Field(
        None, description="Token nodes present to register; `up` generates one for its node."
    )
    bootstrap_key_file: Path | None = Field(
        None, description="File holding the bootstrap key (a mounted secret); beats the env."
    )
    node_token_file: Path | None = Field(
        None, description="File holding the node token (a mounted secret); beats the env."
    )
    key_rotation_grace_s: float = Field(
        86_400.0, ge=0.0, description="How long a rotated API key keeps working by default."
    )
    tls_cert_file: Path | None = Field(
        None, description="PEM certificate (chain) the gateway serves HTTPS with; off if unset."
    )
    tls_key_file: Path | None = Field(
        None, description="PEM private key of tls_cert_file (a mounted secret, never logged)."
    )
    tls_ca_file: Path | None = Field(
        None,
        description="PEM CA bundle trusted for nodes: their HTTPS certificates, and the client "
        "certificates nodes present when node_mtls is on.",
    )
    tls_client_cert_file: Path | None = Field(
        None, description="Certificate the gateway presents to nodes that require mutual TLS."
    )
    tls_client_key_file: Path | None = Field(
        None, description="Private key of tls_client_cert_file."
    )
    node_mtls: bool = Field(
        False,
        description="Node routes (register, heartbeat, artifacts) also require a client "
        "certificate signed by tls_ca_file (mutual TLS), besides the node token.",
    )
    header_timeout_s: float = Field(
        10.0, gt=0.0, description="A client must send its request headers within this (else 408)."
    )
    body_timeout_s: float = Field(
        30.0, gt=0.0, description="A client must send its request body within this (else 408)."
    )
    listen_backlog: int = Field(
        4096,
        ge=64,
        description="Connections the kernel holds for the gateway before it accepts them (capped "
        "by net.core.somaxconn). Past it the kernel drops new connections and clients wait out "
        "TCP's SYN retransmissions (1, 3, 7 s ...) instead of getting a quick 503.",
    )
    local_models: list[str] = Field(
        default_factory=lambda: ["sentiment-small", "digits-small"],
        description="Models the in-process local tier serves.",
    )
    cloud_models: list[str] = Field(
        default_factory=lambda: ["sentiment-large", "digits-large"],
        description="Models the cloud node that `up` starts serves.",
    )
    cloud_port: int = Field(0, ge=0, le=65535, description="Cloud node port (0: port + 1).")
    cloud_cost_per_call: float = Field(
        0.0002, ge=0.0, description="Price of one cloud call, for the router's cost goal."
    )
    heartbeat_interval_s: float = Field(10.0, gt=0.0, description="Node heartbeat period.")
    request_timeout_ms: int = Field(
        10_000, gt=0, description="Deadline of a request unless it asks for less."
    )
    max_body_bytes: int = Field(1_048_576, gt=0, description="Largest request body accepted.")
    rate_limit_per_minute: int = Field(
        60_000, gt=0, description="Requests per minute allowed to each API key."
    )
    inference_threads: int = Field(2, ge=1, description="Threads running in-process models.")
    privacy_ner: bool = Field(
        True,
        description="The redact step also pseudonymises names and places with spaCy's small "
        "English model, when the `ner` extra is installed (patterns alone otherwise).",
    )
    session_cache_bytes: int = Field(
        1 << 30,
        gt=0,
        description="Memory bound of the local tier's loaded models (model file bytes).",
    )
    object_store: Literal["filesystem", "s3"] = Field(
        "filesystem", description="Where model versions are published (and nodes pull from)."
    )
    objects_dir: Path | None = Field(
        None, description="Filesystem object store root; default data_dir/objects."
    )
    s3_bucket: str | None = Field(None, description="S3 object store bucket.")
    s3_prefix: str = Field("", description="Key prefix inside the S3 bucket.")
    s3_endpoint_url: str | None = Field(
        None, description="S3-compatible endpoint (MinIO, moto, …); default AWS."
    )
    public_url: str | None = Field(
        None,
        description="The gateway's URL as nodes reach it (filesystem signed URLs point here); "
        "default http://host:port.",
    )
    artifact_url_ttl_s: int = Field(
        300, gt=0, description="Lifetime of the signed URLs nodes fetch artifacts with."
    )
    object_signing_key: SecretStr | None = Field(
        None,
        description="HMAC key of filesystem signed URLs (env only); default a random key "
        "per start.",
    )
    keep_model_versions: int = Field(3, ge=1, description="Versions kept per model in the store.")
    static_nodes: list[NodeRegistration] = Field(
        default_factory=list,
        description="Nodes known without registering, e.g. OpenAI-compatible upstreams "
        "(protocol `openai`: llama.cpp's server, vLLM, a cloud API); probed for health.",
    )
    breaker_failures: int = Field(
        3, ge=1, description="Consecutive upstream failures that open a deployment's breaker."
    )
    breaker_open_s: float = Field(
        1.0, gt=0.0, description="How long a breaker stays open before a half-open trial."
    )
    breaker_max_open_s: float = Field(
        30.0, gt=0.0, description="Cap of the open period's ceiling (doubles per failed trial)."
    )
    breaker_reset_successes: int = Field(
        5, ge=1, description="Calls in a row that succeed before a breaker's back-off resets."
    )
    eject_max_s: float = Field(
        2.0, gt=0.0, description="Longest outlier ejection (jittered, doubling up to this)."
    )
    eject_max_share: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Most of a tier's deployments ejected at once (>= 1; 0: no ejection).",
    )
    retry_attempts: int = Field(
        2,
        ge=1,
        description="Tries of one deployment (first included) on retryable failures (connect "
        "errors, HTTP 502/503/504, timeouts) before falling back; never past the deadline.",
    )
    retry_base_ms: float = Field(
        50.0, gt=0.0, description="The first retry waits up to this long (full jitter)."
    )
    retry_max_ms: float = Field(
        1000.0, gt=0.0, description="Cap of one retry wait (it doubles per retry up to this)."
    )
    attempt_timeout_ms: int = Field(
        0,
        ge=0,
        description="Longest one try of a deployment may take, so a hung call is retried or "
        "falls back in time (0: the adaptive bound, attempt_timeout_factor).",
    )
    attempt_timeout_factor: float = Field(
        4.0,
        ge=0.0,
        description="Without attempt_timeout_ms: once a deployment has 5 observed answers, "
        "one try of it may take this many times its p99 (at least attempt_timeout_floor_ms), "
        "so a call into a cut link costs a few times its usual latency, not the deadline "
        "(0: a try may use whatever is left of the request's deadline). Streamed chats are "
        "not bounded by it.",
    )
    attempt_timeout_floor_ms: int = Field(
        250, ge=1, description="The adaptive per-try bound is never below this."
    )
    hedge_delay_ms: float = Field(
        50.0,
        gt=0.0,
        description="Hedged subtasks: head start of the first call until its deployment has "
        "20 observed calls; after that, their p95 latency.",
    )
    hedge_below_latency_ms: float = Field(
        0.0,
        ge=0.0,
        description="Hedge the subtasks of requests whose max_latency_ms is at most this "
        "(0: only requests with options.hedge true, and latency-sensitive subtasks).",
    )
    hedge_latency_sensitive: bool = Field(
        True, description="Hedge latency-sensitive subtasks unless the request says otherwise."
    )
    shed_max_in_flight: int = Field(
        64,
        ge=1,
        description="Inference requests the gateway runs at once (load shedding). One event "
        "loop gains no throughput from more (its peak is reached near 32), only latency.",
    )
    shed_max_queued: int = Field(
        128,
        ge=0,
        description="Inference requests waiting for a slot; past this: 503 overloaded with "
        "Retry-After.",
    )
    shed_max_wait_ms: int = Field(
        1000, ge=0, description="Longest wait for a slot before 503 overloaded."
    )
    shed_retry_after_s: float = Field(
        1.0, gt=0.0, description="Retry-After of a 503 overloaded answer (gateway and nodes)."
    )
    admission_max_in_flight: int = Field(
        64, ge=1, description="Calls in flight per node (admission); more wait by priority."
    )
    admission_max_queued: int = Field(
        256,
        ge=0,
        description="Calls waiting per node; past this a call is shed (503 overloaded) or, "
        "with a fallback left, goes there.",
    )
    local_cpu_interval_s: float = Field(
        0.5, gt=0.0, description="How often the host's CPU use is sampled (off the request path)."
    )
    local_cpu_alpha: float = Field(
        0.3, gt=0.0, le=1.0, description="EWMA weight of the newest CPU sample (1: no smoothing)."
    )
    local_cpu_saturated: float = Field(
        0.9,
        gt=0.0,
        le=1.0,
        description="Smoothed host CPU use (0..1) at which local admission is limited; "
        "restored below this minus 0.1.",
    )
    local_cpu_in_flight: int = Field(
        2,
        ge=1,
        description="Local-tier calls in flight while the CPU is saturated; calls with another "
        "deployment in their chain spill over to it instead of waiting.",
    )
    probe_interval_s: float = Field(
        1.0, gt=0.0, description="Health and RTT probe period of remote nodes (down on a miss)."
    )
    exchange_window_s: float = Field(
        5.0, gt=0.0, description="Span of network.<tier>.p95_ms and slow_share (probes, calls)."
    )
    slow_exchange_ms: float = Field(
        200.0, gt=0.0, description="An exchange slower than this counts in slow_share."
    )
    llm: Literal["auto", "on", "off"] = Field(
        "auto",
        description="`up` runs the local and cloud chat LLMs (llama.cpp servers); auto: when "
        "the `llm` extra and its GGUF packages are installed.",
    )
    llm_local_max_input: int = Field(
        1500, gt=0, description="Longest chat (characters) the local LLM takes; longer: cloud."
    )
    llm_threads: int = Field(1, ge=1, description="CPU threads of each LLM server.")
    llm_context_tokens: int = Field(2048, ge=256, description="Context window of each LLM.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Least severe log level written (access lines are `info`)."
    )
    log_format: Literal["json", "text"] = Field(
        "json",
        description="Log lines as one JSON object each (with request_id and trace_id), or text.",
    )
    otel_exporter: Literal["off", "otlp", "console", "memory"] = Field(
        "off",
        description="OpenTelemetry spans of every request: off, OTLP/HTTP to otel_endpoint, "
        "console (stderr), or memory (kept in process, for tests).",
    )
    otel_endpoint: str = Field(
        "http://127.0.0.1:4318/v1/traces",
        description="OTLP/HTTP traces endpoint (an OpenTelemetry Collector, Jaeger, Tempo, …).",
    )
    otel_service_name: str = Field(
        "hybridinfer-gateway", description="`service.name` of the exported spans."
    )
    otel_sample_ratio: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="Share of `ok` requests exported as spans (the others always are); a "
        "caller's traceparent sampled flag decides instead when it sent one.",
    )
    store_url_file: Path | None = Field(
        None, description="File holding the store URL (a mounted secret); beats store_url."
    )
    cache: Literal["memory", "redis"] = Field(
        "memory", description="Rate-limit and spend counters: in process, or shared in Redis."
    )
    redis_url: str | None = Field(
        None, description="Redis URL (`redis://[:password@]host:port/db`); env or file only."
    )
    redis_url_file: Path | None = Field(None, description="File holding the Redis URL.")
    cache_prefix: str = Field(
        "hybridinfer:", description="Prefix of every cache key (several deployments, one Redis)."
    )
    rate_limit_mode: Literal["fail-open", "fail-closed"] = Field(
        "fail-open",
        description="When the cache is unreachable: let requests through (fail-open, counted "
        "in hybridinfer_ratelimit_cache_errors_total) or refuse them with 503 (fail-closed).",
    )
    queue: Literal["memory", "nats"] = Field(
        "memory", description="Async task queue: in process, or NATS JetStream (shared)."
    )
    nats_url: str | None = Field(
        None, description="NATS URL (`nats://[user:password@]host:4222`); env or file only."
    )
    nats_url_file: Path | None = Field(None, description="File holding the NATS URL.")
    queue_stream: str = Field(
        "HYBRIDINFER_TASKS",
        pattern=r"^[A-Za-z0-9_-]{1,64}$",
        description="JetStream stream of the tasks (subjects `<stream lower>.work|.dead`).",
    )
    task_workers: int = Field(
        4, ge=0, description="Async tasks this replica runs at once (0: submit only)."
    )
    task_max_attempts: int = Field(
        5, ge=1, description="Deliveries of a failing task before it is dead-lettered."
    )
    task_ack_wait_s: float = Field(
        30.0, gt=0.0, description="A task not settled this long (its replica died) runs again."
    )
    task_retry_base_s: float = Field(
        0.5, gt=0.0, description="First retry delay of a failed task; doubles, with jitter."
    )
    task_retry_max_s: float = Field(30.0, gt=0.0, description="Longest retry delay.")
    node_sync_interval_s: float = Field(
        2.0,
        gt=0.0,
        description="How often a replica adopts node registrations other replicas stored.",
    )

    @model_validator(mode="after")
    def _secrets_from_files(self) -> Settings:
        for name in ("bootstrap_key", "node_token"):
            from_file = secret_from_file(getattr(self, f"{name}_file"))
            if from_file is not None:
                object.__setattr__(self, name, SecretStr(from_file))
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file and tls_key_file go together")
        if self.node_mtls and (self.tls_cert_file is None or self.tls_ca_file is None):
            raise ValueError("node_mtls needs tls_cert_file, tls_key_file and tls_ca_file")
        return self

    @property
    def scheme(self) -> str:
        """``https`` when the gateway serves TLS."""
        return "https" if self.tls_cert_file is not None else "http"

    @property
    def resolved_models_dir(self) -> Path:
        return self.models_dir or self.data_dir / "models"

    @property
    def resolved_store_url(self) -> str:
        from_file = secret_from_file(self.store_url_file)
        return (
            from_file or self.store_url or f"sqlite+aiosqlite:///{self.data_dir / 'hybridinfer.db'}"
        )

    @property
    def resolved_redis_url(self) -> str:
        url = secret_from_file(self.redis_url_file) or self.redis_url
        if not url:
            raise ConfigError("cache: redis needs redis_url (HYBRIDINFER_REDIS_URL or _FILE)")
        return url

    @property
    def resolved_nats_url(self) -> str:
        url = secret_from_file(self.nats_url_file) or self.nats_url
        if not url:
            raise ConfigError("queue: nats needs nats_url (HYBRIDINFER_NATS_URL or _FILE)")
        return url

    @property
    def resolved_cloud_port(self) -> int:
        return self.cloud_port or self.port + 1

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Flags (init) beat the environment, which beats the YAML file (passed as defaults).
        return init_settings, env_settings, file_secret_settings


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Settings from an optional YAML file, the environment and explicit overrides."""
    file_values: dict[str, Any] = {}
    if config_file is not None:
        try:
            text = config_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config {config_file}: {exc.strerror}") from None
        data, lines = load_with_lines(text, str(config_file))
        if not isinstance(data, dict):
            raise ConfigError(f"{config_file}:1: the config must be a mapping")
        refuse_secrets_in_file(data, lines, str(config_file))
        parse_document(Settings, text, str(config_file))  # line-numbered errors
        file_values = data
    explicit = {key: value for key, value in overrides.items() if value is not None}
    try:
        env_only = Settings(**explicit)
    except ValidationError as exc:
        raise ConfigError(str(exc)) from None
    merged = {**file_values, **env_only.model_dump(exclude_unset=True)}
    settings = Settings.model_validate({**merged, **explicit})
    check_connections(settings)
    return settings


SECRETS = ("bootstrap_key", "node_token", "object_signing_key")
DSNS = ("store_url", "redis_url", "nats_url")


def refuse_secrets_in_file(data: dict[str, Any], lines: dict[Any, int], source: str) -> None:
    """Secrets, and connection URLs that carry a password, never sit in the file in clear."""
    for name in SECRETS:
        if name in data:
            raise ConfigError(
                f"{source}:{lines.get((name,), 1)}: {name} must come from the environment "
                f"(HYBRIDINFER_{name.upper()}) or a secret file, not the config file"
            )
    for name in DSNS:
        value = data.get(name)
        if isinstance(value, str) and _has_password(value):
            raise ConfigError(
                f"{source}:{lines.get((name,), 1)}: {name} carries a password; give it in "
                f"HYBRIDINFER_{name.upper()} or {name}_file (a mounted secret) instead"
            )


def _has_password(url: str) -> bool:
    try:
        return urlsplit(url).password is not None
    except ValueError:
        return False


def secret_from_file(path: Path | None) -> str | None:
    """The stripped content of a secret file, or None without one; ConfigError if unreadable."""
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError as exc:
        raise ConfigError(f"cannot read secret file {path}: {exc.strerror}") from None


def check_connections(settings: Settings) -> None:
    """At start: every backend the settings choose has what it needs to connect."""
    settings.resolved_store_url  # noqa: B018 - reads the secret file, if any
    if settings.cache == "redis":
        settings.resolved_redis_url  # noqa: B018
    if settings.queue == "nats":
        settings.resolved_nats_url  # noqa: B018


class NodeSettings(BaseSettings):
    """A model node: serves models over the Open Inference Protocol and registers itself."""

    model_config = SettingsConfigDict(env_prefix="HYBRIDINFER_NODE_", extra="forbid")

    id: str = Field("node-1", pattern=r"^[A-Za-z0-9._-]+$", description="Unique node id.")
    tier: Tier = Field(Tier.EDGE, description="Tier it serves as.")
    zone: Zone = Field(Zone.PRIVATE, description="Network zone it sits in.")
    host: str = Field("127.0.0.1", description="Address to listen on.")
    port: int = Field(8081, ge=1, le=65535, description="Port to listen on.")
    advertise_url: str | None = Field(
        None, description="URL the control plane calls; default http://host:port."
    )
    grpc_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="Also serve the Open Inference Protocol over gRPC on this port (with the "
        "same TLS as REST), and register it: the gateway then calls the node over gRPC.",
    )
    grpc_advertise_url: str | None = Field(
        None,
        pattern=r"^grpcs?://[^/]+$",
        description="gRPC endpoint the control plane calls; default grpc://host:grpc_port "
        "(grpcs:// with TLS).",
    )
    grpc_max_message_bytes: int = Field(
        4 * 1024 * 1024, gt=0, description="Largest gRPC message the node takes or sends."
    )
    models: list[str] = Field(default_factory=list, description="Model names to serve.")
    models_dir: Path = Field(Path(".hybridinfer/models"), description="Built models.")
    control_plane: str | None = Field(None, description="Gateway URL to register with.")
    token: SecretStr | None = Field(None, description="Node token for registration.")
    token_file: Path | None = Field(
        None, description="File holding the node token (a mounted secret); beats the env."
    )
    tls_cert_file: Path | None = Field(
        None,
        description="PEM certificate the node serves HTTPS with, and presents to the control "
        "plane as its client certificate (mutual TLS).",
    )
    tls_key_file: Path | None = Field(None, description="PEM private key of tls_cert_file.")
    tls_ca_file: Path | None = Field(
        None,
        description="PEM CA bundle the node trusts: the control plane's certificate, and the "
        "client certificates of callers when tls_require_client_cert is on.",
    )
    tls_require_client_cert: bool = Field(
        False,
        description="Mutual TLS: accept only callers (the gateway) presenting a certificate "
        "signed by tls_ca_file; needs tls_cert_file.",
    )
    cost_per_call: float = Field(0.0, ge=0.0, description="Price of one call, for routing.")
    heartbeat_interval_s: float = Field(10.0, gt=0.0, description="Heartbeat period.")
    threads: int = Field(2, ge=1, description="Threads running inference.")
    max_batch_size: int = Field(
        64,
        ge=1,
        description="Micro-batching: most rows coalesced into one runtime call (1: off).",
    )
    max_batch_wait_us: int = Field(
        500,
        ge=0,
        description="Micro-batching: how long (µs) the first queued request waits for company.",
    )
    session_cache_bytes: int = Field(
        1 << 30,
        gt=0,
        description="Memory bound of loaded sessions (LRU; model file bytes as the estimate).",
    )
    keep_versions: int = Field(3, ge=1, description="Model versions kept per model.")
    pull_models: bool = Field(
        False,
        description="Pull model versions from the control plane's model store "
        "(signed URLs), verify their sha256 and switch to the newest.",
    )
    pull_interval_s: float = Field(
        30.0, gt=0.0, description="How often to ask the control plane for new versions."
    )
    cache_dir: Path = Field(
        Path(".hybridinfer/node-cache"),
        description="Pulled artifacts and the request history used to preload models.",
    )
    preload: int = Field(
        4, ge=0, description="Models to load at start, most requested first (history file)."
    )

    @model_validator(mode="after")
    def _token_from_file(self) -> NodeSettings:
        from_file = secret_from_file(self.token_file)
        if from_file is not None:
            object.__setattr__(self, "token", SecretStr(from_file))
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file and tls_key_file go together")
        if self.tls_require_client_cert and (self.tls_cert_file is None or not self.tls_ca_file):
            raise ValueError("tls_require_client_cert needs tls_cert_file and tls_ca_file")
        return self

    @property
    def url(self) -> str:
        scheme = "https" if self.tls_cert_file is not None else "http"
        return (self.advertise_url or f"{scheme}://{self.host}:{self.port}").rstrip("/")

    @property
    def grpc_url(self) -> str | None:
        """The gRPC endpoint it registers, or None when it serves no gRPC."""
        if self.grpc_port is None:
            return None
        scheme = "grpcs" if self.tls_cert_file is not None else "grpc"
        return self.grpc_advertise_url or f"{scheme}://{self.host}:{self.grpc_port}"
