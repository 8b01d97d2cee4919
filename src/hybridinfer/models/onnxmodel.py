"""One ONNX file in an onnxruntime session; onnxruntime's errors mapped into ours."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy.typing as npt
import onnxruntime as ort

from hybridinfer.errors import InvalidInput, UpstreamError

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
