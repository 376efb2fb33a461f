"""Read a GGUF file of any supported family: its shape, its tensors (float32 or raw quant blocks) and tokenizer
metadata.

Tensors come back under Hugging Face names (``model.layers.0.self_attn.q_proj.weight``) in torch layout
(out_features, in_features), with llama.cpp's Q/K row permutation undone where its converter applied it
(the ``llama`` layout), so one model code path serves GGUF and HF checkpoints alike. The family
(``roles.model_files.families``) says which names differ (Gemma 3's norms, Phi-3's fused weights) and reads its
own numbers from the metadata.

A mixture's experts are stacked in one 3-D tensor per projection (``ffn_{gate,up,down}_exps``) and read one
expert at a time under the family's HF names (Mixtral's ``block_sparse_moe.experts.<e>.w1``, Qwen's
``mlp.experts.<e>.gate_proj``).
"""

from __future__ import annotations

import math
import pathlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roles.model_files.families.family import Family
from roles.model_files.families.registry import gguf_family
from roles.model_files.gguf_file import GGUFFormatError, GGUFTensorInfo, open_gguf
from roles.model_files.model_path import ModelFileError
from roles.model_files.model_shape import ModelShape
from roles.model_files.tensor_types import BY_ID, BY_NAME, SUPPORTED_NAMES, TensorType, type_name
from roles.model_files.tokenizer_metadata import TokenizerMetadata, tokenizer_metadata_from_fields

if TYPE_CHECKING:  # numpy is imported where tensors are read (as np): the launcher reads headers only
    import numpy

_GLOBAL_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
_LAYER_NAMES = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_qkv": "self_attn.qkv_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "ffn_gate_shexp": "mlp.shared_expert.gate_proj",
    "ffn_up_shexp": "mlp.shared_expert.up_proj",
    "ffn_down_shexp": "mlp.shared_expert.down_proj",
    "ffn_gate_inp_shexp": "mlp.shared_expert_gate",
}
_EXPERT_LEAVES = {"ffn_gate_exps": "gate", "ffn_up_exps": "up", "ffn_down_exps": "down"}
_LAYER_PATTERN = re.compile(r"blk\.(\d+)\.(\w+)\.(weight|bias)")


def hf_name(gguf_name: str, family: Family) -> str | None:
    """The HF name of a GGUF tensor in ``family``'s layout, or None for tensors the model does not use."""
    if gguf_name in _GLOBAL_NAMES:
        return _GLOBAL_NAMES[gguf_name]
    match = _LAYER_PATTERN.fullmatch(gguf_name)
    if not match:
        return None
    kind = match.group(2)
    name = family.gguf_layer_names.get(kind) or _LAYER_NAMES.get(kind)
    if kind == "ffn_gate_inp" and family.moe is not None:
        name = family.moe.block + "gate"
    if name is None:
        return None
    return f"model.layers.{match.group(1)}.{name}.{match.group(3)}"


def unpermute_rope_rows(rows, num_heads: int):
    """Undo llama.cpp's Q/K permutation along dim 0 (works for float weights and raw quant block rows).

    llama.cpp stores each head's rows as interleaved pairs (x0, x_half, x1, x_half+1, ...) for its
    GPT-J-style RoPE; HF's rotate_half wants the two halves contiguous. Per head: (D/2, 2) -> (2, D/2).
    """
    import numpy as np

    head_rows = rows.shape[0] // num_heads
    if isinstance(rows, np.ndarray):
        split = rows.reshape(num_heads, head_rows // 2, 2, *rows.shape[1:])
        return np.ascontiguousarray(split.swapaxes(1, 2)).reshape(rows.shape)
    split = rows.reshape(num_heads, head_rows // 2, 2, *rows.shape[1:])
    return split.transpose(1, 2).reshape(rows.shape).contiguous()


def unsupported_type_message(path, tensor: str, type_id: int) -> str:
    return (
        f"{path}: tensor {tensor!r} has type {type_name(type_id)}, which is not supported "
        f"(supported: {', '.join(SUPPORTED_NAMES)})"
    )


@dataclass(frozen=True)
class RawQuantTensor:
    """The untouched GGUF blocks of a quantised 2-D weight, rows already un-permuted like ``tensor()``."""

    type_name: str  # "Q4_K", "Q8_0", "BF16" ... (roles.model_files.tensor_types)
    rows: int  # out_features
    cols: int  # in_features
    blocks: numpy.ndarray  # (rows, bytes_per_row) uint8

    @property
    def kind(self) -> TensorType:
        return BY_NAME[self.type_name]

    def block_view(self) -> numpy.ndarray:
        """(rows, blocks per row, bytes per block) uint8: one block per [row, group]."""
        return self.blocks.reshape(self.rows, self.cols // self.kind.block_size, self.kind.block_bytes)


class GGUFCheckpoint:
    """One opened GGUF file (memory-mapped; tensors are read lazily)."""

    def __init__(self, path: str | pathlib.Path):
        self.path = pathlib.Path(path)
        try:
            self._file = open_gguf(self.path)
        except (OSError, GGUFFormatError) as error:
            raise ModelFileError(f"{self.path} is not a readable GGUF file: {error}") from error
        self._tensors = self._file.tensors
        for info in self._tensors.values():
            if info.type_id in BY_ID and info.offset + self.tensor_nbytes(info) > self._file.size:
                raise ModelFileError(f"{self.path} is truncated: tensor {info.name!r} runs past the end")
        self.architecture = str(self.field("general.architecture"))
        experts = int(self.field(f"{self.architecture}.expert_count", 0) or 0)
        self.family = gguf_family(self.architecture, experts, str(self.path))

    @property
    def tensor_infos(self) -> dict[str, GGUFTensorInfo]:
        return self._tensors

    @property
    def file_size(self) -> int:
        return self._file.size

    @staticmethod
    def tensor_nbytes(info: GGUFTensorInfo) -> int:
        """Bytes of a tensor of a supported type."""
        kind = BY_ID[info.type_id]
        return math.prod(info.dims) // kind.block_size * kind.block_bytes

    def field(self, key: str, default=None):
        return self._file.fields.get(key, default)

    def required(self, key: str):
        value = self.field(key)
        if value is None:
            raise ModelFileError(f"{self.path}: required metadata field {key!r} is missing")
        return value

    def vector(self, gguf_name: str) -> numpy.ndarray:
        """A small 1-D tensor (rope factors) as float32 numpy, without torch."""
        from roles.model_files.dequantized import dequantized

        info = self._gguf_tensor(gguf_name)
        return dequantized(self._rows_of_bytes(info), self._supported(info)).reshape(-1)

    def shape(self) -> ModelShape:
        """The shape from the metadata names llama.cpp's converter writes, the family's own numbers included."""
        arch = self.architecture
        hidden = int(self.required(f"{arch}.embedding_length"))
        num_heads = int(self.required(f"{arch}.attention.head_count"))
        tokens = self.field("tokenizer.ggml.tokens")
        vocab = self.field(f"{arch}.vocab_size") or (len(tokens) if tokens else None)
        if vocab is None:
            vocab = int(self._gguf_tensor("token_embd.weight").dims[1])
        fields = dict(
            architecture=self.family.name,
            vocab_size=int(vocab),
            hidden_size=hidden,
            intermediate_size=int(self.required(f"{arch}.feed_forward_length")),
            num_layers=int(self.required(f"{arch}.block_count")),
            num_heads=num_heads,
            num_kv_heads=int(self.field(f"{arch}.attention.head_count_kv", num_heads)),
            head_dim=int(self.field(f"{arch}.attention.key_length", hidden // num_heads)),
            rms_norm_eps=float(self.field(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)),
            rope_theta=float(self.field(f"{arch}.rope.freq_base", 10000.0)),
            context_length=int(self.field(f"{arch}.context_length", 2048)),
            tie_word_embeddings="output.weight" not in self._tensors,
            rope_scaling=self._rope_scaling(),
            attention_bias="blk.0.attn_q.bias" in self._tensors,
        )
        fields.update(self.family.read_gguf(self))
        return ModelShape(**fields)

    def _rope_scaling(self) -> dict | None:
        kind = self.field(f"{self.architecture}.rope.scaling.type")
        if kind in (None, "none"):
            return None
        if kind == "linear":
            return {
                "rope_type": "linear",
                "factor": float(self.required(f"{self.architecture}.rope.scaling.factor")),
            }
        if kind == "longrope" and self.family.name == "phi3":
            return None  # the family reads its factors (families.phi3)
        raise ModelFileError(
            f"{self.path}: {self.architecture}.rope.scaling.type {kind!r} is not supported "
            "(supported: none, linear; Phi-3's longrope)"
        )

    def hf_tensor_names(self) -> dict[str, str]:
        """HF name -> GGUF name for every tensor the model uses."""
        names = {}
        for gguf_name in self._tensors:
            name = hf_name(gguf_name, self.family)
            if name is not None:
                names[name] = gguf_name
        return names

    def hf_expert_names(self) -> dict[str, tuple[str, int]]:
        """HF name of each expert's weight -> (GGUF name of the stacked experts' tensor, expert index)."""
        names: dict[str, tuple[str, int]] = {}
        moe = self.family.moe
        if moe is None:
            return names
        for gguf_name, info in self._tensors.items():
            match = _LAYER_PATTERN.fullmatch(gguf_name)
            if match and match.group(2) in _EXPERT_LEAVES and match.group(3) == "weight":
                leaf = getattr(moe, _EXPERT_LEAVES[match.group(2)])
                for expert in range(int(info.dims[-1])):
                    hf = f"model.layers.{match.group(1)}.{moe.block}experts.{expert}.{leaf}.weight"
                    names[hf] = (gguf_name, expert)
        return names

    def _rope_heads(self, gguf_name: str) -> int | None:
        """How many heads' rows llama.cpp's converter interleaved in this tensor (None: it left them alone)."""
        if not self.family.gguf_rope_permuted:
            return None
        if gguf_name.endswith("attn_q.weight"):
            return int(self.required(f"{self.architecture}.attention.head_count"))
        if gguf_name.endswith("attn_k.weight"):
            heads = int(self.required(f"{self.architecture}.attention.head_count"))
            return int(self.field(f"{self.architecture}.attention.head_count_kv", heads))
        return None

    def _gguf_tensor(self, gguf_name: str) -> GGUFTensorInfo:
        if gguf_name not in self._tensors:
            raise ModelFileError(f"{self.path}: tensor {gguf_name!r} is missing")
        return self._tensors[gguf_name]

    def _supported(self, info: GGUFTensorInfo) -> TensorType:
        kind = BY_ID.get(info.type_id)
        if kind is None:
            raise ModelFileError(unsupported_type_message(self.path, info.name, info.type_id))
        return kind

    def tensor_type(self, gguf_name: str) -> str:
        return type_name(self._gguf_tensor(gguf_name).type_id)

    def _rows_of_bytes(self, info: GGUFTensorInfo, expert: int | None = None) -> numpy.ndarray:
        """(rows, bytes per row) uint8 view of a 2-D (or 1-D) tensor's data in the file; of a 3-D stack of
        experts' weights, the rows of one ``expert``."""
        kind = self._supported(info)
        cols = int(info.dims[0])
        rows = math.prod(info.dims[1:]) if len(info.dims) > 1 else 1
        if cols % kind.block_size:
            raise ModelFileError(
                f"{self.path}: tensor {info.name!r} ({kind.name}) has {cols} columns, not whole blocks "
                f"of {kind.block_size}"
            )
        row_bytes = kind.row_bytes(cols)
        data = self._file.tensor_bytes(info, rows * row_bytes).reshape(rows, row_bytes)
        if expert is None:
            return data
        expert_rows = rows // int(info.dims[-1])
        return data[expert * expert_rows : (expert + 1) * expert_rows]

    def tensor(self, gguf_name: str, expert: int | None = None):
        """``array`` as a torch tensor (torch is imported here, not at module level: the tokenizer reads
        metadata and never needs it)."""
        import torch

        return torch.from_numpy(self.array(gguf_name, expert))

    def array(self, gguf_name: str, expert: int | None = None) -> numpy.ndarray:
        """A float32 array in torch layout (rows = out_features), Q/K rows un-permuted; of a 3-D stack of
        experts' weights, the weight of one ``expert``. A new array, not a view of the file."""
        import numpy as np

        from roles.model_files.dequantized import dequantized

        info = self._gguf_tensor(gguf_name)
        kind = self._supported(info)
        # GGUF lists dims innermost first; torch wants them outermost first.
        dims = info.dims if expert is None else info.dims[:-1]
        torch_shape = tuple(int(d) for d in reversed(dims))
        try:
            data = self._rows_of_bytes(info, expert)
            values = dequantized(data, kind).reshape(torch_shape)
        except Exception as error:
            raise ModelFileError(
                f"{self.path}: tensor {gguf_name!r} ({kind.name}) is unreadable: {error}"
            ) from error
        heads = self._rope_heads(gguf_name)
        if heads is not None:
            values = unpermute_rope_rows(values, heads)
        return np.array(values, dtype=np.float32, copy=True)

    def raw_tensor(self, gguf_name: str, expert: int | None = None) -> RawQuantTensor:
        """The GGUF blocks of a 2-D weight of any supported type (or of one ``expert``'s in a 3-D stack), for
        kernels that run them in place: a view of the file's map, copied only where Q/K rows are un-permuted."""
        import numpy as np

        info = self._gguf_tensor(gguf_name)
        rows, cols = int(info.dims[1]), int(info.dims[0])
        blocks = self._rows_of_bytes(info, expert)
        heads = self._rope_heads(gguf_name)
        if heads is not None:
            blocks = unpermute_rope_rows(blocks, heads)
        return RawQuantTensor(self.tensor_type(gguf_name), rows, cols, np.ascontiguousarray(blocks))

    def eos_token_ids(self) -> list[int]:
        value = self.field("tokenizer.ggml.eos_token_id")
        return [] if value is None else [int(value)]

    def tokenizer_metadata(self) -> TokenizerMetadata:
        return tokenizer_metadata_from_fields(self._file.fields, self.path)
