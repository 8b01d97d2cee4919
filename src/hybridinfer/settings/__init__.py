"""Typed configuration, documented in one place.

Sources, strongest first: command-line flags, ``HYBRIDINFER_*`` environment variables, the YAML
file given with ``--config``, then these defaults. Secrets come from the environment (or a file
named by ``*_file``), never from the YAML in clear.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hybridinfer.errors import ConfigError
from hybridinfer.settings.gateway import Settings, check_connections
from hybridinfer.settings.node import NodeSettings
from hybridinfer.settings.resilience import ResilienceSettings
from hybridinfer.settings.secrets import refuse_secrets_in_file, secret_from_file
from hybridinfer.yamlfile import load_with_lines, parse_document

__all__ = [
    "NodeSettings",
    "ResilienceSettings",
    "Settings",
    "check_connections",
    "load_settings",
    "refuse_secrets_in_file",
    "secret_from_file",
]


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
