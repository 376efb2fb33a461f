"""Uniform access to a checkpoint's tensors under HF Llama names, whatever the file format.

The model asks for float32 tensors (``float_tensor``, torch) or arrays (``float_array``, numpy: norms and biases
of a model the kernels run whole); the kernels' linears instead ask for a weight as the checkpoint stores it
(``raw_tensor``): a GGUF's blocks of any type, or an HF folder's bf16 / f16 / f32 rows. torch is imported only
by what returns tensors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from roles.model_files.gguf_checkpoint import GGUFCheckpoint, RawQuantTensor
from roles.model_files.model_path import ModelFileError

if TYPE_CHECKING:
    from roles.model_files.hf_checkpoint import HFCheckpoint


class WeightSource:
    """Base: a plain dict of HF-named float tensors.

    ``shifts_norms``: the norm weights are a checkpoint's own, which families with a norm offset (Gemma's 1 + w)
    still shift; a GGUF's are already shifted by llama.cpp's converter."""

    shifts_norms = True

    def __init__(self, tensors: Mapping):
        self._tensors = tensors

    def has(self, name: str) -> bool:
        return name in self._tensors

    def float_tensor(self, name: str):
        import torch

        if name not in self._tensors:
            raise ModelFileError(f"weights lack tensor {name!r}")
        return self._tensors[name].to(torch.float32)

    def float_array(self, name: str) -> np.ndarray:
        """The weight as a float32 numpy array."""
        return self.float_tensor(name).detach().numpy()

    def raw_tensor(self, name: str) -> RawQuantTensor | None:
        return None


class GGUFWeights(WeightSource):
    """Each HF name read from its GGUF tensor, or from one expert's slice of a stacked experts' tensor."""

    shifts_norms = False

    def __init__(self, checkpoint: GGUFCheckpoint):
        self.checkpoint = checkpoint
        self._sources: dict[str, tuple[str, int | None]] = {
            name: (gguf_name, None) for name, gguf_name in checkpoint.hf_tensor_names().items()
        }
        self._sources.update(checkpoint.hf_expert_names())

    def has(self, name: str) -> bool:
        return name in self._sources

    def float_tensor(self, name: str):
        import torch

        return torch.from_numpy(self.float_array(name))

    def float_array(self, name: str) -> np.ndarray:
        if name not in self._sources:
            raise ModelFileError(f"{self.checkpoint.path}: no tensor for {name!r}")
        return self.checkpoint.array(*self._sources[name])

    def raw_tensor(self, name: str) -> RawQuantTensor | None:
        source = self._sources.get(name)
        return None if source is None else self.checkpoint.raw_tensor(*source)


class HFWeights(WeightSource):
    def __init__(self, checkpoint: HFCheckpoint):
        self.checkpoint = checkpoint
        self._names = set(checkpoint.tensor_names())

    def has(self, name: str) -> bool:
        return name in self._names

    def float_tensor(self, name: str):
        return self.checkpoint.tensor(name)

    def raw_tensor(self, name: str) -> RawQuantTensor | None:
        """A 2-D weight's rows as the folder stores them (bf16, f16 or f32), for the kernels to run as is."""
        import torch

        tensor = self.checkpoint.stored_tensor(name)
        type_name = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}.get(tensor.dtype)
        if type_name is None or tensor.dim() != 2:
            return None
        rows = tensor.contiguous().view(torch.uint8).numpy()
        return RawQuantTensor(type_name, tensor.shape[0], tensor.shape[1], rows)


def as_weight_source(weights) -> WeightSource:
    return weights if isinstance(weights, WeightSource) else WeightSource(weights)
