"""Secrets and connection URLs: read from files, never held in a config file in clear."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hybridinfer.errors import ConfigError

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
