from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from hybridinfer.node.app import create_node_app
from hybridinfer.node.repository import ModelRepository

TEXT_INPUT = {"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": ["what a great day"]}


@pytest.fixture
def node(models_dir: Path) -> Iterator[TestClient]:
    repository = ModelRepository(models_dir, ["sentiment-large", "digits-large"])
    with TestClient(create_node_app(repository)) as client:
        yield client


def stats(node: TestClient, model: str) -> dict[str, int]:
    body = node.get(f"/v2/models/{model}/stats").json()["model_stats"][0]
    return {"success": body["inference_count"], "executions": body["execution_count"]}


def test_health_and_server_metadata(node: TestClient) -> None:
    assert node.get("/v2/health/live").status_code == 200
    assert node.get("/v2/health/ready").status_code == 200
    assert node.get("/v2").json()["name"] == "hybridinfer-node"


def test_model_metadata_and_readiness(node: TestClient) -> None:
    metadata = node.get("/v2/models/sentiment-large").json()
    assert metadata["name"] == "sentiment-large"
    assert metadata["versions"] == ["1"]
    assert metadata["inputs"][0]["name"] == "text"
    assert {o["name"] for o in metadata["outputs"]} == {"label", "probabilities"}
    assert node.get("/v2/models/sentiment-large/versions/1/ready").json()["ready"] is True


def test_infer_returns_named_tensors_and_echoes_the_id(node: TestClient) -> None:
    response = node.post(
        "/v2/models/sentiment-large/infer", json={"id": "abc", "inputs": [TEXT_INPUT]}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == "abc"
    assert body["model_name"] == "sentiment-large"
    outputs = {o["name"]: o for o in body["outputs"]}
    assert outputs["probabilities"]["shape"] == [1, 3]
    assert abs(sum(outputs["probabilities"]["data"]) - 1.0) < 1e-4
    assert outputs["label"]["datatype"] == "INT64"


def test_requested_outputs_only(node: TestClient) -> None:
    response = node.post(
        "/v2/models/sentiment-large/versions/1/infer",
        json={"inputs": [TEXT_INPUT], "outputs": [{"name": "label"}]},
    )
    assert [o["name"] for o in response.json()["outputs"]] == ["label"]


def test_a_batch_of_digits(node: TestClient) -> None:
    pixels = [[0.0] * 64, [16.0] * 64]
    response = node.post(
        "/v2/models/digits-large/infer",
        json={"inputs": [{"name": "pixels", "shape": [2, 64], "datatype": "FP32", "data": pixels}]},
    )
    assert response.status_code == 200, response.text
    label = next(o for o in response.json()["outputs"] if o["name"] == "label")
    assert label["shape"] == [2]


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/v2/models/nope/infer", {"inputs": [TEXT_INPUT]}, 404),
        ("/v2/models/sentiment-large/versions/9/infer", {"inputs": [TEXT_INPUT]}, 404),
        (
            "/v2/models/sentiment-large/infer",
            {"inputs": [{**TEXT_INPUT, "datatype": "FP32", "data": [1.0]}]},
            400,
        ),
        ("/v2/models/sentiment-large/infer", {"inputs": [{**TEXT_INPUT, "shape": [1, 2]}]}, 400),
        ("/v2/models/sentiment-large/infer", {"inputs": [{**TEXT_INPUT, "shape": [1, 1, 1]}]}, 400),
        ("/v2/models/sentiment-large/infer", {"inputs": [{**TEXT_INPUT, "name": "body"}]}, 400),
        ("/v2/models/sentiment-large/infer", {"inputs": []}, 400),
        (
            "/v2/models/sentiment-large/infer",
            {"inputs": [TEXT_INPUT], "outputs": [{"name": "x"}]},
            400,
        ),
        (
            "/v2/models/digits-large/infer",
            {
                "inputs": [
                    {"name": "pixels", "shape": [1, 63], "datatype": "FP32", "data": [0.0] * 63}
                ]
            },
            400,
        ),
    ],
)
def test_bad_requests_get_v2_errors_and_the_node_keeps_serving(
    node: TestClient, path: str, body: dict[str, object], status: int
) -> None:
    response = node.post(path, json=body)
    assert response.status_code == status, response.text
    assert isinstance(response.json()["error"], str)
    healthy = node.post("/v2/models/sentiment-large/infer", json={"inputs": [TEXT_INPUT]})
    assert healthy.status_code == 200


def test_malformed_json_is_400(node: TestClient) -> None:
    response = node.post("/v2/models/sentiment-large/infer", content=b"{oops")
    assert response.status_code == 400
    assert "error" in response.json()


def test_statistics_count_inferences(node: TestClient) -> None:
    before = stats(node, "sentiment-large")
    node.post("/v2/models/sentiment-large/infer", json={"inputs": [TEXT_INPUT]})
    after = stats(node, "sentiment-large")
    assert after["success"] == before["success"] + 1


async def test_a_caller_that_goes_away_before_its_body_leaves_no_error(
    models_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A gateway that gave up on a slow call disconnects before the node reads the body:
    nothing escapes the app (the server would log a stack trace) and nothing is logged as an
    error."""
    app = create_node_app(ModelRepository(models_dir, ["sentiment-large"]))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v2/models/sentiment-large/infer",
        "raw_path": b"/v2/models/sentiment-large/infer",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
        "state": {},
        "app": app,
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    assert sent[0]["status"] == 499
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
