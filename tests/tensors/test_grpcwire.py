"""Tensors to and from the gRPC messages: typed and raw contents, and what does not fit."""

from __future__ import annotations

import numpy as np
import pytest

from hybridinfer.errors import InvalidInput
from hybridinfer.tensors.grpcwire import request_arrays, response_arrays, set_inputs, set_outputs
from hybridinfer.tensors.proto import grpc_predict_v2_pb2 as pb

ARRAYS = {
    "text": np.array([["héllo"], ["world"]], dtype=np.object_),
    "pixels": np.arange(6, dtype=np.float32).reshape(2, 3),
    "ids": np.array([[1, -2]], dtype=np.int8),
    "mask": np.array([True, False]),
    "big": np.array([2**40], dtype=np.uint64),
}


@pytest.mark.parametrize("raw", [False, True])
def test_every_typed_datatype_round_trips(raw: bool) -> None:
    request = pb.ModelInferRequest(model_name="m")
    set_inputs(request, ARRAYS, raw=raw)
    assert bool(request.raw_input_contents) is raw
    back = request_arrays(pb.ModelInferRequest.FromString(request.SerializeToString()))
    for name, array in ARRAYS.items():
        assert back[name].dtype == array.dtype
        assert back[name].tolist() == array.tolist()


def test_fp16_makes_the_whole_message_raw() -> None:
    response = pb.ModelInferResponse()
    half = np.array([0.5, 1.5], dtype=np.float16)
    set_outputs(response, {"half": half, "x": np.array([1.0])})
    assert len(response.raw_output_contents) == 2
    assert response_arrays(response)["half"].tolist() == [0.5, 1.5]


def _request(**tensor: object) -> pb.ModelInferRequest:
    return pb.ModelInferRequest(inputs=[pb.ModelInferRequest.InferInputTensor(**tensor)])


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (pb.ModelInferRequest(), "no inputs"),
        (_request(name="x", datatype="FP16", shape=[1]), "only as raw"),
        (_request(name="x", datatype="INT8", shape=[1],
                  contents=pb.InferTensorContents(int_contents=[300])), "do not fit"),
        (_request(name="x", datatype="BYTES", shape=[1],
                  contents=pb.InferTensorContents(bytes_contents=[b"\xff"])), "UTF-8"),
        (_request(name="x", datatype="FP32", shape=[-1]), "negative"),
        (pb.ModelInferRequest(inputs=[
            pb.ModelInferRequest.InferInputTensor(name="x", datatype="FP32", shape=[0]),
            pb.ModelInferRequest.InferInputTensor(name="x", datatype="FP32", shape=[0]),
        ]), "twice"),
        (pb.ModelInferRequest(inputs=[pb.ModelInferRequest.InferInputTensor(name="x")],
                              raw_input_contents=[b"", b""]), "2 raw contents for 1"),
    ],
)  # fmt: skip
def test_what_does_not_fit_is_invalid_input(request_: pb.ModelInferRequest, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        request_arrays(request_)
