"""One model version a node serves, with its card, statistics and input check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy.typing as npt
import orjson

from hybridinfer.errors import InvalidInput
from hybridinfer.models.batcher import MicroBatcher
from hybridinfer.tensors.datatypes import datatype_of


@dataclass(slots=True, eq=False)
class ServedModel:
    """A model version: its file, its card and the micro-batcher its requests go through."""

    name: str
    version: str
    card: dict[str, Any]
    path: Path
    batcher: MicroBatcher
    success: int = 0
    failure: int = 0
    in_flight: int = 0

    @classmethod
    def from_folder(
        cls, name: str, version: str, folder: Path, batcher: MicroBatcher
    ) -> ServedModel:
        """Read ``card.json`` beside ``model.onnx`` (OSError/ValueError if missing or bad)."""
        card = orjson.loads((folder / "card.json").read_bytes())
        if not isinstance(card, dict) or "inputs" not in card or "outputs" not in card:
            raise ValueError(f"{folder / 'card.json'} is not a model card")
        if not (folder / "model.onnx").is_file():
            raise ValueError(f"{folder} has no model.onnx")
        return cls(name, version, card, folder / "model.onnx", batcher)

    def statistics(self) -> dict[str, Any]:
        """Counts in the shape of Triton's statistics extension (a subset)."""
        return {
            "name": self.name,
            "version": self.version,
            "inference_count": self.success,
            "execution_count": self.success + self.failure,
            "inference_stats": {
                "success": {"count": self.success},
                "fail": {"count": self.failure},
            },
        }

    def metadata(self, versions: list[str]) -> dict[str, Any]:
        """The V2 model metadata response."""
        return {
            "name": self.name,
            "versions": versions,
            "platform": "onnxruntime_onnx",
            "inputs": self.card["inputs"],
            "outputs": self.card["outputs"],
        }


def check_inputs(model: ServedModel, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
    """InvalidInput unless the tensors match the model's declared inputs."""
    for spec in model.card["inputs"]:
        array = arrays.get(spec["name"])
        if array is None:
            raise InvalidInput(f"model {model.name} needs input {spec['name']!r}")
        if datatype_of(array) != spec["datatype"]:
            raise InvalidInput(
                f"input {spec['name']!r}: datatype {datatype_of(array)} "
                f"does not match {spec['datatype']}"
            )
        shape = spec["shape"]
        if len(array.shape) != len(shape) or any(
            want not in (-1, got) for want, got in zip(shape, array.shape, strict=True)
        ):
            raise InvalidInput(
                f"input {spec['name']!r}: shape {list(array.shape)} does not match {shape}"
            )
    unknown = set(arrays) - {spec["name"] for spec in model.card["inputs"]}
    if unknown:
        raise InvalidInput(f"model {model.name} has no input {', '.join(sorted(unknown))}")
