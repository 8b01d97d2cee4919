"""The gateway's node-facing model store side: publish (CLI), offers with signed URLs,
objects served only to a valid signature; heartbeats' load shown in ``GET /v1/nodes``."""

from __future__ import annotations

import hashlib
from pathlib import Path

from click.testing import CliRunner
from starlette.testclient import TestClient

from hybridinfer.cli import main
from hybridinfer.settings import Settings
from tests.conftest import NODE_TOKEN, auth


def test_published_version_is_offered_with_a_signed_url(
    client: TestClient, settings: Settings, models_dir: Path
) -> None:
    folder = (
        models_dir
        / "sentiment-small"
        / sorted(p.name for p in (models_dir / "sentiment-small").iterdir())[-1]
    )
    result = CliRunner().invoke(
        main,
        ["models", "publish", "sentiment-small", "--version", "7", "--from", str(folder),
         "--data-dir", str(settings.data_dir)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert client.get("/v1/artifacts/sentiment-small").status_code == 401
    offers = client.get("/v1/artifacts/sentiment-small", headers=auth(NODE_TOKEN)).json()
    assert [offer["manifest"]["version"] for offer in offers] == ["7"]
    url = offers[0]["model_url"]
    served = client.get(url)
    assert served.status_code == 200
    assert hashlib.sha256(served.content).hexdigest() == offers[0]["manifest"]["sha256"]
    assert client.get(url.replace("signature=", "signature=0")).status_code == 403


def test_heartbeat_load_is_shown_on_the_node(client: TestClient) -> None:
    registration = {"id": "edge-9", "tier": "edge", "zone": "private", "url": "http://edge-9"}
    assert client.post("/v1/nodes", headers=auth(NODE_TOKEN), json=registration).status_code == 201
    beat = {"load": 0.42, "in_flight": 3, "queue_depth": 5, "memory": 0.5, "memory_bytes": 1024}
    assert (
        client.post("/v1/nodes/edge-9/heartbeat", headers=auth(NODE_TOKEN), json=beat).status_code
        == 200
    )
    node = next(
        n for n in client.get("/v1/nodes", headers=auth()).json()["nodes"] if n["id"] == "edge-9"
    )
    assert {key: node[key] for key in beat} == beat
