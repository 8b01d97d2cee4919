"""OTLP/HTTP export end to end: a real HTTP receiver decodes the protobuf the exporter sends
(``ExportTraceServiceRequest``, as an OpenTelemetry Collector would) after real requests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.app import create_app
from hybridinfer.settings import Settings
from tests.conftest import auth


class Receiver(ThreadingHTTPServer):
    exports: list[tuple[str, str, ExportTraceServiceRequest]]


class ReceiverHandler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        export = ExportTraceServiceRequest()
        export.ParseFromString(body)
        self.server.exports.append((self.path, self.headers["Content-Type"], export))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver(("127.0.0.1", 0), ReceiverHandler)
    server.exports = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def attributes(span: Any) -> dict[str, Any]:
    return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in span.attributes}


@pytest.mark.integration
async def test_spans_reach_an_otlp_http_receiver_as_protobuf(
    settings: Settings, receiver: Receiver
) -> None:
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}/v1/traces"
    update = {
        "otel_exporter": "otlp",
        "otel_endpoint": endpoint,
        "otel_service_name": "gw-test",
        "otel_sample_ratio": 1.0,
    }
    plane = ControlPlane(settings.model_copy(update=update))
    app = create_app(plane)
    await plane.start()
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://gw"
        ) as client:
            ids = []
            for text in ("lovely", "awful"):
                body = {"task": "sentiment", "inputs": {"text": text}}
                response = await client.post("/v1/infer", json=body, headers=auth())
                assert response.status_code == 200, response.text
                ids.append(response.json()["request_id"])
        assert plane.telemetry is not None
        plane.telemetry.flush()
    finally:
        await plane.stop()
    assert receiver.exports, "nothing was exported"
    path, content_type, _ = receiver.exports[0]
    assert (path, content_type) == ("/v1/traces", "application/x-protobuf")
    spans = [
        (resource, span)
        for _, _, export in receiver.exports
        for resource in export.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    service = {attributes(resource.resource)["service.name"] for resource, _ in spans}
    assert service == {"gw-test"}
    roots = [span for _, span in spans if span.name == "gateway"]
    assert sorted(attributes(root)["hybridinfer.request_id"] for root in roots) == sorted(ids)
    for root in roots:
        tree = [span for _, span in spans if span.trace_id == root.trace_id]
        names = {span.name for span in tree}
        assert {"decompose", "route", "execute", "aggregate", "attempt primary"} <= names, names
        assert any(name.startswith("subtask ") for name in names), names
        (attempt,) = [span for span in tree if span.name == "attempt primary"]
        assert attributes(attempt)["hybridinfer.tier"] == "local"
        assert root.start_time_unix_nano <= attempt.start_time_unix_nano
        assert attempt.end_time_unix_nano <= root.end_time_unix_nano
