"""The privacy proof: requests carrying personal data, of every task type and through every
protocol, while every byte that reaches a public-zone node is recorded — a real `hybridinfer
node` (V2, cloud tier, public zone) and the real cloud LLM (llama.cpp), each behind a
recording proxy. No canary value arrives, in any encoding.

Control requests without personal data are sent through the same proxies, so an empty
recording cannot pass for a proof."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
import time
import urllib.parse
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

from hybridinfer.decompose.rules import default_rules_path, load_rules
from tests.conftest import ADMIN_KEY, NODE_TOKEN
from tests.gateway.test_app import DIGIT_ZERO
from tests.llm.conftest import Gateway, RunningLlm, gateway_settings, serve
from tests.peers import node_process, serve_asgi

NAMES = ("Maria Gonzalez", "Robert Whitfield")
EMAIL, PHONE, CARD = "canary.7731@example.org", "+1 415 555 0193", "4539 1488 0343 6467"
SSN, IP = "536-22-4817", "203.0.113.77"
CANARIES = (*NAMES, EMAIL, PHONE, CARD, SSN, IP)
TEXT = (
    f"Please help {NAMES[0]}: write to {EMAIL} or call {PHONE}. Her card {CARD} was charged "
    f"twice, SSN {SSN}, and the login came from {IP}. {NAMES[1]} approved the refund."
)
QUESTION = f"{NAMES[0]} ({EMAIL}, {PHONE}, card {CARD}, SSN {SSN}, IP {IP}) asks: what is a GPU?"
INPUTS: dict[str, dict[str, Any]] = {
    "sentiment": {"text": TEXT},
    "digits": {"pixels": DIGIT_ZERO},
    "chat": {"messages": [{"role": "user", "content": TEXT}], "max_tokens": 12},
    "embed": {"input": [TEXT, QUESTION]},
    "redact_and_summarize": {"text": TEXT},
    "describe_image": {"pixels": DIGIT_ZERO},
    "document_qa": {"question": QUESTION},
}
OPTIONS: list[dict[str, Any]] = [
    {},
    {"route": "cloud"},
    {"prefer": "quality"},
    {"privacy": "sensitive", "route": "cloud"},
]


def forms(value: str) -> set[str]:
    """The canary as it could be written into a body: plain, URL-encoded, JSON-escaped,
    base64, and its digits alone (lower-cased: the search is case-insensitive)."""
    found = {value, urllib.parse.quote(value), urllib.parse.quote_plus(value)}
    found |= {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=True)[1:-1]}
    found.add(base64.b64encode(value.encode()).decode())
    digits = re.sub(r"\D", "", value)
    if len(digits) >= 7:
        found |= {digits, digits[1:] if value.startswith("+1") else digits}
    return {form.lower() for form in found}


def readings(body: bytes) -> list[str]:
    """The body as text, URL-decoded, with its JSON strings unescaped, and with every
    base64-looking run decoded."""
    text = body.decode("utf-8", "replace")
    views = [text, urllib.parse.unquote_plus(text)]
    with contextlib.suppress(ValueError):  # the recorded request's body, after its head
        views.append(json.dumps(json.loads(text.split("\n\n", 1)[-1]), ensure_ascii=False))
    for run in re.findall(r"[A-Za-z0-9+/=_-]{16,}", text):
        try:
            views.append(base64.b64decode(run + "=" * (-len(run) % 4), altchars=b"-_").decode())
        except (binascii.Error, UnicodeDecodeError):
            continue
    return [view.lower() for view in views]


def leaks(body: bytes) -> list[str]:
    views = readings(body)
    return [
        canary for canary in CANARIES for form in forms(canary) if any(form in v for v in views)
    ]


def test_the_search_finds_each_encoding() -> None:
    for sent in (
        TEXT.encode(),
        urllib.parse.quote(EMAIL).encode(),
        json.dumps({"t": f"x {NAMES[1].lower()}"}).encode(),
        base64.b64encode(f"ssn {SSN}".encode()),
        b'{"digits": "4539148803436467"}',
        json.dumps({"t": PHONE}, ensure_ascii=True).encode(),
        b'POST /x?\n\n{"t": "' + EMAIL.replace("@", "\\u0040").encode() + b'"}',  # \u escape
    ):
        assert leaks(sent), sent
    assert not leaks(b'{"text": "<NAME_1> wrote from <EMAIL_1> about <CARD_1>"}')


@dataclass
class Recorder:
    """A proxy in front of a public-zone node that keeps every request it forwards."""

    upstream: str | None = None
    requests: list[bytes] = field(default_factory=list)

    async def forward(self, request: Request) -> Response:
        body = await request.body()
        head = f"{request.method} {request.url.path}?{request.url.query}\n"
        headers = "".join(f"{k}: {v}\n" for k, v in request.headers.items())
        self.requests.append(head.encode() + headers.encode() + b"\n" + body)
        if self.upstream is None:
            return Response(b"not yet", status_code=503)
        async with httpx.AsyncClient(timeout=180) as client:
            answer = await client.request(
                request.method,
                f"{self.upstream}{request.url.path}",
                params=request.query_params,
                content=body,
                headers={"Content-Type": request.headers.get("content-type", "application/json")},
            )
        media = answer.headers.get("content-type", "application/json")
        return Response(answer.content, answer.status_code, media_type=media)

    def app(self) -> Starlette:
        methods = ["GET", "POST", "PUT", "DELETE", "HEAD"]
        return Starlette(routes=[Route("/{path:path}", self.forward, methods=methods)])

    def bodies_with(self, text: str) -> list[bytes]:
        return [sent for sent in self.requests if text.lower().encode() in sent.lower()]


@dataclass
class PublicZone:
    gateway: Gateway
    v2: Recorder
    llm: Recorder

    def everything(self) -> list[bytes]:
        return self.v2.requests + self.llm.requests


@pytest.fixture
def zone(tmp_path: Path, llms: dict[str, RunningLlm], models_dir: Path) -> Iterator[PublicZone]:
    v2, llm = Recorder(), Recorder(llms["llm-cloud"].server.url)
    with serve_asgi(v2.app()) as v2_url, serve_asgi(llm.app()) as llm_url:
        settings = gateway_settings(tmp_path, llms)
        static = [
            item.server.spec.registration(llm_url if node == "llm-cloud" else item.server.url)
            for node, item in llms.items()
        ]
        update = {
            "static_nodes": static,
            "models_dir": models_dir,
            "local_models": ["sentiment-small", "digits-small"],
        }
        for gateway in serve(settings.model_copy(update=update)):
            args = ["--id", "cloud-v2", "--tier", "cloud", "--zone", "public"]
            args += ["--models", "sentiment-large,digits-large", "--models-dir", str(models_dir)]
            args += ["--control-plane", gateway.url, "--advertise-url", v2_url]
            args += ["--cost-per-call", "0.0001", "--heartbeat-interval", "1"]
            with node_process(*args, env={"HYBRIDINFER_NODE_TOKEN": NODE_TOKEN}) as node_url:
                v2.upstream = node_url
                _wait_ready(gateway, "cloud-v2")
                yield PublicZone(gateway, v2, llm)


def _wait_ready(gateway: Gateway, node_id: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        nodes = {n["id"]: n for n in gateway.get("/v1/nodes")["nodes"]}
        if nodes.get(node_id, {}).get("status") == "ready":
            return
        time.sleep(0.3)
    raise AssertionError(f"{node_id} did not become ready")


def _post(gateway: Gateway, path: str, body: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with httpx.Client(base_url=gateway.url, headers=headers, timeout=300) as client:
        return client.post(path, json=body)


@pytest.mark.integration
def test_no_canary_reaches_the_public_zone(zone: PublicZone) -> None:
    tasks = set(load_rules(default_rules_path()).tasks)
    assert tasks == set(INPUTS), "a task type was added: give it canary inputs here"
    statuses: dict[str, int] = {}
    for task, inputs in INPUTS.items():
        for options in OPTIONS:
            v2_infers_before = len(zone.v2.bodies_with("/infer"))
            answer = _post(
                zone.gateway, "/v1/infer", {"task": task, "inputs": inputs, "options": options}
            )
            statuses[f"{task} {options}"] = answer.status_code
            assert answer.status_code < 500 or answer.json()["error"]["code"] != "internal_error"
            if options.get("privacy") == "sensitive" and "pixels" in inputs:
                # no text to carry a canary: nothing of the request may reach the public zone
                assert len(zone.v2.bodies_with("/infer")) == v2_infers_before, task
    chat = {"model": "auto", "messages": [{"role": "user", "content": TEXT}], "max_tokens": 12}
    for extra in ({}, {"stream": True}, {"hybridinfer": {"route": "cloud"}}):
        statuses[f"chat completions {extra}"] = _post(
            zone.gateway, "/v1/chat/completions", chat | extra
        ).status_code
    statuses["embeddings"] = _post(
        zone.gateway, "/v1/embeddings", {"model": "auto", "input": [TEXT, QUESTION]}
    ).status_code
    task = _post(zone.gateway, "/v1/tasks", {"task": "sentiment", "inputs": {"text": TEXT}})
    statuses["async sentiment"] = task.status_code

    found = [(canary, sent[:200]) for sent in zone.everything() for canary in leaks(sent)]
    assert found == [], found
    assert all(status != 500 for status in statuses.values()), statuses

    # the proxies are in the path: requests without personal data do reach them
    calm = {"task": "sentiment", "inputs": {"text": "what a calm evening"}}
    assert (
        _post(zone.gateway, "/v1/infer", calm | {"options": {"route": "cloud"}}).status_code == 200
    )
    assert zone.v2.bodies_with("what a calm evening")
    redacted = _post(
        zone.gateway,
        "/v1/infer",
        {"task": "redact_and_summarize", "inputs": {"text": TEXT}, "options": {"route": "cloud"}},
    )
    assert redacted.status_code == 200, redacted.text
    assert zone.llm.bodies_with("<EMAIL_1>"), "the redacted text must have gone to the cloud LLM"
    assert not [c for sent in zone.everything() for c in leaks(sent)]
