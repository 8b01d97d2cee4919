"""A model node's settings."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from hybridinfer.core.topology import Tier, Zone
from hybridinfer.settings.modelruns import ModelRunSettings
from hybridinfer.settings.secrets import secret_from_file


class NodeSettings(ModelRunSettings):
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
        description=(
            "Micro-batching: how long (µs) the first queued request waits for company when "
            "callers are concurrent (under uvloop, below 1000: one turn of the event loop)."
        ),
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
