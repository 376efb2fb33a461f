"""How each tensor type of a model file runs in a weight mode, read from the headers only (no torch).

The scheduler logs it at load (and names the tensors that take a slower path, with the reason), and
publishes it, so `serve roles inspect` and `/roles` show it; the launcher shows the same rows offline.
The decisions are those of the conversion (``roles.weight_format.linear_tensors``): the same
``kernel_refusal`` tells both.
"""

from __future__ import annotations

import pathlib
from collections import Counter
from dataclasses import dataclass

from roles.model_files.gguf_checkpoint import GGUFCheckpoint, hf_name
from roles.model_files.model_path import ModelFileError, is_gguf, resolve_model_path
from roles.model_files.tensor_types import INT4_GROUP, kernel_refusal, type_name


@dataclass(frozen=True)
class WeightTensor:
    name: str
    type_name: str
    cols: int  # in_features (innermost dim)
    # linear | embedding | head | router (an MoE router: float32 in every mode, routing is decided on it)
    # | vector (a norm)
    kind: str


def _kind(name: str, dims: int, embedding: str, head: str) -> str:
    if dims < 2:
        return "vector"
    if name == embedding:
        return "embedding"
    if name == head:
        return "head"
    return (
        "router" if "gate_inp" in name or name.endswith((".mlp.gate.weight", "moe.gate.weight")) else "linear"
    )


def _gguf_tensors(checkpoint: GGUFCheckpoint) -> list[WeightTensor]:
    out = []
    for name, info in checkpoint.tensor_infos.items():
        if hf_name(name, checkpoint.family) is None and "_exps." not in name:
            continue
        kind = _kind(name, len(info.dims), "token_embd.weight", "output.weight")
        out.append(WeightTensor(name, type_name(info.type_id), int(info.dims[0]), kind))
    return out


_SAFETENSORS_TYPES = {"F32": "F32", "F16": "F16", "BF16": "BF16"}


def _hf_tensors(folder: pathlib.Path) -> list[WeightTensor]:
    from safetensors import safe_open

    out = []
    for file in sorted(folder.glob("*.safetensors")):
        with safe_open(file, framework="numpy") as handle:
            for name in handle.keys():
                piece = handle.get_slice(name)
                shape, dtype = piece.get_shape(), piece.get_dtype()
                kind = _kind(name, len(shape), "model.embed_tokens.weight", "lm_head.weight")
                cols = int(shape[-1]) if shape else 1
                out.append(WeightTensor(name, _SAFETENSORS_TYPES.get(dtype, dtype), cols, kind))
    return out


_INT8 = "int8 per output channel (requantised from float32)"


def runs_as(tensor: WeightTensor, weight_dtype: str) -> tuple[str, bool]:
    """(how the tensor runs in ``weight_dtype``, whether that is a slower path than its mode's own)."""
    if tensor.kind in ("vector", "router"):
        return "float32", False
    if weight_dtype == "auto":
        refusal = kernel_refusal(tensor.type_name, tensor.cols)
        if refusal is None:
            return f"{tensor.type_name} blocks on the CPU kernels", False
        return f"float32, op by op ({refusal})", True
    if weight_dtype == "exact":
        return "float32, dequantised", False
    if tensor.kind == "embedding":  # int8 / int4: float32 lookups; a tied head is an int8 copy of it
        return "float32 lookups (the head, when tied: int8 per output channel)", False
    if tensor.kind == "head":  # kept at 8 bits as the files keep it
        return _INT8, False
    if weight_dtype == "int4" and tensor.cols % INT4_GROUP == 0:
        kept = "the file's own Q4_1 blocks" if tensor.type_name == "Q4_1" else "requantised from float32"
        return f"int4 groups of {INT4_GROUP} ({kept})", False
    return _INT8, False


@dataclass(frozen=True)
class FormatRow:
    type_name: str
    tensors: int
    runs_as: str
    slower: bool

    def as_fact(self) -> dict:
        return {"type": self.type_name, "tensors": self.tensors, "runs_as": self.runs_as}


def model_tensors(path: str) -> list[WeightTensor]:
    resolved = resolve_model_path(path)
    if is_gguf(resolved):
        return _gguf_tensors(GGUFCheckpoint(resolved))
    return _hf_tensors(resolved)


def format_rows(tensors: list[WeightTensor], weight_dtype: str) -> list[FormatRow]:
    """One row per (tensor type, way it runs), with the count of the model's tensors in it."""
    counts: Counter = Counter()
    for tensor in tensors:
        counts[(tensor.type_name, *runs_as(tensor, weight_dtype))] += 1
    return [FormatRow(t, n, how, slower) for (t, how, slower), n in sorted(counts.items())]


def slower_tensors(tensors: list[WeightTensor], weight_dtype: str) -> list[tuple[str, str]]:
    """(tensor name, how it runs) of every tensor on a slower path than its mode's own."""
    out = []
    for tensor in tensors:
        how, slower = runs_as(tensor, weight_dtype)
        if slower:
            out.append((tensor.name, how))
    return out


def weight_format_facts(path: str, weight_dtype: str) -> list[dict] | str:
    """The rows as inspect shows them, or why the file cannot be read."""
    try:
        return [row.as_fact() for row in format_rows(model_tensors(path), weight_dtype)]
    except (ModelFileError, OSError, ValueError) as error:
        return f"unreadable: {error}"
