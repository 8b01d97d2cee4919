"""Composite plans on the real LLMs: the cloud step runs on Gemma behind a recording proxy,
so every body that reaches the cloud endpoint can be searched for personal data."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.backends.openai import PROBE_CHAT, PROBE_WARM_UP
from tests.conftest import ADMIN_KEY
from tests.gateway.test_app import DIGIT_ZERO
from tests.llm.conftest import Gateway, RunningLlm, gateway_settings, serve
from tests.peers import serve_asgi

EMAIL, PHONE, CARD = "jane.doe@example.com", "+1 415 555 2671", "4111 1111 1111 1111"
TEXT = (
    f"Jane Doe wrote from {EMAIL} about the March invoice. She asked us to call her on {PHONE} "
    f"before Friday. Her card {CARD} was declined twice. The shipment left on Monday."
)
ISSUED = re.compile(r"<(EMAIL|PHONE|CARD)_\d+>")


PROBES = tuple(
    str(probe["messages"][0]["content"]).encode() for probe in (PROBE_CHAT, PROBE_WARM_UP)
)


@dataclass
class RecordingProxy:
    """Forwards to the real cloud LLM, keeping every request body but the prober's (it
    measures the LLM through the proxy too, and tries again as the proxy buffers its stream);
    ``fail`` answers 500."""

    upstream: str
    bodies: list[bytes] = field(default_factory=list)
    fail: bool = False

    async def forward(self, request: Request) -> Response:
        body = await request.body()
        if not any(probe in body for probe in PROBES):
            self.bodies.append(body)
        if self.fail:
            return Response(b'{"error": {"message": "cloud down"}}', status_code=500)
        async with httpx.AsyncClient(timeout=120) as client:
            answer = await client.request(
                request.method,
                f"{self.upstream}{request.url.path}",
                content=body,
                headers={"Content-Type": "application/json"},
            )
        return Response(answer.content, answer.status_code, media_type="application/json")


@pytest.fixture
def proxied(
    tmp_path: Path, llms: dict[str, RunningLlm], models_dir: Path
) -> Iterator[tuple[Gateway, RecordingProxy]]:
    proxy = RecordingProxy(llms["llm-cloud"].server.url)
    paths = ["/v1/chat/completions", "/v1/completions", "/v1/models"]
    app = Starlette(routes=[Route(p, proxy.forward, methods=["GET", "POST"]) for p in paths])
    with serve_asgi(app) as proxy_url:
        settings = gateway_settings(tmp_path, llms)
        static = [
            item.server.spec.registration(proxy_url if node == "llm-cloud" else item.server.url)
            for node, item in llms.items()
        ]
        update = {
            "static_nodes": static,
            "models_dir": models_dir,
            "local_models": ["digits-small"],
        }
        for gateway in serve(settings.model_copy(update=update)):
            yield gateway, proxy


def infer(gateway: Gateway, body: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with httpx.Client(base_url=gateway.url, headers=headers, timeout=180) as client:
        return client.post("/v1/infer", json=body)


def test_redact_and_summarize_in_the_cloud_never_sends_the_values(
    proxied: tuple[Gateway, RecordingProxy],
) -> None:
    gateway, proxy = proxied
    body = {"task": "redact_and_summarize", "inputs": {"text": TEXT}}
    response = infer(gateway, body | {"options": {"route": "cloud"}})
    assert response.status_code == 200, response.text
    answer = response.json()
    tiers = {item["id"]: item["tier"] for item in answer["subtasks"]}
    assert tiers == {"redact": "local", "summarize": "cloud", "restore": "local"}
    assert proxy.bodies, "the summary must have reached the cloud LLM"
    for sent in proxy.bodies:
        for value in (EMAIL, PHONE, CARD, "4111111111111111", "555 2671", "jane.doe"):
            assert value.encode() not in sent
        assert b"<EMAIL_1>" in sent
    summary = answer["outputs"]["summary"]
    assert summary.strip()
    # Gemma is a base model and may invent placeholders (<EMAIL_2>) that stand for nothing;
    # every placeholder that was issued, and that the model copied, is restored.
    issued = {match.group() for sent in proxy.bodies for match in ISSUED.finditer(sent.decode())}
    assert "<EMAIL_1>" in issued
    left = {match.group() for match in ISSUED.finditer(summary)}
    assert not issued & left, "a placeholder the model copied was not restored"


def test_describe_image_captions_in_the_cloud(proxied: tuple[Gateway, RecordingProxy]) -> None:
    gateway, _ = proxied
    response = infer(gateway, {"task": "describe_image", "inputs": {"pixels": DIGIT_ZERO}})
    answer = response.json()
    assert answer["status"] == "ok", answer
    assert answer["outputs"]["label"] == "0"
    assert answer["outputs"]["caption"].strip()


def test_failed_cloud_caption_is_partial_with_the_label(
    proxied: tuple[Gateway, RecordingProxy],
) -> None:
    gateway, proxy = proxied
    proxy.fail = True
    response = infer(gateway, {"task": "describe_image", "inputs": {"pixels": DIGIT_ZERO}})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["status"] == "partial"
    assert answer["outputs"]["label"] == "0"
    steps = {item["id"]: item for item in answer["subtasks"]}
    assert steps["caption"]["error"]["code"] in {"upstream_failed", "upstream_unavailable"}
    trace = gateway.get(f"/v1/traces/{answer['request_id']}")
    results = {item["id"]: item["status"] for item in trace["plan"]["results"]}
    assert results == {"recognise": "ok", "caption": "error"}


def test_document_qa_sends_pseudonymised_passages(
    proxied: tuple[Gateway, RecordingProxy],
) -> None:
    gateway, proxy = proxied
    question = "How can I reach support by email?"
    response = infer(gateway, {"task": "document_qa", "inputs": {"question": question}})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert "support" in answer["outputs"]["sources"]
    assert answer["outputs"]["answer"].strip()
    assert all(b"support@hybridinfer.example" not in sent for sent in proxy.bodies)
