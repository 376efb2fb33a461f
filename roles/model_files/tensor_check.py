"""What in a model file would stop it loading, found from its header before any process starts.

A GGUF is checked tensor by tensor against the shape its metadata declares: every tensor the model needs is
there, has the dims the shape implies, is of a type roleserve runs (``tensor_types``), holds whole blocks
and lies inside the file. A Hugging Face folder's tensors must be float32, float16 or bfloat16. Reading
tensor data is left to the loaders: nothing here touches more than headers.
"""

from __future__ import annotations

import pathlib

from roles.model_files.families.family import Family
from roles.model_files.families.registry import family_named
from roles.model_files.gguf_checkpoint import GGUFCheckpoint, unsupported_type_message
from roles.model_files.hf_config import hf_shape
from roles.model_files.model_path import ModelFileError, is_gguf, resolve_model_path
from roles.model_files.model_shape import ModelShape
from roles.model_files.tensor_types import BY_ID

MAX_REPORTED = 5


def _expected_gguf_dims(shape: ModelShape, family: Family) -> dict[str, tuple[int, ...]]:
    """GGUF name -> dims (innermost first, as GGUF lists them) of every tensor the family's model reads."""
    hidden, q, kv = shape.hidden_size, shape.num_heads * shape.head_dim, shape.num_kv_heads * shape.head_dim
    dims = {"token_embd.weight": (hidden, shape.vocab_size), "output_norm.weight": (hidden,)}
    if not shape.tie_word_embeddings:
        dims["output.weight"] = (hidden, shape.vocab_size)
    for layer in range(shape.num_layers):
        blk = f"blk.{layer}."
        dims[blk + "attn_norm.weight"] = (hidden,)
        dims[blk + "ffn_norm.weight"] = (hidden,)
        dims[blk + "attn_output.weight"] = (q, hidden)
        if family.fused_qkv:
            dims[blk + "attn_qkv.weight"] = (hidden, q + 2 * kv)
        else:
            dims.update({blk + "attn_q.weight": (hidden, q), blk + "attn_k.weight": (hidden, kv)})
            dims[blk + "attn_v.weight"] = (hidden, kv)
        if shape.attention_bias:
            dims.update({blk + "attn_q.bias": (q,), blk + "attn_k.bias": (kv,), blk + "attn_v.bias": (kv,)})
        if family.qk_norm:
            dims.update(
                {blk + "attn_q_norm.weight": (shape.head_dim,), blk + "attn_k_norm.weight": (shape.head_dim,)}
            )
        if family.sandwich_norms:
            dims.update(
                {blk + "post_attention_norm.weight": (hidden,), blk + "post_ffw_norm.weight": (hidden,)}
            )
        if shape.is_moe:
            inter, experts = shape.moe_intermediate_size, shape.num_experts
            dims.update(
                {
                    blk + "ffn_gate_inp.weight": (hidden, experts),
                    blk + "ffn_gate_exps.weight": (hidden, inter, experts),
                    blk + "ffn_up_exps.weight": (hidden, inter, experts),
                    blk + "ffn_down_exps.weight": (inter, hidden, experts),
                }
            )
            shared = shape.shared_expert_intermediate_size
            if shared:
                dims.update(
                    {
                        blk + "ffn_gate_inp_shexp.weight": (hidden,),
                        blk + "ffn_gate_shexp.weight": (hidden, shared),
                        blk + "ffn_up_shexp.weight": (hidden, shared),
                        blk + "ffn_down_shexp.weight": (shared, hidden),
                    }
                )
        elif family.fused_qkv:
            inter = shape.intermediate_size
            dims.update(
                {blk + "ffn_up.weight": (hidden, 2 * inter), blk + "ffn_down.weight": (inter, hidden)}
            )
        else:
            inter = shape.intermediate_size
            dims.update(
                {
                    blk + "ffn_gate.weight": (hidden, inter),
                    blk + "ffn_up.weight": (hidden, inter),
                    blk + "ffn_down.weight": (inter, hidden),
                }
            )
    return dims


def gguf_problems(checkpoint: GGUFCheckpoint) -> list[str]:
    """Every reason the GGUF's tensors cannot be served, each naming the file and the tensor."""
    path, tensors = checkpoint.path, checkpoint.tensor_infos
    problems = []
    for name, dims in _expected_gguf_dims(checkpoint.shape(), checkpoint.family).items():
        info = tensors.get(name)
        if info is None:
            problems.append(f"{path}: tensor {name!r} is missing (the model's metadata needs it)")
            continue
        kind = BY_ID.get(info.type_id)
        if kind is None:
            problems.append(unsupported_type_message(path, name, info.type_id))
        elif tuple(int(d) for d in info.dims) != dims:
            problems.append(
                f"{path}: tensor {name!r} has dims {list(info.dims)}; the model's metadata implies {list(dims)}"
            )
        elif dims[0] % kind.block_size:
            problems.append(
                f"{path}: tensor {name!r} ({kind.name}) has {dims[0]} columns, not whole blocks of "
                f"{kind.block_size}"
            )
        elif info.offset + checkpoint.tensor_nbytes(info) > checkpoint.file_size:
            problems.append(f"{path}: tensor {name!r} runs past the end of the file (truncated?)")
    return problems


_HF_DTYPES = ("F32", "F16", "BF16")


def _expected_hf_names(shape: ModelShape, family: Family) -> list[str]:
    """Every tensor name the family's model reads from a Hugging Face folder."""
    names = ["model.embed_tokens.weight", "model.norm.weight"]
    if not shape.tie_word_embeddings:
        names.append("lm_head.weight")
    keys = ["input_norm", "ffn_norm", "o"] + (["qkv"] if family.fused_qkv else ["q", "k", "v"])
    keys += ["attn_output_norm", "ffn_output_norm"] if family.sandwich_norms else []
    if not shape.is_moe:
        keys += ["gate_up", "down"] if family.fused_qkv else ["gate", "up", "down"]
    for layer in range(shape.num_layers):
        prefix = f"model.layers.{layer}."
        names += [prefix + family.hf_layer_name(key) + ".weight" for key in keys]
        if shape.attention_bias:
            names += [prefix + family.hf_layer_name(key) + ".bias" for key in ("q", "k", "v")]
        if family.qk_norm:
            names += [prefix + "self_attn.q_norm.weight", prefix + "self_attn.k_norm.weight"]
        if shape.is_moe:
            block = prefix + family.moe.block
            names.append(block + "gate.weight")
            leaves = (family.moe.gate, family.moe.up, family.moe.down)
            names += [
                f"{block}experts.{e}.{leaf}.weight" for e in range(shape.num_experts) for leaf in leaves
            ]
            if shape.shared_expert_intermediate_size:
                names.append(block + "shared_expert_gate.weight")
                names += [
                    f"{block}shared_expert.{leaf}.weight" for leaf in ("gate_proj", "up_proj", "down_proj")
                ]
    return names


def hf_problems(folder: pathlib.Path) -> list[str]:
    """Tensors of a Hugging Face folder in a dtype the loaders do not convert (fp8, int8, ...), and tensors
    the family's model reads that no safetensors file holds."""
    from safetensors import safe_open

    problems = []
    present: set[str] = set()
    for file in sorted(folder.glob("*.safetensors")):
        if not file.is_file():  # a pipe or device: reading it could block; the loader reports what it is
            continue
        try:
            with safe_open(file, framework="numpy") as handle:
                for name in handle.keys():
                    present.add(name)
                    dtype = handle.get_slice(name).get_dtype()
                    if dtype not in _HF_DTYPES:
                        problems.append(
                            f"{file}: tensor {name!r} is {dtype}, which is not supported "
                            f"(supported: {', '.join(_HF_DTYPES)})"
                        )
        except Exception as error:
            problems.append(f"{file} is not a readable safetensors file: {error}")
    if problems or not present:  # unreadable or unlisted files: the loader says what they are
        return problems
    shape = hf_shape(folder)
    family = family_named(shape.architecture)
    for name in _expected_hf_names(shape, family):
        if name not in present:
            problems.append(
                f"{folder}: tensor {name!r} is missing from every *.safetensors file (the {family.name} family reads it)"
            )
    return problems


def model_file_problems(path: str) -> list[str]:
    """Why the model at ``path`` (alias, .gguf file or folder) cannot be served; empty when it can."""
    try:
        resolved = resolve_model_path(path)
        if is_gguf(resolved):
            return gguf_problems(GGUFCheckpoint(resolved))
        return hf_problems(resolved)
    except ModelFileError as error:
        return [str(error)]


def summary(problems: list[str]) -> str:
    """The first MAX_REPORTED problems on one line each, and how many more there are."""
    shown = problems[:MAX_REPORTED]
    more = len(problems) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more else "")
