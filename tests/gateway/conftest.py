from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from starlette.testclient import TestClient

from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.app import create_app
from hybridinfer.settings import Settings
from tests.peers import node_process


@pytest.fixture
def plane(settings: Settings) -> ControlPlane:
    return ControlPlane(settings)


@pytest.fixture
def client(plane: ControlPlane) -> Iterator[TestClient]:
    """The gateway in process, with the real local tier (onnxruntime) and SQLite store."""
    with TestClient(create_app(plane)) as test_client:
        yield test_client


@pytest.fixture
def version_2(models_dir: Path, tmp_path: Path) -> Iterator[tuple[str, dict[str, object]]]:
    """A node process serving sentiment-small as version "2" (the same weights, a new card)."""
    source = models_dir / "sentiment-small" / "1"
    target = tmp_path / "v2-models" / "sentiment-small" / "2"
    shutil.copytree(source, target)
    card = orjson.loads((target / "card.json").read_bytes())
    card["version"] = "2"
    (target / "card.json").write_bytes(orjson.dumps(card))
    args = ["--id", "edge-v2", "--tier", "edge", "--zone", "private", "--models", "sentiment-small"]
    with node_process(*args, "--models-dir", str(tmp_path / "v2-models")) as url:
        yield url, card
