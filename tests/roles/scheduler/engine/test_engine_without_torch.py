"""A scheduler serving the bundled file in auto never imports torch: its engine, built in a process where
importing torch fails, serves greedy, seeded sampled (top_k, top_p, penalties, logprobs) and n-gram
speculative requests, and its greedy tokens are the torch model's engine's."""

from __future__ import annotations

import json
import subprocess
import sys

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from roles.scheduler.loading.from_file import load_model
from tests.kernel_gate import needs_kernels

pytestmark = needs_kernels

PROMPTS = [[1, 504, 3458, 314, 4649, 314, 253], [28, 5556, 42, 8, 8, 8, 8, 8]]

# Run in a fresh interpreter: torch cannot be imported there, and the scheduler's modules are imported as its
# preloaded parent imports them.
_SERVE = """
import json, sys

import importlib.abc, importlib.machinery

class NoTorch(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    # torch can be found (the kernels look for its OpenMP runtime's folder) but not imported
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def create_module(self, spec):
        raise ImportError("torch is not to be imported here")

    def exec_module(self, module):
        raise ImportError("torch is not to be imported here")

sys.meta_path.insert(0, NoTorch())
import roles.child_process, roles.scheduler.process
from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config

prompts, method = json.loads(sys.argv[1]), sys.argv[2]
config = engine_config(model_path="smollm2", weight_dtype="auto", kv_cache_tokens=4096, speculative_method=method)
engine = Engine(config)
sampled = SamplingFields(
    max_tokens=12, temperature=0.8, seed=7, top_k=40, top_p=0.9, repetition_penalty=1.2, logprobs=3
)
for index, prompt in enumerate(prompts):
    engine.add_request(f"greedy{index}", prompt, SamplingFields(max_tokens=12, temperature=0, ignore_eos=True))
    engine.add_request(f"sampled{index}", prompt, sampled)
tokens = {}
while engine.has_unfinished():
    for output in engine.step():
        if output.token_id is not None:
            tokens.setdefault(output.request_id, []).append(output.token_id)
print(json.dumps({"model": type(engine.model).__name__, "tokens": tokens, "torch": "torch" in sys.modules}))
"""


def _serve_without_torch(method: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", _SERVE, json.dumps(PROMPTS), method],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _greedy_with_the_torch_model() -> list[list[int]]:
    config = engine_config(model_path="smollm2", weight_dtype="auto", kv_cache_tokens=4096)
    engine = Engine(config, load_model("smollm2", weight_dtype="auto"))
    for index, prompt in enumerate(PROMPTS):
        engine.add_request(f"g{index}", prompt, SamplingFields(max_tokens=12, temperature=0, ignore_eos=True))
    tokens: dict[str, list[int]] = {}
    while engine.has_unfinished():
        for output in engine.step():
            if output.token_id is not None:
                tokens.setdefault(output.request_id, []).append(output.token_id)
    return [tokens[f"g{index}"] for index in range(len(PROMPTS))]


def test_the_bundled_file_is_served_without_torch_and_greedy_as_the_torch_models_engine():
    expected = _greedy_with_the_torch_model()
    for method in ("none", "ngram"):
        served = _serve_without_torch(method)
        assert served["model"] == "NativeModel" and served["torch"] is False
        assert [served["tokens"][f"greedy{index}"] for index in range(len(PROMPTS))] == expected, method
        for index in range(len(PROMPTS)):
            assert 1 <= len(served["tokens"][f"sampled{index}"]) <= 12
