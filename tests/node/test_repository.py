"""Versions on a node: verified adds, refusals reported, atomic switch, binary tensors."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from starlette.testclient import TestClient

from hybridinfer.models.artifact import file_sha256
from hybridinfer.node.app import create_node_app
from hybridinfer.node.repository import ModelRepository

TEXT = {"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": ["what a great day"]}


def copy_version(models_dir: Path, target: Path, name: str, version: str) -> Path:
    source = models_dir / name / sorted((models_dir / name).iterdir())[-1].name
    folder = target / name / version
    shutil.copytree(source, folder)
    return folder


@pytest.fixture
def repository(models_dir: Path, tmp_path: Path) -> ModelRepository:
    copy_version(models_dir, tmp_path, "sentiment-small", "1")
    return ModelRepository(tmp_path, ["sentiment-small"], max_wait_s=0.0)


@pytest.fixture
def node(repository: ModelRepository) -> Iterator[TestClient]:
    with TestClient(create_node_app(repository)) as client:
        yield client


def infer_version(node: TestClient, path: str = "/v2/models/sentiment-small/infer") -> str:
    response = node.post(path, json={"inputs": [TEXT]})
    assert response.status_code == 200, response.text
    return str(response.json()["model_version"])


def test_a_new_version_becomes_active_and_the_old_stays_addressable(
    node: TestClient, repository: ModelRepository, models_dir: Path, tmp_path: Path
) -> None:
    folder = copy_version(models_dir, tmp_path, "sentiment-small", "2")
    assert repository.add("sentiment-small", "2", folder, file_sha256(folder / "model.onnx"))
    assert infer_version(node) == "2"
    assert infer_version(node, "/v2/models/sentiment-small/versions/1/infer") == "1"
    assert node.get("/v2/models/sentiment-small").json()["versions"] == ["1", "2"]
    assert node.get("/v2/models/sentiment-small/versions/1/ready").status_code == 200


def test_a_corrupted_version_is_refused_reported_and_never_served(
    node: TestClient, repository: ModelRepository, models_dir: Path, tmp_path: Path
) -> None:
    folder = copy_version(models_dir, tmp_path, "sentiment-small", "2")
    expected = file_sha256(folder / "model.onnx")
    with (folder / "model.onnx").open("r+b") as file:
        file.seek(100)
        file.write(b"\xff\xff\xff")
    assert repository.add("sentiment-small", "2", folder, expected) is None
    assert infer_version(node) == "1"
    refused = node.get("/v2/models/sentiment-small/versions/2")
    assert refused.status_code == 404
    assert "sha256" in refused.json()["error"]
    metadata = node.get("/v2/models/sentiment-small").json()
    assert metadata["parameters"]["refused_versions"][0]["version"] == "2"
    index = node.post("/v2/repository/index").json()
    assert {"name": "sentiment-small", "version": "2"}.items() <= index[-1].items()
    assert index[-1]["state"] == "UNAVAILABLE"


def test_only_the_last_versions_are_kept(
    node: TestClient, repository: ModelRepository, models_dir: Path, tmp_path: Path
) -> None:
    for version in ("2", "3", "4"):
        repository.add(
            "sentiment-small",
            version,
            copy_version(models_dir, tmp_path, "sentiment-small", version),
        )
    assert repository.versions("sentiment-small") == ["2", "3", "4"]
    assert node.get("/v2/models/sentiment-small/versions/1").status_code == 404


def test_binary_request_and_response(node: TestClient) -> None:
    text = b"what a great day"
    header = orjson.dumps(
        {
            "inputs": [
                {
                    "name": "text",
                    "shape": [1, 1],
                    "datatype": "BYTES",
                    "parameters": {"binary_data_size": 4 + len(text)},
                }
            ],
            "outputs": [
                {"name": "probabilities", "parameters": {"binary_data": True}},
                {"name": "label"},
            ],
        }
    )
    body = header + struct.pack("<I", len(text)) + text
    response = node.post(
        "/v2/models/sentiment-small/infer",
        content=body,
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    assert response.status_code == 200, response.text
    length = int(response.headers["inference-header-content-length"])
    json_part = orjson.loads(response.content[:length])
    probabilities, label = json_part["outputs"]
    assert probabilities["parameters"]["binary_data_size"] == 12
    assert "data" not in probabilities
    assert len(response.content) == length + 12
    assert isinstance(label["data"][0], int)


def test_binary_data_that_does_not_fit_is_a_400(node: TestClient) -> None:
    header = orjson.dumps(
        {"inputs": [{**TEXT, "data": None, "parameters": {"binary_data_size": 50}}]}
    )
    response = node.post(
        "/v2/models/sentiment-small/infer",
        content=header + b"\x00" * 4,
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    assert response.status_code == 400
    assert node.post("/v2/models/sentiment-small/infer", json={"inputs": [TEXT]}).status_code == 200


def test_server_metadata_lists_the_binary_extension(node: TestClient) -> None:
    assert "binary_tensor_data" in node.get("/v2").json()["extensions"]
