"""ScheduledBatch -> ForwardBatch: the flattened tokens and paging metadata of one model step.

Built from plain Python lists, then one ``torch.tensor`` per field, which for a few hundred tokens costs
tens of microseconds, far below a model forward.
"""

from __future__ import annotations

import torch

from roles.scheduler.sched.batch_scheduler import ScheduledBatch
from roles.scheduler.sched.forward_batch import ForwardBatch


def _group_paging(
    batch: ScheduledBatch, group: int, page_size: int, page_counts: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """(block tables, slot mapping) of one attention group: only the pages covering each sequence's context,
    rows padded with the reserved page 0; the slot of every new token."""
    slots: list[int] = []
    for request, num_new in zip(batch.requests, batch.num_new_tokens, strict=True):
        start = request.num_computed_tokens
        pages = request.page_ids[group]
        if num_new == 1:  # decode: the common case, no list building
            slots.append(pages[start // page_size] * page_size + start % page_size)
        else:
            slots.extend(
                [pages[p // page_size] * page_size + p % page_size for p in range(start, start + num_new)]
            )
    width = max(page_counts)
    block_rows = [
        request.page_ids[group][:count] + [0] * (width - count)
        for request, count in zip(batch.requests, page_counts, strict=True)
    ]
    return torch.tensor(block_rows, dtype=torch.int64), torch.tensor(slots, dtype=torch.int64)


def build_forward_batch(batch: ScheduledBatch, page_size: int) -> ForwardBatch:
    input_ids: list[int] = []
    positions: list[int] = []
    query_lens: list[int] = []
    context_lens: list[int] = []
    logits_indices: list[int] = []
    num_tokens = 0
    for request, num_new in zip(batch.requests, batch.num_new_tokens, strict=True):
        start = request.num_computed_tokens
        end = start + num_new
        if num_new == 1:
            input_ids.append(request.token_ids[start])
            positions.append(start)
        else:
            input_ids.extend(request.token_ids[start:end])
            positions.extend(range(start, end))
        num_tokens += num_new
        query_lens.append(num_new)
        context_lens.append(end)
        logits_indices.append(num_tokens - 1)

    page_counts = [-(-end // page_size) for end in context_lens]
    paging = [
        _group_paging(batch, group, page_size, page_counts)
        for group in range(len(batch.requests[0].page_ids))
    ]
    return ForwardBatch(
        input_ids=torch.tensor(input_ids, dtype=torch.int64),
        positions=torch.tensor(positions, dtype=torch.int64),
        query_lens=query_lens,
        context_lens=context_lens,
        block_tables=paging[0][0],
        slot_mapping=paging[0][1],
        logits_indices=torch.tensor(logits_indices, dtype=torch.int64),
        more_groups=tuple(paging[1:]),
    )
