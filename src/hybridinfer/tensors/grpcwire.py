"""Tensors as the Open Inference Protocol carries them over gRPC, and back to numpy.

A ``ModelInferRequest`` (or response) carries its data one of two ways: typed contents, each
tensor's flattened values in the ``InferTensorContents`` field of its datatype, or raw
contents, one bytes entry per tensor in the order of the tensors, laid out as the binary
extension lays them out (``binary.py``). A message uses one way for all its tensors; FP16 has
no typed field, so a message with an FP16 tensor is raw. Any disagreement between a tensor's
datatype, shape and data is ``InvalidInput`` naming the tensor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hybridinfer.errors import InvalidInput
from hybridinfer.tensors.binary import from_binary, to_binary
from hybridinfer.tensors.datatypes import NUMPY_BY_DATATYPE, datatype_of
from hybridinfer.tensors.proto import grpc_predict_v2_pb2 as pb

TYPED_FIELD = {
    "BOOL": "bool_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}
"""The ``InferTensorContents`` field each datatype's values travel in (FP16: raw only)."""


def _checked_shape(name: str, datatype: str, shape: Sequence[int]) -> list[int]:
    if datatype not in NUMPY_BY_DATATYPE:
        raise InvalidInput(f"tensor {name!r}: unknown datatype {datatype!r}")
    dims = list(shape)
    if any(dim < 0 for dim in dims):
        raise InvalidInput(f"tensor {name!r}: shape {dims} has a negative dimension")
    return dims


def typed_array(
    name: str, datatype: str, shape: Sequence[int], contents: pb.InferTensorContents
) -> npt.NDArray[Any]:
    """A tensor from its typed contents."""
    dims = _checked_shape(name, datatype, shape)
    field = TYPED_FIELD.get(datatype)
    if field is None:
        raise InvalidInput(f"tensor {name!r}: {datatype} travels only as raw contents")
    values = getattr(contents, field)
    count = math.prod(dims)
    if len(values) != count:
        raise InvalidInput(
            f"tensor {name!r}: shape {dims} needs {count} values in {field}, got {len(values)}"
        )
    if datatype == "BYTES":
        try:
            texts = [bytes(value).decode("utf-8") for value in values]
        except UnicodeDecodeError:
            raise InvalidInput(f"tensor {name!r}: BYTES element is not UTF-8 text") from None
        return np.array(texts, dtype=np.object_).reshape(dims)
    try:
        return np.asarray(list(values), dtype=NUMPY_BY_DATATYPE[datatype]).reshape(dims)
    except (OverflowError, ValueError, TypeError):
        raise InvalidInput(f"tensor {name!r}: values do not fit datatype {datatype}") from None


def _arrays(tensors: Sequence[Any], raw: Sequence[bytes], kind: str) -> dict[str, npt.NDArray[Any]]:
    """Each tensor of a request or response by name, from its raw entry or typed contents."""
    if raw and len(raw) != len(tensors):
        raise InvalidInput(f"{len(raw)} raw contents for {len(tensors)} {kind} tensors")
    arrays: dict[str, npt.NDArray[Any]] = {}
    for index, tensor in enumerate(tensors):
        if tensor.name in arrays:
            raise InvalidInput(f"{kind} tensor {tensor.name!r} appears twice")
        if raw:
            if tensor.HasField("contents"):
                raise InvalidInput(f"tensor {tensor.name!r} has both raw and typed contents")
            dims = _checked_shape(tensor.name, tensor.datatype, tensor.shape)
            data = memoryview(raw[index])
            arrays[tensor.name] = from_binary(tensor.name, tensor.datatype, dims, data)
        else:
            arrays[tensor.name] = typed_array(
                tensor.name, tensor.datatype, tensor.shape, tensor.contents
            )
    return arrays


def request_arrays(request: pb.ModelInferRequest) -> dict[str, npt.NDArray[Any]]:
    """The input tensors of a request."""
    if not request.inputs:
        raise InvalidInput("the request has no inputs")
    return _arrays(request.inputs, request.raw_input_contents, "input")


def response_arrays(response: pb.ModelInferResponse) -> dict[str, npt.NDArray[Any]]:
    """The output tensors of a response."""
    return _arrays(response.outputs, response.raw_output_contents, "output")


def _fill(contents: pb.InferTensorContents, datatype: str, array: npt.NDArray[Any]) -> None:
    values = getattr(contents, TYPED_FIELD[datatype])
    flat = array.reshape(-1)
    if datatype == "BYTES":
        values.extend(v if isinstance(v, bytes) else str(v).encode("utf-8") for v in flat)
    else:
        values.extend(flat.tolist())


def _needs_raw(arrays: Mapping[str, npt.NDArray[Any]]) -> bool:
    return any(datatype_of(array) not in TYPED_FIELD for array in arrays.values())


def set_inputs(
    request: pb.ModelInferRequest, arrays: Mapping[str, npt.NDArray[Any]], raw: bool = False
) -> None:
    """Add ``arrays`` as the request's inputs: typed contents, or raw (also when a datatype
    has no typed field)."""
    raw = raw or _needs_raw(arrays)
    for name, array in arrays.items():
        datatype = datatype_of(array)
        tensor = request.inputs.add(name=name, datatype=datatype, shape=list(array.shape))
        if raw:
            request.raw_input_contents.append(to_binary(array))
        else:
            _fill(tensor.contents, datatype, array)


def set_outputs(
    response: pb.ModelInferResponse, arrays: Mapping[str, npt.NDArray[Any]], raw: bool = False
) -> None:
    """Add ``arrays`` as the response's outputs, as ``set_inputs`` adds inputs."""
    raw = raw or _needs_raw(arrays)
    for name, array in arrays.items():
        datatype = datatype_of(array)
        tensor = response.outputs.add(name=name, datatype=datatype, shape=list(array.shape))
        if raw:
            response.raw_output_contents.append(to_binary(array))
        else:
            _fill(tensor.contents, datatype, array)
