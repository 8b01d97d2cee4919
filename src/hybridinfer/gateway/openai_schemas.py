"""Bodies of the OpenAI-compatible API, validated at the edge like every other body.

The chat schema is OpenAI's (``core/chat.py``: content parts, tools, tool calls and results,
response formats). Fields outside it are a 422, not silently ignored; routing
wishes ride in the optional ``hybridinfer`` object (the OpenAI client sends it via
``extra_body``), with the same fields as ``/v1/infer``'s ``options``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hybridinfer.core.chat import ChatMessage, ResponseFormat, Tool, ToolChoice
from hybridinfer.core.plan import Privacy
from hybridinfer.core.schemas import InferOptions, InferRequest
from hybridinfer.errors import InvalidInput


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StreamOptions(_Body):
    include_usage: bool = False


class RoutingOptions(_Body):
    """Our routing wishes on an OpenAI request (``model`` pins a deployment instead)."""

    privacy: Privacy | None = None
    prefer: Literal["balanced", "latency", "cost", "quality"] = "balanced"
    route: Literal["auto", "local", "edge", "cloud"] = "auto"
    max_latency_ms: float | None = Field(None, gt=0)
    timeout_ms: int | None = Field(None, gt=0, le=600_000)
    cache: Literal["auto", "off", "refresh", "reuse"] = "auto"
    cache_scope: str | None = Field(None, pattern=r"^[A-Za-z0-9._-]{1,64}$")


class ChatCompletionRequest(_Body):
    """``POST /v1/chat/completions``."""

    model: str = Field("auto", min_length=1, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1, le=4096)
    max_completion_tokens: int | None = Field(None, ge=1, le=4096)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, ge=0.0, le=1.0)
    seed: int | None = None
    stop: str | Annotated[list[str], Field(max_length=4)] | None = None
    n: int = Field(1, ge=1, le=8, description="only 1 is served (400 otherwise)")
    presence_penalty: float | None = Field(None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(None, ge=-2.0, le=2.0)
    tools: list[Tool] | None = Field(None, max_length=128)
    tool_choice: ToolChoice | None = None
    response_format: ResponseFormat | None = None
    user: str | None = Field(
        None, max_length=256, description="your end user's id: accepted, never forwarded"
    )
    hybridinfer: RoutingOptions = Field(default_factory=RoutingOptions)

    def to_infer(self) -> InferRequest:
        """The same request as ``/v1/infer`` sees it: task ``chat``. ``user`` stays here: it
        identifies a person, and no upstream needs it to answer."""
        if self.n != 1:
            raise InvalidInput(
                "n > 1 is not served: ask for one choice per request", code="unsupported_parameter"
            )
        inputs: dict[str, Any] = {
            "messages": [m.model_dump(exclude_none=True) for m in self.messages],
            "max_tokens": self.max_completion_tokens or self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "stop": self.stop,
            "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty,
            "tools": None
            if self.tools is None
            else [tool.model_dump(exclude_none=True) for tool in self.tools],
            "tool_choice": _dump(self.tool_choice),
            "response_format": _dump(self.response_format),
        }
        return InferRequest(
            task="chat",
            inputs={name: value for name, value in inputs.items() if value is not None},
            options=_options(self.hybridinfer, self.model),
        )


class EmbeddingRequest(_Body):
    """``POST /v1/embeddings``."""

    model: str = Field("auto", min_length=1, max_length=200)
    input: str | list[str]
    encoding_format: Literal["float", "base64"] = "float"
    user: str | None = None
    hybridinfer: RoutingOptions = Field(default_factory=RoutingOptions)

    def to_infer(self) -> InferRequest:
        """The same request as ``/v1/infer`` sees it: task ``embed``."""
        return InferRequest(
            task="embed",
            inputs={"input": self.input},
            options=_options(self.hybridinfer, self.model),
        )


def _dump(value: BaseModel | str | None) -> Any:
    return (
        value.model_dump(exclude_none=True, by_alias=True)
        if isinstance(value, BaseModel)
        else value
    )


def _options(routing: RoutingOptions, model: str) -> InferOptions:
    return InferOptions(**routing.model_dump(exclude_none=True), model=model)
