"""The node's Open Inference Protocol over gRPC, on a real node process: a client built from
the proto (typed contents, raw contents), grpc.health.v1, bad tensors, TLS and mutual TLS."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hybridinfer.models.catalog import find_model
from hybridinfer.models.onnxmodel import OnnxModel
from hybridinfer.tensors.grpcwire import response_arrays, set_inputs
from hybridinfer.tensors.proto import grpc_predict_v2_pb2 as pb
from hybridinfer.tensors.proto.grpc_predict_v2_pb2_grpc import GRPCInferenceServiceStub
from tests.peers import free_port, node_process, require

pytestmark = pytest.mark.integration
TEXTS = np.array([["what a great day"], ["this is awful"]], dtype=np.object_)


@pytest.fixture(scope="module")
def grpc_node(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A plain node serving two models over REST and gRPC; yields its gRPC target."""
    port = free_port()
    args = ["--models", "sentiment-small,digits-small", "--models-dir", str(models_dir)]
    args += ["--grpc-port", str(port), "--cache-dir", str(tmp_path_factory.mktemp("cache"))]
    with node_process(*args):
        yield f"127.0.0.1:{port}"


def _expected(models_dir: Path) -> np.ndarray:
    path, _ = find_model(models_dir, "sentiment-small")
    return np.asarray(OnnxModel(path).run({"text": TEXTS})["probabilities"])


def test_typed_and_raw_contents_match_the_model(grpc_node: str, models_dir: Path) -> None:
    expected = _expected(models_dir)
    with grpc.insecure_channel(grpc_node) as channel:
        stub = GRPCInferenceServiceStub(channel)
        assert stub.ServerLive(pb.ServerLiveRequest()).live
        assert stub.ServerReady(pb.ServerReadyRequest()).ready
        assert stub.ModelReady(pb.ModelReadyRequest(name="sentiment-small")).ready
        assert not stub.ModelReady(pb.ModelReadyRequest(name="nope")).ready
        metadata = stub.ModelMetadata(pb.ModelMetadataRequest(name="sentiment-small"))
        assert (metadata.inputs[0].name, metadata.inputs[0].datatype) == ("text", "BYTES")
        assert list(metadata.inputs[0].shape) == [-1, 1]
        assert stub.ServerMetadata(pb.ServerMetadataRequest()).name == "hybridinfer-node"
        for raw in (False, True):
            request = pb.ModelInferRequest(model_name="sentiment-small", id=f"req-{raw}")
            set_inputs(request, {"text": TEXTS}, raw=raw)
            request.outputs.add(name="probabilities")
            response = stub.ModelInfer(request)
            assert response.id == f"req-{raw}"
            assert bool(response.raw_output_contents) is raw  # answered as it was asked
            assert [o.name for o in response.outputs] == ["probabilities"]
            outputs = response_arrays(response)
            np.testing.assert_allclose(outputs["probabilities"], expected, rtol=1e-6)


def test_typed_contents_by_hand_for_a_float_model(grpc_node: str) -> None:
    """A client that fills ``fp32_contents`` itself, as one built from the proto would."""
    with grpc.insecure_channel(grpc_node) as channel:
        stub = GRPCInferenceServiceStub(channel)
        tensor = pb.ModelInferRequest.InferInputTensor(
            name="pixels",
            datatype="FP32",
            shape=[1, 64],
            contents=pb.InferTensorContents(fp32_contents=[0.0] * 64),
        )
        response = stub.ModelInfer(pb.ModelInferRequest(model_name="digits-small", inputs=[tensor]))
        by_name = {o.name: o for o in response.outputs}
        assert list(by_name["probabilities"].shape) == [1, 10]
        assert len(by_name["probabilities"].contents.fp32_contents) == 10
        assert len(by_name["label"].contents.int64_contents) == 1


@pytest.mark.parametrize(
    ("tensor", "message"),
    [
        (pb.ModelInferRequest.InferInputTensor(name="pixels", datatype="FP32", shape=[1, 63],
         contents=pb.InferTensorContents(fp32_contents=[0.0] * 63)), "shape"),
        (pb.ModelInferRequest.InferInputTensor(name="pixels", datatype="FP32", shape=[1, 64],
         contents=pb.InferTensorContents(fp32_contents=[0.0] * 3)), "needs 64 values"),
        (pb.ModelInferRequest.InferInputTensor(name="pixels", datatype="FP32", shape=[1, 64],
         contents=pb.InferTensorContents(int64_contents=[0] * 64)), "fp32_contents"),
        (pb.ModelInferRequest.InferInputTensor(name="pixels", datatype="FLOAT", shape=[1, 64]),
         "unknown datatype"),
        (pb.ModelInferRequest.InferInputTensor(name="pixels", datatype="FP64", shape=[1, 64],
         contents=pb.InferTensorContents(fp64_contents=[0.0] * 64)), "datatype FP64"),
        (pb.ModelInferRequest.InferInputTensor(name="image", datatype="FP32", shape=[1, 64],
         contents=pb.InferTensorContents(fp32_contents=[0.0] * 64)), "needs input"),
    ],
)  # fmt: skip
def test_bad_tensors_are_invalid_argument_and_the_node_keeps_serving(
    grpc_node: str, tensor: pb.ModelInferRequest.InferInputTensor, message: str
) -> None:
    with grpc.insecure_channel(grpc_node) as channel:
        stub = GRPCInferenceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as failure:
            stub.ModelInfer(pb.ModelInferRequest(model_name="digits-small", inputs=[tensor]))
        assert failure.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert message in (failure.value.details() or "")
        assert stub.ModelReady(pb.ModelReadyRequest(name="digits-small")).ready


def test_raw_contents_that_do_not_fit_and_unknown_models(grpc_node: str) -> None:
    with grpc.insecure_channel(grpc_node) as channel:
        stub = GRPCInferenceServiceStub(channel)
        request = pb.ModelInferRequest(model_name="digits-small")
        request.inputs.add(name="pixels", datatype="FP32", shape=[1, 64])
        request.raw_input_contents.append(b"\0" * 10)
        with pytest.raises(grpc.RpcError) as failure:
            stub.ModelInfer(request)
        assert failure.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "needs 256 bytes, got 10" in (failure.value.details() or "")
        request.model_name = "nope"
        with pytest.raises(grpc.RpcError) as failure:
            stub.ModelInfer(request)
        assert failure.value.code() is grpc.StatusCode.NOT_FOUND
        assert "unknown model" in (failure.value.details() or "")


def test_health_v1_says_serving(grpc_node: str) -> None:
    with grpc.insecure_channel(grpc_node) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "inference.GRPCInferenceService"):
            answer = health.Check(health_pb2.HealthCheckRequest(service=service))
            assert answer.status == health_pb2.HealthCheckResponse.SERVING


@dataclass
class Pki:
    ca: bytes
    node: tuple[Path, Path]
    caller: tuple[bytes, bytes]
    ca_file: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    trustme = require("trustme")
    directory = tmp_path_factory.mktemp("grpc-pki")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    node = ca.issue_cert("127.0.0.1", "localhost")
    node.cert_chain_pems[0].write_to_path(str(directory / "node.pem"))
    node.private_key_pem.write_to_path(str(directory / "node.key"))
    caller = ca.issue_cert("gateway.test")
    return Pki(
        ca.cert_pem.bytes(),
        (directory / "node.pem", directory / "node.key"),
        (caller.private_key_pem.bytes(), caller.cert_chain_pems[0].bytes()),
        directory / "ca.pem",
    )


@pytest.mark.parametrize("mutual", [False, True])
def test_tls_and_mutual_tls(pki: Pki, models_dir: Path, tmp_path: Path, mutual: bool) -> None:
    port = free_port()
    args = ["--models", "sentiment-small", "--models-dir", str(models_dir)]
    args += ["--grpc-port", str(port), "--cache-dir", str(tmp_path)]
    env = {
        "HYBRIDINFER_NODE_TLS_CERT_FILE": str(pki.node[0]),
        "HYBRIDINFER_NODE_TLS_KEY_FILE": str(pki.node[1]),
        "HYBRIDINFER_NODE_TLS_CA_FILE": str(pki.ca_file),
        "HYBRIDINFER_NODE_TLS_REQUIRE_CLIENT_CERT": "true" if mutual else "false",
    }
    context = pytest.importorskip("ssl").create_default_context(cafile=str(pki.ca_file))
    if mutual:
        context.load_cert_chain(str(pki.node[0]), str(pki.node[1]))  # any CA-signed pair
    with node_process(*args, env=env, context=context):
        target = f"127.0.0.1:{port}"
        trusting = grpc.ssl_channel_credentials(root_certificates=pki.ca)
        with_cert = grpc.ssl_channel_credentials(pki.ca, *pki.caller)
        with grpc.secure_channel(target, with_cert) as channel:
            ready = GRPCInferenceServiceStub(channel).ServerReady(pb.ServerReadyRequest())
            assert ready.ready
        with grpc.secure_channel(target, trusting) as channel:
            stub = GRPCInferenceServiceStub(channel)
            if mutual:  # no certificate, no handshake
                with pytest.raises(grpc.RpcError) as failure:
                    stub.ServerReady(pb.ServerReadyRequest(), timeout=5)
                assert failure.value.code() is grpc.StatusCode.UNAVAILABLE
            else:
                assert stub.ServerReady(pb.ServerReadyRequest(), timeout=5).ready
        plain = grpc.insecure_channel(target)  # plain text to a TLS port
        with plain, pytest.raises(grpc.RpcError):
            GRPCInferenceServiceStub(plain).ServerLive(pb.ServerLiveRequest(), timeout=5)
