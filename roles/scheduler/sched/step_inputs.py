"""ScheduledBatch -> ForwardBatch: the flattened tokens and paging metadata of one model step.

Built from plain Python lists, then one ``torch.tensor`` per field, which for a few hundred tokens costs
tens of microseconds, far below a model forward.

A decoding request with a speculative draft of k tokens becomes k + 1 one-token sequences over the same
pages: its last token and each drafted one, at consecutive positions, each attending to everything up to
itself. Every layer writes the step's K/V before any row attends, so together they are a causal chunk
computed exactly like k + 1 successive decodes (the same kernels, hence the same logits), with logits at
every row.
"""

from __future__ import annotations

import torch

from roles.scheduler.sched.batch_scheduler import ScheduledBatch
from roles.scheduler.sched.forward_batch import ForwardBatch


def build_forward_batch(
    batch: ScheduledBatch, page_size: int, drafts: list[list[int]] | None = None
) -> ForwardBatch:
    """``drafts``: per scheduled request, the tokens drafted after its last one ([] for none)."""
    input_ids: list[int] = []
    positions: list[int] = []
    slots: list[int] = []
    query_lens: list[int] = []
    context_lens: list[int] = []
    logits_indices: list[int] = []
    seq_pages: list[list[int]] = []  # per sequence of the forward: the pages it reads
    num_tokens = 0
    for index, (request, num_new) in enumerate(zip(batch.requests, batch.num_new_tokens, strict=True)):
        start = request.num_computed_tokens
        end = start + num_new
        pages = request.page_ids
        draft = drafts[index] if drafts is not None else None
        if draft:  # a decode with a draft: one sequence per token, at consecutive positions
            for offset, token in enumerate([request.token_ids[start], *draft]):
                position = start + offset
                input_ids.append(token)
                positions.append(position)
                slots.append(pages[position // page_size] * page_size + position % page_size)
                num_tokens += 1
                query_lens.append(1)
                context_lens.append(position + 1)
                logits_indices.append(num_tokens - 1)
                seq_pages.append(pages)
            continue
        seq_pages.append(pages)
        if num_new == 1:  # decode: the common case, no list building
            input_ids.append(request.token_ids[start])
            positions.append(start)
            slots.append(pages[start // page_size] * page_size + start % page_size)
        else:
            input_ids.extend(request.token_ids[start:end])
            span = range(start, end)
            positions.extend(span)
            slots.extend([pages[p // page_size] * page_size + p % page_size for p in span])
        num_tokens += num_new
        query_lens.append(num_new)
        context_lens.append(end)
        logits_indices.append(num_tokens - 1)

    # Only the pages covering each sequence's context; rows padded with the reserved page 0.
    page_counts = [-(-end // page_size) for end in context_lens]
    width = max(page_counts)
    block_rows = [
        pages[:count] + [0] * (width - count) for pages, count in zip(seq_pages, page_counts, strict=True)
    ]
    return ForwardBatch(
        input_ids=torch.tensor(input_ids, dtype=torch.int64),
        positions=torch.tensor(positions, dtype=torch.int64),
        query_lens=query_lens,
        context_lens=context_lens,
        block_tables=torch.tensor(block_rows, dtype=torch.int64),
        slot_mapping=torch.tensor(slots, dtype=torch.int64),
        logits_indices=torch.tensor(logits_indices, dtype=torch.int64),
    )
