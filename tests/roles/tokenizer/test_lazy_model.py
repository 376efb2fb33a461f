"""The front's pydantic models are built on first use: none at import (the preloaded parent imports them all
before any role starts), a request model by its first validation, and the spec writes without warnings."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import warnings
warnings.simplefilter("error")
import pydantic, launcher.preloaded_imports
from roles.tokenizer.app import create_app
from roles.tokenizer.lazy_model import LazyModel
from roles.tokenizer.schemas import CompletionRequest

def models(base):
    for sub in base.__subclasses__():
        yield sub
        yield from models(sub)

front = [m for m in models(pydantic.BaseModel) if m.__module__.startswith("roles.")]
assert len(front) >= 20 and all(issubclass(m, LazyModel) for m in front), front
assert not [m for m in front if m.__pydantic_complete__], "built at import"
request = CompletionRequest.model_validate({"model": "m", "prompt": "hi", "max_tokens": 2})
assert request.max_tokens == 2 and CompletionRequest.__pydantic_complete__
spec = create_app(None).openapi()
assert "CompletionRequest" in spec["components"]["schemas"]
print("ok")
"""


def test_models_are_built_on_first_use_and_the_spec_writes_without_warnings():
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok"]
