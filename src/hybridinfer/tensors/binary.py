"""The binary tensor data extension of the Open Inference Protocol (Triton's, KServe's).

An HTTP body is the JSON inference header followed by raw tensor bytes, in the order the
tensors appear in the JSON; the ``Inference-Header-Content-Length`` header gives the JSON's
length and each binary tensor's ``parameters.binary_data_size`` its byte count. Data is
little-endian, row major, without padding; BOOL is one byte; a BYTES element is a 4-byte
little-endian unsigned length followed by its bytes.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from hybridinfer.errors import InvalidInput
from hybridinfer.tensors.datatypes import NUMPY_BY_DATATYPE, datatype_of

HEADER = "inference-header-content-length"
_LENGTH = struct.Struct("<I")


def split_body(body: bytes, header_length: str | None) -> tuple[bytes, memoryview]:
    """The JSON header and the binary part of a body (all JSON without the header)."""
    if header_length is None:
        return body, memoryview(b"")
    if not (header_length.isascii() and header_length.isdigit()) or int(header_length) > len(body):
        raise InvalidInput(f"{HEADER} {header_length!r} does not fit a {len(body)}-byte body")
    cut = int(header_length)
    return body[:cut], memoryview(body)[cut:]


def _decode_bytes(name: str, raw: memoryview, count: int) -> npt.NDArray[Any]:
    values: list[str] = []
    offset = 0
    for _ in range(count):
        if offset + 4 > len(raw):
            raise InvalidInput(f"input {name!r}: BYTES data ends inside an element length")
        (length,) = _LENGTH.unpack_from(raw, offset)
        offset += 4
        if offset + length > len(raw):
            raise InvalidInput(f"input {name!r}: BYTES element runs past its data")
        try:
            values.append(bytes(raw[offset : offset + length]).decode("utf-8"))
        except UnicodeDecodeError:
            raise InvalidInput(f"input {name!r}: BYTES element is not UTF-8 text") from None
        offset += length
    if offset != len(raw):
        raise InvalidInput(f"input {name!r}: {len(raw) - offset} bytes left after {count} elements")
    return np.array(values, dtype=np.object_)


def from_binary(name: str, datatype: str, shape: list[int], raw: memoryview) -> npt.NDArray[Any]:
    """A tensor from its binary data; InvalidInput when size, shape and datatype disagree."""
    dtype = NUMPY_BY_DATATYPE.get(datatype)
    if dtype is None:
        raise InvalidInput(f"input {name!r}: unknown datatype {datatype!r}")
    if any(dim < 0 for dim in shape):
        raise InvalidInput(f"input {name!r}: shape {shape} has a negative dimension")
    count = math.prod(shape)
    if datatype == "BYTES":
        return _decode_bytes(name, raw, count).reshape(shape)
    item = np.dtype(dtype).newbyteorder("<")
    if len(raw) != count * item.itemsize:
        raise InvalidInput(
            f"input {name!r}: {datatype}{shape} needs {count * item.itemsize} bytes, got {len(raw)}"
        )
    return np.frombuffer(raw, dtype=item).astype(np.dtype(dtype), copy=False).reshape(shape)


def to_binary(array: npt.NDArray[Any]) -> bytes:
    """A tensor's binary data."""
    if datatype_of(array) == "BYTES":
        parts: list[bytes] = []
        for value in array.reshape(-1):
            data = value if isinstance(value, bytes) else str(value).encode("utf-8")
            parts.append(_LENGTH.pack(len(data)))
            parts.append(data)
        return b"".join(parts)
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return np.ascontiguousarray(little).tobytes()
