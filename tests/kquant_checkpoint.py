"""A tiny random llama GGUF whose tensors mix every tensor type the way llama.cpp's K-quant files do.

Layer 0 is laid out like a Q4_K_M file (Q4_K, with Q6_K for attn_v and ffn_down), the other layers cover
the remaining types; the embedding is Q4_K and the untied head Q6_K, norms F32. The weights are random
valid blocks (``tests.random_blocks``) scaled to a sane spread, so the model is whatever its blocks say:
the reference is transformers on the gguf package's dequantisation of the same file. The tokenizer is the
tiny byte-level BPE of ``tests.tiny_checkpoint``, written as GGUF metadata.
"""

from __future__ import annotations

import pathlib

import numpy as np

from roles.model_files.tensor_types import BY_NAME
from tests.random_blocks import random_rows
from tests.tiny_checkpoint import add_gguf_tokenizer

HIDDEN, INTERMEDIATE, HEADS, KV_HEADS, VOCAB = 256, 512, 4, 2, 320
LAYER_TYPES = (
    dict(
        attn_q="Q4_K",
        attn_k="Q4_K",
        attn_v="Q6_K",
        attn_output="Q4_K",
        ffn_gate="Q4_K",
        ffn_up="Q4_K",
        ffn_down="Q6_K",
    ),
    dict(
        attn_q="Q2_K",
        attn_k="Q3_K",
        attn_v="Q5_K",
        attn_output="IQ4_XS",
        ffn_gate="Q5_0",
        ffn_up="Q5_1",
        ffn_down="Q3_K",
    ),
    dict(
        attn_q="Q4_0",
        attn_k="Q4_1",
        attn_v="Q8_0",
        attn_output="IQ4_NL",
        ffn_gate="F16",
        ffn_up="BF16",
        ffn_down="Q5_K",
    ),
)
EMBEDDING_TYPE, HEAD_TYPE = "Q4_K", "Q6_K"
# (rows, cols) of each layer tensor in torch layout (out_features, in_features).
_SHAPES = dict(
    attn_q=(HEADS * 64, HIDDEN),
    attn_k=(KV_HEADS * 64, HIDDEN),
    attn_v=(KV_HEADS * 64, HIDDEN),
    attn_output=(HIDDEN, HEADS * 64),
    ffn_gate=(INTERMEDIATE, HIDDEN),
    ffn_up=(INTERMEDIATE, HIDDEN),
    ffn_down=(HIDDEN, INTERMEDIATE),
)


def _add_weight(writer, name: str, type_name: str, rows: int, cols: int, std: float, seed: int) -> None:
    """Random blocks of a type roleserve runs; zero blocks of any other ggml type (for refusal tests)."""
    import gguf

    qtype = gguf.GGMLQuantizationType[type_name]
    if type_name in BY_NAME:
        blocks = random_rows(type_name, rows, cols, seed, std=std)
    else:
        block_size, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
        blocks = np.zeros((rows, cols // block_size * block_bytes), dtype=np.uint8)
    writer.add_tensor(name, blocks, raw_dtype=qtype)


def write_kquant_llama(path, layer_types=LAYER_TYPES, seed: int = 0, dims=None) -> pathlib.Path:
    """Write the mixed-type GGUF to ``path``; ``layer_types`` (one dict per layer) names each tensor's type
    (a tensor left out of a layer's dict is not written); ``dims`` overrides a layer tensor's torch shape,
    by leaf (for refusal tests)."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(len(layer_types))
    writer.add_context_length(2048)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(INTERMEDIATE)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(10000.0)
    writer.add_vocab_size(VOCAB)
    add_gguf_tokenizer(writer, VOCAB)
    rng = np.random.default_rng(seed)

    def norm() -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)

    _add_weight(writer, "token_embd.weight", EMBEDDING_TYPE, VOCAB, HIDDEN, 1.0, seed)
    _add_weight(writer, "output.weight", HEAD_TYPE, VOCAB, HIDDEN, 0.2, seed + 1)
    writer.add_tensor("output_norm.weight", norm())
    for layer, types in enumerate(layer_types):
        writer.add_tensor(f"blk.{layer}.attn_norm.weight", norm())
        writer.add_tensor(f"blk.{layer}.ffn_norm.weight", norm())
        for index, (leaf, type_name) in enumerate(types.items()):
            rows, cols = {**_SHAPES, **(dims or {})}[leaf]
            seed_here = seed + 100 * (layer + 1) + index
            _add_weight(
                writer,
                f"blk.{layer}.{leaf}.weight",
                type_name,
                rows,
                cols,
                0.2 / (cols / 64) ** 0.5,
                seed_here,
            )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return pathlib.Path(path)


_HF_NAMES = dict(
    attn_norm="input_layernorm",
    ffn_norm="post_attention_layernorm",
    attn_q="self_attn.q_proj",
    attn_k="self_attn.k_proj",
    attn_v="self_attn.v_proj",
    attn_output="self_attn.o_proj",
    ffn_gate="mlp.gate_proj",
    ffn_up="mlp.up_proj",
    ffn_down="mlp.down_proj",
)


def _unpermute(rows: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's Q/K row order: per head, interleaved (D/2, 2) -> halves (2, D/2)."""
    return rows.reshape(heads, rows.shape[0] // heads // 2, 2, -1).swapaxes(1, 2).reshape(rows.shape)


def write_dequantised_folder(gguf_path, folder) -> pathlib.Path:
    """The GGUF's weights dequantised by the gguf package, as a Hugging Face llama folder (the reference's input).

    transformers' own GGUF loading would serve, but it misreads BF16 tensors' shapes (GGUFReader hands them
    out as uint16 values, which its dequantisation takes for bytes)."""
    import gguf
    import torch
    import transformers
    from gguf.quants import dequantize
    from safetensors.torch import save_file

    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    reader = gguf.GGUFReader(str(gguf_path))
    state = {}
    for tensor in reader.tensors:
        shape = tuple(reversed(tensor.shape.tolist()))
        data = np.ascontiguousarray(tensor.data).view(np.uint8).reshape(int(np.prod(shape[:-1])), -1)
        values = dequantize(data, tensor.tensor_type).reshape(shape)
        name = tensor.name.removesuffix(".weight")
        if name == "token_embd":
            hf = "model.embed_tokens"
        elif name == "output":
            hf = "lm_head"
        elif name == "output_norm":
            hf = "model.norm"
        else:
            _, layer, leaf = name.split(".")
            hf = f"model.layers.{layer}.{_HF_NAMES[leaf]}"
            if leaf in ("attn_q", "attn_k"):
                values = _unpermute(values, HEADS if leaf == "attn_q" else KV_HEADS)
        state[hf + ".weight"] = torch.from_numpy(np.array(values, dtype=np.float32))
    num_layers = sum(1 for name in state if name.endswith("input_layernorm.weight"))
    config = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=num_layers,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=2048,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=False,
    )
    config.save_pretrained(folder)
    save_file(state, str(folder / "model.safetensors"))
    return folder
