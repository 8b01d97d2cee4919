from __future__ import annotations

import numpy as np
import pytest

from hybridinfer.errors import InvalidInput
from hybridinfer.tensors.datatypes import to_array, to_tensor


def test_round_trip_keeps_shape_datatype_and_values() -> None:
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensor = to_tensor("x", array)
    assert tensor == {"name": "x", "datatype": "FP32", "shape": [2, 3], "data": [0, 1, 2, 3, 4, 5]}
    back = to_array("x", tensor["datatype"], tensor["shape"], tensor["data"])
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, array)


def test_nested_data_is_accepted_as_the_protocol_allows() -> None:
    back = to_array("x", "INT64", [2, 2], [[1, 2], [3, 4]])
    assert back.tolist() == [[1, 2], [3, 4]]


def test_bytes_tensors_hold_strings() -> None:
    back = to_array("text", "BYTES", [1, 1], ["héllo"])
    assert back.dtype == object
    assert to_tensor("text", back)["data"] == ["héllo"]


@pytest.mark.parametrize(
    ("datatype", "shape", "data", "problem"),
    [
        ("FP32", [2, 2], [1, 2, 3], "needs 4 values"),
        ("FP99", [1], [1], "unknown datatype"),
        ("FP32", [-1], [1], "negative"),
        ("INT64", [1], ["a"], "does not fit"),
        ("BYTES", [1], [1], "must be strings"),
    ],
)
def test_malformed_tensors_are_invalid_input(
    datatype: str, shape: list[int], data: list[object], problem: str
) -> None:
    with pytest.raises(InvalidInput, match=problem):
        to_array("x", datatype, shape, data)
