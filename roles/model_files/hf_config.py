"""A Hugging Face folder's shape from its config.json, read as transformers reads it, without torch.

The family (``roles.model_files.families``) is picked by ``architectures`` / ``model_type`` and reads the fields
only it has; what every family shares is read here. Whether the head is tied is read from the config and, for a
folder that saves no ``lm_head.weight``, from the safetensors headers.
"""

from __future__ import annotations

import json
import pathlib

from roles.model_files.families.family import Family
from roles.model_files.families.registry import hf_family
from roles.model_files.model_path import ModelFileError
from roles.model_files.model_shape import ModelShape


def read_config(folder: pathlib.Path) -> dict:
    config_path = folder / "config.json"
    try:
        return json.loads(config_path.read_text())
    except (OSError, ValueError) as error:
        raise ModelFileError(f"{config_path} is not a readable JSON config: {error}") from error


def rope_settings(config: dict) -> tuple[float, dict | None]:
    """(rope_theta, rope_scaling) from the classic keys or transformers 5's ``rope_parameters`` (per layer type
    for the families that mix them: the global layers' here)."""
    parameters = dict(config.get("rope_parameters") or {})
    parameters = dict(parameters.get("full_attention", parameters))
    theta = float(config.get("rope_theta", parameters.pop("rope_theta", 10000.0)))
    scaling = config.get("rope_scaling") or parameters or None
    if scaling is not None:
        scaling = {k: v for k, v in scaling.items() if k not in ("rope_theta", "partial_rotary_factor")}
        kind = scaling.get("rope_type", scaling.get("type"))
        if kind in (None, "default"):
            return theta, None
        scaling["rope_type"] = kind
    return theta, scaling


def _saves_head(folder: pathlib.Path) -> bool:
    from safetensors import safe_open

    for file in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(file, framework="numpy") as handle:
                if "lm_head.weight" in handle.keys():
                    return True
        except Exception as error:
            raise ModelFileError(f"{file} is not a readable safetensors file: {error}") from error
    return False


def hf_shape(folder: pathlib.Path, config: dict | None = None, family: Family | None = None) -> ModelShape:
    config_path = folder / "config.json"
    where = str(config_path)
    config = read_config(folder) if config is None else config
    family = hf_family(config, where) if family is None else family
    try:
        hidden = int(config["hidden_size"])
        num_heads = int(config["num_attention_heads"])
        theta, scaling = rope_settings(config)
        fields = dict(
            architecture=family.name,
            vocab_size=int(config["vocab_size"]),
            hidden_size=hidden,
            intermediate_size=int(config["intermediate_size"]),
            num_layers=int(config["num_hidden_layers"]),
            num_heads=num_heads,
            num_kv_heads=int(config.get("num_key_value_heads") or num_heads),
            head_dim=int(config.get("head_dim") or hidden // num_heads),
            rms_norm_eps=float(config.get("rms_norm_eps", 1e-6)),
            rope_theta=theta,
            context_length=int(config.get("max_position_embeddings", 2048)),
            tie_word_embeddings=bool(config.get("tie_word_embeddings", False)) or not _saves_head(folder),
            rope_scaling=scaling,
        )
        fields.update(family.read_hf(config, where))
    except KeyError as error:
        raise ModelFileError(f"{where}: missing field {error} (the {family.name} family reads it)") from error
    except (TypeError, ValueError) as error:
        raise ModelFileError(f"{where}: unreadable {family.name} field: {error}") from error
    return ModelShape(**fields)
