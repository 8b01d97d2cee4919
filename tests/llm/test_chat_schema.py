"""The standard OpenAI chat schema through the gateway, against the real llama.cpp servers:
content parts, an assistant turn that called a tool, the tool's result and ``tools`` in the
request; personal data in such a chat kept private; image parts and ``n > 1`` refused with
their own codes; the official ``openai`` client sending all of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_KEY
from tests.llm.conftest import Gateway, RunningLlm, gateway_settings, serve

pytestmark = pytest.mark.integration

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city."}},
            "required": ["city"],
        },
    },
}


def conversation(arguments: str = '{"city": "the capital"}', result: str = "sunny, 21 C") -> Any:
    """A system turn, a user turn in text parts, the assistant's tool call, the tool's result."""
    return [
        {"role": "system", "content": "You answer in one short sentence."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is the weather like?"},
                {"type": "text", "text": "Use the tool."},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": result},
    ]


def chat_body(route: str, messages: Any = None, tools: bool = True, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "auto",
        "messages": messages or conversation(),
        "max_tokens": 8,
        "temperature": 0.0,
        "hybridinfer": {"route": route},
    }
    if tools:
        body |= {"tools": [WEATHER_TOOL], "tool_choice": "auto"}
    return body | extra


@pytest.fixture(scope="module")
def schema_gateway(
    tmp_path_factory: pytest.TempPathFactory, llms: dict[str, RunningLlm]
) -> Iterator[Gateway]:
    settings = gateway_settings(tmp_path_factory.mktemp("chat-schema"), llms)
    update = {"request_timeout_ms": 60_000, "probe_interval_s": 2.0, "local_cpu_interval_s": 3600.0}
    yield from serve(settings.model_copy(update=update))


@pytest.fixture(scope="module")
def client(schema_gateway: Gateway) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with httpx.Client(base_url=schema_gateway.url, headers=headers, timeout=180) as http:
        yield http


def _answered(answer: httpx.Response, tier: str) -> dict[str, Any]:
    """A 200 chat completion from ``tier`` (its text may be empty: Gemma, a base model asked
    with a completion prompt, often stops at once on the prompt's stop sequence)."""
    assert answer.status_code == 200, (answer.status_code, answer.text)
    assert answer.headers["x-hybridinfer-tier"] == tier
    completion = dict(answer.json())
    assert completion["object"] == "chat.completion"
    choice = completion["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"].get("content"), str) or choice["message"].get("tool_calls")
    assert choice["finish_reason"] in {"stop", "length", "tool_calls"}, completion
    return completion


def test_a_tool_conversation_is_answered_locally(client: httpx.Client) -> None:
    """Parts, a tool call, its result and ``tools``: the local LLM (SmolLM2) answers."""
    completion = _answered(client.post("/v1/chat/completions", json=chat_body("local")), "local")
    message = completion["choices"][0]["message"]
    assert message.get("content") or message.get("tool_calls"), completion


def test_a_tool_conversation_is_answered_in_the_cloud(client: httpx.Client) -> None:
    """The same conversation without ``tools``: the cloud LLM (Gemma) answers it."""
    body = chat_body("cloud", tools=False)
    _answered(client.post("/v1/chat/completions", json=body), "cloud")


@pytest.mark.xfail(
    strict=True,
    reason="the cloud LLM is registered as a base model (label base-model): backends/openai.py "
    "refuses tools, tool_choice and response_format before sending, 502 upstream_rejected "
    "'gemma-3-270m is a base model: it cannot honour tools, tool_choice' (llama.cpp itself "
    "answers such a chat 200); the default topology has no cloud model that takes tools",
)
def test_a_tool_conversation_with_tools_is_answered_in_the_cloud(client: httpx.Client) -> None:
    answer = client.post("/v1/chat/completions", json=chat_body("cloud"))
    print(answer.status_code, answer.text)
    _answered(answer, "cloud")


def test_the_cloud_says_why_it_refuses_tools(client: httpx.Client) -> None:
    """What the gateway answers today to ``tools`` with ``route: cloud`` (see the xfail)."""
    answer = client.post("/v1/chat/completions", json=chat_body("cloud"))
    assert answer.status_code == 502, answer.text
    error = answer.json()["error"]
    assert error["code"] == "upstream_rejected"
    assert "cannot honour tools" in error["message"]


def test_a_named_tool_choice_comes_back_as_a_tool_call(client: httpx.Client) -> None:
    """llama.cpp constrains the answer to a call of the named function; the gateway passes
    the call back in OpenAI's shape."""
    choice = {"type": "function", "function": {"name": "get_weather"}}
    body = chat_body("local", messages=[{"role": "user", "content": "Weather in Oslo?"}])
    completion = _answered(
        client.post("/v1/chat/completions", json=body | {"tool_choice": choice}), "local"
    )
    calls = completion["choices"][0]["message"]["tool_calls"]
    assert calls[0]["type"] == "function"
    assert calls[0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize(
    ("where", "messages"),
    [
        ("tool arguments", conversation(arguments='{"email": "jane.doe@example.com"}')),
        ("tool result", conversation(result="Call Jane on +44 20 7946 0958.")),
        ("tool result", conversation(result="Ask Maria Gonzalez about it.")),
        (
            "text part",
            [{"role": "user", "content": [{"type": "text", "text": "Is Maria Gonzalez in?"}]}],
        ),
    ],
    ids=["email in arguments", "phone in result", "name in result", "name in a text part"],
)
def test_personal_data_in_such_a_chat_stays_private(
    client: httpx.Client, where: str, messages: Any
) -> None:
    """``route: cloud`` is refused 403 ``privacy_violation``; routed by the policy, the same
    chat is answered in the private zone."""
    refused = client.post("/v1/chat/completions", json=chat_body("cloud", messages=messages))
    assert refused.status_code == 403, (where, refused.text)
    assert refused.json()["error"]["code"] == "privacy_violation"
    routed = client.post("/v1/chat/completions", json=chat_body("auto", messages=messages))
    _answered(routed, "local")


def test_an_image_part_is_unsupported_content(client: httpx.Client) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "What is it?"}, image]}]
    answer = client.post("/v1/chat/completions", json=chat_body("local", messages=messages))
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "unsupported_content"


def test_two_choices_are_an_unsupported_parameter(client: httpx.Client) -> None:
    answer = client.post("/v1/chat/completions", json=chat_body("local", n=2))
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "unsupported_parameter"


def test_the_openai_client_sends_the_whole_schema(schema_gateway: Gateway) -> None:
    """The official client: typed parts, a tool call and its result, tools, tool_choice,
    a stop sequence, a user id; plain and streamed."""
    import openai

    request: dict[str, Any] = {
        "model": "auto",
        "messages": conversation(arguments=json.dumps({"city": "the capital"})),
        "tools": [WEATHER_TOOL],
        "tool_choice": "auto",
        "max_tokens": 8,
        "stop": ["\n\n"],
        "user": "user-7",
        "extra_body": {"hybridinfer": {"route": "local"}},
    }
    url = f"{schema_gateway.url}/v1"
    with openai.OpenAI(base_url=url, api_key=ADMIN_KEY, max_retries=0, timeout=180) as client:
        raw = client.chat.completions.with_raw_response.create(**request)
        completion = raw.parse()
        assert raw.headers["x-hybridinfer-tier"] == "local"
        assert completion.choices[0].message.role == "assistant"
        assert completion.choices[0].finish_reason in {"stop", "length", "tool_calls"}
        with client.chat.completions.with_streaming_response.create(**request, stream=True) as s:
            chunks = list(s.parse())
        assert chunks
        assert chunks[-1].choices[0].finish_reason in {"stop", "length", "tool_calls"}
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(**request, n=2)
        assert caught.value.body["code"] == "unsupported_parameter"  # type: ignore[index]
