"""The OpenAI chat request schema, as far as a chat deployment can be asked for it: messages
whose content is a string or a list of parts, tool calls and tool results, and the request
fields that go with them (``tools``, ``tool_choice``, ``response_format``, ``stop``).

``/v1/chat/completions`` validates its body with these models and ``/v1/infer`` (task
``chat``) its ``messages`` input, so both accept the same conversations. Image, audio and
file parts parse, and are refused with 400 ``unsupported_content`` (no bundled chat model
reads them), rather than a 422 that says the schema is wrong.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextPart(_Part):
    type: Literal["text"]
    text: str


class ImageURL(_Part):
    url: str
    detail: Literal["auto", "low", "high"] | None = None


class ImagePart(_Part):
    type: Literal["image_url"]
    image_url: ImageURL


class OtherPart(BaseModel):
    """Audio and file parts: accepted by the schema so the refusal can say what is missing."""

    model_config = ConfigDict(extra="allow")
    type: Literal["input_audio", "file", "refusal"]


ContentPart = Annotated[TextPart | ImagePart | OtherPart, Field(discriminator="type")]
UNSUPPORTED_PARTS = frozenset({"image_url", "input_audio", "file"})
"""Part types no bundled chat model reads (``refusal`` parts of assistant turns are text)."""


class FunctionCall(_Part):
    name: str = Field(min_length=1, max_length=200)
    arguments: str
    """JSON text, as the model wrote it."""


class ToolCall(_Part):
    id: str = Field(min_length=1, max_length=200)
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(_Part):
    """One turn. ``content`` may be null on an assistant turn that only calls tools."""

    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: str | list[ContentPart] | None = None
    name: str | None = Field(None, max_length=200)
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = Field(None, max_length=200)
    refusal: str | None = None


class FunctionSpec(_Part):
    name: str = Field(min_length=1, max_length=200)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(_Part):
    type: Literal["function"] = "function"
    function: FunctionSpec


class NamedFunction(_Part):
    name: str = Field(min_length=1, max_length=200)


class NamedToolChoice(_Part):
    type: Literal["function"] = "function"
    function: NamedFunction


ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice


class JsonSchemaFormat(_Part):
    name: str = Field(min_length=1, max_length=200)
    description: str | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    strict: bool | None = None


class ResponseFormat(_Part):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


def content_text(content: str | list[Any] | None) -> str:
    """The text of a message's content: a string, or its text parts joined by new lines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(
        str(part.get("text", ""))
        for part in content
        if isinstance(part, dict) and part.get("type") == "text"
    )


def unsupported_parts(messages: list[dict[str, Any]]) -> list[str]:
    """The part types in ``messages`` that no bundled chat model reads."""
    found = {
        str(part.get("type"))
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") in UNSUPPORTED_PARTS
    }
    return sorted(found)
