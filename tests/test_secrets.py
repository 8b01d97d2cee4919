"""Secrets never reach a log or a stored trace: a real gateway and node processes run with
known secrets (bootstrap key from the environment, node token from a file), at debug level
with spans printed, through auth failures and admin actions; then every byte they wrote —
stdout and stderr, log files, traces, the database — is searched for each secret in its
obvious encodings."""

from __future__ import annotations

import base64
import json
import secrets
import urllib.parse
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from hybridinfer.cli import main
from hybridinfer.control.keys import key_id_of
from tests.peers import gateway_process, node_process


def encodings(secret: str) -> set[str]:
    raw = secret.encode()
    return {
        secret,
        secret.lower(),
        secret.upper(),
        urllib.parse.quote(secret, safe=""),
        json.dumps(secret)[1:-1],
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        base64.b64encode(b"Bearer " + raw).decode(),
        raw.hex(),
        secret[:12],  # a prefix, as a log line that "shortens" a key would print
        secret[-12:],
    }


def leaks(secrets_by_name: dict[str, str], blobs: dict[str, bytes]) -> list[str]:
    found = []
    for name, secret in secrets_by_name.items():
        for form in encodings(secret):
            needle = form.encode()
            found += [
                f"{name} as {form!r} in {where}" for where, blob in blobs.items() if needle in blob
            ]
    return found


def test_the_leak_search_finds_what_it_looks_for() -> None:
    secret = "hi_" + secrets.token_urlsafe(32)
    planted = {"log": f"auth header: Bearer {base64.b64encode(secret.encode()).decode()}".encode()}
    assert leaks({"key": secret}, planted)
    assert not leaks({"key": secret}, {"log": b"key id " + key_id_of(secret).encode()})


@pytest.mark.integration
def test_no_secret_reaches_any_log_or_trace(tmp_path: Path, models_dir: Path) -> None:
    admin_key = "hi_" + secrets.token_urlsafe(32)
    node_token = "nt_" + secrets.token_urlsafe(32)
    wrong_token = "nt_" + secrets.token_urlsafe(32)
    guessed_key = "hi_" + secrets.token_urlsafe(32)
    token_file = tmp_path / "node-token"
    token_file.write_text(node_token + "\n")
    data_dir = tmp_path / "gw"
    config = {"node_token_file": str(token_file), "log_level": "debug", "otel_exporter": "console"}
    found: dict[str, str] = {"admin key": admin_key, "node token": node_token}
    found |= {"wrong node token": wrong_token, "guessed key": guessed_key}
    node_logs: list[Path] = []
    with gateway_process(data_dir, models_dir, admin_key, **config) as (url, gateway_log):
        admin = {"Authorization": f"Bearer {admin_key}"}
        node_args = ["--tier", "edge", "--zone", "private", "--models", "sentiment-small"]
        node_args += ["--models-dir", str(models_dir), "--control-plane", url]
        node_args += ["--heartbeat-interval", "1"]
        with (
            node_process(
                "--id", "edge-ok", *node_args, env={"HYBRIDINFER_NODE_TOKEN_FILE": str(token_file)}
            ) as good_node,
            node_process(
                "--id", "edge-bad", *node_args, env={"HYBRIDINFER_NODE_TOKEN": wrong_token}
            ) as bad_node,
        ):
            node_logs += [_node_log(good_node), _node_log(bad_node)]
            with httpx.Client(base_url=url, timeout=30) as client:
                created = client.post("/v1/keys", headers=admin, json={"name": "app"}).json()
                found["created key"] = created["key"]
                rotated = client.post(f"/v1/keys/{created['id']}/rotate", headers=admin).json()
                found["rotated key"] = rotated["key"]
                _exercise(client, admin, found)
                traces = client.get("/v1/traces?limit=1000", headers=admin).content
                audit = client.get("/v1/audit?limit=1000", headers=admin).content
                nodes = client.get("/v1/nodes", headers=admin).json()["nodes"]
            listed = CliRunner().invoke(main, ["keys", "list", "--url", url, "--key", admin_key])
            assert listed.exit_code == 0
    assert "edge-ok" in {n["id"] for n in nodes}  # the node token from a file worked
    assert "edge-bad" not in {n["id"] for n in nodes}
    blobs = {"gateway log": gateway_log.read_bytes(), "traces": traces, "audit": audit}
    blobs |= {f"node log {path.name}": path.read_bytes() for path in node_logs}
    blobs |= {f"store {p.name}": p.read_bytes() for p in data_dir.glob("hybridinfer.db*")}
    blobs["cli output"] = listed.output.encode()
    assert len(blobs["gateway log"]) > 2_000, "debug logging and spans should have written"
    assert leaks(found, blobs) == []


def _node_log(url: str) -> Path:
    return Path("/tmp") / f"hybridinfer-node-{url.rsplit(':', 1)[1]}.log"


def _exercise(client: httpx.Client, admin: dict[str, str], found: dict[str, str]) -> None:
    """Auth failures of every kind, inference, and admin actions."""
    body = {"task": "sentiment", "inputs": {"text": "a fine day"}}
    assert client.post("/v1/infer", json=body, headers=admin).status_code == 200
    for header in (
        f"Bearer {found['guessed key']}",
        f"Basic {base64.b64encode(found['guessed key'].encode()).decode()}",
        found["guessed key"],
        f"Bearer {found['node token']}",  # a node token cannot infer: 403
        f"Bearer {found['wrong node token']}",
    ):
        answer = client.post("/v1/infer", json=body, headers={"Authorization": header})
        assert answer.status_code in (401, 403)
    forged = client.post(
        "/v1/nodes",
        headers={"Authorization": f"Bearer {found['wrong node token']}"},
        json={"id": "x", "tier": "edge", "zone": "private", "url": "http://127.0.0.1:9"},
    )
    assert forged.status_code == 401
    infer_as_app = {"Authorization": f"Bearer {found['rotated key']}"}
    assert client.post("/v1/infer", json=body, headers=infer_as_app).status_code == 200
    assert client.get("/v1/keys", headers=infer_as_app).status_code == 403
    assert client.post(f"/v1/keys/{key_id_of(found['created key'])}/revoke", headers=admin)
    revoked = {"Authorization": f"Bearer {found['created key']}"}
    assert client.post("/v1/infer", json=body, headers=revoked).status_code == 401
    rules = client.get("/v1/rules", headers=admin)
    assert rules.status_code == 200
