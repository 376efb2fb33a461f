"""The op-by-op model's attention over the paged cache (roles/scheduler/models/paged_attention.py) against
attention written out position by position, on sequences whose pages are scattered over the cache and whose
last pages are partly filled, with every slot no sequence owns holding other values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from roles.scheduler.models.paged_attention import PagedAttentionPlan
from roles.scheduler.sched.forward_batch import ForwardBatch

PAGE, KV_HEADS, GROUP, DIM, PAGES = 4, 2, 2, 8, 12
HEADS = KV_HEADS * GROUP


def batch_of(sequences: list[tuple[int, int, list[int]]]) -> ForwardBatch:
    """(new tokens, context length, pages) per sequence, in row order."""
    widest = max(len(pages) for *_, pages in sequences)
    tables = np.array([pages + [0] * (widest - len(pages)) for *_, pages in sequences], dtype=np.int64)
    positions = np.concatenate([np.arange(length - new, length) for new, length, _ in sequences])
    slots = np.concatenate(
        [
            [pages[p // PAGE] * PAGE + p % PAGE for p in range(length - new, length)]
            for new, length, pages in sequences
        ]
    )
    ends = np.cumsum([new for new, *_ in sequences])
    return ForwardBatch(
        input_ids=np.zeros(len(positions), dtype=np.int64),
        positions=positions.astype(np.int64),
        query_lens=[new for new, *_ in sequences],
        context_lens=[length for _, length, _ in sequences],
        block_tables=tables,
        slot_mapping=slots.astype(np.int64),
        logits_indices=(ends - 1).astype(np.int64),
    ).as_torch()


def written_out(q, k_cache, v_cache, sequences, scale, window) -> torch.Tensor:
    """Each query row against its sequence's keys 0..its position (and past position - window), head by head."""
    out, row = [], 0
    for new, length, pages in sequences:
        slots = [pages[p // PAGE] * PAGE + p % PAGE for p in range(length)]
        keys, values = k_cache[slots].float(), v_cache[slots].float()  # (L, KVH, D)
        for position in range(length - new, length):
            seen = [t for t in range(position + 1) if not window or t > position - window]
            heads = []
            for h in range(HEADS):
                scores = keys[seen, h // GROUP] @ q[row, h] * scale
                heads.append(torch.softmax(scores, dim=0) @ values[seen, h // GROUP])
            out.append(torch.cat(heads))
            row += 1
    return torch.stack(out)


SEQUENCES = [
    (1, 7, [5, 2]),  # decode: a full page then 3 of 4
    (1, 3, [7]),  # decode: one partly filled page, the table padded with page 0
    (3, 9, [1, 9, 4]),  # a prefill chunk of 3 after 6 cached, one token on its last page
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("window", [0, 3])
@pytest.mark.parametrize("sequences", [SEQUENCES, SEQUENCES[:2]], ids=["decode and prefill", "decode alone"])
def test_the_plan_attends_as_written_out(dtype, window, sequences):
    generator = torch.Generator().manual_seed(0)
    k_cache = (torch.randn(PAGES * PAGE, KV_HEADS, DIM, generator=generator) * 3).to(dtype)
    v_cache = (torch.randn(PAGES * PAGE, KV_HEADS, DIM, generator=generator) * 3).to(dtype)
    batch = batch_of(sequences)
    q = torch.randn(batch.input_ids.shape[0], HEADS, DIM, generator=generator)
    plan = PagedAttentionPlan(batch, PAGE, GROUP)
    got = plan.attend(q, k_cache, v_cache, DIM**-0.5, window)
    expected = written_out(q, k_cache, v_cache, sequences, DIM**-0.5, window)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_one_plan_serves_every_layer_in_turn():
    """The plan's gather buffers are reused from layer to layer: each layer's answer is its own cache's."""
    generator = torch.Generator().manual_seed(1)
    caches = [
        tuple((torch.randn(PAGES * PAGE, KV_HEADS, DIM, generator=generator) * 3).to(dtype) for _ in "kv")
        for dtype in (torch.float16, torch.float16, torch.float32)
    ]
    batch = batch_of(SEQUENCES)
    q = torch.randn(batch.input_ids.shape[0], HEADS, DIM, generator=generator)
    plan = PagedAttentionPlan(batch, PAGE, GROUP)
    answers = [plan.attend(q, k, v, DIM**-0.5) for k, v in caches]
    for (k, v), got in zip(caches, answers, strict=True):
        torch.testing.assert_close(got, written_out(q, k, v, SEQUENCES, DIM**-0.5, 0), atol=1e-5, rtol=1e-5)
