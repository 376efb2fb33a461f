"""ScheduledBatch -> ForwardBatch: the flattened tokens and paging metadata of one model step.

Built from plain Python lists, then one numpy array per field, which for a few hundred tokens costs
tens of microseconds, far below a model forward.

A decoding request with a speculative draft of k tokens becomes k + 1 one-token sequences over the same
pages: its last token and each drafted one, at consecutive positions, each attending to everything up to
itself. Every layer writes the step's K/V before any row attends, so together they are a causal chunk
computed exactly like k + 1 successive decodes (the same kernels, hence the same logits), with logits at
every row.

A model with several attention groups (full attention, and each sliding window) gets one block table and
slot mapping per group, from the request's pages in that group. The rows of requests past longrope's original
context are marked, to rotate with the long factors.
"""

from __future__ import annotations

import numpy as np

from roles.scheduler.sched.batch_scheduler import ScheduledBatch
from roles.scheduler.sched.forward_batch import ForwardBatch
from roles.scheduler.sched.request import Request

# One sequence of the forward: the request, the position of its first new token, how many new tokens.
_Sequence = tuple[Request, int, int]


def _group_paging(
    sequences: list[_Sequence], group: int, page_size: int, page_counts: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(block tables, slot mapping) of one attention group: only the pages covering each sequence's context,
    rows padded with the reserved page 0; the slot of every new token."""
    slots: list[int] = []
    for request, start, count in sequences:
        pages = request.page_ids[group]
        if count == 1:  # decode: the common case, no list building
            slots.append(pages[start // page_size] * page_size + start % page_size)
        else:
            slots.extend(
                [pages[p // page_size] * page_size + p % page_size for p in range(start, start + count)]
            )
    width = max(page_counts)
    block_rows = [
        request.page_ids[group][:num_pages] + [0] * (width - num_pages)
        for (request, _, _), num_pages in zip(sequences, page_counts, strict=True)
    ]
    return np.array(block_rows, dtype=np.int64), np.array(slots, dtype=np.int64)


def build_forward_batch(
    batch: ScheduledBatch, page_size: int, drafts: list[list[int]] | None = None
) -> ForwardBatch:
    """``drafts``: per scheduled request, the tokens drafted after its last one ([] for none)."""
    input_ids: list[int] = []
    sequences: list[_Sequence] = []
    for index, (request, num_new) in enumerate(zip(batch.requests, batch.num_new_tokens, strict=True)):
        start = request.num_computed_tokens
        draft = drafts[index] if drafts is not None else None
        if draft:  # a decode with a draft: one sequence per token, at consecutive positions
            input_ids.append(request.token_ids[start])
            input_ids.extend(draft)
            sequences.extend((request, start + offset, 1) for offset in range(len(draft) + 1))
        else:
            if num_new == 1:  # decode: the common case, no slice
                input_ids.append(request.token_ids[start])
            else:
                input_ids.extend(request.token_ids[start : start + num_new])
            sequences.append((request, start, num_new))

    positions: list[int] = []
    query_lens: list[int] = []
    context_lens: list[int] = []
    logits_indices: list[int] = []
    num_tokens = 0
    for _, start, count in sequences:
        if count == 1:
            positions.append(start)
        else:
            positions.extend(range(start, start + count))
        num_tokens += count
        query_lens.append(count)
        context_lens.append(start + count)
        logits_indices.append(num_tokens - 1)

    long_rope_rows = None
    if any(request.long_rope for request, _, _ in sequences):
        long_rope_rows = np.array(
            [request.long_rope for request, _, count in sequences for _ in range(count)], dtype=bool
        )
    page_counts = [-(-end // page_size) for end in context_lens]
    paging = [
        _group_paging(sequences, group, page_size, page_counts)
        for group in range(len(batch.requests[0].page_ids))
    ]
    return ForwardBatch(
        input_ids=np.array(input_ids, dtype=np.int64),
        positions=np.array(positions, dtype=np.int64),
        query_lens=query_lens,
        context_lens=context_lens,
        block_tables=paging[0][0],
        slot_mapping=paging[0][1],
        logits_indices=np.array(logits_indices, dtype=np.int64),
        more_groups=tuple(paging[1:]),
        long_rope_rows=long_rope_rows,
    )
