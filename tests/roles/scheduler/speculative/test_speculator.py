"""Speculative decoding through the whole engine step: greedy output identical with it on and off, stops in
the middle of a kept draft, KV rollback under preemption and prefix reuse, which requests speculate."""

import random

import pytest

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from roles.scheduler.loading.from_file import load_model
from tests.family_checkpoints import write_family_checkpoint
from tests.roles.scheduler.scheduler_fakes import RecallModel, expected_greedy, fake_shape, next_token_of
from tests.tiny_checkpoint import write_tiny_llama

NGRAM = dict(speculative_method="ngram", speculative_num_draft_tokens=4, speculative_ngram_min=2)


def echo_mostly(context: list[int]) -> int:
    """Repeats the token three back (n-gram drafts are kept), but something new every fifth position, so
    drafts are also rejected part-way."""
    return next_token_of(context) if len(context) % 5 == 0 else context[-3]


def recall_engine(**overrides) -> Engine:
    settings = dict(kv_cache_tokens=512, page_size=4, max_running_requests=8, chunked_prefill_size=64)
    model = RecallModel(next_token=echo_mostly)
    return Engine(engine_config(**{**settings, **NGRAM, **overrides}), (model, fake_shape()))


def prompts(count: int = 6, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(1, 64) for _ in range(n)] for n in (3, 5, 9, 14, 22, 31)[:count]]


def greedy(max_tokens: int, **fields) -> SamplingFields:
    return SamplingFields(temperature=0, max_tokens=max_tokens, ignore_eos=True, **fields)


def run(engine: Engine) -> dict[str, list]:
    outputs: dict[str, list] = {}
    for _ in range(10_000):
        if not engine.has_unfinished():
            return outputs
        for output in engine.step():
            outputs.setdefault(output.request_id, []).append(output)
    raise AssertionError("the engine did not finish")


def test_kept_and_rejected_drafts_give_the_plain_greedy_tokens_over_the_paged_cache():
    engine = recall_engine()
    outputs = engine.generate(prompts(), greedy(40))
    assert outputs == [expected_greedy(p, 40, echo_mostly) for p in prompts()]
    stats = engine.stats()
    assert 0 < stats["num_spec_accepted_tokens"] < stats["num_spec_drafted_tokens"]
    assert (
        stats["num_spec_emitted_tokens"]
        == stats["num_spec_accepted_tokens"] + stats["num_spec_verifications"]
    )
    assert stats["num_kv_pages_used"] == 0  # every page came back
    alone = recall_engine()
    assert alone.generate(prompts()[5:], greedy(40)) == [expected_greedy(prompts()[5], 40, echo_mostly)]
    # After its prefill, every row is one token: kept drafted tokens count as computed, none is recomputed.
    prefill, *decodes = alone.model.steps
    assert prefill == ([31], [31]) and all(set(query_lens) == {1} for query_lens, _ in decodes)
    assert len(decodes) < 39  # fewer steps than tokens after the first


def test_preemption_and_prefix_reuse_see_only_kept_positions():
    reference = [expected_greedy(p, 40, echo_mostly) for p in prompts()]
    tight = recall_engine(kv_cache_tokens=96)  # 24 pages for 6 requests of up to 71 tokens
    assert tight.generate(prompts(), greedy(40)) == reference
    assert tight.stats()["num_preemptions"] > 0
    engine = recall_engine()
    prompt = prompts()[5]
    output = engine.generate([prompt], greedy(40))[0]
    # The prompt and the first 25 output tokens again: their full pages come from the cache, and the
    # RecallModel reads each one back, so a page holding a rejected draft's K/V would change the output.
    longer = prompt + output[:25]
    assert engine.generate([longer], greedy(12)) == [expected_greedy(longer, 12, echo_mostly)]
    assert engine.stats()["num_prefix_hit_tokens"] == (len(longer) - 1) // 4 * 4  # 13 pages, 8 of output


def test_a_stop_inside_a_kept_draft_ends_the_request_there():
    prompt = prompts()[3]
    free_run = expected_greedy(prompt, 40, echo_mostly)
    stop_at = free_run[12]
    first = free_run.index(stop_at)
    engine = recall_engine()
    engine.add_request("stop", prompt, greedy(40, stop_token_ids=[stop_at]))
    engine.add_request("length", prompt, greedy(9))
    outputs = run(engine)
    assert [o.token_id for o in outputs["stop"]] == free_run[: first + 1]
    assert [o.finish_reason for o in outputs["stop"]] == [None] * first + ["stop"]
    assert [o.token_id for o in outputs["length"]] == free_run[:9]
    assert [o.finish_reason for o in outputs["length"]] == [None] * 8 + ["length"]
    assert engine.stats()["num_spec_accepted_tokens"] > 0


def test_eos_and_the_context_length_stop_a_speculating_request_as_they_stop_a_plain_one():
    prompt = [5, 6, 7, 5, 6]
    free_run = expected_greedy(prompt, 30, echo_mostly)
    eos = free_run[7]
    model = RecallModel(eos_token_ids=(eos,), next_token=echo_mostly)
    engine = Engine(engine_config(kv_cache_tokens=256, page_size=4, **NGRAM), (model, fake_shape()))
    assert engine.generate([prompt], SamplingFields(temperature=0, max_tokens=30)) == [
        free_run[: free_run.index(eos) + 1]
    ]
    short = Engine(
        engine_config(kv_cache_tokens=256, page_size=4, **NGRAM),
        (RecallModel(next_token=echo_mostly), fake_shape(context_length=16)),
    )
    assert short.generate([prompt], greedy(100)) == [free_run[:11]]


def test_requests_with_penalties_or_logprobs_decode_one_token_per_step():
    engine = recall_engine()
    prompt = prompts()[4]
    engine.generate([prompt], greedy(20, logprobs=2))
    engine.generate([prompt], greedy(20, presence_penalty=0.5))
    assert engine.stats()["num_spec_drafted_tokens"] == 0
    engine.generate([prompt], greedy(20))
    assert engine.stats()["num_spec_drafted_tokens"] > 0


def test_sampled_requests_speculate_and_a_seed_still_repeats_its_tokens():
    params = SamplingFields(temperature=0.7, top_k=8, seed=3, max_tokens=30, ignore_eos=True)
    first = recall_engine().generate(prompts(), params)
    engine = recall_engine()
    assert engine.generate(prompts(), params) == first
    assert all(len(tokens) == 30 for tokens in first)
    assert engine.stats()["num_spec_accepted_tokens"] > 0


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory) -> str:
    return str(write_tiny_llama(tmp_path_factory.mktemp("tiny-llama-speculative")))


def test_greedy_output_of_a_real_model_is_the_same_with_and_without_speculation(tiny_path):
    rng = random.Random(1)
    mixed = [[rng.randrange(3, 320) for _ in range(n)] for n in (4, 19, 60)]
    repetitive = [[11, 12, 13, 14, 15, 16] * 8, [40, 41, 42] * 5 + [7, 8] * 4]
    settings = dict(model_path=tiny_path, kv_cache_tokens=4096, page_size=8, max_running_requests=8)
    settings.update(chunked_prefill_size=48)
    plain = Engine(engine_config(**settings)).generate(mixed + repetitive, greedy(40))
    speculating = Engine(engine_config(**settings, **NGRAM))
    assert speculating.generate(mixed + repetitive, greedy(40)) == plain
    assert [speculating.generate([p], greedy(40))[0] for p in repetitive] == plain[-2:]
    assert speculating.stats()["num_spec_accepted_tokens"] > 0


def test_greedy_output_of_the_default_model_quoting_its_prompt_is_the_same_with_speculation():
    text = [1, 504, 3458, 2010, 3235, 355, 260, 1345, 28, 378, 1790, 314, 216, 29, 30] * 3
    model_and_shape = load_model("smollm2", weight_dtype="auto")
    settings = dict(model_path="smollm2", kv_cache_tokens=1024, max_running_requests=4)
    plain = Engine(engine_config(**settings), model_and_shape).generate([text, text[:20]], greedy(24))
    speculating = Engine(engine_config(**settings, **NGRAM), model_and_shape)
    assert speculating.generate([text, text[:20]], greedy(24)) == plain
    assert speculating.stats()["num_spec_accepted_tokens"] > 0


def test_greedy_output_of_a_model_with_sliding_windows_is_the_same_with_speculation(tmp_path):
    """Gemma 3's local layers keep only their window (8 positions) in pools of their own: drafted rows take
    pages in every pool, and pages behind the window are released while drafts are kept and rejected."""
    folder = str(write_family_checkpoint("gemma3", tmp_path / "gemma3"))
    repetitive = [[11, 12, 13, 14, 15, 16] * 6, [40, 41, 42] * 7 + [7, 8] * 4, [5, 6, 7, 8, 9] * 3]
    settings = dict(model_path=folder, kv_cache_tokens=1024, page_size=4, max_running_requests=4)
    settings.update(chunked_prefill_size=16)
    plain = Engine(engine_config(**settings)).generate(repetitive, greedy(32))
    speculating = Engine(engine_config(**settings, **NGRAM))
    assert speculating.generate(repetitive, greedy(32)) == plain
    assert speculating.stats()["num_spec_drafted_tokens"] > 0


def test_drafts_stop_where_longrope_turns_long_and_the_recompute_keeps_the_tokens():
    engine = recall_engine()
    engine.scheduler.long_rope_from = 40  # as a longrope model with an original context of 40 sets it
    prompt = prompts()[5]  # 31 tokens: crosses 40 while decoding with drafts
    assert engine.generate([prompt], greedy(30)) == [expected_greedy(prompt, 30, echo_mostly)]
    assert engine.stats()["num_spec_accepted_tokens"] > 0
    assert engine.scheduler.num_long_rope_recomputes == 1
    steps = engine.model.steps
    recompute = next(i for i, (query_lens, _) in enumerate(steps) if i > 0 and sum(query_lens) > 4)
    # Before it, no row sits at position 40 or later (context 41): a draft never runs past the crossing.
    assert max(max(context_lens) for _, context_lens in steps[:recompute]) == 40
    assert steps[recompute][1][0] <= 40 + 1 and steps[recompute][0][0] > 1
