"""What `memory.kv_cache_dtype: auto` stores K and V as, decided from headers only (no torch), so the launcher
derives it at resolution and `serve roles inspect` shows it with the rule that chose it.

float16 where the model's outputs already differ from exact's: the kernels run (exec.weight_dtype auto, on a
CPU they run on) with exec.activation_dtype int8, and int8 rounds the inputs of some of the file's quantised
linears on the path they take (on avx2 not Q8_0's, which run as int16 there). A float16 cache halves the bytes
a decode step's attention reads, which bounds it (32 sequences of 192 cached tokens: 58.3 -> 51.5 ms a step on
a Zen 3), and the memory a token costs, while the teacher-forced top-1 agreement with exact stays at or above
the 98% the default keeps (docs/weights-and-kernels.md). float32 everywhere else: exact, the other activation
dtypes, float weights (a Hugging Face folder, whose files are then not opened, or a float GGUF) and a Q8_0
file on avx2 stay token-identical to transformers on weights rounded alike only with a float32 cache.
"""

from __future__ import annotations

from collections.abc import Iterable

from roles.model_files.model_path import is_gguf, resolve_model_path
from roles.model_files.weight_formats import WeightTensor, model_tensors
from roles.scheduler.kernels.isa import QUANTISED_TYPES, path_for, takes_int8


def int8_rounds(tensors: Iterable[WeightTensor], kernel_path: str) -> bool:
    """Whether int8 activations round the inputs of any of the layers' quantised linears on ``kernel_path``."""
    return any(
        t.kind == "linear" and t.type_name in QUANTISED_TYPES and takes_int8(kernel_path, t.type_name)
        for t in tensors
    )


def kv_dtype_for(weight_dtype: str, kernel_path: str | None, activation_dtype: str, rounded: bool) -> str:
    """float16 where the kernels run (on ``kernel_path``) with int8 activations that round some linear's
    inputs (``rounded``: int8_rounds), else float32 (the module docstring says why)."""
    int8_runs = weight_dtype == "auto" and kernel_path is not None and activation_dtype == "int8"
    return "float16" if int8_runs and rounded else "float32"


def derived_kv_dtype(model_path: str, weight_dtype: str, kernel_isa: str, activation_dtype: str) -> str:
    """kv_dtype_for the model file at ``model_path`` on this CPU (raises ModelFileError when it is unreadable)."""
    path = path_for(kernel_isa)
    # float32 whatever the file holds: no need to read it
    if kv_dtype_for(weight_dtype, path, activation_dtype, rounded=True) == "float32":
        return "float32"
    resolved = resolve_model_path(model_path)
    if not is_gguf(resolved):  # a Hugging Face folder: float weights, which int8 does not round
        return "float32"
    return kv_dtype_for(weight_dtype, path, activation_dtype, int8_rounds(model_tensors(str(resolved)), path))
