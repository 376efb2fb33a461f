"""The ``tokenizers`` Tokenizer of a checkpoint: from a GGUF file's metadata or a folder's tokenizer.json.

The tokenizer role wraps it (text <-> ids, chat template); the scheduler hands it to the grammar engine,
which needs every token's bytes to know which tokens may come next.
"""

from __future__ import annotations

import pathlib

from tokenizers import Tokenizer

from roles.model_files.gguf_tokenizer import tokenizer_from_gguf
from roles.model_files.hf_tokenizer import folder_tokenizer
from roles.model_files.model_path import is_gguf, resolve_model_path
from roles.model_files.tokenizer_metadata import read_tokenizer_metadata


def load_tokenizer(model_path: str | pathlib.Path) -> Tokenizer:
    """The tokenizer of a model path (alias, .gguf file or HF folder)."""
    resolved = resolve_model_path(str(model_path))
    if is_gguf(resolved):
        return tokenizer_from_gguf(read_tokenizer_metadata(resolved), pathlib.Path(resolved))
    return folder_tokenizer(pathlib.Path(resolved))
