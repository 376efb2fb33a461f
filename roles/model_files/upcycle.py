"""Sparse upcycling: a Mixtral-format Hugging Face folder from a dense Llama GGUF (``serve model upcycle``).

Each MoE layer's experts are copies of the dense layer's MLP; attention, norms and embeddings are copied.
Tensors are dequantised to float32 and come out in HF layout (Q/K rows un-permuted by GGUFCheckpoint).

Seeded rules (documented in ``serve model upcycle --help`` and the README):

* expert ``E`` of layer ``L``: ``w *= 1 + perturb * N(0, 1)`` for w1 (gate), w2 (down), w3 (up) in that
  order, drawn from ``torch.Generator().manual_seed(expert_seed(seed, L, E))``; ``perturb`` 0 makes exact
  copies (no draw), whose MoE output equals the dense model's whatever the router picks.
* router of layer ``L`` (``block_sparse_moe.gate.weight``, [experts, hidden]): ``N(0, 0.02)`` drawn from
  ``torch.Generator().manual_seed(seed)``, layer 0 first.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

import torch

from roles.model_files.gguf_checkpoint import GGUFCheckpoint
from roles.model_files.gguf_tokenizer import token_text, tokenizer_from_gguf
from roles.model_files.model_path import ModelFileError, is_gguf, resolve_model_path
from roles.model_files.model_shape import ModelShape

ROUTER_STD = 0.02
MAX_EXPERTS = 1024  # expert_seed packs layer and expert into 10 bits each
_EXPERT_WEIGHTS = (("w1", "mlp.gate_proj"), ("w2", "mlp.down_proj"), ("w3", "mlp.up_proj"))
_LAYER_COPIES = (
    "input_layernorm",
    "post_attention_layernorm",
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
)


class UpcycleError(ValueError):
    """Arguments that cannot make an upcycled model; the message says which and why."""


@dataclass(frozen=True)
class UpcycleSpec:
    experts: int
    top_k: int
    perturb: float = 0.0
    seed: int = 0

    def check(self) -> None:
        if not 2 <= self.experts <= MAX_EXPERTS:
            raise UpcycleError(f"--experts must be between 2 and {MAX_EXPERTS}, got {self.experts}")
        if not 1 <= self.top_k <= self.experts:
            raise UpcycleError(f"--top-k must be between 1 and --experts ({self.experts}), got {self.top_k}")
        if self.perturb < 0:
            raise UpcycleError(f"--perturb must be >= 0, got {self.perturb}")
        if self.seed < 0:
            raise UpcycleError(f"--seed must be >= 0, got {self.seed}")


def expert_seed(seed: int, layer: int, expert: int) -> int:
    """The generator seed of one expert's perturbation: distinct for every (seed, layer, expert)."""
    return (seed * MAX_EXPERTS + layer) * MAX_EXPERTS + expert


def upcycled_expert(mlp: dict[str, torch.Tensor], spec: UpcycleSpec, layer: int, expert: int):
    """{"w1": ..., "w2": ..., "w3": ...} of one expert from the dense MLP's gate/down/up weights."""
    if spec.perturb == 0:
        return {name: mlp[name] for name, _ in _EXPERT_WEIGHTS}
    generator = torch.Generator().manual_seed(expert_seed(spec.seed, layer, expert))
    weights = {}
    for name, _ in _EXPERT_WEIGHTS:
        noise = torch.randn(mlp[name].shape, generator=generator, dtype=torch.float32)
        weights[name] = mlp[name] * (1 + spec.perturb * noise)
    return weights


def mixtral_config(shape: ModelShape, spec: UpcycleSpec, bos: int | None, eos: int | None) -> dict:
    config = {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "vocab_size": shape.vocab_size,
        "hidden_size": shape.hidden_size,
        "intermediate_size": shape.intermediate_size,
        "num_hidden_layers": shape.num_layers,
        "num_attention_heads": shape.num_heads,
        "num_key_value_heads": shape.num_kv_heads,
        "head_dim": shape.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": shape.context_length,
        "rms_norm_eps": shape.rms_norm_eps,
        "rope_theta": shape.rope_theta,
        "tie_word_embeddings": shape.tie_word_embeddings,
        "num_local_experts": spec.experts,
        "num_experts_per_tok": spec.top_k,
        "sliding_window": None,
        "attention_dropout": 0.0,
        "router_aux_loss_coef": 0.001,
        "output_router_logits": False,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "torch_dtype": "float32",
    }
    if shape.rope_scaling is not None:
        config["rope_scaling"] = shape.rope_scaling
    return config


class _Tensors:
    """The upcycled tensors by name, in file order, each made only when written (the whole model never sits
    in memory at once)."""

    def __init__(self, checkpoint: GGUFCheckpoint, shape: ModelShape, spec: UpcycleSpec):
        self.checkpoint, self.shape, self.spec = checkpoint, shape, spec
        self.gguf_names = checkpoint.hf_tensor_names()
        self._router = torch.Generator().manual_seed(spec.seed)

    def dense(self, name: str) -> torch.Tensor:
        if name not in self.gguf_names:
            raise ModelFileError(f"{self.checkpoint.path}: no tensor for {name!r}")
        return self.checkpoint.tensor(self.gguf_names[name])

    def layout(self) -> list[tuple[str, tuple[int, ...]]]:
        """(name, shape) of every tensor, in the order ``produce`` yields them."""
        shape, spec = self.shape, self.spec
        q_rows, kv_rows = shape.num_heads * shape.head_dim, shape.num_kv_heads * shape.head_dim
        layer_shapes = {
            "input_layernorm": (shape.hidden_size,),
            "post_attention_layernorm": (shape.hidden_size,),
            "self_attn.q_proj": (q_rows, shape.hidden_size),
            "self_attn.k_proj": (kv_rows, shape.hidden_size),
            "self_attn.v_proj": (kv_rows, shape.hidden_size),
            "self_attn.o_proj": (shape.hidden_size, q_rows),
        }
        expert_shapes = {
            "w1": (shape.intermediate_size, shape.hidden_size),
            "w2": (shape.hidden_size, shape.intermediate_size),
            "w3": (shape.intermediate_size, shape.hidden_size),
        }
        entries = [("model.embed_tokens.weight", (shape.vocab_size, shape.hidden_size))]
        for layer in range(shape.num_layers):
            prefix = f"model.layers.{layer}"
            entries += [(f"{prefix}.{part}.weight", layer_shapes[part]) for part in _LAYER_COPIES]
            entries.append((f"{prefix}.block_sparse_moe.gate.weight", (spec.experts, shape.hidden_size)))
            for expert in range(spec.experts):
                for name, _ in _EXPERT_WEIGHTS:
                    entries.append(
                        (f"{prefix}.block_sparse_moe.experts.{expert}.{name}.weight", expert_shapes[name])
                    )
        entries.append(("model.norm.weight", (shape.hidden_size,)))
        if not shape.tie_word_embeddings:
            entries.append(("lm_head.weight", (shape.vocab_size, shape.hidden_size)))
        return entries

    def produce(self) -> Iterator[torch.Tensor]:
        yield self.dense("model.embed_tokens.weight")
        for layer in range(self.shape.num_layers):
            prefix = f"model.layers.{layer}"
            for part in _LAYER_COPIES:
                yield self.dense(f"{prefix}.{part}.weight")
            yield torch.randn(
                (self.spec.experts, self.shape.hidden_size), generator=self._router, dtype=torch.float32
            ).mul_(ROUTER_STD)
            mlp = {name: self.dense(f"{prefix}.{dense}.weight") for name, dense in _EXPERT_WEIGHTS}
            for expert in range(self.spec.experts):
                weights = upcycled_expert(mlp, self.spec, layer, expert)
                for name, _ in _EXPERT_WEIGHTS:
                    yield weights[name]
        yield self.dense("model.norm.weight")
        if not self.shape.tie_word_embeddings:
            yield self.dense("lm_head.weight")


def write_safetensors(
    path: pathlib.Path, layout: list[tuple[str, tuple[int, ...]]], tensors: Iterator[torch.Tensor]
) -> None:
    """Stream float32 tensors into one safetensors file: the header from ``layout``, then each tensor's bytes."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in layout:
        size = 4 * int(torch.Size(shape).numel())
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(encoded)) + encoded)
        for (name, shape), tensor in zip(layout, tensors, strict=True):
            if tuple(tensor.shape) != tuple(shape):
                raise ModelFileError(f"tensor {name!r} has shape {tuple(tensor.shape)}, expected {shape}")
            handle.write(tensor.to(torch.float32).contiguous().numpy().tobytes())


def _write_tokenizer(checkpoint: GGUFCheckpoint, out: pathlib.Path) -> tuple[int | None, int | None]:
    """tokenizer.json and tokenizer_config.json (with the chat template) from the GGUF's metadata."""
    meta = checkpoint.tokenizer_metadata()
    tokenizer_from_gguf(meta, checkpoint.path).save(str(out / "tokenizer.json"))

    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": token_text(meta, meta.bos_token_id),
        "eos_token": token_text(meta, meta.eos_token_id),
        "pad_token": token_text(meta, meta.pad_token_id),
        "unk_token": token_text(meta, meta.unknown_token_id),
        "add_bos_token": meta.add_bos_token,
        "add_eos_token": meta.add_eos_token,
        "clean_up_tokenization_spaces": False,
        "model_max_length": int(checkpoint.shape().context_length),
    }
    if meta.chat_template is not None:
        config["chat_template"] = meta.chat_template
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    return meta.bos_token_id, meta.eos_token_id


def _checked_out_dir(out: pathlib.Path) -> None:
    if out.exists() and not out.is_dir():
        raise UpcycleError(f"--out {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        raise UpcycleError(f"--out {out} is not empty; give a new or empty folder")


def _write_folder(checkpoint: GGUFCheckpoint, spec: UpcycleSpec, folder: pathlib.Path) -> None:
    shape = checkpoint.shape()
    bos, eos = _write_tokenizer(checkpoint, folder)
    (folder / "config.json").write_text(json.dumps(mixtral_config(shape, spec, bos, eos), indent=2) + "\n")
    generation = {"bos_token_id": bos, "eos_token_id": eos}
    (folder / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
    tensors = _Tensors(checkpoint, shape, spec)
    write_safetensors(folder / "model.safetensors", tensors.layout(), tensors.produce())
    record = {"source": str(checkpoint.path), **asdict(spec)}  # what made this folder (the rules: module doc)
    (folder / "upcycle.json").write_text(json.dumps(record, indent=2) + "\n")


def upcycle(
    model: str, out: str | pathlib.Path, spec: UpcycleSpec, progress: Callable[[str], None] = lambda _: None
) -> pathlib.Path:
    """Write the upcycled Mixtral folder of ``model`` (an alias or .gguf path) to ``out`` and return it.

    The folder is written beside ``out`` and renamed into place when complete, so an interrupted run never
    leaves a folder that looks finished (``make serve-moe`` builds only when ``out`` is missing)."""
    spec.check()
    out = pathlib.Path(out)
    _checked_out_dir(out)
    source = resolve_model_path(model)
    if not is_gguf(source):
        raise UpcycleError(
            f"--model {model!r} is a folder; upcycling reads a dense Llama GGUF (or 'smollm2')"
        )
    checkpoint = GGUFCheckpoint(source)
    progress(f"upcycling {source.name} into {spec.experts} experts per layer (top-{spec.top_k}) at {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = pathlib.Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        partial.chmod(0o755)  # mkdtemp makes it private; the folder is an ordinary model folder
        _write_folder(checkpoint, spec, partial)
        if out.is_dir():
            out.rmdir()  # empty, checked above
        partial.rename(out)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return out
