"""Phi-3's longrope past ``original_max_position_embeddings`` (64 in the test checkpoint) decodes greedily
token-for-token like transformers' generate, which rotates a sequence longer than that with the long factors at
every position and drops its cache on the step that crosses it. Here a request that grows past it is recomputed
with the long factors, one that starts past it uses them from its first chunk, and long-factor pages never serve
a short-factor prefix (nor the reverse): both forms (the folder and llama.cpp's GGUF of it), and with n-gram
speculation on (drafts stopping at the crossing: ``test_speculator``).
"""

from __future__ import annotations

import pytest

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from tests.family_checkpoints import transformers_greedy, write_family_checkpoint
from tests.llama_cpp_converter import convert_to_ggufs

ORIGINAL_CONTEXT = 64
NEW_TOKENS = 40
GREEDY = SamplingFields(temperature=0, max_tokens=NEW_TOKENS, ignore_eos=True)
CROSSING = [(7 * i + 3) % 250 + 3 for i in range(40)]  # 40 + 40 tokens: crosses 64 while decoding
LONG = [(5 * i + 1) % 250 + 3 for i in range(80)]  # past 64 from the start
# Eight tokens repeated: a prompt n-gram speculation looks up drafts in.
REPEATING = [11, 23, 5, 71, 42, 9, 130, 64] * 7


@pytest.fixture(scope="module")
def windowed(tmp_path_factory):
    """(folder, F32 GGUF, transformers' continuations of CROSSING, LONG and REPEATING) for Phi-3 with a window
    of 16 and longrope."""
    root = tmp_path_factory.mktemp("phi3_longrope")
    folder = write_family_checkpoint("phi3_longrope", root / "hf")
    gguf = convert_to_ggufs(folder, {"f32": root / "phi3_longrope-f32.gguf"})["f32"]
    return str(folder), str(gguf), transformers_greedy(folder, [CROSSING, LONG, REPEATING], NEW_TOKENS)


def _engine(path: str, **overrides) -> Engine:
    settings = dict(max_running_requests=4, chunked_prefill_size=16, kv_cache_tokens=1024, page_size=8)
    return Engine(engine_config(model_path=path, weight_dtype="exact", **{**settings, **overrides}))


@pytest.mark.parametrize("form", ["hf", "gguf"])
def test_sequences_past_the_original_context_match_transformers(windowed, form):
    folder, gguf, expected = windowed
    engine = _engine(folder if form == "hf" else gguf, enable_prefix_cache=False)
    assert engine.scheduler.long_rope_from == ORIGINAL_CONTEXT
    assert engine.generate([CROSSING, LONG], GREEDY) == expected[:2]
    # CROSSING was recomputed once when it grew past 64; LONG rotated long from its first chunk
    assert engine.scheduler.num_long_rope_recomputes == 1


def test_speculation_on_keeps_the_tokens_across_the_crossing(windowed):
    folder, _, expected = windowed
    engine = _engine(
        folder, enable_prefix_cache=False, speculative_method="ngram", speculative_num_draft_tokens=4
    )
    assert engine.generate([REPEATING], GREEDY) == [expected[2]]
    assert engine.scheduler.num_long_rope_recomputes == 1


@pytest.fixture(scope="module")
def full_attention(tmp_path_factory):
    """Without a window every page of a prefix is reusable, so only the prefix-cache root keeps a short-factor
    page from serving a long sequence."""
    folder = write_family_checkpoint(
        "phi3_longrope", tmp_path_factory.mktemp("phi3_full") / "hf", sliding_window=None
    )
    grown = CROSSING + LONG[:30]  # 70 tokens: shares 5 short-factor pages with CROSSING, but rotates long
    return str(folder), transformers_greedy(folder, [CROSSING, grown, LONG], 8), grown


def test_short_and_long_factor_pages_never_serve_each_other(full_attention):
    folder, expected, grown = full_attention
    engine = _engine(folder, enable_prefix_cache=True)
    few = SamplingFields(temperature=0, max_tokens=8, ignore_eos=True)
    assert engine.generate([CROSSING], few) == [expected[0]]  # registers 5 short-factor pages
    hits = engine.stats()["num_prefix_hit_tokens"]
    assert engine.generate([grown], few) == [expected[1]]
    assert engine.stats()["num_prefix_hit_tokens"] == hits  # the short pages were not taken
    assert engine.generate([LONG], few) == [expected[2]]
    hits = engine.stats()["num_prefix_hit_tokens"]
    assert engine.generate([LONG], few) == [expected[2]]  # the long-factor pages serve the same long prompt
    assert engine.stats()["num_prefix_hit_tokens"] - hits == 72
