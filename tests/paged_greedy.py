"""Greedy decoding through a real KVCache with scattered pages, for model tests (no scheduler needed).

Pages are handed out round-robin across sequences so every block table is non-contiguous, and
prompts can be prefilled in chunks so later chunks attend to K/V already in the cache.
"""

from __future__ import annotations

import numpy as np
import torch

from roles.scheduler.kv_cache.paged_kv import KVCache
from roles.scheduler.sched.forward_batch import ForwardBatch


def _scattered_block_tables(lengths: list[int], page_size: int) -> tuple[torch.Tensor, int]:
    pages_needed = [-(-length // page_size) for length in lengths]
    tables: list[list[int]] = [[] for _ in lengths]
    next_page = 1  # page 0 is never handed out
    for round_index in range(max(pages_needed)):
        for seq, needed in enumerate(pages_needed):
            if round_index < needed:
                tables[seq].append(next_page)
                next_page += 1
    width = max(pages_needed)
    padded = [table + [0] * (width - len(table)) for table in tables]
    return torch.tensor(padded, dtype=torch.int64), next_page


def greedy_decode(
    model,
    shape,
    prompts: list[list[int]],
    max_new_tokens: int,
    page_size: int = 16,
    prefill_chunk: int | None = None,
) -> list[list[int]]:
    """Decode all prompts together, one ForwardBatch per step; returns the new token ids of each."""
    return _decode(model, shape, prompts, max_new_tokens, page_size, prefill_chunk, forced=None)[0]


def greedy_decode_with_logits(
    model, shape, prompts: list[list[int]], max_new_tokens: int, page_size: int = 16
) -> tuple[list[list[int]], list[torch.Tensor]]:
    """greedy_decode plus each sequence's logits at the sampled positions, (max_new_tokens, vocab)."""
    return _decode(model, shape, prompts, max_new_tokens, page_size, None, forced=None)


def forced_decode_logits(
    model,
    shape,
    prompts: list[list[int]],
    continuations: list[list[int]],
    page_size: int = 16,
    kv_dtype: np.dtype | str = np.float32,
) -> list[torch.Tensor]:
    """Like greedy_decode but feeding the given continuations (over a KV cache of ``kv_dtype``); returns each
    sequence's sampled-position logits, (len(continuation), vocab): the first from the prefill step, the rest
    from decode steps."""
    steps = len(continuations[0])
    return _decode(model, shape, prompts, steps, page_size, None, forced=continuations, kv_dtype=kv_dtype)[1]


def _decode(model, shape, prompts, max_new_tokens, page_size, prefill_chunk, forced, kv_dtype=np.float32):
    block_tables, num_pages = _scattered_block_tables([len(p) + max_new_tokens for p in prompts], page_size)
    kv = KVCache(shape, num_pages=max(num_pages, 2), page_size=page_size, dtype=kv_dtype)
    sequences = [list(p) for p in prompts]
    cached = [0] * len(prompts)
    generated: list[list[int]] = [[] for _ in prompts]
    logits_rows: list[list[torch.Tensor]] = [[] for _ in prompts]
    while any(len(g) < max_new_tokens for g in generated):
        active = [seq for seq in range(len(prompts)) if len(generated[seq]) < max_new_tokens]
        ids, positions, query_lens, context_lens, slots, logits_indices = [], [], [], [], [], []
        for seq in active:
            tokens = sequences[seq]
            end = len(tokens) if prefill_chunk is None else min(len(tokens), cached[seq] + prefill_chunk)
            new_positions = list(range(cached[seq], end))
            ids += tokens[cached[seq] : end]
            positions += new_positions
            query_lens.append(len(new_positions))
            context_lens.append(end)
            slots += [
                int(block_tables[seq, p // page_size]) * page_size + p % page_size for p in new_positions
            ]
            logits_indices.append(len(ids) - 1)
        batch = ForwardBatch(
            input_ids=torch.tensor(ids),
            positions=torch.tensor(positions),
            query_lens=query_lens,
            context_lens=context_lens,
            block_tables=block_tables[active],
            slot_mapping=torch.tensor(slots),
            logits_indices=torch.tensor(logits_indices),
        )
        logits = model(batch, kv)
        next_tokens = logits.argmax(dim=-1).tolist()
        for row, seq in enumerate(active):
            cached[seq] = context_lens[row]
            if cached[seq] == len(sequences[seq]):  # prompt fully in the cache: this token is sampled
                token = next_tokens[row] if forced is None else forced[seq][len(generated[seq])]
                sequences[seq].append(token)
                generated[seq].append(token)
                logits_rows[seq].append(logits[row])
    return generated, [torch.stack(rows) for rows in logits_rows]
