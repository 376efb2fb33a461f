"""bench/linear_rate.py counts the weights of the model it times as bench/roofline.py counts them in the
file: two independent counts of the bundled model's linears agree."""

from __future__ import annotations

from bench.linear_rate import linear_params
from bench.roofline import gguf_linear_weights
from roles.model_files.model_path import resolve_model_path
from roles.scheduler.loading.from_file import load_model
from tests.kernel_gate import needs_kernels


@needs_kernels
def test_the_timed_linears_are_every_linear_weight_of_the_file():
    model, _ = load_model("smollm2", weight_dtype="auto")
    assert linear_params(model) == gguf_linear_weights(resolve_model_path("smollm2")).params
