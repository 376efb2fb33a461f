"""The merges of a SentencePiece BPE vocabulary, which stores scores instead of merges.

SentencePiece (and llama.cpp's ``llama`` tokenizer) merges, at each step, the adjacent pair whose joined
text is the token with the highest score. A ranked merge list does the same when every pair of tokens
that joins into a token is listed by the joined token's score, best first. Ties are broken as transformers'
converter breaks them (longer left piece, then longer right piece, then vocabulary order), so a GGUF file
and the Hugging Face folder it came from tokenize alike.
"""

from __future__ import annotations

from collections.abc import Sequence


def sentencepiece_merges(tokens: Sequence[str], scores: Sequence[float]) -> list[tuple[str, str]]:
    ids = {token: index for index, token in enumerate(tokens)}
    ranked = []
    for merged, index in ids.items():
        for cut in range(1, len(merged)):
            left, right = merged[:cut], merged[cut:]
            left_id, right_id = ids.get(left), ids.get(right)
            if left_id is not None and right_id is not None:
                ranked.append((-scores[index], -cut, cut - len(merged), index, left_id, right_id))
    ranked.sort()
    return [(tokens[left_id], tokens[right_id]) for *_, left_id, right_id in ranked]
