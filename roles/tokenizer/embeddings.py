"""POST /v1/embeddings in the OpenAI shape, served by the encoder role."""

from __future__ import annotations

import base64

import numpy as np
from pydantic import ConfigDict, Field

from roles.tokenizer.embed_client import EmbedClient
from roles.tokenizer.lazy_model import LazyModel
from roles.tokenizer.openai_errors import OpenAIError


class EmbeddingRequest(LazyModel):
    model_config = ConfigDict(extra="ignore")

    model: str
    input: str | list[str] | list[int] | list[list[int]]
    encoding_format: str = Field(default="float", pattern="^(float|base64)$")
    dimensions: int | None = Field(default=None, ge=1)
    user: str | None = None


def _split_input(value) -> tuple[list[str] | None, list[list[int]] | None]:
    if isinstance(value, str):
        return [value], None
    if not value:
        raise OpenAIError(400, "input must not be empty", "input", "invalid_value")
    if all(isinstance(v, int) for v in value):
        return None, [list(value)]
    if all(isinstance(v, list) for v in value):
        return None, [list(v) for v in value]
    return list(value), None


async def create_embeddings(client: EmbedClient | None, body: EmbeddingRequest) -> dict:
    if client is None or client.info is None:
        raise OpenAIError(
            404,
            "embeddings are not served: start the encoder role with encoder.enabled: true",
            "model",
            "model_not_found",
        )
    info = client.info
    if body.model != info.name:
        raise OpenAIError(
            404,
            f"The model `{body.model}` does not exist; embeddings come from `{info.name}`",
            "model",
            "model_not_found",
        )
    if body.dimensions is not None and body.dimensions > info.dimensions:
        raise OpenAIError(
            400,
            f"dimensions must be <= {info.dimensions} for {info.name}; got {body.dimensions}",
            "dimensions",
            "invalid_value",
        )
    texts, token_ids = _split_input(body.input)
    result = await client.embed(texts, token_ids)
    if result.error is not None:
        raise OpenAIError(400, result.error, "input", "invalid_value")
    vectors = np.frombuffer(result.vectors, dtype=np.float32).reshape(-1, result.dimensions)
    if body.dimensions is not None and body.dimensions < result.dimensions:
        # Shortened embeddings keep the leading dimensions and are re-normalised to unit length.
        vectors = vectors[:, : body.dimensions]
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    data = []
    for index, row in enumerate(vectors):
        row = np.ascontiguousarray(row, dtype=np.float32)
        embedding = (
            base64.b64encode(row.tobytes()).decode() if body.encoding_format == "base64" else row.tolist()
        )
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    usage = {"prompt_tokens": result.num_tokens, "total_tokens": result.num_tokens}
    return {"object": "list", "data": data, "model": info.name, "usage": usage}
