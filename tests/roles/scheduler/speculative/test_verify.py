"""Draft verification: greedy keeps the longest agreeing prefix; rejection sampling against a point-mass
draft, or a draft model's distribution, emits tokens distributed exactly as the target's (checked on
frequencies over many seeded trials)."""

import math

import numpy as np

from roles.protocol import SamplingFields
from roles.scheduler.sched.request import Request
from roles.scheduler.speculative.speculator import NgramSpeculator
from roles.scheduler.speculative.verify import accept_greedy, accept_sampled


def one_hot_logits(targets: list[int], vocab: int = 8) -> np.ndarray:
    logits = np.zeros((len(targets), vocab), dtype=np.float32)
    logits[np.arange(len(targets)), targets] = 1.0
    return logits


def test_greedy_keeps_the_agreeing_prefix_and_adds_the_targets_next_token():
    assert accept_greedy(one_hot_logits([4, 5, 6, 7]), [4, 5, 6]) == [4, 5, 6, 7]  # all kept + bonus
    assert accept_greedy(one_hot_logits([4, 2, 6, 7]), [4, 5, 6]) == [4, 2]  # the correction
    assert accept_greedy(one_hot_logits([1, 5, 6, 7]), [4, 5, 6]) == [1]  # nothing kept: a plain decode


def _within(count: int, total: int, p: float) -> bool:
    """Binomial frequency within 4.5 standard deviations of p (deterministic here: seeded)."""
    return abs(count / total - p) <= 4.5 * math.sqrt(p * (1 - p) / total) + 1e-9


def test_rejection_sampling_emits_each_token_with_the_targets_probability():
    probs = np.array(
        [
            [0.10, 0.30, 0.20, 0.25, 0.15],  # row 0: the draft's first token (1) has p = 0.3
            [0.05, 0.05, 0.30, 0.50, 0.10],  # row 1: after token 1, the draft's 3 has p = 0.5
            [0.40, 0.10, 0.10, 0.10, 0.30],  # row 2: the token after both
        ]
    )
    draft = [1, 3]
    generator = np.random.default_rng(0)
    trials = 6000
    first = np.zeros(5, dtype=np.int64)
    second = np.zeros(5, dtype=np.int64)
    third = np.zeros(5, dtype=np.int64)
    for _ in range(trials):
        emitted = accept_sampled(probs, draft, generator)
        assert 1 <= len(emitted) <= 3 and emitted[:-1] == draft[: len(emitted) - 1]
        first[emitted[0]] += 1
        if emitted[0] == 1:  # the target's next distribution is row 1's, whatever the draft said
            second[emitted[1]] += 1
            if emitted[1] == 3:
                third[emitted[2]] += 1
    for counts, row in ((first, 0), (second, 1), (third, 2)):
        total = int(counts.sum())
        assert total > 400
        for token in range(5):
            assert _within(int(counts[token]), total, float(probs[row, token])), (row, counts.tolist())


def test_a_draft_the_target_rules_out_is_never_kept_and_a_certain_one_always_is():
    generator = np.random.default_rng(1)
    ruled_out = np.array([[0.5, 0.0, 0.5], [0.2, 0.3, 0.5]])
    certain = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    for _ in range(200):
        assert accept_sampled(ruled_out, [1], generator)[0] != 1
        assert accept_sampled(certain, [1], generator) == [1, 2]


def test_sampled_verification_draws_from_the_requests_filtered_distribution():
    """top_k = 2 leaves tokens 6 and 7: a drafted 3 is always rejected and only 6 or 7 are emitted."""
    speculator = NgramSpeculator(num_draft_tokens=2, ngram_min=1, ngram_max=2)
    params = SamplingFields(temperature=0.9, top_k=2, seed=5)
    request = Request("r", [1, 2, 3], params)
    logits = np.tile(np.arange(8, dtype=np.float32), (3, 1))
    seen = set()
    for _ in range(100):
        emitted = speculator.verify(request, logits.copy(), [3, 3])
        assert len(emitted) == 1
        seen.add(emitted[0])
    assert seen == {6, 7}
    assert speculator.stats()["num_spec_accepted_tokens"] == 0
    assert speculator.stats()["num_spec_drafted_tokens"] == 200


def test_rejection_sampling_against_a_draft_distribution_emits_the_targets_and_keeps_what_q_and_p_share():
    probs = np.array([[0.10, 0.30, 0.20, 0.25, 0.15], [0.40, 0.10, 0.10, 0.10, 0.30]])
    drawn_from = np.array([[0.05, 0.10, 0.60, 0.05, 0.20]])  # the draft's q at row 0
    generator = np.random.default_rng(2)
    trials = 8000
    first = np.zeros(5, dtype=np.int64)
    kept = 0
    for _ in range(trials):
        drafted = int(generator.choice(5, p=drawn_from[0] / drawn_from[0].sum()))
        emitted = accept_sampled(probs, [drafted], generator, drawn_from)
        first[emitted[0]] += 1
        kept += len(emitted) == 2
    for token in range(5):
        assert _within(int(first[token]), trials, float(probs[0, token])), first.tolist()
    # A drafted x is kept with probability min(1, p(x) / q(x)): in all, the sum of min(p, q) = 0.6.
    assert _within(kept, trials, float(np.minimum(probs[0], drawn_from[0]).sum()))
    for _ in range(100):  # q = p: every draft is kept
        drafted = int(generator.choice(5, p=probs[0] / probs[0].sum()))
        assert accept_sampled(probs, [drafted], generator, probs[:1])[0] == drafted
