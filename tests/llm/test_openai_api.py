"""The official `openai` client against our gateway, with real llama.cpp servers behind it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_KEY
from tests.llm.conftest import Gateway, RunningLlm, gateway_settings, serve, start_llm

pytestmark = pytest.mark.integration

SHORT = [{"role": "user", "content": "Say hello in three words."}]


def openai_client(gateway: Gateway) -> Any:
    import openai

    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=ADMIN_KEY, max_retries=0)


def test_chat_auto_routes_a_short_chat_to_the_local_llm(gateway: Gateway) -> None:
    client = openai_client(gateway)
    raw = client.chat.completions.with_raw_response.create(
        model="auto", messages=SHORT, max_tokens=12
    )
    completion = raw.parse()
    assert raw.headers["x-hybridinfer-tier"] == "local"
    assert raw.headers["x-hybridinfer-model"] == "smollm2-135m"
    assert completion.model == "smollm2-135m"
    assert completion.choices[0].message.content
    assert completion.usage.completion_tokens > 0
    trace = gateway.get(f"/v1/traces/{raw.headers['x-request-id']}")
    assert trace["task"] == "chat"
    assert trace["decisions"][0]["chosen"] == "llm-local/smollm2-135m:1"
    assert [a["status"] for a in trace["attempts"]] == ["ok"]
    assert trace["timings_ms"]["execute"] > 0


def test_chat_streams_chunks_ending_in_done(gateway: Gateway) -> None:
    client = openai_client(gateway)
    with client.chat.completions.with_streaming_response.create(
        model="auto", messages=SHORT, max_tokens=12, stream=True
    ) as response:
        assert response.headers["x-hybridinfer-tier"] == "local"
        chunks = list(response.parse())
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip()
    assert chunks[-1].choices[0].finish_reason in {"stop", "length"}
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
        json={"messages": SHORT, "max_tokens": 4, "stream": True},
        timeout=60,
    ) as raw:
        lines = [line for line in raw.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"


def test_long_or_hard_chats_go_to_the_cloud_llm(gateway: Gateway) -> None:
    client = openai_client(gateway)
    long_text = "Summarise this: " + "the quick brown fox jumps over the lazy dog. " * 50
    long = client.chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": long_text}], max_tokens=8
    )
    assert long.headers["x-hybridinfer-tier"] == "cloud"
    assert long.headers["x-hybridinfer-model"] == "gemma-3-270m"
    trace = gateway.get(f"/v1/traces/{long.headers['x-request-id']}")
    assert "rejected by input_limit" in trace["decisions"][0]["reason"]
    hard = client.chat.completions.with_raw_response.create(
        model="auto",
        messages=SHORT,
        max_tokens=8,
        extra_body={"hybridinfer": {"prefer": "quality"}},
    )
    assert hard.headers["x-hybridinfer-tier"] == "cloud"


def test_a_named_model_pins_it_and_an_unknown_one_is_404(gateway: Gateway) -> None:
    import openai

    client = openai_client(gateway)
    pinned = client.chat.completions.with_raw_response.create(
        model="gemma-3-270m", messages=SHORT, max_tokens=4
    )
    assert pinned.headers["x-hybridinfer-tier"] == "cloud"
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="gpt-17", messages=SHORT)
    assert caught.value.body["code"] == "unknown_model"  # type: ignore[index]


def test_embeddings_and_models_list(gateway: Gateway) -> None:
    client = openai_client(gateway)
    result = client.embeddings.create(model="auto", input=["hello world", "goodbye"])
    assert len(result.data) == 2
    assert len(result.data[0].embedding) == 576
    assert abs(sum(v * v for v in result.data[0].embedding) - 1.0) < 1e-3
    floats = client.embeddings.create(model="auto", input="hi", encoding_format="float")
    assert len(floats.data[0].embedding) == 576
    ids = {model.id for model in client.models.list()}
    assert {"auto", "smollm2-135m", "gemma-3-270m", "smollm2-135m-embed"} <= ids


@pytest.fixture
def own_cloud(llm_specs: dict[str, Any]) -> Iterator[RunningLlm]:
    """A cloud LLM server of this test alone (it gets killed)."""
    running = start_llm(llm_specs["llm-cloud"], start_port=18400)
    yield running
    running.stop()


def test_cloud_llm_killed_mid_stream_gives_an_error_event_not_a_clean_end(
    tmp_path: Path, llms: dict[str, RunningLlm], own_cloud: RunningLlm
) -> None:
    import openai

    nodes = {"llm-local": llms["llm-local"], "llm-cloud": own_cloud}
    for gateway in serve(gateway_settings(tmp_path, nodes)):
        client = openai_client(gateway)
        pieces = start_a_long_answer(client)
        own_cloud.process.kill()
        with pytest.raises(openai.APIError) as caught:
            for _ in pieces:
                pass
        assert caught.value.body["code"] in {  # type: ignore[index]
            "stream_interrupted",
            "upstream_unavailable",
            "upstream_failed",
        }
        traces = gateway.get("/v1/traces", status="error")["traces"]
        assert traces
        assert traces[0]["attempts"][0]["status"] == "error"
        time.sleep(1.5)  # a probe round or two
        nodes_now = {n["id"]: n for n in gateway.get("/v1/nodes")["nodes"]}
        assert nodes_now["llm-cloud"]["status"] == "down"
        # the next hard chat falls back to the local LLM before its first token
        ok = client.chat.completions.with_raw_response.create(
            model="auto",
            messages=SHORT,
            max_tokens=4,
            extra_body={"hybridinfer": {"prefer": "quality"}},
        )
        assert ok.headers["x-hybridinfer-tier"] == "local"


def start_a_long_answer(client: Any) -> Iterator[Any]:
    """A stream from the cloud LLM that has produced content and is still going.

    Gemma-3-270m is a base model: some seeds end the answer at once, so try a few.
    """
    prompt = [{"role": "user", "content": "Write a long story about a dragon."}]
    for seed in range(1, 6):
        stream = client.chat.completions.create(
            model="gemma-3-270m", messages=prompt, max_tokens=400, seed=seed, stream=True
        )
        pieces = iter(stream)
        for chunk in pieces:
            assert chunk.model == "gemma-3-270m"
            if chunk.choices and chunk.choices[0].finish_reason:
                break
            if chunk.choices and chunk.choices[0].delta.content:
                return pieces
        stream.close()
    raise AssertionError("the cloud LLM never started a long answer")
