"""Every family, from its Hugging Face folder and from the GGUF llama.cpp's converter makes of it, decodes greedily
token-for-token like transformers' generate on the folder: each prompt alone in exact mode, and all of them in
one batch with chunked prefill in exact and auto modes (these float32 weights keep their values in auto). The prompts
are longer than every sliding window.

The converter's F16, BF16 and Q8_0 files of each family decode like transformers on the folder with its weights
rounded the same way (the `gguf` package's quantisation, the converter's own rule for which tensors keep float32):
greedy tokens equal in exact mode, where every type is dequantised by the `gguf` package, and in auto mode, where
the file's own blocks run on the CPU kernels.

Mistral's GGUF is the exception that proves the rule: llama.cpp's converter writes a Mistral folder as a plain
``llama`` file without its window (llama.cpp then runs it with full attention), so its reference is the same
folder with ``sliding_window`` unset.
"""

from __future__ import annotations

import gguf.quants
import pytest
import torch

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from tests.family_checkpoints import FAMILY_CHECKPOINTS, transformers_greedy, write_family_checkpoint
from tests.llama_cpp_converter import convert_to_ggufs

NEW_TOKENS = 24
GREEDY = SamplingFields(temperature=0, max_tokens=NEW_TOKENS, ignore_eos=True)
PROMPTS = [list(range(40, 64)), [5, 17, 200, 3, 99, 42, 7, 8, 250, 1, 2, 3, 11, 13, 19, 23, 29, 31], [250, 7]]
# family -> what the GGUF's reference folder changes (llama.cpp's converter drops Mistral's window)
GGUF_REFERENCE_OVERRIDES = {"mistral": {"sliding_window": None}}


TENSOR_TYPES = ("f16", "bf16", "q8_0")
# What the converter keeps in float32 whatever --outtype says: 1-D tensors (norms, biases) and expert routers.
_KEPT_FLOAT32 = ("mlp.gate.weight", "shared_expert_gate.weight")


def _round_like_the_converter(model, outtype: str) -> None:
    """Round every weight the converter stores as ``outtype`` the way the `gguf` package does; blocks run along
    the last dimension (HF linears and experts are (..., out, in), as GGUF rows are)."""
    kind = gguf.GGMLQuantizationType[outtype.upper()]
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() < 2 or name.endswith(_KEPT_FLOAT32):
                continue
            values = param.detach().numpy()
            param.copy_(torch.from_numpy(gguf.quants.dequantize(gguf.quants.quantize(values, kind), kind)))


def _greedy(folder, overrides: dict, outtype: str | None = None) -> list[list[int]]:
    adjust = None if outtype is None else (lambda model: _round_like_the_converter(model, outtype))
    return transformers_greedy(folder, PROMPTS, NEW_TOKENS, overrides, adjust)


@pytest.fixture(scope="module", params=sorted(FAMILY_CHECKPOINTS))
def family(request, tmp_path_factory):
    """(family, folder, F32 GGUF path, transformers' continuations for the folder, for the GGUF, the GGUF files of
    the other types), made once."""
    name = request.param
    root = tmp_path_factory.mktemp(name)
    folder = write_family_checkpoint(name, root / "hf")
    files = convert_to_ggufs(folder, {kind: root / f"{name}-{kind}.gguf" for kind in ("f32", *TENSOR_TYPES)})
    expected = _greedy(folder, {})
    overrides = GGUF_REFERENCE_OVERRIDES.get(name)
    expected_gguf = _greedy(folder, overrides) if overrides else expected
    return name, str(folder), str(files.pop("f32")), expected, expected_gguf, files


def _engine(path: str, weight_dtype: str = "exact", **overrides) -> Engine:
    settings = dict(max_running_requests=8, chunked_prefill_size=16, kv_cache_tokens=1024, page_size=8)
    return Engine(engine_config(model_path=path, weight_dtype=weight_dtype, **{**settings, **overrides}))


@pytest.mark.parametrize("form", ["hf", "gguf"])
def test_each_prompt_alone_matches_transformers(family, form):
    name, folder, gguf, expected, expected_gguf, _ = family
    path, reference = (folder, expected) if form == "hf" else (gguf, expected_gguf)
    engine = _engine(path, enable_prefix_cache=False)
    assert [engine.generate([p], GREEDY)[0] for p in PROMPTS] == reference


@pytest.mark.parametrize("weight_dtype", ["exact", "auto"])
@pytest.mark.parametrize("form", ["hf", "gguf"])
def test_one_batch_with_chunked_prefill_matches_transformers(family, form, weight_dtype):
    name, folder, gguf, expected, expected_gguf, _ = family
    path, reference = (folder, expected) if form == "hf" else (gguf, expected_gguf)
    # The 24-token prompt is prefilled in chunks of 16 while the others already decode.
    assert _engine(path, weight_dtype).generate(PROMPTS, GREEDY) == reference


@pytest.mark.parametrize("outtype", TENSOR_TYPES)
def test_each_tensor_type_matches_transformers_on_weights_rounded_alike(family, outtype):
    name, folder, _, _, _, files = family
    reference = _greedy(folder, GGUF_REFERENCE_OVERRIDES.get(name, {}), outtype)
    path = str(files[outtype])
    assert [_engine(path, enable_prefix_cache=False).generate([p], GREEDY)[0] for p in PROMPTS] == reference
    assert _engine(path, "auto").generate(PROMPTS, GREEDY) == reference
