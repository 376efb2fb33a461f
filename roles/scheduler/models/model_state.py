"""The converted model as plain tensors, and the model rebuilt around such tensors without converting again.

`model_state` is what the weight_cache_daemon shares: every parameter and buffer after conversion to the
execution format. `model_from_state` builds the module tree on the meta device (no weight is read or
converted), then assigns the given tensors in place: with shared-memory tensors, nothing is copied.
"""

from __future__ import annotations

import torch

from roles.model_files.model_shape import ModelShape
from roles.scheduler.models.llama import LlamaForCausalLM
from roles.scheduler.models.packed_linear import packed_from_state
from roles.scheduler.models.rotary import RotaryEmbedding
from roles.scheduler.models.weight_sources import WeightSource


def model_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    state = {name: p.detach() for name, p in model.named_parameters()}
    state.update({name: b for name, b in model.named_buffers()})
    return state


def _hf_weight_shapes(shape: ModelShape) -> dict[str, tuple[int, ...]]:
    hidden, inter = shape.hidden_size, shape.intermediate_size
    q, kv = shape.num_heads * shape.head_dim, shape.num_kv_heads * shape.head_dim
    shapes: dict[str, tuple[int, ...]] = {
        "model.embed_tokens.weight": (shape.vocab_size, hidden),
        "model.norm.weight": (hidden,),
    }
    if not shape.tie_word_embeddings:
        shapes["lm_head.weight"] = (shape.vocab_size, hidden)
    for i in range(shape.num_layers):
        prefix = f"model.layers.{i}."
        shapes.update(
            {
                prefix + "input_layernorm.weight": (hidden,),
                prefix + "post_attention_layernorm.weight": (hidden,),
                prefix + "self_attn.q_proj.weight": (q, hidden),
                prefix + "self_attn.k_proj.weight": (kv, hidden),
                prefix + "self_attn.v_proj.weight": (kv, hidden),
                prefix + "self_attn.o_proj.weight": (hidden, q),
                prefix + "mlp.gate_proj.weight": (inter, hidden),
                prefix + "mlp.up_proj.weight": (inter, hidden),
                prefix + "mlp.down_proj.weight": (hidden, inter),
            }
        )
    return shapes


class _MetaWeights(WeightSource):
    """Shapes only: lets the model's own constructor lay out every module without touching data."""

    def __init__(self, shape: ModelShape):
        super().__init__({})
        self._shapes = _hf_weight_shapes(shape)

    def has(self, name: str) -> bool:
        return name in self._shapes

    def float_tensor(self, name: str) -> torch.Tensor:
        return torch.empty(self._shapes[name], dtype=torch.float32, device="meta")


def model_from_state(
    shape: ModelShape, weight_dtype: str, state: dict[str, torch.Tensor]
) -> LlamaForCausalLM:
    # No torch.device("meta") context: _MetaWeights already hands out meta tensors, and the context's
    # function mode imports torch._dynamo on first use (2.5 s of a scheduler's start-up).
    model = LlamaForCausalLM(shape, _MetaWeights(shape), weight_dtype)
    # The meta source has no file blocks, so packed linears come out dense: put them back from the state.
    for name in state:
        if name.endswith(".block_codes"):
            module_name = name[: -len(".block_codes")]
            model.set_submodule(module_name, packed_from_state(state, module_name + "."))
    expected = set(model_state(model))
    if expected != set(state):
        missing, extra = sorted(expected - set(state))[:5], sorted(set(state) - expected)[:5]
        raise ValueError(f"cached weights do not fit the model: missing {missing}, unexpected {extra}")
    for name, tensor in state.items():
        module_name, _, leaf = name.rpartition(".")
        module = model.get_submodule(module_name) if module_name else model
        if leaf in module._parameters:
            module._parameters[leaf] = torch.nn.Parameter(tensor, requires_grad=False)
        else:
            module._buffers[leaf] = tensor
    # Plain-tensor state outside parameters and buffers is cheap to recompute.
    model.rotary = RotaryEmbedding(shape.head_dim, shape.rope_theta, shape.rope_scaling)
    return model.eval()
