"""Pseudonymised chat through the real gateway (uvicorn, real HTTP) to a scripted
OpenAI-style upstream (real HTTP too) in the public zone, which records every byte it gets.

The upstream answers a fixed text whatever it is asked: placeholders split across stream
events, one reformatted (``< PHONE _2 >``, ``[card_1]``), one never issued (``<EMAIL_9>``),
and a tool call whose arguments split a placeholder. So restoring is proven
deterministically; ``tests/llm/test_pseudonymised_chat.py`` runs the real cloud LLM.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from hybridinfer.core.schemas import DeploymentInfo, NodeRegistration
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.pipeline import pipeline as pipeline_module
from hybridinfer.privacy.detect import Detector
from hybridinfer.privacy.ner import NameFinder
from hybridinfer.privacy.pseudonym import Pseudonymiser
from hybridinfer.privacy.restore import AnswerRestorer
from hybridinfer.settings import Settings
from tests.conftest import ADMIN_KEY, NODE_TOKEN, auth
from tests.gateway.test_dashboard import browser  # noqa: F401 (a fixture)
from tests.gatewayserver import running_gateway
from tests.peers import free_port, serve_asgi

EMAIL, PHONE, CARD, MOBILE = (
    "canary.7731@example.org",
    "+44 161 496 0123",
    "4539 1488 0343 6467",
    "13812345678",
)
VALUES = (EMAIL, PHONE, CARD, MOBILE)
CONTROL = "periwinkle"
"""No personal data: it must reach the upstream (an empty recording proves nothing)."""
PROMPT = (
    f"Write to {EMAIL} or call {PHONE} about the {CONTROL} order; the card is {CARD}. "
    f"请记下{MOBILE}，谢谢。"  # noqa: RUF001 (Chinese punctuation)
)
SENT_PROMPT = (
    f"Write to <EMAIL_1> or call <PHONE_1> about the {CONTROL} order; the card is <CARD_1>. "
    "请记下<PHONE_2>，谢谢。"  # noqa: RUF001
)
ANSWER = [
    "Noted: <EMA",
    "IL_1>, phone <PHO",
    "NE_1",
    "> and card [card_1]",
    ", mobile < PHONE _2 >",
    "; also <EMAIL_9>.",
]
"""The upstream's streamed text: splits, reformatting and a placeholder never issued."""
RESTORED = f"Noted: {EMAIL}, phone {PHONE} and card {CARD}, mobile {MOBILE}; also <EMAIL_9>."
TOOL_ARGUMENTS = ['{"to": "<EMAIL', '_1>", "card": "CARD_1"}']
RESTORED_ARGUMENTS = {"to": EMAIL, "card": CARD}
POLICY = """\
version: pseudonymise-1
privacy:
  names: false
privacy_modes:
  capabilities: {chat: pseudonymise}
"""


def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n".encode()


def tool_delta(number: int, arguments: str) -> dict[str, Any]:
    call: dict[str, Any] = {"index": 0, "function": {"arguments": arguments}}
    if number == 0:
        call |= {"id": "call_1", "type": "function"}
        call["function"]["name"] = "send"
    return {"tool_calls": [call]}


@dataclass
class ScriptedUpstream:
    """An OpenAI-style chat server that answers ``ANSWER`` and records each request."""

    delay_s: float = 0.02
    requests: list[bytes] = field(default_factory=list)
    events_sent: list[int] = field(default_factory=list)
    """Per streamed request, how many events went out before it ended or was hung up on."""

    async def chat(self, request: Request) -> Response:
        body = await request.body()
        self.requests.append(body)
        if not json.loads(body).get("stream"):
            message = {
                "role": "assistant",
                "content": "".join(ANSWER),
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "send", "arguments": "".join(TOOL_ARGUMENTS)},
                    }
                ],
            }
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return JSONResponse({"choices": [choice], "usage": {"completion_tokens": 9}})
        self.events_sent.append(0)
        return StreamingResponse(
            self._events(len(self.events_sent) - 1), media_type="text/event-stream"
        )

    async def _events(self, slot: int) -> AsyncIterator[bytes]:
        pieces = [event({"role": "assistant", "content": text}) for text in ANSWER]
        pieces += [event(tool_delta(n, a)) for n, a in enumerate(TOOL_ARGUMENTS)]
        pieces += [event({}, "stop"), b"data: [DONE]\n\n"]
        for piece in pieces:
            yield piece
            self.events_sent[slot] += 1
            await asyncio.sleep(self.delay_s)

    def ours(self) -> list[bytes]:
        """The requests of the tests (the prober's own calls left out)."""
        return [body for body in self.requests if b"order" in body]

    def app(self) -> Starlette:
        async def models(_: Request) -> Response:
            return JSONResponse({"object": "list", "data": [{"id": "big", "object": "model"}]})

        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/models", models),
            ]
        )


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[ScriptedUpstream, str]]:
    scripted = ScriptedUpstream()
    with serve_asgi(scripted.app()) as url:
        yield scripted, url


@contextmanager
def serving(
    upstream_url: str,
    data_dir: Path,
    policy: str,
    names: bool,
    private_url: str | None = None,
) -> Iterator[httpx.Client]:
    """The gateway, its chat deployment the public upstream (and a weaker private-zone one on
    ``private_url``), ``policy`` applied."""
    deployment = DeploymentInfo(
        model="big", version="1", capability="chat", quality=0.9, latency_ms=50.0
    )
    cloud = NodeRegistration(
        id="cloud-chat",
        tier=Tier.CLOUD,
        zone=Zone.PUBLIC,
        url=upstream_url,
        protocol="openai",
        deployments=[deployment],
    )
    settings = Settings(
        data_dir=data_dir,
        port=free_port(),
        local_models=[],
        bootstrap_key=SecretStr(ADMIN_KEY),
        node_token=SecretStr(NODE_TOKEN),
        probe_interval_s=0.5,
        privacy_ner=names,
        static_nodes=[cloud],
    )
    if private_url is not None:
        weaker = deployment.model_copy(update={"model": "small", "quality": 0.5})
        edge = cloud.model_copy(
            update={
                "id": "edge-chat",
                "tier": Tier.EDGE,
                "zone": Zone.PRIVATE,
                "url": private_url,
                "deployments": [weaker],
            }
        )
        settings = settings.model_copy(update={"static_nodes": [cloud, edge]})
    with (
        running_gateway(settings),
        httpx.Client(
            base_url=f"http://127.0.0.1:{settings.port}", headers=auth(), timeout=30
        ) as client,
    ):
        deadline = time.monotonic() + 30
        expected = 1 if private_url is None else 2
        while (
            sum(n["status"] == "ready" for n in client.get("/v1/nodes").json()["nodes"]) < expected
        ):
            assert time.monotonic() < deadline, "the upstream never became ready"
            time.sleep(0.1)
        assert client.post("/v1/policies", json={"policy": policy}).status_code == 201
        yield client


@pytest.fixture(scope="module")
def gateway(
    upstream: tuple[ScriptedUpstream, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    """Patterns only (no name model), the policy pseudonymising chat."""
    with serving(upstream[1], tmp_path_factory.mktemp("gateway"), POLICY, names=False) as client:
        yield client


def chat(client: httpx.Client, stream: bool) -> httpx.Response:
    body = {
        "model": "auto",
        "messages": [{"role": "user", "content": PROMPT}],
        "stream": stream,
        "hybridinfer": {"route": "cloud"},
    }
    return client.post("/v1/chat/completions", json=body)


def sse(text: str) -> list[Any]:
    return [
        line[6:] if line[6:] == "[DONE]" else json.loads(line[6:])
        for line in text.splitlines()
        if line.startswith("data: ")
    ]


def trace(client: httpx.Client, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        answer = client.get(f"/v1/traces/{request_id}")
        if answer.status_code == 200:
            return dict(answer.json())
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.05)


def assert_nothing_leaked(bodies: list[bytes]) -> None:
    assert bodies, "nothing reached the upstream: is it in the path?"
    for body in bodies:
        text = json.loads(body)["messages"][0]["content"]
        assert text == SENT_PROMPT
        for value in VALUES:
            assert value.encode() not in body
            assert value.replace(" ", "").encode() not in body


def streamed_text(events: list[Any]) -> tuple[str, str]:
    """The content and the tool-call arguments the client assembles."""
    chunks = [e for e in events if isinstance(e, dict) and "choices" in e]
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    arguments = "".join(
        call["function"].get("arguments", "")
        for c in chunks
        for call in c["choices"][0]["delta"].get("tool_calls") or []
    )
    return content, arguments


@pytest.mark.integration
def test_a_streamed_chat_gets_its_values_back(
    gateway: httpx.Client, upstream: tuple[ScriptedUpstream, str]
) -> None:
    scripted, _ = upstream
    before = len(scripted.ours())
    answer = chat(gateway, stream=True)
    assert answer.status_code == 200, answer.text
    assert answer.headers["X-Hybridinfer-Tier"] == "cloud"
    events = sse(answer.text)
    assert events[-1] == "[DONE]"
    content, arguments = streamed_text(events)
    assert content == RESTORED
    assert json.loads(arguments) == RESTORED_ARGUMENTS
    assert_nothing_leaked(scripted.ours()[before:])
    recorded = trace(gateway, answer.headers["X-Request-ID"])
    assert recorded["plan"]["subtasks"][0]["privacy_mode"] == "pseudonymise"
    assert "privacy mode pseudonymise" in recorded["decisions"][0]["reason"]
    outcome = recorded["plan"]["privacy"]["pseudonymised"]["generate"]
    assert outcome == {
        "mode": "pseudonymise",
        "restore": "ok",
        "kinds": {"EMAIL": 1, "PHONE": 2, "CARD": 1},
        "values": 4,
        "restored": 6,
        "unissued": 1,
    }
    assert not any(value in json.dumps(recorded) for value in VALUES)


@pytest.mark.integration
def test_nothing_is_held_back_but_a_possible_placeholder(
    gateway: httpx.Client, upstream: tuple[ScriptedUpstream, str]
) -> None:
    """Each client event carries what its upstream event allowed: text before a split
    placeholder goes out with the piece it came in, only the split part waits."""
    answer = chat(gateway, stream=True)
    content = [
        e["choices"][0]["delta"].get("content")
        for e in sse(answer.text)
        if isinstance(e, dict) and e["choices"][0]["delta"].get("content")
    ]
    assert content[:3] == ["Noted: ", f"{EMAIL}, phone ", f"{PHONE} and card {CARD}"]


@pytest.mark.integration
def test_a_whole_answer_gets_its_values_back(
    gateway: httpx.Client, upstream: tuple[ScriptedUpstream, str]
) -> None:
    scripted, _ = upstream
    before = len(scripted.ours())
    answer = chat(gateway, stream=False)
    assert answer.status_code == 200, answer.text
    message = answer.json()["choices"][0]["message"]
    assert message["content"] == RESTORED
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == RESTORED_ARGUMENTS
    assert_nothing_leaked(scripted.ours()[before:])


class BrokenRecogniser:
    kind = "EMAIL"

    def find(self, text: str, taken: Any = ()) -> list[Any]:
        raise RuntimeError("injected detector failure")


@pytest.mark.integration
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_detector_failure_sends_nothing(
    gateway: httpx.Client,
    upstream: tuple[ScriptedUpstream, str],
    monkeypatch: pytest.MonkeyPatch,
    stream: bool,
) -> None:
    """Detection runs before any byte goes out: it fails → the documented error, no call."""
    scripted, _ = upstream
    before = len(scripted.ours())
    broken = Detector([BrokenRecogniser()])
    monkeypatch.setattr(pipeline_module, "detector_for", lambda _regions: broken)
    answer = chat(gateway, stream=stream)
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["code"] == "pseudonymisation_failed"
    assert len(scripted.ours()) == before
    recorded = trace(gateway, answer.headers["X-Request-ID"])
    assert recorded["plan"]["privacy"]["pseudonymised"]["generate"]["failed"] == "detection"


@pytest.mark.integration
def test_a_restore_failure_mid_stream_ends_it_with_the_error_event(
    gateway: httpx.Client, upstream: tuple[ScriptedUpstream, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted, _ = upstream
    before = len(scripted.ours())
    real_piece = AnswerRestorer.piece
    calls = {"n": 0}

    def failing_piece(self: AnswerRestorer, piece: dict[str, Any]) -> dict[str, Any] | None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("injected restore failure")
        return real_piece(self, piece)

    monkeypatch.setattr(AnswerRestorer, "piece", failing_piece)
    answer = chat(gateway, stream=True)
    assert answer.status_code == 200
    events = sse(answer.text)
    assert events[-1]["error"]["code"] == "pseudonymisation_failed"
    assert "[DONE]" not in events
    content, _ = streamed_text(events)
    assert content == f"Noted: {EMAIL}, phone "  # the held "<PHO" never reaches the client
    assert len(scripted.ours()) == before + 1  # no retry, no fallback
    time.sleep(0.5)  # the upstream would have finished its 10 events by now
    assert scripted.events_sent[-1] < len(ANSWER) + len(TOOL_ARGUMENTS) + 2
    recorded = trace(gateway, answer.headers["X-Request-ID"])
    outcome = recorded["plan"]["privacy"]["pseudonymised"]["generate"]
    assert (outcome["restore"], outcome["failed"]) == ("failed", "restore")


@pytest.mark.integration
def test_without_the_mode_the_chat_is_refused(
    gateway: httpx.Client, upstream: tuple[ScriptedUpstream, str]
) -> None:
    """The default mode, private: the only deployment is public, so the chat is refused."""
    scripted, _ = upstream
    before = len(scripted.ours())
    private = "version: private-1\nprivacy:\n  names: false\n"
    assert gateway.post("/v1/policies", json={"policy": private}).status_code == 201
    try:
        answer = chat(gateway, stream=True)
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"]["code"] == "privacy_violation"
        assert len(scripted.ours()) == before
    finally:
        again = POLICY.replace("pseudonymise-1", "pseudonymise-2")
        assert gateway.post("/v1/policies", json={"policy": again}).status_code == 201


@pytest.mark.integration
def test_the_dashboard_shows_what_was_replaced_and_no_value(
    gateway: httpx.Client,
    browser: Any,  # noqa: F811 (the dashboard tests' fixture)
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    answer = chat(gateway, stream=True)
    request_id = answer.headers["X-Request-ID"]
    trace(gateway, request_id)
    browser.get(f"{gateway.base_url}/ui")
    browser.find_element(By.ID, "key").send_keys(ADMIN_KEY)
    browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
    row = f'#recent tbody tr[data-id="{request_id}"]'
    wait = WebDriverWait(browser, 20)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, row))
    browser.find_element(By.CSS_SELECTOR, row).click()
    line = '#decisions .decision[data-subtask="generate"] .pseudonyms'
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, line))
    shown = browser.find_element(By.CSS_SELECTOR, line).text
    assert shown == (
        "pseudonymised: EMAIL x1, PHONE x2, CARD x1 · 6 restored · 1 never issued · restore ok"
    )
    page = browser.page_source
    assert not [value for value in VALUES if value in page]


@pytest.mark.integration
def test_a_restore_failure_of_a_whole_answer_is_the_documented_error(
    gateway: httpx.Client, upstream: tuple[ScriptedUpstream, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted, _ = upstream
    before = len(scripted.ours())

    def broken(self: Pseudonymiser, value: Any) -> Any:
        raise RuntimeError("injected restore failure")

    monkeypatch.setattr(Pseudonymiser, "restore", broken)
    answer = chat(gateway, stream=False)
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["code"] == "pseudonymisation_failed"
    assert not [value for value in VALUES if value in answer.text]
    assert "<EMAIL_1>" not in answer.text
    assert len(scripted.ours()) == before + 1  # the one call; no fallback, no retry


NAMES_POLICY = POLICY.replace("names: false", "names: true").replace("-1", "-names-1")


@pytest.mark.integration
def test_names_are_replaced_too_when_the_policy_reads_them(
    upstream: tuple[ScriptedUpstream, str], tmp_path: Path
) -> None:
    """The real NER model (the `ner` extra) finds the name; it leaves as ``<NAME_1>``."""
    if not NameFinder.available():
        pytest.fail("the `ner` extra is part of the dev install")
    scripted, url = upstream
    with serving(url, tmp_path, NAMES_POLICY, names=True) as client:
        before = len(scripted.ours())
        body = {
            "model": "auto",
            "messages": [{"role": "user", "content": f"Maria Gonzalez asked: {PROMPT}"}],
            "stream": True,
            "hybridinfer": {"route": "cloud"},
        }
        answer = client.post("/v1/chat/completions", json=body)
        assert answer.status_code == 200, answer.text
        (sent,) = scripted.ours()[before:]
        assert json.loads(sent)["messages"][0]["content"] == f"<NAME_1> asked: {SENT_PROMPT}"
        assert b"Maria" not in sent
        assert b"Gonzalez" not in sent
        outcome = trace(client, answer.headers["X-Request-ID"])["plan"]["privacy"]
        assert outcome["pseudonymised"]["generate"]["kinds"]["NAME"] == 1


@pytest.mark.integration
def test_under_on_failure_local_a_detector_failure_gets_a_private_answer(
    upstream: tuple[ScriptedUpstream, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy says ``on_failure: local``: the cloud, first for prefer=quality, gets
    nothing; the private-zone deployment answers with the original inputs."""
    scripted, url = upstream
    private = ScriptedUpstream()
    policy = POLICY.replace("-1", "-local-1") + "  on_failure: local\n"
    with (
        serve_asgi(private.app()) as private_url,
        serving(url, tmp_path, policy, names=False, private_url=private_url) as client,
    ):
        before = len(scripted.ours())
        broken = Detector([BrokenRecogniser()])
        monkeypatch.setattr(pipeline_module, "detector_for", lambda _regions: broken)
        body = {
            "model": "auto",
            "messages": [{"role": "user", "content": PROMPT}],
            "stream": True,
            "hybridinfer": {"prefer": "quality"},
        }
        answer = client.post("/v1/chat/completions", json=body)
        assert answer.status_code == 200, answer.text
        assert answer.headers["X-Hybridinfer-Tier"] == "edge"
        assert len(scripted.ours()) == before
        (sent,) = private.ours()
        assert json.loads(sent)["messages"][0]["content"] == PROMPT
        attempts = trace(client, answer.headers["X-Request-ID"])["attempts"]
        assert [(a["node"], a["error_code"] or a["status"]) for a in attempts] == [
            ("cloud-chat", "pseudonymisation_failed"),
            ("edge-chat", "ok"),
        ]
