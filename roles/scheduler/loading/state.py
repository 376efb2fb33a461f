"""Load the converted tensors into a model built from its shape.

Modules are laid out with placeholders (``models.placeholders.meta``: shape and dtype, no data);
``load_state`` puts each tensor of a converted state (``roles.weight_format``) in place of its placeholder,
without copying: tensors read from the checkpoint or mapped from the weight cache's shared memory alike.
"""

from __future__ import annotations

import torch
from torch import nn


def _describe(tensor: torch.Tensor) -> str:
    return f"{str(tensor.dtype).removeprefix('torch.')} {tuple(tensor.shape)}"


def load_state(module: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Every placeholder of ``module`` replaced by the state's tensor of that name, checked first: a missing,
    unexpected or differently shaped (or typed) tensor is an error that names it."""
    expected = dict(module.named_parameters())
    expected.update(module.named_buffers())
    missing = sorted(expected.keys() - state.keys())
    unexpected = sorted(state.keys() - expected.keys())
    if missing or unexpected:
        raise ValueError(
            f"the weights do not fit the model built from its shape: missing tensors {missing[:5]}"
            f"{' ...' if len(missing) > 5 else ''}, unexpected tensors {unexpected[:5]}"
            f"{' ...' if len(unexpected) > 5 else ''}"
        )
    for name, placeholder in expected.items():
        tensor = state[name]
        if tensor.shape != placeholder.shape or tensor.dtype != placeholder.dtype:
            raise ValueError(
                f"tensor {name!r} is {_describe(tensor)}; the model built from its shape expects "
                f"{_describe(placeholder)}"
            )
    for name, tensor in state.items():
        owner_name, _, leaf = name.rpartition(".")
        owner = module.get_submodule(owner_name)
        if leaf in owner._parameters:
            owner._parameters[leaf] = nn.Parameter(tensor, requires_grad=False)
        else:
            owner._buffers[leaf] = tensor
