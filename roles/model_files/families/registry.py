"""Architecture name -> family: GGUF ``general.architecture`` and config.json's ``architectures`` /
``model_type`` alike. Adding a family is one file beside this one and one row in FAMILIES.

llama.cpp writes Mixtral as a ``llama`` GGUF with ``llama.expert_count``, and Mistral as a plain ``llama``.
"""

from __future__ import annotations

from roles.model_files.families import (
    gemma3,
    llama,
    mistral,
    mixtral,
    phi3,
    qwen2,
    qwen2_moe,
    qwen3,
    qwen3_moe,
)
from roles.model_files.families.family import Family
from roles.model_files.model_path import ModelFileError

FAMILIES: tuple[Family, ...] = (
    llama.FAMILY,
    mistral.FAMILY,
    qwen2.FAMILY,
    qwen3.FAMILY,
    gemma3.FAMILY,
    phi3.FAMILY,
    mixtral.FAMILY,
    qwen2_moe.FAMILY,
    qwen3_moe.FAMILY,
)
_BY_NAME = {family.name: family for family in FAMILIES}


def family_named(name: str) -> Family:
    """The family of a ModelShape.architecture."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ModelFileError(f"model family {name!r} is unknown (known: {', '.join(_BY_NAME)})") from None


def hf_supported() -> str:
    return ", ".join(a for family in FAMILIES for a in family.hf_architectures)


def gguf_supported() -> str:
    names = dict.fromkeys(f.gguf_architecture for f in FAMILIES if f.gguf_architecture)
    return ", ".join(names)


def hf_family(config: dict, where: str) -> Family:
    """The family of a config.json (by architectures, else by model_type), or an error naming the supported ones."""
    architectures = config.get("architectures") or []
    for family in FAMILIES:
        if any(name in family.hf_architectures for name in architectures):
            return family
    model_type = config.get("model_type")
    for family in FAMILIES:
        if model_type in family.hf_model_types:
            return family
    raise ModelFileError(
        f"{where}: architectures {architectures} / model_type {model_type!r} are not supported "
        f"(supported: {hf_supported()})"
    )


def gguf_family(architecture: str, expert_count: int, where: str) -> Family:
    """The family of a GGUF's general.architecture (a llama with experts is a Mixtral)."""
    if architecture == "llama":
        return mixtral.FAMILY if expert_count else llama.FAMILY
    for family in FAMILIES:
        if family.gguf_architecture == architecture:
            return family
    raise ModelFileError(
        f"{where}: general.architecture {architecture!r} is not supported (supported: {gguf_supported()}; "
        "a llama with llama.expert_count is read as Mixtral)"
    )
