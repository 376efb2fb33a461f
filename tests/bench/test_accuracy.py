"""bench/accuracy.py feeds a model exact's tokens over a KV cache of the element type it is named by."""

import pytest

from bench.accuracy import forced_agreement
from roles.scheduler.loading.from_file import load_model
from tests.paged_greedy import greedy_decode_with_logits
from tests.roles.scheduler.models.test_auto_mode import PROMPTS


@pytest.fixture(scope="module")
def exact_and_references():
    exact, shape = load_model("smollm2", weight_dtype="exact")
    groups = [PROMPTS[:2]]
    return exact, shape, groups, [greedy_decode_with_logits(exact, shape, groups[0], 4)]


@pytest.mark.parametrize("kv_dtype", ["float32", "float16"])
def test_forced_agreement_takes_the_kv_dtype_by_name(exact_and_references, kv_dtype):
    """exact against its own greedy tokens: every position counted once; over a float32 cache, as its
    references were made, every top token is its own."""
    exact, shape, groups, references = exact_and_references
    agree, total, largest = forced_agreement(exact, shape, groups, references, kv_dtype)
    assert total == 2 * 4
    if kv_dtype == "float32":
        assert agree == total and largest < 1e-3
