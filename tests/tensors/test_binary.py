from __future__ import annotations

import numpy as np
import pytest

from hybridinfer.errors import InvalidInput
from hybridinfer.tensors.binary import from_binary, split_body, to_binary


@pytest.mark.parametrize(
    ("datatype", "array"),
    [
        ("FP32", np.arange(6, dtype=np.float32).reshape(2, 3)),
        ("INT64", np.array([[-1], [7]], dtype=np.int64)),
        ("BOOL", np.array([True, False, True])),
        ("FP16", np.array([0.5, 1.5], dtype=np.float16)),
        ("BYTES", np.array([["héllo"], [""], ["x"]], dtype=np.object_)),
    ],
)
def test_round_trip(datatype: str, array: np.ndarray) -> None:
    raw = memoryview(to_binary(array))
    back = from_binary("t", datatype, list(array.shape), raw)
    assert back.shape == array.shape
    assert back.tolist() == array.tolist()


def test_bytes_layout_is_a_little_endian_length_prefix() -> None:
    assert to_binary(np.array(["ab"], dtype=np.object_)) == b"\x02\x00\x00\x00ab"


def test_uint32_layout_matches_the_spec_example() -> None:
    data = to_binary(np.array([[1, 2], [3, 4]], dtype=np.uint32))
    assert len(data) == 16
    assert data[:4] == b"\x01\x00\x00\x00"


@pytest.mark.parametrize(
    ("datatype", "shape", "raw"),
    [
        ("FP32", [2], b"\x00" * 7),
        ("BYTES", [1], b"\x05\x00\x00\x00ab"),
        ("BYTES", [1], b"\x01\x00"),
        ("BYTES", [1], b"\x01\x00\x00\x00\xff"),
        ("BYTES", [1], b"\x01\x00\x00\x00ab"),
        ("NOPE", [1], b""),
    ],
)
def test_inconsistent_binary_data_is_invalid_input(
    datatype: str, shape: list[int], raw: bytes
) -> None:
    with pytest.raises(InvalidInput):
        from_binary("t", datatype, shape, memoryview(raw))


def test_split_body() -> None:
    header, binary = split_body(b'{"a":1}XYZ', "7")
    assert header == b'{"a":1}'
    assert bytes(binary) == b"XYZ"
    with pytest.raises(InvalidInput):
        split_body(b"{}", "99")
