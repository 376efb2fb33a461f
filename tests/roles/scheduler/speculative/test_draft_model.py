"""Drafting with a second model (exec.speculative_method: draft_model) through the whole engine step: greedy
output identical with and without it whatever the draft proposes, every draft kept when the draft model is
the served one, catch-ups longer than a step's budget, sliding windows, and the draft's pages given back."""

import random

import pytest

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from roles.scheduler.loading.from_file import load_model
from roles.scheduler.sched.request import Request
from roles.scheduler.speculative.draft_model import DraftModelSpeculator
from tests.family_checkpoints import write_family_checkpoint
from tests.tiny_checkpoint import write_tiny_llama


def greedy(max_tokens: int) -> SamplingFields:
    return SamplingFields(temperature=0, max_tokens=max_tokens, ignore_eos=True)


def draft_settings(draft: str, **more) -> dict:
    return dict(speculative_method="draft_model", speculative_draft_model=draft, **more)


def draft_pages_used(engine: Engine) -> int:
    return draft_pages_used_by(engine.speculator)


def draft_pages_used_by(speculator: DraftModelSpeculator) -> int:
    return sum(group.cache.num_used_pages for group in speculator.pages.groups)


def record_draft_steps(engine: Engine) -> list[list[int]]:
    """The query lengths of every forward of the engine's draft model, as they happen."""
    steps: list[list[int]] = []
    forward = engine.speculator.model.forward

    def recording(batch, kv):
        steps.append(list(batch.query_lens))
        return forward(batch, kv)

    engine.speculator.model.forward = recording
    return steps


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> tuple[str, str]:
    """(a tiny served model, another with its tokenizer: other weights and one layer)."""
    folder = tmp_path_factory.mktemp("tiny-draft-model")
    served = write_tiny_llama(folder / "served")
    other = write_tiny_llama(folder / "other", seed=1, num_hidden_layers=1)
    return str(served), str(other)


def prompts() -> list[list[int]]:
    rng = random.Random(1)
    mixed = [[rng.randrange(3, 320) for _ in range(n)] for n in (4, 19, 60, 130)]
    return mixed + [[11, 12, 13, 14, 15, 16] * 8]


@pytest.mark.parametrize("weight_dtype", ["exact", "auto"])
def test_greedy_output_is_the_same_with_a_draft_model_and_the_served_one_as_draft_keeps_every_token(
    checkpoints, weight_dtype
):
    served, other = checkpoints
    # A step's budget of 48 tokens: the 60- and 130-token prompts' catch-ups take several steps.
    settings = dict(model_path=served, kv_cache_tokens=4096, page_size=8, max_running_requests=8)
    settings.update(chunked_prefill_size=48, weight_dtype=weight_dtype)
    plain = Engine(engine_config(**settings)).generate(prompts(), greedy(40))

    itself = Engine(engine_config(**settings, **draft_settings(served)))
    assert itself.generate(prompts(), greedy(40)) == plain
    stats = itself.stats()
    assert stats["num_spec_accepted_tokens"] == stats["num_spec_drafted_tokens"] > 0
    # Every verification of k = 3 drafted tokens emits 4 tokens: well under one step per token.
    assert stats["num_spec_verifications"] < 40 * len(prompts()) / 3
    assert draft_pages_used(itself) == 0

    another = Engine(engine_config(**settings, **draft_settings(other)))
    assert another.generate(prompts(), greedy(40)) == plain
    stats = another.stats()
    assert stats["num_spec_drafted_tokens"] > stats["num_spec_accepted_tokens"]
    assert (
        stats["num_spec_emitted_tokens"]
        == stats["num_spec_accepted_tokens"] + stats["num_spec_verifications"]
    )
    assert draft_pages_used(another) == 0


def test_kept_drafted_positions_count_in_the_drafts_cache_so_a_step_catches_up_two_tokens(checkpoints):
    """After its prompt, a request whose every draft of k = 3 is kept feeds the draft two tokens a step (the
    last drafted one, never fed, and the served model's own), then one per further drafted token."""
    served, _ = checkpoints
    settings = dict(model_path=served, kv_cache_tokens=1024, page_size=8, **draft_settings(served))
    engine = Engine(engine_config(**settings))
    steps = record_draft_steps(engine)
    prompt = prompts()[1]
    engine.generate([prompt], greedy(21))
    assert steps[:3] == [[len(prompt) + 1], [1], [1]]  # the prompt and the first token, from its prefill
    # 21 tokens: the prefill's, then five steps of 3 kept drafted tokens and the served model's own.
    assert steps[3:] == [[2], [1], [1]] * 4


def test_the_bundled_model_drafting_for_itself_in_auto_keeps_every_drafted_token():
    """Its verification rows (k + 1 per request) and the draft's one-row steps compute the same bits in
    auto (int8 activations at any number of rows), so every greedy draft is kept."""
    model_and_shape = load_model("smollm2", weight_dtype="auto")
    text = [1, 504, 3458, 2010, 3235, 355, 260, 1345, 28, 378, 1790, 314, 216, 29, 30]
    settings = dict(model_path="smollm2", kv_cache_tokens=1024, max_running_requests=4)
    plain = Engine(engine_config(**settings), model_and_shape).generate([text, text[:9]], greedy(24))
    engine = Engine(engine_config(**settings, **draft_settings("smollm2")), model_and_shape)
    assert engine.generate([text, text[:9]], greedy(24)) == plain
    stats = engine.stats()
    assert stats["num_spec_accepted_tokens"] == stats["num_spec_drafted_tokens"] > 0


def test_sampled_requests_draw_their_drafts_keep_them_where_the_models_agree_and_repeat_their_seeds(
    checkpoints,
):
    """A sampled request's draft is drawn from the draft model's distribution (q) and kept with probability
    min(1, p / q): with the served model as its own draft, q is p and every drawn token is kept."""
    served, _ = checkpoints
    params = SamplingFields(temperature=1.0, seed=5, max_tokens=30, ignore_eos=True)
    settings = dict(model_path=served, kv_cache_tokens=2048, page_size=8, weight_dtype="auto")
    first = Engine(engine_config(**settings, **draft_settings(served))).generate(prompts(), params)
    engine = Engine(engine_config(**settings, **draft_settings(served)))
    assert engine.generate(prompts(), params) == first
    assert all(len(tokens) == 30 for tokens in first)
    stats = engine.stats()
    assert stats["num_spec_accepted_tokens"] == stats["num_spec_drafted_tokens"] > 0
    assert engine.speculator._drawn_from == {}  # each step's distributions went to its verification


def test_a_model_with_sliding_windows_drafts_for_itself_and_gives_its_window_pages_back(tmp_path):
    folder = str(write_family_checkpoint("gemma3", tmp_path / "gemma3"))
    repetitive = [[11, 12, 13, 14, 15, 16] * 6, [40, 41, 42] * 7 + [7, 8] * 4, [5, 6, 7, 8, 9] * 3]
    settings = dict(model_path=folder, kv_cache_tokens=1024, page_size=4, max_running_requests=4)
    settings.update(chunked_prefill_size=16)
    plain = Engine(engine_config(**settings)).generate(repetitive, greedy(32))
    engine = Engine(engine_config(**settings, **draft_settings(folder)))
    engine.add_request("long", repetitive[0], greedy(32))
    for _ in range(12):
        engine.step()
    # Mid-decode, the draft's windowed pools hold about a window's pages, not the whole sequence's.
    windowed = [group for group in engine.speculator.pages.groups if group.window]
    assert windowed and all(group.cache.num_used_pages <= group.window // 4 + 3 for group in windowed)
    engine.abort("long")
    assert draft_pages_used(engine) == 0
    assert engine.generate(repetitive, greedy(32)) == plain
    assert engine.stats()["num_spec_drafted_tokens"] > 0
    assert draft_pages_used(engine) == 0


def test_draft_model_without_a_path_is_refused_in_process(checkpoints):
    served, _ = checkpoints
    with pytest.raises(ValueError, match="needs speculative_draft_model"):
        Engine(engine_config(model_path=served, kv_cache_tokens=256, **draft_settings("")))


def test_a_served_vocabulary_padded_past_the_drafts_is_never_fed_to_the_draft(tmp_path):
    """The served model has 384 embedding rows, the draft (same tokenizer) 320: a request holding id 350
    is not drafted for, the others are, and output is the plain one."""
    served = str(write_tiny_llama(tmp_path / "served", vocab_size=384))
    draft = str(write_tiny_llama(tmp_path / "draft", seed=2))
    settings = dict(model_path=served, kv_cache_tokens=1024, page_size=8)
    padded, plain_ids = [5, 6, 350, 7] * 3, [5, 6, 300, 7] * 3
    for weight_dtype in ("exact", "auto"):
        plain = Engine(engine_config(**settings, weight_dtype=weight_dtype)).generate([padded], greedy(12))
        engine = Engine(engine_config(**settings, weight_dtype=weight_dtype, **draft_settings(draft)))
        assert engine.generate([padded], greedy(12)) == plain
        assert engine.stats()["num_spec_drafted_tokens"] == 0
        engine.generate([plain_ids], greedy(12))
        assert engine.stats()["num_spec_drafted_tokens"] > 0
        assert draft_pages_used(engine) == 0


def test_a_windowed_draft_catches_up_a_prompt_longer_than_its_pools_over_several_steps(tmp_path):
    """Gemma 3's windowed pools hold about a window and a step's chunk per request: each step reserves
    only what it writes, so a 100-token prompt (16 a step) catches up and drafts."""
    folder = str(write_family_checkpoint("gemma3", tmp_path / "gemma3"))
    prompt = [11, 12, 13, 14, 15, 16, 17, 18, 19, 20] * 10
    settings = dict(model_path=folder, kv_cache_tokens=1024, page_size=4, max_running_requests=4)
    settings.update(chunked_prefill_size=16)
    plain = Engine(engine_config(**settings)).generate([prompt], greedy(24))
    engine = Engine(engine_config(**settings, **draft_settings(folder)))
    assert engine.generate([prompt], greedy(24)) == plain
    stats = engine.stats()
    assert stats["num_spec_accepted_tokens"] == stats["num_spec_drafted_tokens"] > 0


def test_when_the_drafts_pool_is_short_idle_requests_give_their_pages_back(checkpoints):
    """A draft cache of 4 pages of 8 tokens: a 20-token request's drafting holds 3. Another request drafting
    alone in a later step (the first one waiting, preempted or decoding a token at a time) takes them."""
    served, _ = checkpoints
    config = engine_config(model_path=served, kv_cache_tokens=32, page_size=8, **draft_settings(served))
    model_and_shape = load_model(served, weight_dtype="exact")
    speculator = DraftModelSpeculator(config, model_and_shape[1], model_and_shape)
    first, second = (Request(name, prompts()[2][:20], greedy(8)) for name in ("first", "second"))
    assert len(speculator._draft([(first, 3)])[0]) == 3
    assert draft_pages_used_by(speculator) == 3
    assert len(speculator._draft([(second, 3)])[0]) == 3
    assert set(speculator._shadows) == {"second"} and draft_pages_used_by(speculator) == 3
    # Both drafting in one step: the second keeps its pages, the first finds none and gets no draft.
    assert [len(draft) for draft in speculator._draft([(second, 3), (first, 3)])] == [3, 0]
    speculator.forget("second")
    assert draft_pages_used_by(speculator) == 0
