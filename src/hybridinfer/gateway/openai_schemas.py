"""Bodies of the OpenAI-compatible API, validated at the edge like every other body.

Only the fields we honour are accepted (unknown ones are a 422, not silently ignored); routing
wishes ride in the optional ``hybridinfer`` object (the OpenAI client sends it via
``extra_body``), with the same fields as ``/v1/infer``'s ``options``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hybridinfer.core.plan import Privacy
from hybridinfer.core.schemas import InferOptions, InferRequest


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChatMessage(_Body):
    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: str
    name: str | None = None


class StreamOptions(_Body):
    include_usage: bool = False


class RoutingOptions(_Body):
    """Our routing wishes on an OpenAI request (``model`` pins a deployment instead)."""

    privacy: Privacy | None = None
    prefer: Literal["balanced", "latency", "cost", "quality"] = "balanced"
    route: Literal["auto", "local", "edge", "cloud"] = "auto"
    max_latency_ms: float | None = Field(None, gt=0)
    timeout_ms: int | None = Field(None, gt=0, le=600_000)


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
    n: Literal[1] = 1
    user: str | None = None
    hybridinfer: RoutingOptions = Field(default_factory=RoutingOptions)

    def to_infer(self) -> InferRequest:
        """The same request as ``/v1/infer`` sees it: task ``chat``."""
        inputs: dict[str, Any] = {
            "messages": [m.model_dump(exclude_none=True) for m in self.messages],
            "max_tokens": self.max_completion_tokens or self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
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


def _options(routing: RoutingOptions, model: str) -> InferOptions:
    return InferOptions(**routing.model_dump(exclude_none=True), model=model)
