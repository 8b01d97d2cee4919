"""The models folder: complete versions in numeric order, the newest unless one is named, and
what a node announces from a card."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from hybridinfer.errors import ConfigError
from hybridinfer.models.catalog import deployment_info, find_model, versions

CARD: dict[str, Any] = {
    "name": "m",
    "version": "10",
    "capability": "text-classification",
    "task": "sentiment",
    "labels": ["negative", "positive"],
    "inputs": [{"name": "text", "datatype": "BYTES", "shape": [-1, 1]}],
    "outputs": [{"name": "probabilities", "datatype": "FP32", "shape": [-1, 2]}],
    "metrics": {"accuracy": 0.81},
    "latency_ms": {"p50": 0.25, "p99": 1.0},
    "calibration": {"confidence_quantiles": [{"q": 0.5, "confidence": 0.7}]},
}


def build(models_dir: Path, name: str, version: str, card: bool = True) -> Path:
    folder = models_dir / name / version
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"onnx")
    if card:
        (folder / "card.json").write_bytes(orjson.dumps({**CARD, "version": version}))
    return folder


def test_versions_are_the_complete_ones_in_numeric_order(tmp_path: Path) -> None:
    for version in ("2", "10", "9"):
        build(tmp_path, "m", version)
    build(tmp_path, "m", "11", card=False)  # still being written
    assert versions(tmp_path, "m") == ["2", "9", "10"]
    assert versions(tmp_path, "absent") == []


def test_the_newest_version_is_found_unless_one_is_named(tmp_path: Path) -> None:
    build(tmp_path, "m", "9")
    newest = build(tmp_path, "m", "10")

    path, card = find_model(tmp_path, "m")
    assert path == newest / "model.onnx"
    assert card["version"] == "10"
    assert find_model(tmp_path, "m", "9")[1]["version"] == "9"


def test_a_missing_model_or_version_is_a_config_error(tmp_path: Path) -> None:
    build(tmp_path, "m", "1")
    with pytest.raises(ConfigError, match="hybridinfer models build"):
        find_model(tmp_path, "other")
    with pytest.raises(ConfigError, match="no version '7'"):
        find_model(tmp_path, "m", "7")


def test_a_card_becomes_what_a_node_announces() -> None:
    info = deployment_info(CARD, cost_per_call=0.002)
    assert (info.model, info.version, info.task) == ("m", "10", "sentiment")
    assert (info.quality, info.latency_ms, info.cost_per_call) == (0.81, 0.25, 0.002)
    assert info.labels == ["negative", "positive"]
    assert [(t.name, t.datatype, t.shape) for t in info.inputs] == [("text", "BYTES", [-1, 1])]
    assert info.calibration == CARD["calibration"]
