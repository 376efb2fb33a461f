"""Tiny hand-written GGUF files for error-path tests."""

from __future__ import annotations

import gguf
import numpy as np


def write_small_gguf(
    path, architecture: str = "llama", quant_type: str | None = None, tokenizer: tuple[str, str] | None = None
):
    """A 1-layer GGUF with llama-style metadata and one attn_q tensor (F32, or raw blocks of ``quant_type``);
    ``tokenizer`` = (tokenizer.ggml.model, tokenizer.ggml.pre) adds a 16-token byte-level vocabulary."""
    writer = gguf.GGUFWriter(str(path), architecture)
    if tokenizer is not None:
        writer.add_tokenizer_model(tokenizer[0])
        writer.add_tokenizer_pre(tokenizer[1])
        writer.add_token_list(["<s>", "</s>", *"abcdefghijklmn"])
        writer.add_token_types([3, 3, *[1] * 14])
        writer.add_token_merges(["a b"])
        writer.add_eos_token_id(1)
    writer.add_block_count(1)
    writer.add_context_length(64)
    writer.add_embedding_length(32)
    writer.add_feed_forward_length(64)
    writer.add_head_count(2)
    writer.add_head_count_kv(1)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(16)
    if quant_type is None:
        writer.add_tensor("blk.0.attn_q.weight", np.ones((32, 32), dtype=np.float32))
    else:
        qtype = gguf.GGMLQuantizationType[quant_type]
        block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
        blocks = np.zeros((32, 32 // block_size * type_size), dtype=np.uint8)
        writer.add_tensor("blk.0.attn_q.weight", blocks, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
