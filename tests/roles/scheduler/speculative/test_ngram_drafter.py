"""The n-gram drafter on hand-made token lists."""

import pytest

from roles.scheduler.speculative.ngram_drafter import NgramIndex


def propose(
    tokens: list[int], num_draft_tokens: int = 3, ngram_min: int = 1, ngram_max: int = 3
) -> list[int]:
    return NgramIndex(ngram_min, ngram_max).propose(tokens, num_draft_tokens)


def test_the_tokens_after_an_earlier_occurrence_of_the_suffix_are_proposed():
    assert propose([5, 6, 7, 8, 9, 1, 5, 6]) == [7, 8, 9]
    assert propose([5, 6, 7, 8, 9, 1, 5, 6], num_draft_tokens=5) == [7, 8, 9, 1, 5]


def test_the_longest_suffix_wins_over_a_later_shorter_match():
    # [1, 2] occurs at the start (followed by 3), [2] alone occurs later (followed by 9).
    assert propose([1, 2, 3, 4, 2, 9, 1, 2]) == [3, 4, 2]
    assert propose([1, 2, 3, 4, 2, 9, 1, 2], ngram_max=1) == [9, 1, 2]


def test_the_latest_occurrence_is_used_and_the_draft_stops_at_the_end():
    assert propose([7, 1, 7, 2, 7]) == [2, 7]
    assert propose([3, 3, 3]) == [3]  # the run overlaps itself: only what is known follows


def test_no_match_of_at_least_ngram_min_tokens_proposes_nothing():
    assert propose([1, 2, 3, 4], ngram_min=1) == []
    assert propose([1, 2, 9, 1, 3], ngram_min=2) == []
    assert propose([1, 2, 9, 1, 3], ngram_min=1) == []  # [3] never occurred before
    assert propose([4]) == []


def test_the_index_grows_with_the_tokens_and_answers_as_if_built_from_scratch():
    tokens = [1, 2, 3, 1, 2]
    index = NgramIndex(1, 3)
    assert index.propose(tokens, 2) == [3, 1]
    for token in (3, 1, 8, 8, 1, 2):
        tokens.append(token)
        assert index.propose(tokens, 4) == propose(tokens, 4)


def test_sizes_are_checked():
    with pytest.raises(ValueError, match="ngram_min <= ngram_max"):
        NgramIndex(3, 2)
