"""Pseudonymised chat end to end against the real cloud LLM (Gemma on llama.cpp, the public
zone's chat deployment), with a fixed seed and temperature 0, behind the privacy proof's
recording proxy (``Recorder``): every byte that reaches the cloud node is kept and searched
with the proof's own search (``leaks``: every writing and encoding of each value).

The chat holds an e-mail address, a phone number, a Luhn-valid card number and a Chinese
mobile number. The model is asked to continue a line it has started, so it copies
placeholders; the client must see the original values where it did, and no placeholder the
gateway issued. It also writes placeholders it was never given (at this seed ``<EMAIL_2>``):
those are left as they are and counted in the trace. The scripted upstream of
``tests/gateway/test_pseudonymised_chat.py`` proves restoring (splits, reformatting, tool
calls, failures) deterministically.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_KEY
from tests.llm.conftest import RunningLlm, gateway_settings, serve
from tests.llm.test_privacy_proof import BY_KEY, CONTROL, Recorder, Tag, _wait_ready, leaks
from tests.peers import serve_asgi

CANARIES = tuple(BY_KEY[key] for key in ("email", "phone.+44", "card", "phone.cn"))
LINE = "email {}; phone {}; card {}; mobile {}.".format(*(c.value for c in CANARIES))
MESSAGES = [
    {"role": "user", "content": f"Copy the {CONTROL.value} customer's contact line twice."},
    {"role": "assistant", "content": f"First: {LINE}\nSecond: email"},
]
POLICY = """\
version: pseudonymise-llm-1
privacy:
  names: false
privacy_modes:
  capabilities: {chat: pseudonymise}
"""
ISSUED = ("<EMAIL_1>", "<PHONE_1>", "<CARD_1>", "<PHONE_2>")
"""What the gateway issues for ``LINE``, in order (the scripted test checks the numbering)."""
PLACEHOLDER = re.compile(r"<[A-Z]+_\d+>")


@pytest.fixture(scope="module")
def cloud(
    tmp_path_factory: pytest.TempPathFactory, llms: dict[str, RunningLlm]
) -> Iterator[tuple[httpx.Client, Recorder]]:
    """A gateway whose cloud LLM sits behind a recorder, the policy pseudonymising chat."""
    recorder = Recorder("gemma", Tag(), llms["llm-cloud"].server.url)
    with serve_asgi(recorder.app()) as recorded_url:
        settings = gateway_settings(tmp_path_factory.mktemp("pseudonymise"), llms)
        static = [
            item.server.spec.registration(recorded_url if node == "llm-cloud" else item.server.url)
            for node, item in llms.items()
        ]
        update = {"static_nodes": static, "privacy_ner": False, "request_timeout_ms": 120_000}
        for gateway in serve(settings.model_copy(update=update)):
            headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
            with httpx.Client(base_url=gateway.url, headers=headers, timeout=300) as client:
                _wait_ready(client, "llm-cloud")
                applied = client.post("/v1/policies", json={"policy": POLICY})
                assert applied.status_code == 201, applied.text
                yield client, recorder


def streamed_content(text: str) -> tuple[str, list[Any]]:
    events = [
        line[6:] if line[6:] == "[DONE]" else json.loads(line[6:])
        for line in text.splitlines()
        if line.startswith("data: ")
    ]
    content = "".join(
        event["choices"][0]["delta"].get("content") or ""
        for event in events
        if isinstance(event, dict) and event.get("choices")
    )
    return content, events


@pytest.mark.integration
def test_a_streamed_chat_with_personal_data_is_answered_by_the_cloud_llm(
    cloud: tuple[httpx.Client, Recorder],
) -> None:
    client, recorder = cloud
    before = len(recorder.requests)
    body = {
        "model": "auto",
        "messages": MESSAGES,
        "stream": True,
        "max_tokens": 48,
        "temperature": 0.0,
        "seed": 7,
        "hybridinfer": {"route": "cloud"},
    }
    answer = client.post("/v1/chat/completions", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.headers["X-Hybridinfer-Tier"] == "cloud"
    content, events = streamed_content(answer.text)
    assert events[-1] == "[DONE]", events[-3:]
    described = trace(client, answer.headers["X-Request-ID"])
    # The request's own calls carry its trace id (``traceparent``). Anything else in the
    # window is the gateway's prober timing the node through the same recorder: it may hold
    # no canary either, but it holds no control.
    window = [body for _, body in recorder.requests[before:]]
    sent = [body for body in window if described["trace_id"].encode() in body]
    assert sent, "nothing reached the cloud node: is the recorder in the path?"
    assert all(leaks(body, (*CANARIES, CONTROL)) == ["control"] for body in sent)
    assert all(leaks(body, CANARIES) == [] for body in window)
    assert not [p for p in ISSUED if p.lower() in content.lower()], content
    assert any(canary.value in content for canary in CANARIES), content
    invented = [p for p in PLACEHOLDER.findall(content) if p not in ISSUED]  # left as they are
    outcome = described["plan"]["privacy"]["pseudonymised"]
    assert outcome["generate"]["restore"] == "ok"
    assert outcome["generate"]["kinds"] == {"EMAIL": 1, "PHONE": 2, "CARD": 1}
    assert outcome["generate"]["unissued"] == len(invented)
    assert outcome["generate"]["restored"] >= 1


def trace(client: httpx.Client, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        answer = client.get(f"/v1/traces/{request_id}")
        if answer.status_code == 200:
            return dict(answer.json())
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.05)
