"""transformers' own tokenizer of the bundled GGUF, read once per test session: building it from the file's
49,152-token vocabulary takes transformers about 10 s on a slow CPU, and the tokenizer and model parity tests
both compare with it."""

from __future__ import annotations

import pytest

from roles.model_files.model_path import resolve_model_path


@pytest.fixture(scope="session")
def smollm2_reference_tokenizer():
    import transformers  # here: every test process imports conftest, few need transformers

    path = resolve_model_path("smollm2")
    return transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
