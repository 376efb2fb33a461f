"""POST /tokenize and /detokenize: the served model's tokenizer, as the completion endpoints use it (a prompt,
or chat messages through the chat template), with the same checks on input.

The OpenAPI spec says what the handlers check: exactly one of prompt and messages (oneOf, and neither may be
null), and token ids within the served vocabulary (declared once the app knows it: bound_token_ids)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, ConfigDict, Field

from roles.tokenizer.front_state import FrontState
from roles.tokenizer.lazy_model import LazyModel
from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.operations import Operations
from roles.tokenizer.request_prep import chat_prompt_ids, check_model, checked_ids, encode_text
from roles.tokenizer.schemas import ChatMessage


def _absent_by_default(schema: dict) -> None:
    """A field that may be left out but never sent as null: its schema declares no default (null)."""
    schema.pop("default", None)


def _whole_number(value):
    """JSON Schema counts 3.0 as an integer, so the spec allows it: a whole float is that id (strict mode
    refuses every other float, strings and booleans)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


TokenId = Annotated[int, BeforeValidator(_whole_number)]


class TokenizeRequest(LazyModel):
    model_config = ConfigDict(
        strict=True,  # "1" is not a token id, 0 not a boolean
        json_schema_extra={"oneOf": [{"required": ["prompt"]}, {"required": ["messages"]}]},
    )

    model: str | None = None  # the served model's name when given
    # Exactly one of the two (the handler checks it; the spec says it with oneOf).
    prompt: str = Field(default=None, json_schema_extra=_absent_by_default)
    messages: list[ChatMessage] = Field(default=None, min_length=1, json_schema_extra=_absent_by_default)
    add_special_tokens: bool = True  # for a prompt (chat templates place their own)
    add_generation_prompt: bool = True  # for messages


class TokenizeResponse(LazyModel):
    tokens: list[int]
    count: int
    max_model_len: int


class DetokenizeRequest(LazyModel):
    model_config = ConfigDict(strict=True)

    model: str | None = None
    tokens: list[TokenId]


class DetokenizeResponse(LazyModel):
    prompt: str


def bound_token_ids(spec: dict, vocab_size: int) -> None:
    """Token ids in the spec bounded by the served vocabulary, as checked_ids bounds them: /detokenize's
    tokens and the token-id forms of a completion prompt."""

    def bound(schema: dict) -> None:
        if schema.get("type") == "integer":
            schema.update(minimum=0, maximum=vocab_size - 1)
        for nested in (schema.get("items"), *schema.get("anyOf", ())):
            if isinstance(nested, dict):
                bound(nested)

    schemas = spec["components"]["schemas"]
    bound(schemas["DetokenizeRequest"]["properties"]["tokens"])
    prompt = schemas.get("CompletionRequest", {}).get("properties", {}).get("prompt")
    for form in prompt.get("anyOf", ()) if prompt else ():
        if form.get("type") == "array" and form["items"].get("type") != "string":
            bound(form)


def add_tokenize_routes(api: Operations, state: FrontState, responses: dict) -> None:
    # An app built for its spec alone (no state: tests/docs) has no vocabulary to bound ids by.
    vocab_size = getattr(getattr(state, "tokenizer", None), "vocab_size", None)
    if vocab_size:
        api.finish_spec(lambda spec: bound_token_ids(spec, vocab_size))

    @api.post("/tokenize", response_model=TokenizeResponse, responses=responses)
    async def tokenize(body: TokenizeRequest):
        if body.model is not None:
            check_model(state, body.model)
        if (body.prompt is None) == (body.messages is None):
            raise OpenAIError(400, "give exactly one of prompt and messages", "prompt", "invalid_value")
        if body.prompt is not None:
            ids = await encode_text(state, body.prompt, "prompt", add_special_tokens=body.add_special_tokens)
        else:
            ids = await chat_prompt_ids(state, body.messages, body.add_generation_prompt)
        return TokenizeResponse(tokens=ids, count=len(ids), max_model_len=state.settings.context_length)

    @api.post("/detokenize", response_model=DetokenizeResponse, responses=responses)
    async def detokenize(body: DetokenizeRequest):
        if body.model is not None:
            check_model(state, body.model)
        ids = checked_ids(state, body.tokens, "tokens")
        return DetokenizeResponse(prompt=state.tokenizer.decode(ids, skip_special_tokens=False))
