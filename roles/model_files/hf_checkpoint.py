"""Read a Hugging Face folder (llama, mixtral, qwen2_moe): ModelShape from config.json, tensors from *.safetensors."""

from __future__ import annotations

import json
import pathlib

import torch

from roles.model_files.hf_families import attention_window, family_fields, hf_family
from roles.model_files.model_path import ModelFileError
from roles.model_files.model_shape import ModelShape


def _rope_settings(config: dict) -> tuple[float, dict | None]:
    """(rope_theta, rope_scaling) from either the classic keys or transformers 5's ``rope_parameters``."""
    parameters = dict(config.get("rope_parameters") or {})
    theta = float(config.get("rope_theta", parameters.pop("rope_theta", 10000.0)))
    scaling = config.get("rope_scaling") or parameters or None
    if scaling is not None:
        scaling = {k: v for k, v in scaling.items() if k != "rope_theta"}
        kind = scaling.get("rope_type", scaling.get("type"))
        if kind in (None, "default"):
            return theta, None
        scaling["rope_type"] = kind
    return theta, scaling


class HFCheckpoint:
    """A folder with config.json and one or more .safetensors files."""

    def __init__(self, folder: str | pathlib.Path):
        self.path = pathlib.Path(folder)
        config_path = self.path / "config.json"
        try:
            self.config = json.loads(config_path.read_text())
        except (OSError, ValueError) as error:
            raise ModelFileError(f"{config_path} is not a readable JSON config: {error}") from error
        self.family = hf_family(self.config, str(config_path))
        self._files = sorted(self.path.glob("*.safetensors"))
        if not self._files:
            raise ModelFileError(f"{self.path}: no *.safetensors files")
        self._where = self._index_tensors()

    def _index_tensors(self) -> dict[str, pathlib.Path]:
        from safetensors import safe_open

        where = {}
        for file in self._files:
            try:
                with safe_open(file, framework="pt") as handle:
                    for name in handle.keys():
                        where[name] = file
            except Exception as error:
                raise ModelFileError(f"{file} is not a readable safetensors file: {error}") from error
        return where

    def shape(self) -> ModelShape:
        config = self.config
        where = str(self.path / "config.json")
        try:
            hidden = int(config["hidden_size"])
            num_heads = int(config["num_attention_heads"])
            theta, scaling = _rope_settings(config)
            tied = config.get("tie_word_embeddings", False) or "lm_head.weight" not in self._where
            context = int(config.get("max_position_embeddings", 2048))
            window = attention_window(config)
            return ModelShape(
                architecture=self.family,
                vocab_size=int(config["vocab_size"]),
                hidden_size=hidden,
                intermediate_size=int(config["intermediate_size"]),
                num_layers=int(config["num_hidden_layers"]),
                num_heads=num_heads,
                num_kv_heads=int(config.get("num_key_value_heads") or num_heads),
                head_dim=int(config.get("head_dim") or hidden // num_heads),
                rms_norm_eps=float(config.get("rms_norm_eps", 1e-6)),
                rope_theta=theta,
                context_length=context if window is None else min(context, window),
                tie_word_embeddings=bool(tied),
                rope_scaling=scaling,
                **family_fields(self.family, config, where),
            )
        except KeyError as error:
            raise ModelFileError(f"{where}: missing field {error}") from error

    def eos_token_ids(self) -> list[int]:
        """``eos_token_id`` of config.json and generation_config.json (an int or a list; chat models list several)."""
        ids: list[int] = []
        generation = self.path / "generation_config.json"
        for config in (self.config, json.loads(generation.read_text()) if generation.is_file() else {}):
            value = config.get("eos_token_id")
            ids.extend(value if isinstance(value, list) else [] if value is None else [value])
        return list(dict.fromkeys(int(i) for i in ids))

    def tensor_names(self) -> list[str]:
        return list(self._where)

    def tensor(self, name: str) -> torch.Tensor:
        return self.stored_tensor(name).to(torch.float32)

    def stored_tensor(self, name: str) -> torch.Tensor:
        """The tensor in the dtype the file stores it in."""
        from safetensors import safe_open

        if name not in self._where:
            raise ModelFileError(f"{self.path}: tensor {name!r} is missing")
        file = self._where[name]
        try:
            with safe_open(file, framework="pt") as handle:
                return handle.get_tensor(name)
        except Exception as error:
            raise ModelFileError(f"{file}: tensor {name!r} is unreadable: {error}") from error
