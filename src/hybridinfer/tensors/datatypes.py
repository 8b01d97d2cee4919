"""Tensors as the Open Inference Protocol (KServe V2) writes them in JSON, and back."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from hybridinfer.errors import InvalidInput

NUMPY_BY_DATATYPE: dict[str, npt.DTypeLike] = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
    "BYTES": np.object_,
}
DATATYPE_BY_KIND = {
    np.dtype(np.bool_): "BOOL",
    np.dtype(np.uint8): "UINT8",
    np.dtype(np.uint16): "UINT16",
    np.dtype(np.uint32): "UINT32",
    np.dtype(np.uint64): "UINT64",
    np.dtype(np.int8): "INT8",
    np.dtype(np.int16): "INT16",
    np.dtype(np.int32): "INT32",
    np.dtype(np.int64): "INT64",
    np.dtype(np.float16): "FP16",
    np.dtype(np.float32): "FP32",
    np.dtype(np.float64): "FP64",
}


def datatype_of(array: npt.NDArray[Any]) -> str:
    if array.dtype.kind in "OUS":
        return "BYTES"
    datatype = DATATYPE_BY_KIND.get(array.dtype)
    if datatype is None:
        raise InvalidInput(f"dtype {array.dtype} has no Open Inference Protocol datatype")
    return datatype


def _flatten(data: Any) -> list[Any]:
    if isinstance(data, list) and data and isinstance(data[0], list):
        flat: list[Any] = []
        for item in data:
            flat.extend(_flatten(item))
        return flat
    return list(data) if isinstance(data, list) else [data]


def to_array(name: str, datatype: str, shape: list[int], data: Any) -> npt.NDArray[Any]:
    """A V2 JSON tensor as a numpy array; InvalidInput when its parts disagree."""
    dtype = NUMPY_BY_DATATYPE.get(datatype)
    if dtype is None:
        raise InvalidInput(f"input {name!r}: unknown datatype {datatype!r}")
    if any(dim < 0 for dim in shape):
        raise InvalidInput(f"input {name!r}: shape {shape} has a negative dimension")
    values = _flatten(data)
    if len(values) != math.prod(shape):
        raise InvalidInput(
            f"input {name!r}: shape {shape} needs {math.prod(shape)} values, got {len(values)}"
        )
    if datatype == "BYTES":
        if not all(isinstance(value, str) for value in values):
            raise InvalidInput(f"input {name!r}: BYTES data must be strings")
        return np.array(values, dtype=np.object_).reshape(shape)
    try:
        return np.asarray(values, dtype=dtype).reshape(shape)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInput(f"input {name!r}: data does not fit datatype {datatype}") from None


def to_tensor(name: str, array: npt.NDArray[Any]) -> dict[str, Any]:
    """A numpy array as a V2 JSON tensor (row-major flattened data)."""
    datatype = datatype_of(array)
    flat = array.reshape(-1)
    if datatype == "BYTES":
        data: list[Any] = [
            value.decode("utf-8") if isinstance(value, bytes) else str(value) for value in flat
        ]
    else:
        data = flat.tolist()
    return {"name": name, "datatype": datatype, "shape": list(array.shape), "data": data}
