"""POST /tokenize and /detokenize: the served model's tokenizer, as the completion endpoints use it (a prompt,
or chat messages through the chat template), with the same checks on input."""

from __future__ import annotations

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from roles.tokenizer.front_state import FrontState
from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.request_prep import chat_prompt_ids, check_model, checked_ids, encode_text
from roles.tokenizer.schemas import ChatMessage


class TokenizeRequest(BaseModel):
    model_config = ConfigDict(strict=True)  # "1" is not a token id, 0 not a boolean

    model: str | None = None  # the served model's name when given
    prompt: str | None = None
    messages: list[ChatMessage] | None = Field(default=None, min_length=1)
    add_special_tokens: bool = True  # for a prompt (chat templates place their own)
    add_generation_prompt: bool = True  # for messages


class TokenizeResponse(BaseModel):
    tokens: list[int]
    count: int
    max_model_len: int


class DetokenizeRequest(BaseModel):
    model_config = ConfigDict(strict=True)

    model: str | None = None
    tokens: list[int]


class DetokenizeResponse(BaseModel):
    prompt: str


def add_tokenize_routes(app: FastAPI, state: FrontState, responses: dict) -> None:
    @app.post("/tokenize", response_model=TokenizeResponse, responses=responses)
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

    @app.post("/detokenize", response_model=DetokenizeResponse, responses=responses)
    async def detokenize(body: DetokenizeRequest):
        if body.model is not None:
            check_model(state, body.model)
        ids = checked_ids(state, body.tokens, "tokens")
        return DetokenizeResponse(prompt=state.tokenizer.decode(ids, skip_special_tokens=False))
