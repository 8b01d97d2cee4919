"""Built models on disk: ``<models_dir>/<name>/<version>/{model.onnx,card.json}``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from hybridinfer.core.schemas import DeploymentInfo, TensorInfo
from hybridinfer.errors import ConfigError


def versions(models_dir: Path, name: str) -> list[str]:
    """Complete versions of a model (those with a card), oldest first."""
    folder = models_dir / name
    if not folder.is_dir():
        return []
    found = [v.name for v in folder.iterdir() if (v / "card.json").is_file()]
    return sorted(found, key=lambda v: (len(v), v))


def find_model(
    models_dir: Path, name: str, version: str | None = None
) -> tuple[Path, dict[str, Any]]:
    """The ONNX file and card of a model (newest version unless one is named)."""
    available = versions(models_dir, name)
    if not available:
        raise ConfigError(
            f"model {name!r} is not built in {models_dir}; run `hybridinfer models build`"
        )
    chosen = version or available[-1]
    if chosen not in available:
        raise ConfigError(f"model {name!r} has no version {chosen!r} in {models_dir}")
    folder = models_dir / name / chosen
    card = orjson.loads((folder / "card.json").read_bytes())
    return folder / "model.onnx", dict(card)


def deployment_info(card: dict[str, Any], cost_per_call: float = 0.0) -> DeploymentInfo:
    """What a node announces about a model, from its card."""
    return DeploymentInfo(
        model=card["name"],
        version=str(card["version"]),
        capability=card["capability"],
        task=card.get("task"),
        quality=float(card["metrics"]["accuracy"]),
        latency_ms=float(card["latency_ms"]["p50"]),
        labels=list(card.get("labels", [])),
        inputs=[TensorInfo(**spec) for spec in card["inputs"]],
        outputs=[TensorInfo(**spec) for spec in card["outputs"]],
        cost_per_call=cost_per_call,
        calibration=dict(card.get("calibration", {})),
    )
