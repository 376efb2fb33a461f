"""resolve_encoder_path: the alias, and each way a folder can fail to be a usable BERT encoder."""

from __future__ import annotations

import json

import pytest

from roles.encoder.model_folder import (
    DEFAULT_ENCODER_ALIAS,
    EncoderModelError,
    encoder_display_name,
    resolve_encoder_path,
)


def _write_folder(
    folder, config: dict | None = None, files=("config.json", "model.safetensors", "tokenizer.json")
):
    folder.mkdir(exist_ok=True)
    for name in files:
        (folder / name).write_text("{}")
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_alias_resolves_to_the_packaged_minilm():
    folder = resolve_encoder_path(DEFAULT_ENCODER_ALIAS)
    assert folder.is_absolute() and folder.name == "model"
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    assert json.loads((folder / "config.json").read_text())["model_type"] == "bert"
    assert encoder_display_name(DEFAULT_ENCODER_ALIAS, folder) == DEFAULT_ENCODER_ALIAS


def test_local_bert_folder_is_accepted(tmp_path):
    folder = _write_folder(tmp_path / "my-encoder", {"model_type": "bert"})
    resolved = resolve_encoder_path(str(folder))
    assert resolved == folder.resolve()
    assert encoder_display_name(str(folder), resolved) == "my-encoder"


def test_missing_folder_names_the_path_and_what_is_accepted(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(EncoderModelError) as raised:
        resolve_encoder_path(str(missing))
    message = str(raised.value)
    assert str(missing) in message and "does not exist" in message
    assert DEFAULT_ENCODER_ALIAS in message and "tokenizer.json" in message


def test_a_file_is_not_a_folder(tmp_path):
    file = tmp_path / "model.safetensors"
    file.write_text("")
    with pytest.raises(EncoderModelError, match="is not a folder"):
        resolve_encoder_path(str(file))


def test_empty_folder_lists_every_missing_file(tmp_path):
    with pytest.raises(EncoderModelError) as raised:
        resolve_encoder_path(str(tmp_path))
    message = str(raised.value)
    assert str(tmp_path) in message
    assert "lacks config.json, *.safetensors, tokenizer.json" in message


def test_folder_lacking_only_the_tokenizer(tmp_path):
    _write_folder(tmp_path, {"model_type": "bert"}, files=("config.json", "model.safetensors"))
    with pytest.raises(EncoderModelError, match=r"lacks tokenizer\.json;"):
        resolve_encoder_path(str(tmp_path))


def test_wrong_model_type_is_refused(tmp_path):
    _write_folder(tmp_path, {"model_type": "llama", "architectures": ["LlamaForCausalLM"]})
    with pytest.raises(EncoderModelError) as raised:
        resolve_encoder_path(str(tmp_path))
    message = str(raised.value)
    assert "'llama'" in message and "not 'bert'" in message and str(tmp_path) in message


def test_unreadable_config_is_reported(tmp_path):
    _write_folder(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(EncoderModelError, match="cannot read"):
        resolve_encoder_path(str(tmp_path))
