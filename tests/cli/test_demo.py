"""``hybridinfer demo`` against a fake gateway: every request of the workload is sent, each
subtask becomes a row, a failed request a row of its own; an unreachable gateway or a refused
key is one line, not a stack trace."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from hybridinfer.cli import main
from hybridinfer.cli.demo import REASON_WIDTH, WORKLOAD, GatewayClient, Row, render_table
from tests.peers import free_port, serve_asgi

KEY = "demo-key-0123456789"
LONG_REASON = "placed on local: the fastest and free; " + "and so on " * 20


def subtask(name: str, tier: str, model: str, reason: str = "fastest") -> dict[str, Any]:
    node = {"local": "local", "cloud": "llm-cloud"}[tier]
    return {
        "id": name,
        "capability": "x",
        "tier": tier,
        "node": node,
        "model": model,
        "status": "ok",
        "latency_ms": 12.5,
        "reason": reason,
    }


PLANS = {
    "chat": [subtask("generate", "local", "smollm2-135m", LONG_REASON)],
    "sentiment": [subtask("classify", "local", "sentiment-small")],
    "redact_and_summarize": [
        subtask("redact", "local", "redactor"),
        subtask("summarize", "cloud", "gemma-3-270m"),
        subtask("restore", "local", "restorer"),
    ],
    "document_qa": [subtask("answer", "cloud", "gemma-3-270m")],
}


class FakeGateway:
    """Answers ``GET /v1/models`` and ``POST /v1/infer`` for one key; the image task fails."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def authorised(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {KEY}"

    async def models(self, request: Request) -> JSONResponse:
        if not self.authorised(request):
            error = {"code": "unauthorized", "message": "invalid API key"}
            return JSONResponse({"error": error}, status_code=401)
        return JSONResponse({"object": "list", "data": []})

    async def infer(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.bodies.append(body)
        task = body["task"]
        if task == "describe_image":
            error = {"code": "no_capacity", "message": "no node serves captioning"}
            return JSONResponse({"error": error}, status_code=503)
        if (
            body.get("options", {}).get("prefer") == "quality"
        ):  # a refusal of the request, not the key
            error = {"code": "privacy_violation", "message": "holds personal data"}
            return JSONResponse({"error": error}, status_code=403)
        answer: dict[str, Any] = {"request_id": "r", "status": "ok", "outputs": {"text": "Hi!"}}
        if task == "auto":
            answer["task"], task = "document_qa", "document_qa"
        return JSONResponse(answer | {"subtasks": PLANS[task]})


@pytest.fixture
def gateway() -> Iterator[tuple[str, FakeGateway]]:
    fake = FakeGateway()
    app = Starlette(
        routes=[
            Route("/v1/models", fake.models),
            Route("/v1/infer", fake.infer, methods=["POST"]),
            Route("/broken", lambda _: PlainTextResponse("<html>bad gateway</html>", 502)),
        ]
    )
    with serve_asgi(app) as url:
        yield url, fake


def test_the_workload_runs_and_each_subtask_is_a_row(gateway: tuple[str, FakeGateway]) -> None:
    url, fake = gateway
    result = CliRunner().invoke(
        main, ["demo", "--url", url, "--answers"], env={"HYBRIDINFER_API_KEY": KEY}
    )
    assert result.exit_code == 0, result.output
    assert [body["task"] for body in fake.bodies] == [r.body["task"] for r in WORKLOAD]
    tasks = [body["task"] for body in fake.bodies]
    assert tasks.count("chat") == 5
    assert {"sentiment", "redact_and_summarize", "describe_image", "auto"} <= set(tasks)
    chats = [body for body in fake.bodies if body["task"] == "chat"]
    assert "Prove" in chats[2]["inputs"]["messages"][0]["content"]
    assert len(chats[3]["inputs"]["messages"][0]["content"]) > 1500  # over the local limit
    assert chats[4]["options"] == {"prefer": "quality"}
    assert [body.get("options", {}).get("prefer") for body in chats[:4]] == [None] * 4

    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "request",
        "subtask",
        "tier",
        "node",
        "model",
        "status",
        "latency",
        "reason",
    ]
    summarize = next(line for line in lines if " summarize " in line)
    assert summarize.split()[1:6] == ["cloud", "llm-cloud", "gemma-3-270m", "ok", "12.5"]
    failed = next(line for line in lines if line.startswith("describe_image"))
    assert "503 no_capacity" in failed
    assert "no node serves captioning" in failed
    assert any(line.startswith('task "auto" question → document_qa') for line in lines)
    easy = next(line for line in lines if line.startswith("easy chat"))
    assert easy.endswith(LONG_REASON[: REASON_WIDTH - 1] + "…")  # reasons are cut
    refused = next(line for line in lines if line.startswith("hard chat: prefer quality"))
    assert "403 privacy_violation" in refused
    assert "9 requests, 11 subtasks (2 cloud, 7 local), 2 failed" in result.stdout
    assert "easy chat: Hi!" in result.stdout


def test_a_wrong_key_or_no_key_is_one_line_not_a_stack_trace(
    gateway: tuple[str, FakeGateway],
) -> None:
    url, fake = gateway
    result = CliRunner().invoke(main, ["demo", "--url", url, "--key", "wrong-key-0123456789"])
    assert result.exit_code == 1
    assert f"the gateway at {url} refused the key: invalid API key" in result.output
    assert "Traceback" not in result.output
    assert fake.bodies == []
    missing = CliRunner().invoke(main, ["demo", "--url", url], env={"HYBRIDINFER_API_KEY": ""})
    assert missing.exit_code == 1
    assert "an API key is needed" in missing.output


def test_an_unreachable_gateway_is_one_line() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = CliRunner().invoke(main, ["demo", "--url", url, "--key", KEY])
    assert result.exit_code == 1
    assert f"cannot reach the gateway at {url}" in result.output
    assert "hybridinfer up" in result.output
    assert "Traceback" not in result.output


def test_a_request_shows_its_name_once_and_a_missing_latency_as_a_dash() -> None:
    rows = [
        Row("r", "a", "local", "n", "m", "ok", 0.25, "why"),
        Row("r", "b", "cloud", "n", "m", "ok", 1234.0, "why\nnot"),
        Row("s", "-", "-", "-", "-", "503 no_capacity", None, "none"),
    ]
    lines = render_table(rows)
    assert lines[2].startswith("r ")
    assert lines[3].startswith("  ")
    assert lines[2].split()[-3:] == ["0.2", "ms", "why"]
    assert lines[3].split()[-4:] == ["1,234", "ms", "why", "not"]
    assert "  -  " in lines[4]


def test_a_body_that_is_not_json_is_an_error_row(gateway: tuple[str, FakeGateway]) -> None:
    url, _ = gateway
    status, payload = GatewayClient(url, KEY, 10).call("/broken")
    assert status == 502
    assert payload == {"error": {"code": "http_502", "message": "<html>bad gateway</html>"}}
