"""Production config: secrets and DSNs with passwords from env or secret files only,
validated at start with line-numbered errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybridinfer.errors import ConfigError
from hybridinfer.settings import load_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prod.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("line", "url"),
    [
        ("store_url", "postgresql+asyncpg://app:hunter2@db/hybridinfer"),
        ("redis_url", "redis://:hunter2@cache:6379/0"),
        ("nats_url", "nats://app:hunter2@queue:4222"),
    ],
)
def test_a_dsn_with_a_password_in_the_file_is_refused(tmp_path: Path, line: str, url: str) -> None:
    config = write(tmp_path, f"port: 9000\ncache: redis\n{line}: {url}\n")
    with pytest.raises(ConfigError) as refused:
        load_settings(config)
    assert f"prod.yaml:3: {line} carries a password" in refused.value.message
    assert "hunter2" not in refused.value.message


def test_secrets_are_refused_with_their_line(tmp_path: Path) -> None:
    config = write(tmp_path, "port: 9000\n\nnode_token: abc\n")
    with pytest.raises(ConfigError, match=r"prod.yaml:3: node_token must come from"):
        load_settings(config)


def test_dsns_come_from_the_environment_or_secret_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "store-url"
    secret.write_text("postgresql+asyncpg://app:hunter2@db/hybridinfer\n")
    config = write(
        tmp_path,
        f"cache: redis\nqueue: nats\nstore_url_file: {secret}\nrate_limit_mode: fail-closed\n",
    )
    monkeypatch.setenv("HYBRIDINFER_REDIS_URL", "redis://:pw@cache:6379/0")
    monkeypatch.setenv("HYBRIDINFER_NATS_URL", "nats://queue:4222")
    settings = load_settings(config)
    assert settings.resolved_store_url == "postgresql+asyncpg://app:hunter2@db/hybridinfer"
    assert settings.resolved_redis_url == "redis://:pw@cache:6379/0"
    assert settings.rate_limit_mode == "fail-closed"


def test_a_chosen_backend_without_its_url_fails_at_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cache: redis needs redis_url"):
        load_settings(write(tmp_path, "cache: redis\n"))
    with pytest.raises(ConfigError, match="cannot read secret file"):
        load_settings(write(tmp_path, f"store_url_file: {tmp_path / 'absent'}\n"))


def test_bad_values_name_their_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(write(tmp_path, "port: 9000\nrate_limit_mode: sometimes\n"))
    assert "prod.yaml:2: rate_limit_mode" in refused.value.message


def test_the_bootstrap_key_and_node_token_come_from_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_file, token_file = tmp_path / "bootstrap", tmp_path / "node-token"
    key_file.write_text("hi_from_a_mounted_secret\n")
    token_file.write_text("nt_from_a_mounted_secret\n")
    monkeypatch.setenv("HYBRIDINFER_BOOTSTRAP_KEY", "hi_from_the_environment")
    config = write(tmp_path, f"bootstrap_key_file: {key_file}\nnode_token_file: {token_file}\n")
    settings = load_settings(config)
    assert settings.bootstrap_key is not None
    assert settings.bootstrap_key.get_secret_value() == "hi_from_a_mounted_secret"
    assert settings.node_token is not None
    assert settings.node_token.get_secret_value() == "nt_from_a_mounted_secret"
    assert "nt_from_a_mounted_secret" not in repr(settings)
    missing = write(tmp_path, f"node_token_file: {tmp_path / 'absent'}\n")
    with pytest.raises(ConfigError, match="cannot read secret file"):
        load_settings(missing)


def test_tls_settings_are_checked_together(tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    with pytest.raises(ConfigError, match="go together"):
        load_settings(write(tmp_path, f"tls_cert_file: {cert}\n"))
    with pytest.raises(ConfigError, match="node_mtls needs"):
        load_settings(write(tmp_path, "node_mtls: true\n"))
