"""The V2 backend over gRPC against a real node process: the same answers as over REST, status
codes mapped into the error tree, a link that comes back used again within 2 s, and the trace
context sent as metadata (to a real gRPC server started here)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest

from hybridinfer.backends.v2 import V2Backend
from hybridinfer.backends.v2grpc import map_rpc_error, send_limit
from hybridinfer.core.topology import Deployment, Node, Tier, Zone
from hybridinfer.core.tracecontext import CURRENT, new_context
from hybridinfer.errors import (
    DeadlineExceeded,
    UpstreamError,
    UpstreamRejected,
    UpstreamUnavailable,
)
from hybridinfer.execute.retry import retryable
from hybridinfer.models.catalog import deployment_info, find_model
from hybridinfer.signals.registry import deployment_from_info
from hybridinfer.tensors.proto import grpc_predict_v2_pb2 as pb
from tests.peers import free_port, gateway_process, node_process

TEXTS = ["what a great day", "this is awful", "the train was on time"]


def sentiment(models_dir: Path) -> Deployment:
    path, _ = find_model(models_dir, "sentiment-small")
    card = orjson.loads((path.parent / "card.json").read_bytes())
    return deployment_from_info("cloud-grpc", deployment_info(card))


def cloud_node(deployment: Deployment, rest_port: int, grpc_port: int | None) -> Node:
    return Node(
        id="cloud-grpc",
        tier=Tier.CLOUD,
        zone=Zone.PUBLIC,
        url=f"http://127.0.0.1:{rest_port}",
        protocol="v2",
        deployments=[deployment],
        grpc_url=None if grpc_port is None else f"grpc://127.0.0.1:{grpc_port}",
    )


def _node_args(models_dir: Path, cache: Path, grpc_port: int) -> list[str]:
    return [
        "--models", "sentiment-small", "--models-dir", str(models_dir), "--cache-dir", str(cache),
        "--grpc-port", str(grpc_port),
    ]  # fmt: skip


@pytest.fixture
async def backend() -> AsyncIterator[V2Backend]:
    client = V2Backend()
    yield client
    await client.aclose()


@pytest.fixture(scope="module")
def ports(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    """A real node serving REST and gRPC; yields (rest_port, grpc_port)."""
    rest, rpc = free_port(), free_port()
    with node_process(*_node_args(models_dir, tmp_path_factory.mktemp("cache"), rpc), port=rest):
        yield rest, rpc


@pytest.mark.integration
async def test_grpc_answers_as_rest_does(
    backend: V2Backend, ports: tuple[int, int], models_dir: Path
) -> None:
    deployment = sentiment(models_dir)
    over_grpc, over_rest = cloud_node(deployment, *ports), cloud_node(deployment, ports[0], None)
    assert await backend.probe(over_grpc, 2.0)
    for text in TEXTS:
        grpc_answer = await backend.infer(over_grpc, deployment, {"text": text}, 5.0)
        rest_answer = await backend.infer(over_rest, deployment, {"text": text}, 5.0)
        assert grpc_answer == rest_answer
        assert grpc_answer["label"] in {"negative", "neutral", "positive"}


@pytest.mark.integration
async def test_statuses_map_into_the_error_tree(
    backend: V2Backend, ports: tuple[int, int], models_dir: Path
) -> None:
    deployment = sentiment(models_dir)
    node = cloud_node(deployment, *ports)
    unknown = sentiment(models_dir)
    unknown.model = "nope"
    with pytest.raises(UpstreamRejected, match="NOT_FOUND") as rejected:
        await backend.infer(node, unknown, {"text": "hi"}, 5.0)
    assert not retryable(rejected.value)
    nobody = cloud_node(deployment, ports[0], free_port())
    with pytest.raises(UpstreamUnavailable) as unreachable:
        await backend.infer(nobody, deployment, {"text": "hi"}, 2.0)
    assert retryable(unreachable.value)
    assert not await backend.probe(nobody, 1.0)


@pytest.mark.integration
async def test_a_restarted_node_is_used_again_within_two_seconds(
    backend: V2Backend, models_dir: Path, tmp_path: Path
) -> None:
    deployment = sentiment(models_dir)
    rest, rpc = free_port(), free_port()
    node = cloud_node(deployment, rest, rpc)
    args = _node_args(models_dir, tmp_path, rpc)
    with node_process(*args, port=rest):
        assert (await backend.infer(node, deployment, {"text": "fine"}, 5.0))["label"]
    with pytest.raises(UpstreamUnavailable):  # the pooled channel sees the node gone
        await backend.infer(node, deployment, {"text": "fine"}, 2.0)
    await asyncio.sleep(1.5)  # the channel is in its reconnect back-off now
    with node_process(*args, port=rest):
        back = time.monotonic()
        while True:
            try:
                await backend.infer(node, deployment, {"text": "fine"}, 1.0)
                break
            except UpstreamUnavailable:
                assert time.monotonic() - back < 2.0, "the restored node was not used in 2 s"
                await asyncio.sleep(0.05)
        assert time.monotonic() - back < 2.0


async def test_trace_context_rides_as_metadata_and_the_deadline_holds(
    backend: V2Backend, models_dir: Path
) -> None:
    """A real gRPC server that records the metadata of the calls it answers (and answers
    model ``slow`` after 2 s)."""
    seen: list[dict[str, str]] = []

    async def infer(request: pb.ModelInferRequest, context: Any) -> pb.ModelInferResponse:
        seen.append({k: str(v) for k, v in context.invocation_metadata()})
        if request.model_name == "slow":
            await asyncio.sleep(2.0)
        response = pb.ModelInferResponse(model_name=request.model_name)
        out = response.outputs.add(name="probabilities", datatype="FP32", shape=[1, 3])
        out.contents.fp32_contents.extend([0.2, 0.3, 0.5])
        return response

    handler = grpc.method_handlers_generic_handler(
        "inference.GRPCInferenceService",
        {
            "ModelInfer": grpc.unary_unary_rpc_method_handler(
                infer,
                request_deserializer=pb.ModelInferRequest.FromString,
                response_serializer=pb.ModelInferResponse.SerializeToString,
            )
        },
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers([handler])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        deployment = sentiment(models_dir)
        context = new_context()
        token = CURRENT.set(context)
        try:
            answer = await backend.infer(
                cloud_node(deployment, 9, port), deployment, {"text": "hi"}, 5.0
            )
        finally:
            CURRENT.reset(token)
        assert answer["label"] == deployment.labels[2]
        assert seen[0]["traceparent"].split("-")[1] == context.trace_id_hex
        deployment.model = "slow"
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded) as late:
            await backend.infer(cloud_node(deployment, 9, port), deployment, {"text": "hi"}, 0.2)
        assert time.monotonic() - started < 1.0
        assert retryable(late.value)
    finally:
        await server.stop(0)


def test_other_statuses_and_the_send_limit(models_dir: Path) -> None:
    def error(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
        return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), "why")

    invalid = map_rpc_error(error(grpc.StatusCode.INVALID_ARGUMENT), "m")
    assert isinstance(invalid, UpstreamRejected)
    assert invalid.upstream_status == 400
    assert "why" in invalid.message
    assert not retryable(invalid)
    internal = map_rpc_error(error(grpc.StatusCode.INTERNAL), "m")
    assert type(internal) is UpstreamError
    assert not retryable(internal)
    assert retryable(map_rpc_error(error(grpc.StatusCode.ABORTED), "m"))
    assert isinstance(map_rpc_error(error(grpc.StatusCode.UNAVAILABLE), "m"), UpstreamUnavailable)
    deployment = sentiment(models_dir)
    deployment.max_input = 1000
    assert send_limit(cloud_node(deployment, 1, 2)) == 4000 + 64 * 1024


@pytest.mark.integration
def test_a_node_registers_its_grpc_endpoint_and_the_gateway_calls_it(
    models_dir: Path, tmp_path: Path
) -> None:
    """A real gateway and node: the registration carries ``grpc_url``, and the cloud sentiment
    path is served over it (the node advertises a REST URL nobody listens on, so neither the
    prober nor a call could have used REST)."""
    import httpx

    from tests.conftest import ADMIN_KEY, NODE_TOKEN

    rpc = free_port()
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with gateway_process(
        tmp_path / "gw", models_dir, ADMIN_KEY, node_token=NODE_TOKEN, log_level="warning"
    ) as (gateway, _):
        args = ["--id", "cloud-grpc", "--tier", "cloud", "--zone", "public"]
        args += ["--models", "sentiment-large", "--models-dir", str(models_dir)]
        args += ["--cache-dir", str(tmp_path / "cache"), "--grpc-port", str(rpc)]
        args += ["--control-plane", gateway, "--heartbeat-interval", "1"]
        args += ["--advertise-url", f"http://127.0.0.1:{free_port()}"]
        env = {"HYBRIDINFER_NODE_TOKEN": NODE_TOKEN}
        with node_process(*args, env=env) as node_url, httpx.Client(timeout=30) as http:
            deadline = time.monotonic() + 30
            nodes: dict[str, Any] = {}
            while "cloud-grpc" not in nodes and time.monotonic() < deadline:
                listed = http.get(gateway + "/v1/nodes", headers=headers).json()["nodes"]
                nodes = {n["id"]: n for n in listed}
                time.sleep(0.2)
            assert nodes["cloud-grpc"]["grpc_url"] == f"grpc://127.0.0.1:{rpc}"
            body = {"task": "sentiment", "inputs": {"text": "great"}, "options": {"route": "cloud"}}
            for _ in range(3):
                answer = http.post(gateway + "/v1/infer", headers=headers, json=body)
                assert answer.status_code == 200, answer.text
                assert answer.json()["subtasks"][0]["node"] == "cloud-grpc"
            stats = http.get(node_url + "/v2/models/sentiment-large/stats").json()
            assert stats["model_stats"][0]["inference_count"] >= 3
