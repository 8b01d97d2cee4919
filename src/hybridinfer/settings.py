"""Typed configuration, documented in one place.

Sources, strongest first: command-line flags, ``HYBRIDINFER_*`` environment variables, the YAML
file given with ``--config``, then these defaults. Secrets come from the environment (or a file
named by ``*_file``), never from the YAML in clear.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from hybridinfer.errors import ConfigError
from hybridinfer.topology import Tier, Zone
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
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @property
    def resolved_models_dir(self) -> Path:
        return self.models_dir or self.data_dir / "models"

    @property
    def resolved_store_url(self) -> str:
        return self.store_url or f"sqlite+aiosqlite:///{self.data_dir / 'hybridinfer.db'}"

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
        data, _ = load_with_lines(text, str(config_file))
        if not isinstance(data, dict):
            raise ConfigError(f"{config_file}:1: the config must be a mapping")
        for secret in ("bootstrap_key", "node_token"):
            if secret in data:
                raise ConfigError(
                    f"{config_file}: {secret} must come from the environment "
                    f"(HYBRIDINFER_{secret.upper()}), not the config file"
                )
        parse_document(Settings, text, str(config_file))  # line-numbered errors
        file_values = data
    explicit = {key: value for key, value in overrides.items() if value is not None}
    try:
        env_only = Settings(**explicit)
    except ValidationError as exc:
        raise ConfigError(str(exc)) from None
    merged = {**file_values, **env_only.model_dump(exclude_unset=True)}
    return Settings.model_validate({**merged, **explicit})


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
    models: list[str] = Field(default_factory=list, description="Model names to serve.")
    models_dir: Path = Field(Path(".hybridinfer/models"), description="Built models.")
    control_plane: str | None = Field(None, description="Gateway URL to register with.")
    token: SecretStr | None = Field(None, description="Node token for registration.")
    cost_per_call: float = Field(0.0, ge=0.0, description="Price of one call, for routing.")
    heartbeat_interval_s: float = Field(10.0, gt=0.0, description="Heartbeat period.")
    threads: int = Field(2, ge=1, description="Threads running inference.")

    @property
    def url(self) -> str:
        return (self.advertise_url or f"http://{self.host}:{self.port}").rstrip("/")
