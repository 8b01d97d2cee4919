"""The node's Open Inference Protocol over gRPC: ``inference.GRPCInferenceService`` beside the
REST API (``app.py``), over the same repository, so the same models, versions and
micro-batchers answer both.

Each method translates its message and calls the repository as the REST handler does; errors
become gRPC statuses with the message a REST caller would read (``InvalidInput`` →
``INVALID_ARGUMENT``, ``UnknownModel`` → ``NOT_FOUND``), and a bad request never stops the
node serving. ``ModelInfer`` answers in the form it was asked in: raw contents to a raw
request (tritonclient's, which reads only raw outputs), typed contents to a typed one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from hybridinfer import __version__
from hybridinfer.errors import HybridInferError, InvalidInput
from hybridinfer.node.repository import ModelRepository
from hybridinfer.tensors.grpcwire import request_arrays, set_outputs
from hybridinfer.tensors.proto import grpc_predict_v2_pb2 as pb

log = logging.getLogger("hybridinfer.node")

SERVICE = "inference.GRPCInferenceService"
EXTENSIONS = ["model_repository"]

Request = TypeVar("Request", bound=Message)
Response = TypeVar("Response", bound=Message)
Context = grpc.aio.ServicerContext[Any, Any]
Method = Callable[[Request, Context], Awaitable[Response]]

STATUS_BY_HTTP = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    404: grpc.StatusCode.NOT_FOUND,
    413: grpc.StatusCode.INVALID_ARGUMENT,
    422: grpc.StatusCode.INVALID_ARGUMENT,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
    504: grpc.StatusCode.DEADLINE_EXCEEDED,
}


def status_of(error: HybridInferError) -> grpc.StatusCode:
    """The gRPC status of one of our errors (INTERNAL for any status not listed)."""
    return STATUS_BY_HTTP.get(error.status_code, grpc.StatusCode.INTERNAL)


def _answering(method: Method[Request, Response]) -> Method[Request, Response]:
    """``method`` with our errors as gRPC statuses and anything else as INTERNAL, logged."""

    async def answer(request: Request, context: Context) -> Response:
        try:
            return await method(request, context)
        except HybridInferError as exc:
            await context.abort(status_of(exc), exc.message)
        except Exception:
            log.exception("gRPC %s failed", type(request).__name__)
            await context.abort(grpc.StatusCode.INTERNAL, "internal error")
        raise AssertionError("abort returns only by raising")  # pragma: no cover

    return answer


class InferenceService:
    """``GRPCInferenceService`` over one ``ModelRepository``."""

    def __init__(self, repository: ModelRepository) -> None:
        self._repository = repository

    async def server_live(self, _: pb.ServerLiveRequest, __: Context) -> pb.ServerLiveResponse:
        return pb.ServerLiveResponse(live=True)

    async def server_ready(self, _: pb.ServerReadyRequest, __: Context) -> pb.ServerReadyResponse:
        """Ready while some model serves, as ``GET /v2/health/ready`` answers 200."""
        return pb.ServerReadyResponse(ready=bool(self._repository.names()))

    async def model_ready(self, request: pb.ModelReadyRequest, _: Context) -> pb.ModelReadyResponse:
        """Not ready (rather than an error) for a model this node does not serve."""
        try:
            self._repository.get(request.name, request.version or None)
        except HybridInferError:
            return pb.ModelReadyResponse(ready=False)
        return pb.ModelReadyResponse(ready=True)

    async def server_metadata(
        self, _: pb.ServerMetadataRequest, __: Context
    ) -> pb.ServerMetadataResponse:
        return pb.ServerMetadataResponse(
            name="hybridinfer-node", version=__version__, extensions=EXTENSIONS
        )

    async def model_metadata(
        self, request: pb.ModelMetadataRequest, _: Context
    ) -> pb.ModelMetadataResponse:
        body = self._repository.metadata(request.name, request.version or None)
        tensor = pb.ModelMetadataResponse.TensorMetadata
        return pb.ModelMetadataResponse(
            name=body["name"],
            versions=body["versions"],
            platform=body["platform"],
            inputs=[tensor(**spec) for spec in body["inputs"]],
            outputs=[tensor(**spec) for spec in body["outputs"]],
        )

    async def model_infer(self, request: pb.ModelInferRequest, _: Context) -> pb.ModelInferResponse:
        model = self._repository.get(request.model_name, request.model_version or None)
        outputs = await self._repository.infer(model, request_arrays(request))
        wanted = [output.name for output in request.outputs] or list(outputs)
        unknown = [name for name in wanted if name not in outputs]
        if unknown:
            raise InvalidInput(f"model {model.name} has no output {', '.join(unknown)}")
        response = pb.ModelInferResponse(
            model_name=model.name, model_version=model.version, id=request.id
        )
        chosen = {name: outputs[name] for name in wanted}
        set_outputs(response, chosen, raw=bool(request.raw_input_contents))
        return response

    def handler(self) -> grpc.GenericRpcHandler:
        """The service's methods for ``grpc.aio.Server.add_generic_rpc_handlers``."""

        def unary(
            method: Method[Any, Any], request: type[Message]
        ) -> grpc.RpcMethodHandler[Any, Any]:
            return grpc.unary_unary_rpc_method_handler(
                _answering(method),
                request_deserializer=request.FromString,
                response_serializer=lambda message: message.SerializeToString(),
            )

        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "ServerLive": unary(self.server_live, pb.ServerLiveRequest),
                "ServerReady": unary(self.server_ready, pb.ServerReadyRequest),
                "ModelReady": unary(self.model_ready, pb.ModelReadyRequest),
                "ServerMetadata": unary(self.server_metadata, pb.ServerMetadataRequest),
                "ModelMetadata": unary(self.model_metadata, pb.ModelMetadataRequest),
                "ModelInfer": unary(self.model_infer, pb.ModelInferRequest),
            },
        )
