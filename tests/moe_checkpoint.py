"""Write tiny random mixture-of-experts checkpoints (Mixtral, Qwen2-MoE) in Hugging Face folder layout.

Like ``tests/tiny_checkpoint.write_tiny_llama``: config.json, model.safetensors via transformers'
save_pretrained (seeded), and the same tiny byte-level BPE tokenizer, so a folder serves end to end too.
``write_mixtral_gguf`` writes a Mixtral folder's weights as a GGUF in llama.cpp's layout.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import torch

from tests.random_blocks import random_rows
from tests.tiny_checkpoint import TINY_DIMS, _write_tokenizer, add_gguf_tokenizer

_SHARED = dict(
    TINY_DIMS,
    tie_word_embeddings=False,
    num_experts_per_tok=2,
    # Wider than HF's 0.02 so logits (and router scores) are spread out: no near-ties decided by rounding.
    initializer_range=0.2,
    bos_token_id=0,
    eos_token_id=2,
    pad_token_id=0,
)
_MIXTRAL = dict(_SHARED, intermediate_size=64, num_local_experts=4, rope_theta=10000.0)
_QWEN2_MOE = dict(
    _SHARED,
    intermediate_size=96,
    moe_intermediate_size=32,
    shared_expert_intermediate_size=64,
    num_experts=4,
    norm_topk_prob=False,
)


def _write(folder, config, model_class, seed: int) -> pathlib.Path:
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = model_class(config).to(torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    _write_tokenizer(folder, min(config.vocab_size, 320))
    return folder


def write_tiny_mixtral(path, **overrides) -> pathlib.Path:
    """A tiny random MixtralForCausalLM (4 experts, top 2) at ``path``; ``overrides`` replace MixtralConfig
    fields, ``seed`` (default 0) fixes the weights."""
    import transformers

    seed = overrides.pop("seed", 0)
    config = transformers.MixtralConfig(**{**_MIXTRAL, **overrides})
    return _write(path, config, transformers.MixtralForCausalLM, seed)


def write_tiny_qwen2_moe(path, **overrides) -> pathlib.Path:
    """A tiny random Qwen2MoeForCausalLM (4 experts, top 2, a shared expert, Q/K/V biases) at ``path``;
    ``overrides`` replace Qwen2MoeConfig fields, ``seed`` (default 0) fixes the weights."""
    import transformers

    seed = overrides.pop("seed", 0)
    config = transformers.Qwen2MoeConfig(**{**_QWEN2_MOE, **overrides})
    return _write(path, config, transformers.Qwen2MoeForCausalLM, seed)


def _llama_cpp_permute(rows: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter's Q/K row order: per head, halves (2, D/2) -> interleaved (D/2, 2)."""
    return (
        rows.reshape(heads, 2, rows.shape[0] // heads // 2, *rows.shape[1:])
        .swapaxes(1, 2)
        .reshape(rows.shape)
    )


def _expert_blocks(stacked: np.ndarray, expert_type: str, seed: int) -> np.ndarray:
    """(experts, rows, cols) float32 -> the stack in ``expert_type``'s blocks: quantised where the gguf package
    has a quantiser, else random valid blocks of the same spread (a K-quant's values are then its own)."""
    import gguf
    from gguf.quants import quantize

    qtype = gguf.GGMLQuantizationType[expert_type]
    try:
        return quantize(stacked, qtype)
    except NotImplementedError:
        experts, rows, cols = stacked.shape
        blocks = random_rows(expert_type, experts * rows, cols, seed, std=float(stacked.std()))
        return blocks.reshape(experts, rows, -1)


def write_mixtral_gguf(hf_folder, path, expert_type: str = "F32") -> pathlib.Path:
    """The Mixtral at ``hf_folder`` as llama.cpp lays it out in a GGUF: a llama with ``expert_count``, the
    router ``ffn_gate_inp`` and each projection's experts stacked in ``ffn_{gate,up,down}_exps``; those
    stacks in ``expert_type`` (F32, or any block type: see _expert_blocks), every other tensor F32."""
    import gguf
    from safetensors.numpy import load_file

    config = json.loads((pathlib.Path(hf_folder) / "config.json").read_text())
    tensors = load_file(str(pathlib.Path(hf_folder) / "model.safetensors"))
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_rope_freq_base(config["rope_parameters"]["rope_theta"])
    writer.add_vocab_size(config["vocab_size"])
    writer.add_expert_count(config["num_local_experts"])
    writer.add_expert_used_count(config["num_experts_per_tok"])
    add_gguf_tokenizer(writer, config["vocab_size"])
    writer.add_tensor("token_embd.weight", tensors["model.embed_tokens.weight"])
    writer.add_tensor("output_norm.weight", tensors["model.norm.weight"])
    writer.add_tensor("output.weight", tensors["lm_head.weight"])
    qtype = gguf.GGMLQuantizationType[expert_type]
    for index in range(config["num_hidden_layers"]):
        hf, ours = f"model.layers.{index}.", f"blk.{index}."
        attn, moe = hf + "self_attn.", hf + "block_sparse_moe."
        writer.add_tensor(ours + "attn_norm.weight", tensors[hf + "input_layernorm.weight"])
        writer.add_tensor(ours + "ffn_norm.weight", tensors[hf + "post_attention_layernorm.weight"])
        writer.add_tensor(ours + "attn_q.weight", _llama_cpp_permute(tensors[attn + "q_proj.weight"], heads))
        writer.add_tensor(
            ours + "attn_k.weight", _llama_cpp_permute(tensors[attn + "k_proj.weight"], kv_heads)
        )
        writer.add_tensor(ours + "attn_v.weight", tensors[attn + "v_proj.weight"])
        writer.add_tensor(ours + "attn_output.weight", tensors[attn + "o_proj.weight"])
        writer.add_tensor(ours + "ffn_gate_inp.weight", tensors[moe + "gate.weight"])
        for gguf_name, leaf in (("ffn_gate_exps", "w1"), ("ffn_up_exps", "w3"), ("ffn_down_exps", "w2")):
            stacked = np.stack(
                [tensors[f"{moe}experts.{e}.{leaf}.weight"] for e in range(config["num_local_experts"])]
            )
            if qtype == gguf.GGMLQuantizationType.F32:
                writer.add_tensor(f"{ours}{gguf_name}.weight", stacked)
            else:
                blocks = _expert_blocks(stacked, expert_type, seed=index * 3 + len(gguf_name))
                writer.add_tensor(f"{ours}{gguf_name}.weight", blocks, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return pathlib.Path(path)
