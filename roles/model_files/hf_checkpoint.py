"""Read a Hugging Face folder: ModelShape from config.json (``hf_config``), tensors from *.safetensors."""

from __future__ import annotations

import json
import pathlib

import torch

from roles.model_files.families.registry import hf_family
from roles.model_files.hf_config import hf_shape, read_config
from roles.model_files.model_path import ModelFileError
from roles.model_files.model_shape import ModelShape


class HFCheckpoint:
    """A folder with config.json and one or more .safetensors files."""

    def __init__(self, folder: str | pathlib.Path):
        self.path = pathlib.Path(folder)
        self.config = read_config(self.path)
        self.family = hf_family(self.config, str(self.path / "config.json"))
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
        return hf_shape(self.path, self.config, self.family)

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
