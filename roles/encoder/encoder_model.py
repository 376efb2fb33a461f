"""The embedding model the encoder role serves: tokenizer + our BERT + pooling, loaded from one folder."""

from __future__ import annotations

import pathlib

import torch
from tokenizers import Tokenizer

from roles.encoder.bert import BertEncoder
from roles.encoder.model_folder import encoder_display_name, read_json, resolve_encoder_path
from roles.encoder.pooling import Pooling

# Rows of one forward pass are capped by padded tokens: bounds activation memory, and smaller chunks keep
# each matmul's activations in cache. Rows are length-sorted first, so the padding inside a chunk is small.
_CHUNK_TOKENS = 2048


class InputTooLong(ValueError):
    """An input with more tokens than the model takes, and truncation was not asked for."""


class EncoderModel:
    def __init__(
        self,
        name: str,
        folder: pathlib.Path,
        tokenizer: Tokenizer,
        bert: BertEncoder,
        pooling: Pooling,
        limit: int,
    ):
        self.folder = folder
        self._name = name
        self._tokenizer = tokenizer
        self._bert = bert
        self._pooling = pooling
        self._limit = limit
        self._special_suffix = _special_suffix(tokenizer)

    @classmethod
    def load(cls, path: str, threads: int | None = None) -> EncoderModel:
        """path: the alias 'all-minilm-l6-v2' or a BERT folder; threads: torch intra-op threads (process-wide)."""
        if threads:
            torch.set_num_threads(threads)
        folder = resolve_encoder_path(path)
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # tokenizer.json may carry truncation/padding settings; we need real lengths and pad ourselves.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        bert = BertEncoder.from_folder(folder)
        limit = bert.shape.max_positions
        st_config = folder / "sentence_bert_config.json"
        if st_config.is_file():
            limit = min(limit, int(read_json(st_config).get("max_seq_length") or limit))
        return cls(
            encoder_display_name(path, folder), folder, tokenizer, bert, Pooling.from_folder(folder), limit
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def max_input_tokens(self) -> int:
        return self._limit

    @property
    def dimensions(self) -> int:
        return self._pooling.dimensions(self._bert.shape.hidden_size)

    @property
    def vocab_size(self) -> int:
        return self._bert.shape.vocab_size

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Token ids with the model's special tokens ([CLS] ... [SEP]), never truncated."""
        return [encoding.ids for encoding in self._tokenizer.encode_batch(list(texts))]

    def fit_lengths(self, batch: list[list[int]], truncate: bool = False) -> list[list[int]]:
        """Raise InputTooLong for a row over max_input_tokens, or with truncate=True cut it to the limit
        keeping the trailing special tokens, as the reference tokenizer's truncation does."""
        limit, suffix = self._limit, self._special_suffix
        fitted = []
        for index, row in enumerate(batch):
            if len(row) <= limit:
                fitted.append(row)
            elif not truncate:
                raise InputTooLong(
                    f"input {index} has {len(row)} tokens; {self._name} takes at most {limit} tokens per input"
                )
            elif suffix and row[-len(suffix) :] == suffix:
                fitted.append(row[: limit - len(suffix)] + suffix)
            else:
                fitted.append(row[:limit])
        return fitted

    @torch.inference_mode()
    def embed_token_ids(self, batch: list[list[int]], truncate: bool = False) -> torch.Tensor:
        """(B, D) float32 sentence embeddings, in the order of batch."""
        rows = self.fit_lengths(batch, truncate)
        if any(len(row) == 0 for row in rows):
            raise ValueError("every input must hold at least one token")
        if rows and (min(map(min, rows)) < 0 or max(map(max, rows)) >= self.vocab_size):
            raise ValueError(f"token ids must be in [0, {self.vocab_size}) for {self._name}")
        out = torch.empty(len(rows), self.dimensions, dtype=torch.float32)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]), reverse=True)
        for chunk in _chunks_by_padded_tokens(order, rows):
            input_ids, attention_mask = _pad([rows[i] for i in chunk])
            hidden = self._bert(input_ids, attention_mask)
            out[torch.tensor(chunk)] = self._pooling(hidden, attention_mask)
        return out

    def embed_texts(self, texts: list[str], truncate: bool = False) -> torch.Tensor:
        return self.embed_token_ids(self.tokenize(texts), truncate)


def _special_suffix(tokenizer: Tokenizer) -> list[int]:
    """The special tokens the tokenizer appends after the text (BERT: [SEP]), found by encoding a probe."""
    plain = tokenizer.encode("a", add_special_tokens=False).ids
    full = tokenizer.encode("a").ids
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return full[start + len(plain) :]
    return []


def _chunks_by_padded_tokens(order: list[int], rows: list[list[int]]) -> list[list[int]]:
    """Split length-descending indices so that rows x longest row stays within _CHUNK_TOKENS."""
    chunks: list[list[int]] = []
    for index in order:
        if chunks and (len(chunks[-1]) + 1) * len(rows[chunks[-1][0]]) <= _CHUNK_TOKENS:
            chunks[-1].append(index)
        else:
            chunks.append([index])
    return chunks


def _pad(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to (B, L) input_ids and a 0/1 attention_mask, in one scatter rather than a row loop."""
    lengths = torch.tensor([len(row) for row in rows])
    attention_mask = torch.arange(int(lengths.max())) < lengths[:, None]  # (B, L) bool
    input_ids = torch.zeros(attention_mask.shape, dtype=torch.long)
    input_ids[attention_mask] = torch.tensor([t for row in rows for t in row], dtype=torch.long)
    return input_ids, attention_mask.to(torch.long)
