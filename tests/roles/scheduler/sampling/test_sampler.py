"""Sampler: every option changes the outcome the way it should, vectorised over mixed batches (torch is the
reference the numpy sampler is held against)."""

import pytest
import torch

from roles.protocol import SamplingFields
from roles.scheduler.sampling.penalties import apply_penalties
from roles.scheduler.sampling.sampler import Sampler, _nucleus_mask
from roles.scheduler.sched.request import Request

VOCAB = 50


def make_request(prompt=(1, 2, 3), output=(), **params) -> Request:
    request = Request("r", list(prompt), SamplingFields(**params))
    request.token_ids.extend(output)
    return request


def random_logits(rows: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, VOCAB, generator=torch.Generator().manual_seed(seed)) * 3


def draw(logits: torch.Tensor, requests: list[Request]) -> list[int]:
    return Sampler().sample(logits.clone().numpy(), requests).token_ids


def histogram(logits_row: torch.Tensor, num_draws: int = 2000, **params) -> torch.Tensor:
    """Token frequencies from sampling one distribution num_draws times in a single batch."""
    requests = [make_request(**params) for _ in range(num_draws)]
    tokens = draw(logits_row.expand(num_draws, VOCAB), requests)
    return torch.bincount(torch.tensor(tokens), minlength=VOCAB).float() / num_draws


def test_greedy_is_argmax_and_top_k_1_or_tiny_top_p_are_greedy_too():
    logits = random_logits(6)
    expected = logits.argmax(dim=-1).tolist()
    assert draw(logits, [make_request(temperature=0) for _ in range(6)]) == expected
    assert draw(logits, [make_request(temperature=1.5, top_k=1) for _ in range(6)]) == expected
    assert draw(logits, [make_request(temperature=1.5, top_p=1e-6) for _ in range(6)]) == expected
    mixed = [make_request(temperature=0), make_request(top_k=1), make_request(top_p=1e-6)] * 2
    assert draw(logits, mixed) == expected


def test_plain_sampling_follows_the_softmax_and_temperature_sharpens_it():
    logits = torch.tensor([2.0, 1.0, 0.0] + [-30.0] * (VOCAB - 3))
    frequencies = histogram(logits, num_draws=4000)
    assert torch.allclose(frequencies[:3], logits.softmax(-1)[:3], atol=0.03)
    cold = histogram(logits, num_draws=4000, temperature=0.3)
    assert cold[0] > frequencies[0] + 0.2


def test_top_k_keeps_only_the_k_most_likely_tokens():
    logits = random_logits(1)[0]
    allowed = set(logits.topk(3).indices.tolist())
    frequencies = histogram(logits, top_k=3, temperature=5.0)
    assert set(frequencies.nonzero().flatten().tolist()) == allowed


def test_top_p_keeps_the_smallest_set_reaching_the_mass():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05] + [1e-9] * (VOCAB - 4)))
    frequencies = histogram(logits, top_p=0.7)
    assert set(frequencies.nonzero().flatten().tolist()) == {0, 1}
    assert frequencies[0] == pytest.approx(0.5 / 0.8, abs=0.05)


def test_top_p_mask_matches_a_full_sort_also_when_the_nucleus_is_wide():
    # Peaked rows are decided inside the top candidates; flat rows (thousands of tokens) need the full sort.
    logits = torch.randn(6, 3000, generator=torch.Generator().manual_seed(5)) * torch.tensor(
        [[8.0], [4.0], [1.0], [0.1], [0.0], [2.0]]
    )
    probs = logits.softmax(dim=-1)
    top_ps = torch.tensor([[0.9], [0.5], [0.95], [0.3], [0.5], [1e-6]])
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    expected = torch.zeros_like(probs, dtype=torch.bool).scatter_(
        1, order, (sorted_probs.cumsum(-1) - sorted_probs) < top_ps
    )
    mask = torch.from_numpy(_nucleus_mask(probs.numpy(), top_ps.numpy()))
    untied = [0, 1, 2, 3, 5]  # row 4 is all ties, where which equal tokens are kept is arbitrary
    assert torch.equal(mask[untied], expected[untied])
    assert abs(int(mask[4].sum()) - 1500) <= 1 and mask[5].sum() == 1  # float cumsum rounding


def test_min_p_drops_tokens_below_a_fraction_of_the_best():
    logits = torch.log(torch.tensor([0.4, 0.3, 0.1, 0.05] + [0.15 / (VOCAB - 4)] * (VOCAB - 4)))
    frequencies = histogram(logits, min_p=0.2)  # threshold 0.08: keeps tokens 0, 1, 2
    assert set(frequencies.nonzero().flatten().tolist()) == {0, 1, 2}


def test_repetition_penalty_makes_seen_tokens_less_likely_on_both_signs():
    logits = torch.zeros(1, VOCAB)
    logits[0, 5], logits[0, 6], logits[0, 7] = 4.0, -1.0, 3.9
    request = make_request(prompt=[5], output=[6], temperature=0, repetition_penalty=2.0)
    assert draw(logits, [request]) == [7]
    out = logits.clone()
    Sampler().sample(out.numpy(), [request])
    assert out[0, 5:8].tolist() == pytest.approx([2.0, -2.0, 3.9])


def test_frequency_and_presence_penalties_count_only_generated_tokens():
    logits = torch.zeros(1, VOCAB)
    request = make_request(prompt=[9, 9, 9], output=[4, 4, 8], frequency_penalty=0.5, presence_penalty=0.25)
    out = logits.clone()
    Sampler().sample(out.numpy(), [request])
    assert out[0, 4].item() == pytest.approx(-1.25)  # 2 * 0.5 + 0.25
    assert out[0, 8].item() == pytest.approx(-0.75)
    assert out[0, 9].item() == 0.0  # prompt tokens are not penalised (OpenAI semantics)
    rewarding = make_request(output=[4], temperature=0, presence_penalty=-2.0)
    assert draw(logits, [rewarding]) == [4]


def test_penalties_on_a_subset_of_rows_match_a_per_token_reference():
    logits = random_logits(4, seed=11)
    requests = [
        make_request(prompt=[1, 1, 2], output=[3, 3, 3, 1], repetition_penalty=1.3, frequency_penalty=0.4),
        make_request(prompt=[5, 6], output=[], presence_penalty=1.0, frequency_penalty=-0.5),
        make_request(prompt=[7], output=[8, 9, 8], repetition_penalty=0.7, presence_penalty=0.6),
    ]
    expected = logits.clone()
    for row, request in zip([0, 2, 3], requests, strict=True):
        p = request.params
        for token in set(request.token_ids):
            value = expected[row, token]
            expected[row, token] = value / p.repetition_penalty if value > 0 else value * p.repetition_penalty
        for token in set(request.output_ids):
            count = request.output_ids.count(token)
            expected[row, token] -= p.frequency_penalty * count + p.presence_penalty
    out = logits.clone()
    apply_penalties(out.numpy(), requests, [0, 2, 3])
    assert torch.allclose(out, expected)
    assert torch.equal(out[1], logits[1])


def test_a_seeded_request_draws_the_same_tokens_in_any_batch_composition():
    logits = random_logits(1, seed=3)[0] / 3  # flat enough that draws vary

    def run(batch_size: int, position: int) -> list[int]:
        seeded = make_request(seed=1234)
        tokens = []
        for _ in range(10):
            others = [make_request(temperature=0.7) for _ in range(batch_size - 1)]
            requests = others[:position] + [seeded] + others[position:]
            tokens.append(draw(logits.expand(batch_size, VOCAB), requests)[position])
        return tokens

    alone = run(1, 0)
    assert run(5, 3) == alone == run(9, 0)
    assert len(set(alone)) > 1
    other_seed = make_request(seed=99)
    assert [draw(logits.unsqueeze(0), [other_seed])[0] for _ in range(10)] != alone


def test_logprobs_are_the_sorted_top_n_of_the_post_penalty_log_softmax():
    logits = random_logits(3, seed=7)
    requests = [
        make_request(temperature=0.5, logprobs=4),
        make_request(temperature=0),
        make_request(prompt=[int(logits[2].argmax())], temperature=0, logprobs=0, repetition_penalty=1.5),
    ]
    result = Sampler().sample(logits.clone().numpy(), requests)
    reference = logits[0].log_softmax(-1)  # pre-temperature
    sampled_logprob, top = result.logprobs[0]
    assert [t for t, _ in top] == reference.topk(4).indices.tolist()
    assert [v for _, v in top] == pytest.approx(reference.topk(4).values.tolist(), abs=1e-5)
    assert sampled_logprob == pytest.approx(reference[result.token_ids[0]].item(), abs=1e-5)
    assert result.logprobs[1] is None
    penalised = logits[2].clone()
    best = int(logits[2].argmax())
    penalised[best] = penalised[best] / 1.5 if penalised[best] > 0 else penalised[best] * 1.5
    sampled_logprob, top = result.logprobs[2]
    assert top == []
    assert sampled_logprob == pytest.approx(penalised.log_softmax(-1)[result.token_ids[2]].item(), abs=1e-5)
