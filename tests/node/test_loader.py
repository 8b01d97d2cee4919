"""A model that fails to load is reported and retried: in process with a fast backoff, and in
a real node process with the real 1 → 64 s one."""

from __future__ import annotations

import asyncio
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from starlette.testclient import TestClient

from hybridinfer.cli.node import measure_load
from hybridinfer.core.backoff import Backoff
from hybridinfer.core.topology import Node, Tier, Zone
from hybridinfer.node.app import create_node_app
from hybridinfer.node.loader import ModelLoader
from hybridinfer.node.repository import ModelRepository
from hybridinfer.signals.registry import NodeRegistry
from tests.peers import node_process


def copy_model(models_dir: Path, target: Path, name: str) -> None:
    shutil.copytree(models_dir / name, target / name, dirs_exist_ok=True)


def corrupt(target: Path, name: str) -> None:
    for onnx in (target / name).glob("*/model.onnx"):
        onnx.write_bytes(b"not an onnx model")


@pytest.fixture
def repository() -> Iterator[ModelRepository]:
    repository = ModelRepository(None, [])
    yield repository
    repository.close()


async def test_a_model_not_built_yet_is_reported_then_loaded_once_it_is(
    repository: ModelRepository, models_dir: Path, tmp_path: Path
) -> None:
    loader = ModelLoader(repository, tmp_path, ["sentiment-small"], lambda: Backoff(0.01, 0.05))
    await loader.load_all()
    assert "is not built" in repository.unavailable["sentiment-small"]
    async with loader.running():
        copy_model(models_dir, tmp_path, "sentiment-small")
        for _ in range(500):  # the retries wait 10, 20, 40, 50 … ms
            if not repository.unavailable:
                break
            await asyncio.sleep(0.01)
    assert repository.unavailable == {}
    assert repository.names() == ["sentiment-small"]


def test_health_says_which_model_cannot_load_and_why(
    repository: ModelRepository, models_dir: Path, tmp_path: Path
) -> None:
    copy_model(models_dir, tmp_path, "sentiment-small")
    copy_model(models_dir, tmp_path, "digits-small")
    corrupt(tmp_path, "digits-small")
    loader = ModelLoader(repository, tmp_path, ["sentiment-small", "digits-small"])
    with TestClient(create_node_app(repository)) as node:
        node.portal.call(loader.load_all)  # type: ignore[union-attr]
        ready = node.get("/v2/health/ready")
        assert ready.status_code == 200  # sentiment-small still serves
        assert ready.json()["ready"] is False
        assert "cannot load model" in ready.json()["models_not_ready"]["digits-small"]
        model = node.get("/v2/models/digits-small/ready")
        assert model.status_code == 503
        assert model.json()["ready"] is False
        assert "cannot load model" in model.json()["reason"]
        assert node.get("/v2/models/sentiment-small/ready").json()["ready"] is True
    beat = measure_load(repository)
    assert set(beat.models_not_ready) == {"digits-small"}
    registry = NodeRegistry()
    registry.add(Node("edge-1", Tier.EDGE, Zone.PRIVATE, "http://edge-1", "v2"))
    node_view = registry.heartbeat("edge-1", 0.1, 0, models_not_ready=beat.models_not_ready)
    assert node_view.describe()["models_not_ready"] == beat.models_not_ready


def test_with_no_model_loaded_the_node_is_not_ready(
    repository: ModelRepository, tmp_path: Path
) -> None:
    loader = ModelLoader(repository, tmp_path, ["sentiment-small"])
    with TestClient(create_node_app(repository)) as node:
        node.portal.call(loader.load_all)  # type: ignore[union-attr]
        assert node.get("/v2/health/ready").status_code == 503
        assert node.get("/v2/health/live").status_code == 200


def get_json(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, orjson.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, orjson.loads(error.read())


def test_a_node_process_retries_a_broken_model_until_it_loads(
    models_dir: Path, tmp_path: Path
) -> None:
    copy_model(models_dir, tmp_path, "sentiment-small")
    copy_model(models_dir, tmp_path, "digits-small")
    corrupt(tmp_path, "digits-small")
    args = ["--models", "sentiment-small,digits-small", "--models-dir", str(tmp_path)]
    with node_process(*args, "--cache-dir", str(tmp_path / "cache")) as url:
        status, body = get_json(url + "/v2/models/digits-small/ready")
        assert (status, body["ready"]) == (503, False)
        assert "cannot load model" in str(body["reason"])
        assert get_json(url + "/v2/health/ready")[1]["ready"] is False
        copy_model(models_dir, tmp_path, "digits-small")  # the file is repaired
        repaired = time.monotonic()
        while get_json(url + "/v2/models/digits-small/ready")[0] != 200:
            assert time.monotonic() - repaired < 20, "not reloaded within 1 + 2 + 4 + 8 s"
            time.sleep(0.2)
        assert get_json(url + "/v2/health/ready") == (200, {"ready": True})
