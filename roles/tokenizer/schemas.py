"""Request bodies of the OpenAI-compatible endpoints; unknown fields are ignored as OpenAI clients expect.

These models declare only what belongs to HTTP (model, prompt or messages, n, stop strings, streaming). The
sampling options (temperature, top_p, seed, max_tokens, penalties, ...) are declared once, in
``roles.protocol.SamplingFields``: each endpoint hands them over as given by ``sampling_values`` and
``request_prep`` validates them against that one declaration.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from roles.protocol import SAMPLING_FIELD_NAMES
from roles.tokenizer.lazy_model import LazyModel
from roles.tokenizer.sampling_schema import with_sampling_options


class StreamOptions(LazyModel):
    include_usage: bool = False


class JsonSchemaFormat(LazyModel):
    model_config = ConfigDict(populate_by_name=True)

    name: str = Field(default="response", max_length=64)
    description: str | None = None
    schema_: dict | None = Field(default=None, alias="schema")
    strict: bool | None = None  # the output always matches the schema, strict or not


class ResponseFormat(LazyModel):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class SamplingRequest(LazyModel):
    """Fields shared by completions and chat completions; extra fields are kept for ``sampling_values``."""

    model_config = ConfigDict(extra="allow", json_schema_extra=with_sampling_options())

    model: str
    stop: str | list[str] | None = None
    n: int = Field(default=1, ge=1, le=16)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = None
    # Structured output: at most one of these (roles.tokenizer.structured_output).
    response_format: ResponseFormat | None = None
    regex: str | None = Field(default=None, description="the output matches this regular expression")
    grammar: str | None = Field(
        default=None, description="the output matches this GBNF (root ::= ...) or Lark (start: ...) grammar"
    )

    @property
    def stop_strings(self) -> list[str]:
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else list(self.stop)

    def sampling_values(self) -> tuple[dict[str, object], dict[str, str]]:
        """The sampling options the client gave (null means not given), keyed by SamplingFields' names,
        and the client's own name for any that it spelled differently (for error messages)."""
        given = {k: v for k, v in (self.model_extra or {}).items() if v is not None}
        return {k: v for k, v in given.items() if k in SAMPLING_FIELD_NAMES}, {}


class CompletionRequest(SamplingRequest):
    prompt: str | list[str] | list[int] | list[list[int]]
    echo: bool = False


class TextPart(LazyModel):
    type: Literal["text"]
    text: str


class FunctionCall(LazyModel):
    name: str
    arguments: str  # JSON text, as OpenAI sends it


class MessageToolCall(LazyModel):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(LazyModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: str | list[TextPart] | None = None
    tool_calls: list[MessageToolCall] | None = None  # an assistant's earlier calls
    tool_call_id: str | None = None  # a tool message: the call it answers

    @property
    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)


class FunctionDefinition(LazyModel):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    description: str | None = None
    parameters: dict | None = None  # a JSON schema of the arguments object; none: any object
    strict: bool | None = None  # the arguments always match the schema when a call is required


class Tool(LazyModel):
    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(LazyModel):
    name: str


class NamedToolChoice(LazyModel):
    type: Literal["function"]
    function: NamedFunction


class ChatCompletionRequest(SamplingRequest):
    # Chat spells two options its own way: max_completion_tokens, and top_logprobs (logprobs is its switch).
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra=with_sampling_options(
            {"max_completion_tokens": "max_tokens", "top_logprobs": "logprobs"}
        ),
    )

    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[Tool] | None = Field(default=None, max_length=128)
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool = True
    logprobs: bool = False  # chat's switch; how many alternatives is top_logprobs

    def sampling_values(self) -> tuple[dict[str, object], dict[str, str]]:
        values, names = super().sampling_values()
        extra = self.model_extra or {}
        if extra.get("max_completion_tokens") is not None:
            values["max_tokens"] = extra["max_completion_tokens"]
            names["max_tokens"] = "max_completion_tokens"
        if self.logprobs:
            top = extra.get("top_logprobs")
            values["logprobs"] = 0 if top is None else top
            names["logprobs"] = "top_logprobs"
        return values, names
