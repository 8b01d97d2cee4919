"""``hybridinfer keys``: create in the store, then list, rotate and revoke through a real
gateway process."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from hybridinfer.cli import main
from hybridinfer.control.keys import key_id_of
from tests.conftest import ADMIN_KEY, auth
from tests.peers import gateway_process

pytestmark = pytest.mark.integration

BODY = {"task": "sentiment", "inputs": {"text": "fine"}}


def test_keys_are_created_listed_rotated_and_revoked(tmp_path: Path, models_dir: Path) -> None:
    data_dir = tmp_path / "gw"
    runner = CliRunner()
    created = runner.invoke(
        main,
        ["keys", "create", "--name", "app", "--rate-limit", "50", "--data-dir", str(data_dir)],
    )
    assert created.exit_code == 0, created.output
    key = created.output.strip()
    with gateway_process(data_dir, models_dir, ADMIN_KEY) as (url, _):
        admin = ["--url", url, "--key", ADMIN_KEY]
        listed = runner.invoke(main, ["keys", "list", *admin])
        assert listed.exit_code == 0, listed.output
        line = next(row for row in listed.output.splitlines() if row.startswith(key_id_of(key)))
        assert "active" in line
        assert "rate=50" in line
        assert "app" in line
        assert key not in listed.output

        rotated = runner.invoke(main, ["keys", "rotate", key_id_of(key), "--grace", "600", *admin])
        assert rotated.exit_code == 0, rotated.output
        successor = rotated.output.strip()
        for presented in (key, successor):
            answer = httpx.post(f"{url}/v1/infer", json=BODY, headers=auth(presented), timeout=30)
            assert answer.status_code == 200

        revoked = runner.invoke(main, ["keys", "revoke", key_id_of(key), *admin])
        assert revoked.exit_code == 0, revoked.output
        refused = httpx.post(f"{url}/v1/infer", json=BODY, headers=auth(key), timeout=30)
        assert refused.status_code == 401
        unknown = runner.invoke(main, ["keys", "revoke", "nope", *admin])
        assert unknown.exit_code != 0
        assert "no API key" in unknown.output
