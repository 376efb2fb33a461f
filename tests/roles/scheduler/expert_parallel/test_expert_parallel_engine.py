"""Expert parallelism in the engine: two ranks, each holding half of every layer's experts and running its
own requests, decode exactly what one engine holding every expert decodes for all the requests."""

from __future__ import annotations

import pytest

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from tests.moe_checkpoint import write_mixtral_gguf, write_tiny_mixtral, write_tiny_qwen2_moe
from tests.roles.scheduler.expert_parallel.expert_parallel_ranks import run_ranks, small_engine_config

RANK_PROMPTS = [
    [[5, 17, 200, 3, 99, 42, 7], list(range(30, 70))],  # rank 0: a short prompt and one of 3 chunks
    [[250]],  # rank 1: one token; it idles while rank 0 still decodes
]
MAX_TOKENS = 12


def one_engine_outputs(model_path: str, prompts: list[list[int]], weight_dtype: str) -> list[list[int]]:
    config = small_engine_config(model_path, weight_dtype)
    params = SamplingFields(max_tokens=MAX_TOKENS, temperature=0.0, ignore_eos=True)
    return Engine(config).generate(prompts, params)


@pytest.mark.parametrize(
    ("family", "weight_dtype"),
    [("mixtral", "exact"), ("qwen2_moe", "exact"), ("mixtral", "int8"), ("mixtral-q4_k.gguf", "auto")],
)
def test_two_ranks_decode_what_one_engine_decodes(tmp_path, family, weight_dtype):
    if family == "mixtral-q4_k.gguf":  # each rank's shard holds its experts' Q4_K blocks
        hf = write_tiny_mixtral(tmp_path / "hf", hidden_size=256, intermediate_size=256)
        model = write_mixtral_gguf(hf, tmp_path / family, expert_type="Q4_K")
    else:
        writer = write_tiny_mixtral if family == "mixtral" else write_tiny_qwen2_moe
        model = writer(tmp_path / "model")
    ranks = run_ranks(tmp_path, model, RANK_PROMPTS, MAX_TOKENS, weight_dtype)
    alone = one_engine_outputs(str(model), [p for prompts in RANK_PROMPTS for p in prompts], weight_dtype)
    assert [outputs for rank in ranks for outputs in rank[0]] == alone
    assert ranks[0][1] == ranks[1][1]  # lock-step: the same number of passes on each rank


def test_recorded_counts_of_the_ranks_add_up_to_every_token_routed(tmp_path):
    """Each rank counts the routing of its own tokens; the balancedness of a pass is over all ranks' tokens."""
    model = write_tiny_mixtral(tmp_path / "model")
    ranks = run_ranks(tmp_path, model, RANK_PROMPTS, MAX_TOKENS, recorder_mode="stat")
    (_, passes, dump0, snap0), (_, _, dump1, snap1) = ranks
    assert dump0["pass_ids"] == dump1["pass_ids"] == list(range(passes))
    tokens = [sum(len(p) + MAX_TOKENS - 1 for p in prompts) for prompts in RANK_PROMPTS]
    top_k, layers = 2, dump0["num_layers"]
    for dump, routed_tokens in ((dump0, tokens[0]), (dump1, tokens[1])):
        assert [sum(layer) for layer in dump["logical_counts"]] == [routed_tokens * top_k] * layers
    assert snap0 == snap1  # both report the same balancedness: of every rank's tokens
