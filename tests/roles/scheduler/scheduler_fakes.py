"""A model-free stand-in for scheduler and engine tests that still exercises the paged KV cache for real.

``RecallModel`` writes each new token id (and position + 1) into its K slot, then reads every sequence's
whole context back through its block table. Its greedy next token is a hash of that recalled context, so
any mistake in slot mapping, block tables, chunk boundaries, prefix reuse or recompute after preemption
changes the output. ``expected_greedy`` computes the same tokens without any cache.

With ``fake_shape(windows=...)`` the model has one layer per window (0: full attention, which must be the
first), so the engine gives it one pool per attention group; the model writes every pool and reads back from
each windowed pool the positions its window sees, asserting they hold the same tokens as the full context.
"""

from __future__ import annotations

import torch

from roles.model_files.model_shape import ModelShape
from roles.scheduler.kv_cache.paged_kv import GroupedKVCache, KVCache
from roles.scheduler.sched.forward_batch import ForwardBatch

FAKE_VOCAB_SIZE = 64


def fake_shape(context_length: int = 4096, windows: tuple[int, ...] = ()) -> ModelShape:
    return ModelShape(
        architecture="llama",
        vocab_size=FAKE_VOCAB_SIZE,
        hidden_size=8,
        intermediate_size=8,
        num_layers=max(1, len(windows)),
        num_heads=1,
        num_kv_heads=1,
        head_dim=2,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        context_length=context_length,
        tie_word_embeddings=True,
        layer_windows=windows,
    )


def next_token_of(context: list[int]) -> int:
    mixed = 0
    for position, token in enumerate(context):
        mixed = (mixed * 31 + (position + 1) * (token + 7)) % 1_000_003
    return mixed % FAKE_VOCAB_SIZE


def expected_greedy(prompt: list[int], num_tokens: int, next_token=next_token_of) -> list[int]:
    tokens = list(prompt)
    for _ in range(num_tokens):
        tokens.append(next_token(tokens))
    return tokens[len(prompt) :]


class RecallModel:
    def __init__(
        self, eos_token_ids: tuple[int, ...] = (), windows: tuple[int, ...] = (), next_token=next_token_of
    ):
        """``windows``: each layer's window (a windowed pool is read back through its own block tables);
        ``next_token``: context -> the greedy next token (the hash above by default)."""
        self.eos_token_ids = list(eos_token_ids)
        self.windows = windows
        self.next_token = next_token
        self.steps: list[tuple[list[int], list[int]]] = []  # (query_lens, context_lens) per forward

    def forward(self, batch: ForwardBatch, kv: KVCache | GroupedKVCache) -> torch.Tensor:
        batch = batch.as_torch()  # the engine's batch holds numpy arrays; this model reads them in torch
        self.steps.append((list(batch.query_lens), list(batch.context_lens)))
        contexts = self._recall(batch, kv.pools[0], 0, window=0)
        for group, pool in enumerate(kv.pools[1:], start=1):
            window = self.windows[pool.layers[0]]
            seen = self._recall(batch, pool, group, window)
            for context, start, recalled in zip(contexts, self._first_seen(batch, window), seen, strict=True):
                assert recalled == context[start:], "a windowed group read back the wrong tokens"
        rows = []
        for context in contexts:
            logits = torch.cos(torch.arange(FAKE_VOCAB_SIZE, dtype=torch.float32) * (1 + sum(context) % 5))
            logits[self.next_token(context)] = 5.0
            rows.append(logits)
        return torch.stack(rows)

    @staticmethod
    def _first_seen(batch: ForwardBatch, window: int) -> list[int]:
        """The first position any of this step's queries of each sequence sees through the window."""
        starts = [end - new for end, new in zip(batch.context_lens, batch.query_lens, strict=True)]
        return [max(0, start - window + 1) if window else 0 for start in starts]

    def _recall(self, batch: ForwardBatch, pool: KVCache, group: int, window: int) -> list[list[int]]:
        """Write this step's tokens into the pool, read back the positions each sequence's query sees."""
        block_tables, slot_mapping = batch.paging(group)
        assert batch.input_ids.shape == batch.positions.shape == slot_mapping.shape
        assert int(slot_mapping.min()) >= pool.page_size, "page 0 is reserved and must never be written"
        new_kv = torch.stack([batch.input_ids.float(), batch.positions.float() + 1], dim=1).unsqueeze(1)
        layer = pool.layers[0]
        pool.write(layer, slot_mapping, new_kv, new_kv)
        page_size = pool.page_size
        contexts = []
        firsts = self._first_seen(batch, window)
        for i, (first, context_len) in enumerate(zip(firsts, batch.context_lens, strict=True)):
            positions = torch.arange(first, context_len)
            slots = block_tables[i][positions // page_size] * page_size + positions % page_size
            recalled = pool.k[layer][slots, 0]
            assert torch.equal(recalled[:, 1], positions.float() + 1), (
                "context read back from the wrong slots"
            )
            contexts.append(recalled[:, 0].long().tolist())
        return contexts
