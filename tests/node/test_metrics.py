"""A node's ``GET /metrics``: the model-cache disk gauge the alert rules watch."""

from __future__ import annotations

import shutil
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from hybridinfer.node.app import create_node_app
from hybridinfer.node.metrics import disk_used_ratio
from hybridinfer.node.repository import ModelRepository


def test_the_model_cache_disk_gauge_carries_the_node_id(tmp_path: Path) -> None:
    repository = ModelRepository(None, [])
    app = create_node_app(repository, node_id='edge-"1"', cache_dir=tmp_path / "not-yet")
    with TestClient(app) as client:
        response = client.get("/metrics")
    assert response.status_code == 200
    (family,) = text_string_to_metric_families(response.text)
    (sample,) = family.samples
    assert sample.name == "hybridinfer_model_cache_disk_used_ratio"
    assert sample.labels == {"node": 'edge-"1"'}
    usage = shutil.disk_usage(tmp_path)
    assert abs(sample.value - usage.used / usage.total) < 0.01
    assert 0.0 < disk_used_ratio(tmp_path) < 1.0
