"""The success bodies of the routes that are not completions, as /openapi.json declares them (declared only:
each route builds its own dict; tests/e2e/test_openapi_contract.py checks every answer against them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from roles.tokenizer.lazy_model import LazyModel


class ModelCard(LazyModel):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    max_model_len: int = Field(description="the context length; an encoder's longest input")
    dimensions: int | None = Field(default=None, description="an embedding model's vector size")


class ModelList(LazyModel):
    object: Literal["list"]
    data: list[ModelCard]


class Embedding(LazyModel):
    object: Literal["embedding"]
    index: int
    embedding: list[float] | str = Field(
        description="floats, or with encoding_format base64 little-endian float32"
    )


class EmbeddingUsage(LazyModel):
    prompt_tokens: int
    total_tokens: int


class EmbeddingList(LazyModel):
    object: Literal["list"]
    data: list[Embedding]
    model: str
    usage: EmbeddingUsage


class PublishedLeaf(LazyModel):
    key: str
    value: Any = Field(description="*** for a secret; withheld when the process does not hold the leaf")
    source: str


class RecordedRead(LazyModel):
    role: str
    namespace: str
    leaf: str
    site: str
    count: int


class AppliedOverride(LazyModel):
    source: str
    key: str
    old: Any
    new: Any
    caller: str
    at: float


class LiveProcess(LazyModel):
    """What one running process published, as `serve roles inspect --live` shows it."""

    role: str | None
    instance: int | None
    pid: int | None
    published_at: float | None
    fingerprint: str
    mode: str
    projection: list[str]
    leaves: list[PublishedLeaf]
    overrides: list[AppliedOverride]
    reads: list[RecordedRead]
    facts: dict[str, Any] = {}  # what the process built from its config (the scheduler: weight formats)


class LiveRoles(LazyModel):
    processes: list[LiveProcess]
    at: float
