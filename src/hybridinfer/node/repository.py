"""The models a node serves, loaded from the models directory."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy.typing as npt

from hybridinfer.backends.onnx import OnnxModel
from hybridinfer.catalog import find_model
from hybridinfer.errors import InvalidInput, UnknownModel
from hybridinfer.tensors import datatype_of


@dataclass(slots=True)
class ServedModel:
    name: str
    version: str
    card: dict[str, Any]
    runner: OnnxModel
    success: int = 0
    failure: int = 0

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

    def metadata(self) -> dict[str, Any]:
        """The V2 model metadata response."""
        return {
            "name": self.name,
            "versions": [self.version],
            "platform": "onnxruntime_onnx",
            "inputs": self.card["inputs"],
            "outputs": self.card["outputs"],
        }


class ModelRepository:
    """Loaded models by name; inference on a thread pool, with an in-flight count."""

    def __init__(self, models_dir: Path, names: list[str], threads: int = 2) -> None:
        self._models: dict[str, ServedModel] = {}
        for name in names:
            path, card = find_model(models_dir, name)
            version = str(card["version"])
            self._models[name] = ServedModel(name, version, card, OnnxModel(path))
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="node-infer")
        self.in_flight = 0

    def names(self) -> list[str]:
        return sorted(self._models)

    def cards(self) -> list[dict[str, Any]]:
        return [model.card for model in self._models.values()]

    def get(self, name: str, version: str | None = None) -> ServedModel:
        model = self._models.get(name)
        if model is None:
            raise UnknownModel(f"unknown model {name!r}")
        if version is not None and version != model.version:
            raise UnknownModel(f"model {name!r} has no version {version!r}")
        return model

    def check_inputs(self, model: ServedModel, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
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

    async def infer(
        self, model: ServedModel, arrays: Mapping[str, npt.NDArray[Any]]
    ) -> dict[str, npt.NDArray[Any]]:
        try:
            self.check_inputs(model, arrays)
            self.in_flight += 1
            try:
                loop = asyncio.get_running_loop()
                outputs = await loop.run_in_executor(self._pool, model.runner.run, arrays)
            finally:
                self.in_flight -= 1
        except Exception:
            model.failure += 1
            raise
        model.success += 1
        return outputs

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
