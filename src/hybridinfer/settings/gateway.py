"""The control plane's settings (gateway + router + local runtime)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from hybridinfer.core.schemas import NodeRegistration
from hybridinfer.errors import ConfigError
from hybridinfer.settings.answers import AnswerSettings
from hybridinfer.settings.change import ChangeSettings
from hybridinfer.settings.learning import LearningSettings
from hybridinfer.settings.loop import LoopSettings
from hybridinfer.settings.modelruns import ModelRunSettings
from hybridinfer.settings.resilience import ResilienceSettings
from hybridinfer.settings.retained import RetainedPromptSettings
from hybridinfer.settings.secrets import secret_from_file
from hybridinfer.settings.workers import WorkerSettings


class Settings(
    ResilienceSettings,
    LearningSettings,
    ChangeSettings,
    AnswerSettings,
    WorkerSettings,
    RetainedPromptSettings,
    LoopSettings,
    ModelRunSettings,
):
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
    names_process: bool = Field(
        True,
        description="Read names and places in a child process of the gateway's, on another "
        "core than its event loop; off, on a thread of the gateway's own process (the model's "
        "CPU then holds the lock the event loop needs).",
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
    gc_young_threshold: int = Field(
        10_000,
        ge=1,
        description="New container objects (less those freed) between two collections of the "
        "youngest generation once the gateway has started (Python's default is 700, which the "
        "requests in flight cross again and again under load).",
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


def check_connections(settings: Settings) -> None:
    """At start: every backend the settings choose has what it needs to connect."""
    settings.resolved_store_url  # noqa: B018 - reads the secret file, if any
    if settings.cache == "redis":
        settings.resolved_redis_url  # noqa: B018
    if settings.queue == "nats":
        settings.resolved_nats_url  # noqa: B018
