"""Our BERT encoder (as transformers' BertModel, inference only, fp32) built straight from safetensors.

Speed on CPU comes from running every matmul on the packed real tokens (T, D) of the batch rather than the
padded (B, L, D) grid: padding costs nothing there, and only attention, which needs sequences laid out
per row, scatters its q/k/v into the padded grid for scaled_dot_product_attention with a key mask.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from roles.encoder.model_folder import EncoderModelError, read_json

_ACTIVATIONS = {
    "gelu": lambda x: F.gelu(x),  # BERT's "gelu" is the exact erf form
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
}


@dataclass(frozen=True)
class BertShape:
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_positions: int
    layer_norm_eps: float
    hidden_act: str

    @classmethod
    def from_config(cls, config: dict, source: pathlib.Path) -> BertShape:
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise EncoderModelError(f"{source}: only absolute position embeddings are supported")
        if config.get("hidden_act", "gelu") not in _ACTIVATIONS:
            raise EncoderModelError(
                f"{source}: hidden_act {config.get('hidden_act')!r} is not one of {sorted(_ACTIVATIONS)}"
            )
        try:
            return cls(
                vocab_size=int(config["vocab_size"]),
                hidden_size=int(config["hidden_size"]),
                num_layers=int(config["num_hidden_layers"]),
                num_heads=int(config["num_attention_heads"]),
                intermediate_size=int(config["intermediate_size"]),
                max_positions=int(config.get("max_position_embeddings", 512)),
                layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
                hidden_act=str(config.get("hidden_act", "gelu")),
            )
        except KeyError as error:
            raise EncoderModelError(f"{source} lacks the BERT setting {error.args[0]!r}") from error


@dataclass
class BertLayer:
    qkv_weight: torch.Tensor  # (3D, D): query, key and value stacked so one matmul makes all three
    qkv_bias: torch.Tensor  # (3D,)
    attn_out_weight: torch.Tensor  # (D, D)
    attn_out_bias: torch.Tensor
    attn_norm_weight: torch.Tensor  # post-attention LayerNorm
    attn_norm_bias: torch.Tensor
    ffn_in_weight: torch.Tensor  # (I, D)
    ffn_in_bias: torch.Tensor
    ffn_out_weight: torch.Tensor  # (D, I)
    ffn_out_bias: torch.Tensor
    ffn_norm_weight: torch.Tensor  # post-FFN LayerNorm
    ffn_norm_bias: torch.Tensor


class _Weights:
    """The checkpoint's tensors with an optional 'bert.' prefix removed; a missing one names itself."""

    def __init__(self, folder: pathlib.Path):
        self.folder = folder
        self.tensors: dict[str, torch.Tensor] = {}
        for file in sorted(folder.glob("*.safetensors")):
            for name, tensor in load_file(str(file), device="cpu").items():
                self.tensors[name.removeprefix("bert.")] = tensor

    def take(self, name: str) -> torch.Tensor:
        tensor = self.tensors.get(name)
        if tensor is None:
            raise EncoderModelError(
                f"{self.folder}: the safetensors weights lack {name!r} (or 'bert.{name}')"
            )
        return tensor.to(torch.float32).contiguous()


class BertEncoder:
    def __init__(self, shape: BertShape, weights: _Weights):
        self.shape = shape
        self.activation = _ACTIVATIONS[shape.hidden_act]
        self.word_embeddings = weights.take("embeddings.word_embeddings.weight")  # (V, D)
        self.position_embeddings = weights.take("embeddings.position_embeddings.weight")  # (P, D)
        # Every input is a single segment, so only token type 0 is ever added.
        self.token_type_0 = weights.take("embeddings.token_type_embeddings.weight")[0].clone()  # (D,)
        self.embed_norm_weight = weights.take("embeddings.LayerNorm.weight")
        self.embed_norm_bias = weights.take("embeddings.LayerNorm.bias")
        self.layers = [self._layer(weights, f"encoder.layer.{i}.") for i in range(shape.num_layers)]

    @classmethod
    def from_folder(cls, folder: pathlib.Path) -> BertEncoder:
        shape = BertShape.from_config(read_json(folder / "config.json"), folder / "config.json")
        return cls(shape, _Weights(folder))

    @staticmethod
    def _layer(weights: _Weights, prefix: str) -> BertLayer:
        def take(name: str) -> torch.Tensor:
            return weights.take(prefix + name)

        parts = ("query", "key", "value")
        return BertLayer(
            qkv_weight=torch.cat([take(f"attention.self.{p}.weight") for p in parts]).contiguous(),
            qkv_bias=torch.cat([take(f"attention.self.{p}.bias") for p in parts]).contiguous(),
            attn_out_weight=take("attention.output.dense.weight"),
            attn_out_bias=take("attention.output.dense.bias"),
            attn_norm_weight=take("attention.output.LayerNorm.weight"),
            attn_norm_bias=take("attention.output.LayerNorm.bias"),
            ffn_in_weight=take("intermediate.dense.weight"),
            ffn_in_bias=take("intermediate.dense.bias"),
            ffn_out_weight=take("output.dense.weight"),
            ffn_out_bias=take("output.dense.bias"),
            ffn_norm_weight=take("output.LayerNorm.weight"),
            ffn_norm_bias=take("output.LayerNorm.bias"),
        )

    @torch.inference_mode()
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """input_ids, attention_mask: (B, L), right-padded, mask 1 for real tokens.
        Returns the last hidden states (B, L, D) float32; padding positions hold zeros."""
        batch, length = input_ids.shape
        if length > self.shape.max_positions:
            raise ValueError(
                f"sequence length {length} exceeds max_position_embeddings {self.shape.max_positions}"
            )
        mask = attention_mask.to(torch.bool)
        padded = not bool(mask.all())
        # real_slots: (T,) indices of the real tokens in the flattened (B*L) grid.
        real_slots = mask.reshape(-1).nonzero().squeeze(1) if padded else None
        positions = torch.arange(length).expand(batch, length).reshape(-1)
        token_ids = input_ids.reshape(-1)
        if real_slots is not None:
            token_ids, positions = token_ids[real_slots], positions[real_slots]
        hidden = self._embed(token_ids, positions)  # (T, D)
        key_mask = mask[:, None, None, :] if padded else None  # (B, 1, 1, L): which keys each query may see
        # The padded q/k/v grid is shared by all layers: each overwrites the real slots, and the padding
        # slots stay zero (they must be finite: masked keys get weight 0, and 0 * NaN would be NaN).
        grid = hidden.new_zeros(batch * length, 3 * hidden.shape[1]) if padded else None
        for layer in self.layers:
            hidden = self._layer_forward(layer, hidden, batch, length, real_slots, grid, key_mask)
        if real_slots is None:
            return hidden.view(batch, length, -1)
        out = hidden.new_zeros(batch * length, hidden.shape[1])
        out.index_copy_(0, real_slots, hidden)
        return out.view(batch, length, -1)

    __call__ = forward

    def _embed(self, token_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        summed = self.word_embeddings[token_ids] + self.position_embeddings[positions] + self.token_type_0
        return F.layer_norm(
            summed,
            (summed.shape[1],),
            self.embed_norm_weight,
            self.embed_norm_bias,
            self.shape.layer_norm_eps,
        )

    def _layer_forward(
        self,
        layer: BertLayer,
        hidden: torch.Tensor,  # (T, D) packed real tokens
        batch: int,
        length: int,
        real_slots: torch.Tensor | None,
        grid: torch.Tensor | None,  # (B*L, 3D) zeros at padding slots, or None when nothing is padded
        key_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        heads, dim = self.shape.num_heads, self.shape.hidden_size
        eps = self.shape.layer_norm_eps
        qkv = F.linear(hidden, layer.qkv_weight, layer.qkv_bias)  # (T, 3D)
        if real_slots is not None:
            qkv = grid.index_copy_(0, real_slots, qkv)  # (B*L, 3D)
        # (B, L, 3, H, hd) -> three (B, H, L, hd) views
        query, key, value = qkv.view(batch, length, 3, heads, dim // heads).permute(2, 0, 3, 1, 4)
        context = F.scaled_dot_product_attention(query, key, value, attn_mask=key_mask)  # (B, H, L, hd)
        context = context.transpose(1, 2).reshape(batch * length, dim)
        if real_slots is not None:
            context = context.index_select(0, real_slots)  # back to (T, D)
        attended = F.linear(context, layer.attn_out_weight, layer.attn_out_bias) + hidden
        attended = F.layer_norm(attended, (dim,), layer.attn_norm_weight, layer.attn_norm_bias, eps)
        inner = self.activation(F.linear(attended, layer.ffn_in_weight, layer.ffn_in_bias))  # (T, I)
        out = F.linear(inner, layer.ffn_out_weight, layer.ffn_out_bias) + attended
        return F.layer_norm(out, (dim,), layer.ffn_norm_weight, layer.ffn_norm_bias, eps)
