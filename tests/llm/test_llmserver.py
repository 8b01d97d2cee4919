"""The real llama.cpp servers as ``server/llmserver.py`` starts them: a streamed answer is not
cut short when another request arrives (the server's default ends it with a normal
``[DONE]``)."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from tests.llm.conftest import RunningLlm

pytestmark = pytest.mark.integration


def test_a_second_request_waits_instead_of_cutting_a_stream(
    llms: dict[str, RunningLlm],
) -> None:
    url = llms["llm-local"].server.url
    story = [{"role": "user", "content": "Write a short story about a lighthouse keeper."}]
    body = {"messages": story, "max_tokens": 48, "temperature": 0, "stream": True}
    pieces: list[str] = []
    finish: list[str | None] = []
    second: list[int] = []

    def ask_again() -> None:
        hello = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
        second.append(httpx.post(f"{url}/v1/chat/completions", json=hello, timeout=120).status_code)

    other = threading.Thread(target=ask_again)
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=120) as stream:
        for line in stream.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choice = json.loads(line[6:])["choices"][0]
            if choice["delta"].get("content"):
                pieces.append(choice["delta"]["content"])
                if len(pieces) == 2:
                    other.start()  # arrives while the answer is being written
            finish.append(choice.get("finish_reason"))
    other.join(timeout=120)
    assert second == [200]
    assert len(pieces) >= 40, "".join(pieces)  # not cut after a few tokens
    assert finish[-1] in {"length", "stop"}
