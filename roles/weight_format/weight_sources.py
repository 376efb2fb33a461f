"""Uniform access to a checkpoint's tensors under HF Llama names, whatever the file format.

The model asks for float32 tensors; quantised linears may instead ask for a GGUF's raw blocks
(``raw_tensor``), which only the GGUF source provides.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from roles.model_files.gguf_checkpoint import GGUFCheckpoint, RawQuantTensor
from roles.model_files.hf_checkpoint import HFCheckpoint
from roles.model_files.model_path import ModelFileError


class WeightSource:
    """Base: a plain dict of HF-named float tensors."""

    def __init__(self, tensors: Mapping[str, torch.Tensor]):
        self._tensors = tensors

    def has(self, name: str) -> bool:
        return name in self._tensors

    def float_tensor(self, name: str) -> torch.Tensor:
        if name not in self._tensors:
            raise ModelFileError(f"weights lack tensor {name!r}")
        return self._tensors[name].to(torch.float32)

    def raw_tensor(self, name: str) -> RawQuantTensor | None:
        return None


class GGUFWeights(WeightSource):
    """Each HF name read from its GGUF tensor, or from one expert's slice of a stacked experts' tensor."""

    def __init__(self, checkpoint: GGUFCheckpoint):
        self.checkpoint = checkpoint
        self._sources: dict[str, tuple[str, int | None]] = {
            name: (gguf_name, None) for name, gguf_name in checkpoint.hf_tensor_names().items()
        }
        self._sources.update(checkpoint.hf_expert_names())

    def has(self, name: str) -> bool:
        return name in self._sources

    def float_tensor(self, name: str) -> torch.Tensor:
        if name not in self._sources:
            raise ModelFileError(f"{self.checkpoint.path}: no tensor for {name!r}")
        return self.checkpoint.tensor(*self._sources[name])

    def raw_tensor(self, name: str) -> RawQuantTensor | None:
        source = self._sources.get(name)
        if source is None or self.checkpoint.tensor_type(source[0]) in ("F32", "F16", "BF16"):
            return None
        return self.checkpoint.raw_tensor(*source)


class HFWeights(WeightSource):
    def __init__(self, checkpoint: HFCheckpoint):
        self.checkpoint = checkpoint
        self._names = set(checkpoint.tensor_names())

    def has(self, name: str) -> bool:
        return name in self._names

    def float_tensor(self, name: str) -> torch.Tensor:
        return self.checkpoint.tensor(name)


def as_weight_source(weights) -> WeightSource:
    return weights if isinstance(weights, WeightSource) else WeightSource(weights)
