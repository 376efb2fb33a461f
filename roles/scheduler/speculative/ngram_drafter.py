"""Prompt-lookup drafting: propose what followed the latest earlier occurrence of a request's last tokens.

A request that quotes its prompt (an edit, an extraction, code that repeats its names) keeps producing runs
that already sit in its prompt + output. The suffix of its last n tokens (n from ``ngram_max`` down to
``ngram_min``) is looked up among the earlier n-grams; the tokens that followed the latest match are the
draft. No match: no draft, and the request decodes as it would without speculation.

The index is built incrementally: each step only adds the n-grams that end at the tokens appended since
the last one, so a draft costs a few dict operations whatever the request's length.
"""

from __future__ import annotations


class NgramIndex:
    """Where each n-gram of a growing token list last ended, for every n in [ngram_min, ngram_max]."""

    __slots__ = ("sizes", "ends", "num_indexed_ends")

    def __init__(self, ngram_min: int, ngram_max: int):
        if not 1 <= ngram_min <= ngram_max:
            raise ValueError(f"need 1 <= ngram_min <= ngram_max; got {ngram_min} and {ngram_max}")
        self.sizes = range(ngram_max, ngram_min - 1, -1)  # longest first: the most specific match wins
        # n-gram -> the index just past its latest occurrence; n-grams of different lengths are distinct keys.
        self.ends: dict[tuple[int, ...], int] = {}
        self.num_indexed_ends = 0  # every n-gram ending (exclusive) at <= this index is in ``ends``

    def propose(self, token_ids: list[int], num_draft_tokens: int) -> list[int]:
        """Up to ``num_draft_tokens`` tokens that followed the latest earlier occurrence of the longest
        suffix of ``token_ids`` found; [] when none of them occurred before."""
        length = len(token_ids)
        if length < 2 or num_draft_tokens < 1:
            return []
        # Index the n-grams ending before the last token: the suffix itself must not match itself.
        for end in range(self.num_indexed_ends + 1, length):
            for size in self.sizes:
                if end >= size:
                    self.ends[tuple(token_ids[end - size : end])] = end
        self.num_indexed_ends = max(self.num_indexed_ends, length - 1)
        for size in self.sizes:
            if size > length:
                continue
            end = self.ends.get(tuple(token_ids[length - size :]))
            if end is not None:
                return token_ids[end : end + num_draft_tokens]
        return []
