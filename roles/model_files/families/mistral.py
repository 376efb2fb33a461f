"""Mistral 7B and its successors: Llama's decoder with a sliding attention window on every layer where the
config sets ``sliding_window`` (v0.1: 4096; later releases set none).

llama.cpp's converter writes a Mistral folder as a ``llama`` GGUF and drops the window, and llama.cpp runs it
with full attention: such a GGUF is read as Llama (``families.llama``).
"""

from __future__ import annotations

from roles.model_files.families.attention_windows import every_layer
from roles.model_files.families.family import Family


def _read_hf(config: dict, where: str) -> dict:
    return {"layer_windows": every_layer(config.get("sliding_window"), int(config["num_hidden_layers"]))}


FAMILY = Family(
    name="mistral",
    hf_architectures=("MistralForCausalLM",),
    hf_model_types=("mistral",),
    gguf_architecture=None,
    description="Mistral 7B (sliding window where set)",
    read_hf=_read_hf,
)
