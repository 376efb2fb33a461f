"""The kernels' instruction-set paths and the CPU flags each needs, read from /proc/cpuinfo: torch-free, so
the launcher can refuse a forced path the CPU lacks before anything starts. The library itself chooses from
CPUID (dispatch.cpp); the two agree on what each path needs."""

from __future__ import annotations

import functools
import pathlib

from roles.model_files.tensor_types import BY_NAME

# Narrowest first; the library's paths in the same order (native.isa_paths()).
ISA_FLAGS = {
    "avx2": frozenset({"avx2", "fma", "f16c"}),
    "avx512": frozenset({"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl"}),
    "avx512vnni": frozenset(
        {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"}
    ),
    "avx512bf16": frozenset(
        {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni", "avx512_bf16"}
    ),
}


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def missing_flags(path: str) -> list[str]:
    """The flags of kernel path ``path`` this CPU lacks (empty when it has them all)."""
    return sorted(ISA_FLAGS[path] - cpu_flags())


# Paths that round to bfloat16 (batched linears): chosen only by setting, never by auto, whose paths round no
# weight, so batching moves a sequence's logits by no more than the order of a sum's float additions.
# dispatch.cpp's widest() agrees.
ROUNDS_TO_BF16 = frozenset({"avx512bf16"})

# Every tensor type with integer codes, in the tensor-type table's order.
QUANTISED_TYPES = tuple(name for name, row in BY_NAME.items() if not row.is_float)

# What exec.activation_dtype int8 runs on each path: linears of 16 rows or more whose quantised parts are all
# of the types named (None: every quantised type) take int8 activations (int8_tiles.h: vpdpbusd with
# AVX512_VNNI, vpmaddubsw on avx2, whose codes must fit 6 bits); every other call runs as int16.
INT8_TILES: dict[str, frozenset[str] | None] = {
    "avx2": frozenset({"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"}),
    "avx512vnni": None,
    "avx512bf16": None,
}

# The linears exec.activation_dtype mixed gives int8 inputs: by their module's name, the attention's output
# projection and the MLP's down projection. Rounding only their inputs to int8 kept 99.2% teacher-forced
# top-1 agreement with exact on the bundled model, where Q/K/V and gate/up fell below 98%
# (bench/activation_rounding.py --kinds o_proj+down_proj; docs/weights-and-kernels.md).
INT8_INPUT_KINDS = ("o_proj", "down_proj")


# Below 16 rows, the types whose packed tiles the path multiplies with int8 rows (int8_packed_rows.h): avx2's
# int8 types but Q2_K and Q3_K, which have no packed form; every other call of fewer than 16 rows runs as
# int16. Where a type takes int8 at every number of rows, a row's outputs do not depend on its call's others.
INT8_ROWS: dict[str, frozenset[str]] = {"avx2": INT8_TILES["avx2"] - {"Q2_K", "Q3_K"}}


def takes_int8(path: str, type_name: str, rows: int = 16) -> bool:
    """Whether a linear call of ``rows`` rows of quantised type ``type_name`` takes int8 activations on
    ``path`` when exec.activation_dtype is int8."""
    if rows < 16:
        return type_name in INT8_ROWS.get(path, ())
    if path not in INT8_TILES:
        return False
    types = INT8_TILES[path]
    return types is None or type_name in types


def paths_this_cpu_has() -> list[str]:
    return [path for path in ISA_FLAGS if not missing_flags(path)]


def path_for(setting: str) -> str | None:
    """The path exec.kernel_isa ``setting`` runs on this CPU (None: the kernels cannot run here)."""
    have = paths_this_cpu_has()
    if setting == "auto":
        exact_sums = [path for path in have if path not in ROUNDS_TO_BF16]
        return exact_sums[-1] if exact_sums else None
    return setting if setting in have else None


def activations_in_effect(activations: str, path: str) -> str:
    """What exec.activation_dtype does on ``path``: int8 takes calls of 16 rows or more where the path has
    int8 tiles for the linear's types, calls of fewer where it has int8 row kernels for them (INT8_ROWS), and
    runs as int16 elsewhere."""
    if activations not in ("int8", "mixed"):
        return activations
    if path not in INT8_TILES:
        return "int16 (int8 tiles: avx2, avx512vnni)"
    if INT8_TILES[path] is None:
        int8 = "int8 from 16 rows, int16 below"
    else:
        others = ", ".join(name for name in QUANTISED_TYPES if name not in INT8_TILES[path])
        unpacked = ", ".join(sorted(INT8_TILES[path] - INT8_ROWS.get(path, frozenset())))
        int8 = (
            f"int8 from 16 rows where the quantised parts' codes fit 6 bits (not {others}), and below 16 "
            f"where they also pack (not {unpacked}); int16 else"
        )
    return int8 if activations == "int8" else f"{', '.join(INT8_INPUT_KINDS)}: {int8}; the rest int16"


def kernel_path_fact(
    setting: str, weight_dtype: str, path: str | None, have: list[str], activations: str
) -> list[dict]:
    """The scheduler's inspect row for its kernels: the path it runs and why, the paths this CPU has, and
    how quantised weights multiply (exec.activation_dtype). Only exec.weight_dtype auto runs the kernels
    (exact, int8 and int4 are torch's)."""
    if weight_dtype != "auto":
        path, why = None, f"unused: exec.weight_dtype {weight_dtype} runs on torch"
    elif path is None:
        why = "unusable here: exact float32 instead"
    else:
        why = f"exec.kernel_isa {setting}: " + (
            "the widest path with float32 sums" if setting == "auto" else "forced"
        )
    multiply = f"{activations_in_effect(activations, path)} (quantised weights)" if path else "unused"
    return [
        {
            "path": path or "none",
            "chosen_by": why,
            "cpu_has": ", ".join(have) or "none",
            "activations": multiply,
        }
    ]
