"""The OpenAI chat schema: what it accepts, what it refuses, how content becomes text."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from hybridinfer.backends.openai import GENERATION_PARAMETERS, upstream_message
from hybridinfer.core.chat import ChatMessage, content_text, unsupported_parts

MESSAGES = TypeAdapter(list[ChatMessage])
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {
        "role": "user",
        "content": [{"type": "text", "text": "Weather"}, {"type": "text", "text": "in Oslo?"}],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "4 degrees, rain"},
]


def test_a_conversation_with_parts_tool_calls_and_results_is_accepted() -> None:
    parsed = MESSAGES.validate_python(CONVERSATION)
    assert parsed[2].tool_calls is not None
    assert parsed[2].tool_calls[0].function.name == "weather"
    assert parsed[3].tool_call_id == "c1"


@pytest.mark.parametrize(
    "message",
    [
        {"role": "robot", "content": "x"},
        {"role": "user", "content": [{"type": "video", "url": "x"}]},
        {"role": "user", "content": "x", "colour": "red"},
    ],
)
def test_what_is_not_the_schema_is_refused(message: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        MESSAGES.validate_python([message])


def test_image_parts_parse_and_are_named_unsupported() -> None:
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]}
    MESSAGES.validate_python([image])
    assert unsupported_parts([image]) == ["image_url"]
    assert unsupported_parts(CONVERSATION) == []


def test_upstreams_get_text_parts_joined_and_null_content_empty() -> None:
    assert content_text(CONVERSATION[1]["content"]) == "Weather\nin Oslo?"  # type: ignore[arg-type]
    assert upstream_message(CONVERSATION[1])["content"] == "Weather\nin Oslo?"
    sent = upstream_message(CONVERSATION[2])
    assert sent["content"] == ""
    assert sent["tool_calls"] == CONVERSATION[2]["tool_calls"]


def test_tools_and_formats_are_forwarded() -> None:
    assert {"tools", "tool_choice", "response_format", "stop", "seed"} <= set(GENERATION_PARAMETERS)
    assert "user" not in GENERATION_PARAMETERS
