"""The one input of a model step: the new tokens of every scheduled sequence, flattened, plus paging metadata.

Its arrays are numpy's: the one-call kernel step reads them as they are, and the op-by-op torch model views
them as tensors (``as_torch``, no copy).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np


@dataclass
class ForwardBatch:
    """A mixed prefill/decode step over B sequences holding T new tokens in all.

    Sequence i contributes ``query_lens[i]`` new tokens (1 for decode, a chunk for prefill) that sit at
    positions ``context_lens[i] - query_lens[i] .. context_lens[i] - 1``; its earlier tokens are already
    in the paged KV cache at the pages listed in ``block_tables[i]``. A model with several attention groups
    (``roles.scheduler.kv_cache.kv_groups``) has one block table per group: ``block_tables`` and
    ``slot_mapping`` address the first group, ``more_groups[g - 1]`` group g (``paging(g)``).
    """

    input_ids: np.ndarray  # (T,) int64, sequences concatenated in order
    positions: np.ndarray  # (T,) int64 absolute positions
    query_lens: list[int]  # (B,) new tokens per sequence
    context_lens: list[int]  # (B,) cached + new tokens per sequence after this step
    block_tables: np.ndarray  # (B, max_pages) int64 page ids, padded with 0
    slot_mapping: np.ndarray  # (T,) int64 flat slot (page * page_size + offset) to write each new K/V
    logits_indices: np.ndarray  # (B,) int64 index into T of the token whose logits are sampled
    # (block tables, slot mapping) of each further attention group, shaped like the two above
    more_groups: tuple[tuple[np.ndarray, np.ndarray], ...] = ()
    # (T,) bool: the rows of sequences that rotate with longrope's long factors (``Request.long_rope``); None
    # when no row does
    long_rope_rows: np.ndarray | None = None

    def paging(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        """(block tables, slot mapping) of an attention group."""
        return (self.block_tables, self.slot_mapping) if group == 0 else self.more_groups[group - 1]

    @property
    def is_decode_only(self) -> bool:
        """Every sequence adds exactly one token (so logits_indices is 0..B-1)."""
        return self.input_ids.shape[0] == len(self.query_lens)

    def as_torch(self) -> ForwardBatch:
        """The same batch with torch tensors viewing its arrays (no copy), for the op-by-op torch model."""
        import torch

        def view(array):
            return None if array is None else torch.as_tensor(array)

        return dataclasses.replace(
            self,
            input_ids=view(self.input_ids),
            positions=view(self.positions),
            block_tables=view(self.block_tables),
            slot_mapping=view(self.slot_mapping),
            logits_indices=view(self.logits_indices),
            more_groups=tuple((view(tables), view(slots)) for tables, slots in self.more_groups),
            long_rope_rows=view(self.long_rope_rows),
        )
