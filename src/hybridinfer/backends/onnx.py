"""In-process models run by onnxruntime, off the event loop (design: local tier)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy.typing as npt
import onnxruntime as ort

from hybridinfer import codec
from hybridinfer.backends.base import Backend
from hybridinfer.errors import DeadlineExceeded, InvalidInput, UnknownModel, UpstreamError
from hybridinfer.topology import Deployment, Node

try:  # onnxruntime's error classes live in its compiled module
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument as _OrtInvalid
except ImportError:  # pragma: no cover - every supported onnxruntime has it
    _OrtInvalid = ValueError


class OnnxModel:
    """One ONNX file loaded in an onnxruntime session (thread-safe ``run``)."""

    def __init__(self, path: Path, threads: int = 1) -> None:
        options = ort.SessionOptions()
        # One thread per call: concurrency comes from running calls side by side.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            self._session = ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises bare Fail/RuntimeException
            raise UpstreamError(f"cannot load model {path}: {exc}") from None
        self.path = path
        self.input_names = [item.name for item in self._session.get_inputs()]
        self.output_names = [item.name for item in self._session.get_outputs()]

    def run(self, feeds: Mapping[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        """Run one (micro-)batch; onnxruntime's errors become ours."""
        try:
            results = self._session.run(self.output_names, dict(feeds))
        except _OrtInvalid as exc:
            raise InvalidInput(f"model rejected the input: {_first_line(exc)}") from None
        except Exception as exc:  # onnxruntime raises bare Fail/RuntimeException
            raise UpstreamError(f"model failed: {_first_line(exc)}") from None
        return dict(zip(self.output_names, results, strict=True))


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__


class OnnxBackend(Backend):
    """Runs deployments of the in-process node; inference happens on a small thread pool."""

    protocol = "onnx"

    def __init__(self, models: Mapping[str, OnnxModel], threads: int = 2) -> None:
        self._models = dict(models)
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="onnx")

    @staticmethod
    def key(model: str, version: str) -> str:
        return f"{model}:{version}"

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        model = self._models.get(self.key(deployment.model, deployment.version))
        if model is None:
            raise UnknownModel(f"model {deployment.model}:{deployment.version} is not loaded")
        feeds = codec.encode(deployment, inputs)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout_s):
                outputs = await loop.run_in_executor(self._pool, model.run, feeds)
        except TimeoutError:
            raise DeadlineExceeded(f"{deployment.model} did not answer in time") from None
        return codec.decode(deployment, outputs)

    async def aclose(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
