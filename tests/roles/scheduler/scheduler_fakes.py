"""A model-free stand-in for scheduler and engine tests that still exercises the paged KV cache for real.

``RecallModel`` writes each new token id (and position + 1) into its K slot, then reads every sequence's
whole context back through its block table. Its greedy next token is a hash of that recalled context, so
any mistake in slot mapping, block tables, chunk boundaries, prefix reuse or recompute after preemption
changes the output. ``expected_greedy`` computes the same tokens without any cache.
"""

from __future__ import annotations

import torch

from roles.model_files.model_shape import ModelShape
from roles.scheduler.kv_cache.paged_kv import KVCache
from roles.scheduler.sched.forward_batch import ForwardBatch

FAKE_VOCAB_SIZE = 64


def fake_shape(context_length: int = 4096) -> ModelShape:
    return ModelShape(
        architecture="llama",
        vocab_size=FAKE_VOCAB_SIZE,
        hidden_size=8,
        intermediate_size=8,
        num_layers=1,
        num_heads=1,
        num_kv_heads=1,
        head_dim=2,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        context_length=context_length,
        tie_word_embeddings=True,
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
    def __init__(self, eos_token_ids: tuple[int, ...] = (), next_token=next_token_of):
        """``next_token``: context -> the greedy next token (the hash above by default)."""
        self.eos_token_ids = list(eos_token_ids)
        self.next_token = next_token
        self.steps: list[tuple[list[int], list[int]]] = []  # (query_lens, context_lens) per forward

    def forward(self, batch: ForwardBatch, kv: KVCache) -> torch.Tensor:
        self.steps.append((list(batch.query_lens), list(batch.context_lens)))
        assert batch.input_ids.shape == batch.positions.shape == batch.slot_mapping.shape
        assert int(batch.slot_mapping.min()) >= kv.page_size, "page 0 is reserved and must never be written"
        new_kv = torch.stack([batch.input_ids.float(), batch.positions.float() + 1], dim=1).unsqueeze(1)
        kv.write(0, batch.slot_mapping, new_kv, new_kv)
        page_size = kv.page_size
        rows = []
        for i, context_len in enumerate(batch.context_lens):
            positions = torch.arange(context_len)
            slots = batch.block_tables[i][positions // page_size] * page_size + positions % page_size
            recalled = kv.k[0][slots, 0]
            assert torch.equal(recalled[:, 1], positions.float() + 1), (
                "context read back from the wrong slots"
            )
            context = recalled[:, 0].long().tolist()
            logits = torch.cos(torch.arange(FAKE_VOCAB_SIZE, dtype=torch.float32) * (1 + sum(context) % 5))
            logits[self.next_token(context)] = 5.0
            rows.append(logits)
        return torch.stack(rows)
