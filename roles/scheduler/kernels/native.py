"""The ctypes face of the CPU kernel library: struct mirrors of cpu_kernels.cpp and its entry points.

ctypes releases the GIL for every call. The library is found next to this file (built by setup.py during
``pip install``); ``unavailable_reason()`` says why it cannot be used, or None when it can. Weights and
buffers are numpy arrays (the torch model hands its tensors' numpy views): the module imports no torch, so
a scheduler running the one-call step alone never loads it; ``linear_forward`` and ``weight_rows``, the
op-by-op torch model's calls, import it when called.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.machinery
import importlib.util
import os
import pathlib

import numpy as np
import psutil

from roles.scheduler.kernels.isa import missing_flags, path_for

ABI_VERSION = 11
GROUP = 32
ROW_TILE = 8  # input rows a tile takes (RS_ROW_TILE, linear_kernels.h); BF16 paths round whole tiles
MAX_PARTS = 4
PACKED_TILE_ROWS = 16  # output rows a packed tile holds (RS_PACKED_COLUMNS, packed_layout.h)
# Inputs of largest magnitude each row leaves out of its int8 groups (RS_INT8_KEPT, int8_tiles.h).
INT8_KEPT = 4

_ptr = ctypes.c_void_p


class RsPart(ctypes.Structure):
    """A run of output rows in one tensor type: the rows' blocks as the checkpoint stores them."""

    _fields_ = [
        ("type", ctypes.c_int32),  # ggml type id
        ("rows", ctypes.c_int32),
        ("row_bytes", ctypes.c_int64),
        ("data", _ptr),
        ("packed", _ptr),  # its whole tiles of PACKED_TILE_ROWS rows repacked (packed_rows), or null
    ]


class RsLinear(ctypes.Structure):
    _fields_ = [
        ("n", ctypes.c_int32),
        ("k", ctypes.c_int32),
        ("num_parts", ctypes.c_int32),
        ("int8_inputs", ctypes.c_int32),  # nonzero: int8 inputs under activation dtype mixed
        ("parts", RsPart * MAX_PARTS),
    ]


class RsLayer(ctypes.Structure):
    _fields_ = [
        ("input_norm", _ptr),
        ("post_norm", _ptr),
        ("qkv", RsLinear),
        ("o", RsLinear),
        ("gate_up", RsLinear),
        ("down", RsLinear),
        ("qkv_bias", _ptr),  # null when the family has none
        ("q_norm", _ptr),
        ("k_norm", _ptr),
    ]


class RsModel(ctypes.Structure):
    _fields_ = [
        ("num_layers", ctypes.c_int32),
        ("hidden", ctypes.c_int32),
        ("intermediate", ctypes.c_int32),
        ("heads", ctypes.c_int32),
        ("kv_heads", ctypes.c_int32),
        ("head_dim", ctypes.c_int32),
        ("vocab", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("eps", ctypes.c_float),
        ("reserved2", ctypes.c_float),
        ("embed", ctypes.POINTER(RsLinear)),
        ("head", ctypes.POINTER(RsLinear)),
        ("final_norm", _ptr),
        ("layers", ctypes.POINTER(RsLayer)),
        ("inv_freq", _ptr),
    ]


class RsDecodeBatch(ctypes.Structure):
    _fields_ = [
        ("num_seqs", ctypes.c_int64),
        ("token_ids", _ptr),
        ("positions", _ptr),
        ("slots", _ptr),
        ("block_tables", _ptr),
        ("table_stride", ctypes.c_int64),
        ("page_size", ctypes.c_int64),
        ("kv", _ptr),
        ("num_slots", ctypes.c_int64),
        ("logits", _ptr),
        ("logits_rows", _ptr),  # null: every row
        ("num_logits", ctypes.c_int64),
        ("kv_half", ctypes.c_int64),  # 1: the cache holds float16, 0: float32
    ]


def _library_path() -> pathlib.Path | None:
    here = pathlib.Path(__file__).resolve().parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = here / f"_cpu_kernels{suffix}"
        if candidate.is_file():
            return candidate
    return None


def _load_openmp_runtime() -> None:
    """Loads torch's libgomp (without importing torch), when torch is installed, before the library: the
    library's libgomp.so.1 is then that one, as it is when torch was imported first, so the kernels and torch
    share one OpenMP runtime in either order, and no system libgomp is needed."""
    spec = importlib.util.find_spec("torch")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        runtime = pathlib.Path(folder) / "lib" / "libgomp.so.1"
        if runtime.is_file():
            ctypes.CDLL(str(runtime), mode=ctypes.RTLD_GLOBAL)
            return


@functools.lru_cache(maxsize=1)
def _load() -> tuple[ctypes.CDLL | None, str | None]:
    """(the library with its signatures declared, None), or (None, why it cannot be used)."""
    missing = missing_flags("avx2")
    if missing:
        return None, f"this CPU lacks {', '.join(missing)}"
    path = _library_path()
    if path is None:
        return None, "the kernel library is not built (reinstall roleserve: pip install -e .)"
    try:
        _load_openmp_runtime()
        lib = ctypes.CDLL(str(path))
    except OSError as error:
        return None, f"the kernel library does not load: {error}"
    if lib.rs_kernels_abi_version() != ABI_VERSION:
        return None, "the kernel library is stale (reinstall roleserve: pip install -e .)"
    lib.rs_linear_forward.argtypes = [ctypes.POINTER(RsLinear), _ptr, ctypes.c_int64, _ptr, ctypes.c_int32]
    lib.rs_linear_forward.restype = None
    lib.rs_weight_rows.argtypes = [ctypes.POINTER(RsLinear), _ptr, ctypes.c_int64, _ptr]
    lib.rs_weight_rows.restype = None
    lib.rs_decode_step.argtypes = [ctypes.POINTER(RsModel), ctypes.POINTER(RsDecodeBatch), ctypes.c_int32]
    lib.rs_decode_step.restype = ctypes.c_int
    lib.rs_packed_bytes.argtypes = [ctypes.c_int32, ctypes.c_int64, ctypes.c_int64]
    lib.rs_packed_bytes.restype = ctypes.c_int64
    lib.rs_pack_rows.argtypes = [ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, _ptr, _ptr, ctypes.c_int32]
    lib.rs_pack_rows.restype = None
    lib.rs_type_supported.argtypes = [ctypes.c_int32]
    lib.rs_type_supported.restype = ctypes.c_int
    for name in ("rs_isa_available", "rs_select_isa"):
        getattr(lib, name).argtypes = [ctypes.c_int32]
        getattr(lib, name).restype = ctypes.c_int
    lib.rs_isa_name.argtypes = [ctypes.c_int32]
    lib.rs_isa_name.restype = ctypes.c_char_p
    lib.rs_set_activation_dtype.argtypes = [ctypes.c_int32]
    lib.rs_set_activation_dtype.restype = None
    lib.rs_activation_dtype.restype = ctypes.c_int
    return lib, None


def unavailable_reason() -> str | None:
    return _load()[1]


def library() -> ctypes.CDLL:
    lib, reason = _load()
    if lib is None:
        raise RuntimeError(f"roleserve CPU kernels unavailable: {reason}")
    return lib


def linear_view(
    parts: list[tuple[int, np.ndarray]], in_features: int, packed: list[np.ndarray | None] | None = None
) -> RsLinear:
    """The C view of a weight whose output rows are ``parts``: (ggml type id, (rows, row bytes) uint8 blocks),
    stacked in order, and per part its packed_rows or None. The arrays must outlive the view."""
    if not 0 < len(parts) <= MAX_PARTS:
        raise ValueError(f"a kernel linear has 1 to {MAX_PARTS} parts; got {len(parts)}")
    view = RsLinear(sum(blocks.shape[0] for _, blocks in parts), in_features, len(parts), 0)
    for index, (type_id, blocks) in enumerate(parts):
        tiles = packed[index] if packed is not None else None
        view.parts[index] = RsPart(
            type_id,
            blocks.shape[0],
            blocks.strides[0],
            blocks.ctypes.data,
            None if tiles is None else tiles.ctypes.data,
        )
    return view


def packed_rows(type_id: int, blocks: np.ndarray, threads: int = 1) -> np.ndarray | None:
    """A part's whole tiles of PACKED_TILE_ROWS rows repacked for linears with integer activations
    (packed_layout.h: the blocks' codes and scales column by column), as uint8; None for a type the kernels
    take only as the file stores it, or a part of fewer than PACKED_TILE_ROWS rows. ``blocks``: (rows, row
    bytes) uint8.

    One thread unless told: parts are packed while a server starts, beside the other roles' own start-up on
    the same cores, and a team of threads waits at each part's end for whichever of them those roles have
    descheduled (on two busy cores, 2 threads took 0.29 s for the bundled model's parts, 1 thread 0.07 s)."""
    lib = library()
    rows, row_bytes = blocks.shape
    size = lib.rs_packed_bytes(type_id, rows, row_bytes) if blocks.flags.c_contiguous else 0
    if size == 0:
        return None
    out = np.empty(size, dtype=np.uint8)
    lib.rs_pack_rows(type_id, rows, row_bytes, blocks.ctypes.data, out.ctypes.data, threads)
    return out


def supports_type(type_id: int) -> bool:
    return bool(library().rs_type_supported(type_id))


def isa_paths() -> list[str]:
    """Every instruction-set path the library carries, narrowest first ("avx2", "avx512")."""
    lib = library()
    return [lib.rs_isa_name(i).decode() for i in range(lib.rs_isa_count())]


def isa_available(name: str) -> bool:
    """Whether this CPU has the instructions of path ``name``."""
    return bool(library().rs_isa_available(isa_paths().index(name)))


def selected_isa() -> str:
    """The path the kernels run: the widest path this CPU has that rounds no weight, unless select_isa chose another."""
    return isa_paths()[library().rs_selected_isa()]


def select_isa(name: str) -> None:
    """Run path ``name`` from now on (process-wide); "auto" is the widest path this CPU has that rounds no weight."""
    paths = isa_paths()
    if name == "auto":
        name = path_for("auto") or "avx2"
    if name not in paths:
        raise ValueError(f"no kernel path {name!r} (paths: {', '.join(paths)})")
    if library().rs_select_isa(paths.index(name)) != 0:
        raise ValueError(f"this CPU lacks the instructions of kernel path {name!r}")


ACTIVATION_DTYPES = ("float32", "int16", "int8", "mixed")


def activation_dtype() -> str:
    """How quantised weights multiply: float32, or int16 (int8: int8 from 16 rows where the path has int8
    tiles for the linear's types, isa.INT8_TILES, and below 16 where it has int8 row kernels for them,
    isa.INT8_ROWS; mixed: that for the linears whose view has int8_inputs set, int16 for the rest)
    activations against their integer codes."""
    return ACTIVATION_DTYPES[library().rs_activation_dtype()]


def set_activation_dtype(name: str) -> None:
    """Multiply quantised weights with ``name`` activations from now on (process-wide)."""
    if name not in ACTIVATION_DTYPES:
        raise ValueError(f"no activation dtype {name!r} (choices: {', '.join(ACTIVATION_DTYPES)})")
    library().rs_set_activation_dtype(ACTIVATION_DTYPES.index(name))


@functools.cache
def default_threads() -> int:
    """The compute threads a call takes unless set_threads chose: the physical cores this process may run on,
    counted once (the count reads /proc and /sys: ~0.1 ms, too much for every call of a step)."""
    available = len(os.sched_getaffinity(0))
    physical = psutil.cpu_count(logical=False) or available
    return max(1, min(available, physical))


_threads = [0]  # 0: default_threads()


def threads() -> int:
    return _threads[0] or default_threads()


def set_threads(count: int) -> None:
    """Every kernel call from now on runs ``count`` threads (0: default_threads()); process-wide."""
    if count < 0:
        raise ValueError(f"thread count must be >= 0; got {count}")
    _threads[0] = count


def linear_forward(weight: RsLinear, x):
    """x (M, k) float32 contiguous torch tensor -> (M, n) float32 tensor (the op-by-op torch model's call)."""
    import torch

    out = torch.empty(x.shape[0], weight.n, dtype=torch.float32)
    library().rs_linear_forward(ctypes.byref(weight), x.data_ptr(), x.shape[0], out.data_ptr(), threads())
    return out


def weight_rows(weight: RsLinear, ids):
    """ids (T,) int64 contiguous torch tensor -> (T, k) float32 tensor of the weight's rows."""
    import torch

    out = torch.empty(ids.shape[0], weight.k, dtype=torch.float32)
    library().rs_weight_rows(ctypes.byref(weight), ids.data_ptr(), ids.shape[0], out.data_ptr())
    return out


def decode_step(model: RsModel, batch: RsDecodeBatch) -> None:
    if library().rs_decode_step(ctypes.byref(model), ctypes.byref(batch), threads()) != 0:
        raise MemoryError("decode step could not allocate its scratch memory")
