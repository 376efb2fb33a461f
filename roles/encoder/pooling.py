"""Sentence pooling as a sentence-transformers folder describes it: 1_Pooling/config.json picks the modes
(several are concatenated, in sentence-transformers' order) and a Normalize module in modules.json adds L2
normalisation."""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from roles.encoder.model_folder import EncoderModelError, read_json

# Concatenation order of sentence-transformers' Pooling module.
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens")
_NORMALIZE_MODULE = "sentence_transformers.models.Normalize"


@dataclass(frozen=True)
class Pooling:
    modes: tuple[str, ...]
    normalize: bool

    @classmethod
    def from_folder(cls, folder: pathlib.Path) -> Pooling:
        """A folder without modules.json (plain BertModel) gets mean pooling and no normalisation."""
        modules_file = folder / "modules.json"
        if not modules_file.is_file():
            return cls(("mean",), normalize=False)
        modules = read_json(modules_file)
        pooling_dirs = [m.get("path", "") for m in modules if m.get("type", "").endswith(".Pooling")]
        normalize = any(m.get("type") == _NORMALIZE_MODULE for m in modules)
        if not pooling_dirs:
            return cls(("mean",), normalize)
        config_file = folder / pooling_dirs[0] / "config.json"
        return cls(_modes_from_config(read_json(config_file), config_file), normalize)

    def dimensions(self, hidden_size: int) -> int:
        return hidden_size * len(self.modes)

    def __call__(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """hidden: (B, L, D) last hidden states; attention_mask: (B, L), 1 for real tokens. Returns (B, D')."""
        mask = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, L, 1)
        pooled = [_POOLERS[mode](hidden, mask) for mode in self.modes]
        sentence = pooled[0] if len(pooled) == 1 else torch.cat(pooled, dim=1)
        return F.normalize(sentence, p=2.0, dim=1) if self.normalize else sentence


def _modes_from_config(config: dict, source: pathlib.Path) -> tuple[str, ...]:
    if isinstance(config.get("pooling_mode"), str):  # newer single-string form, e.g. "mean"
        names = {config["pooling_mode"]}
    else:  # older boolean form, e.g. "pooling_mode_mean_tokens": true
        names = {
            key.removeprefix("pooling_mode_").removesuffix("_token").removesuffix("_tokens")
            for key, on in config.items()
            if key.startswith("pooling_mode_") and on is True
        }
    wanted = {"mean_sqrt_len_tokens" if name.startswith("mean_sqrt_len") else name for name in names}
    unknown = wanted - set(POOLING_MODES)
    if unknown or not wanted:
        raise EncoderModelError(
            f"{source}: pooling {sorted(unknown) or 'none'} is not supported; supported: {', '.join(POOLING_MODES)}"
        )
    return tuple(mode for mode in POOLING_MODES if mode in wanted)


def _cls(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return hidden[:, 0]


def _max(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return hidden.masked_fill(mask == 0, -math.inf).amax(dim=1)


def _token_sum_and_count(hidden: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    summed = torch.bmm(mask.transpose(1, 2), hidden).squeeze(1)  # (B, 1, L) @ (B, L, D) -> (B, D)
    return summed, mask.sum(dim=1).clamp(min=1e-9)  # (B, 1)


def _mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    summed, count = _token_sum_and_count(hidden, mask)
    return summed / count


def _mean_sqrt_len(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    summed, count = _token_sum_and_count(hidden, mask)
    return summed / count.sqrt()


_POOLERS = {"cls": _cls, "max": _max, "mean": _mean, "mean_sqrt_len_tokens": _mean_sqrt_len}
