"""Engine end to end on the tiny random Llama (and once on the default model): batching must not change
greedy output, plus stop conditions, logprobs and seeded sampling through the whole step loop."""

import random

import pytest

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from roles.scheduler.kernels import native
from tests.kernel_gate import needs_kernels
from tests.roles.scheduler.scheduler_fakes import RecallModel, expected_greedy, fake_shape
from tests.tiny_checkpoint import write_tiny_llama

GREEDY = SamplingFields(temperature=0, max_tokens=12, ignore_eos=True)


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory) -> str:
    return str(write_tiny_llama(tmp_path_factory.mktemp("tiny-llama")))


def tiny_engine(path: str, **overrides) -> Engine:
    settings = dict(max_running_requests=8, chunked_prefill_size=48, kv_cache_tokens=4096, page_size=8)
    return Engine(engine_config(model_path=path, **{**settings, **overrides}))


def mixed_prompts(count: int = 7, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    lengths = [1, 3, 8, 17, 40, 75, 120][:count]
    return [[rng.randrange(3, 320) for _ in range(n)] for n in lengths]


def test_batched_greedy_output_equals_each_prompt_alone(tiny_path):
    prompts = mixed_prompts()
    batched = tiny_engine(tiny_path).generate(prompts, GREEDY)  # 120-token prompt spans 3 chunks
    alone = [tiny_engine(tiny_path, enable_prefix_cache=False).generate([p], GREEDY)[0] for p in prompts]
    assert batched == alone
    assert all(len(tokens) == 12 for tokens in batched)


def test_preemption_and_prefix_reuse_keep_greedy_output_on_the_real_model(tiny_path):
    prompts = mixed_prompts()
    shared = [prompts[5] + [7, 8, 9], prompts[5] + [10]]  # 75-token shared prefix
    reference = tiny_engine(tiny_path, enable_prefix_cache=False).generate(prompts + shared, GREEDY)
    tight = tiny_engine(tiny_path, kv_cache_tokens=256)
    assert tight.generate(prompts + shared, GREEDY) == reference
    assert tight.stats()["num_preemptions"] > 0
    reuse = tiny_engine(tiny_path)
    assert [reuse.generate([p], GREEDY)[0] for p in shared] == reference[-2:]
    assert reuse.stats()["num_prefix_hit_tokens"] == 72  # 9 full pages of 8


def test_stop_tokens_max_tokens_and_eos_end_a_request_with_the_right_reason(tiny_path):
    engine = tiny_engine(tiny_path)
    prompt = mixed_prompts()[4]
    free_run = engine.generate([prompt], GREEDY)[0]
    stop_at = free_run[5]
    first = free_run.index(stop_at)
    engine.add_request("stop", prompt, SamplingFields(temperature=0, max_tokens=12, stop_token_ids=[stop_at]))
    engine.add_request("length", prompt, SamplingFields(temperature=0, max_tokens=3, ignore_eos=True))
    outputs = {}
    while engine.has_unfinished():
        for output in engine.step():
            outputs.setdefault(output.request_id, []).append(output)
    assert [o.token_id for o in outputs["stop"]] == free_run[: first + 1]
    assert outputs["stop"][-1].finish_reason == "stop" and outputs["stop"][-1].is_finished
    assert [o.finish_reason for o in outputs["length"]] == [None, None, "length"]

    eos_model = RecallModel(eos_token_ids=(expected_greedy([1, 2], 4)[2],))
    eos_engine = Engine(engine_config(kv_cache_tokens=256, page_size=4), (eos_model, fake_shape()))
    assert eos_engine.generate([[1, 2]], SamplingFields(temperature=0, max_tokens=10)) == [
        expected_greedy([1, 2], 3)
    ]
    ignoring = SamplingFields(temperature=0, max_tokens=10, ignore_eos=True)
    assert len(eos_engine.generate([[1, 2]], ignoring)[0]) == 10


def test_generation_never_runs_past_the_context_length():
    engine = Engine(
        engine_config(kv_cache_tokens=256, page_size=4), (RecallModel(), fake_shape(context_length=10))
    )
    engine.add_request("r", [1, 2, 3, 4, 5, 6], SamplingFields(temperature=0, max_tokens=100))
    outputs = []
    while engine.has_unfinished():
        outputs.extend(engine.step())
    assert len(outputs) == 4 and outputs[-1].finish_reason == "length"
    with pytest.raises(ValueError, match="prompt must be shorter than 10 tokens"):
        engine.add_request("too-long", list(range(10)), GREEDY)
    with pytest.raises(ValueError, match="token ids must be in"):
        engine.add_request("bad-id", [1, 999], GREEDY)


def test_logprobs_and_seeded_sampling_through_the_engine(tiny_path):
    prompts = mixed_prompts()
    seeded = SamplingFields(temperature=1.0, top_p=0.95, seed=7, max_tokens=10, ignore_eos=True, logprobs=3)
    others = SamplingFields(temperature=0.8, max_tokens=6, ignore_eos=True)
    alone = tiny_engine(tiny_path).generate([prompts[3]], seeded)[0]
    engine = tiny_engine(tiny_path)
    engine.add_request("seeded", prompts[3], seeded)
    for i, prompt in enumerate(prompts):
        engine.add_request(f"other-{i}", prompt, others)
    outputs = []
    while engine.has_unfinished():
        outputs.extend(o for o in engine.step() if o.request_id == "seeded")
    assert [o.token_id for o in outputs] == alone
    for output in outputs:
        values = [value for _, value in output.top_logprobs]
        assert len(values) == 3 and values == sorted(values, reverse=True)
        assert output.logprob <= 0


def test_default_model_batched_greedy_equals_alone():
    engine = Engine(engine_config(model_path="smollm2", kv_cache_tokens=1024, max_running_requests=4))
    prompts = [[1, 9690, 198, 2683, 359, 253], [1, 4093, 314, 253, 1345, 30, 378, 1790, 314, 216]]
    params = SamplingFields(temperature=0, max_tokens=6, ignore_eos=True)
    batched = engine.generate(prompts, params)
    assert batched == [engine.generate([p], params)[0] for p in prompts]


@needs_kernels
@pytest.mark.parametrize("activations", native.ACTIVATION_DTYPES)
def test_the_default_model_builds_and_generates_with_every_activation_dtype(activations):
    """Each exec.activation_dtype builds its kernels' views (packed tiles for the integer ones, none for
    float32) and generates."""
    config = engine_config(model_path="smollm2", kv_cache_tokens=512, activation_dtype=activations)
    engine = Engine(config)
    assert native.activation_dtype() == activations
    params = SamplingFields(temperature=0, max_tokens=4, ignore_eos=True)
    assert len(engine.generate([[1, 9690, 198, 2683]], params)[0]) == 4


def test_the_first_token_carries_the_queue_time_and_the_prefix_cache_counts_each_prompt_once(tiny_path):
    engine = tiny_engine(tiny_path, max_running_requests=1)
    prompt = list(range(3, 35))  # 4 pages of 8
    params = SamplingFields(temperature=0, max_tokens=2, ignore_eos=True)
    engine.add_request("first", prompt, params)
    engine.add_request("second", prompt, params)  # waits: one request runs at a time
    firsts: dict[str, object] = {}
    while engine.has_unfinished():
        for output in engine.step():
            firsts.setdefault(output.request_id, output)
    assert firsts["first"].queue_time_s >= 0
    assert firsts["second"].queue_time_s > firsts["first"].queue_time_s  # it waited for the first to end
    assert firsts["second"].num_cached_tokens == 24  # 3 full pages; the last token is always computed
    stats = engine.stats()
    assert (stats["num_prompt_tokens"], stats["num_cached_prompt_tokens"]) == (64, 24)
