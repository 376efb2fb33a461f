"""What a tok/s figure means in arithmetic and memory traffic: GFLOP/s and GB/s of a model's linear
weights at a measured rate, and this machine's own peaks to hold them against.

Each generated token multiplies its hidden state by every linear weight once (the attention and FFN
projections of every block, and the output head), 2 floating-point operations per weight; at one
request in flight each of those weights is also read from memory once per token. Attention over the
KV cache, norms and the embedding lookup are left out: at 128 + 128 tokens of a 135M model they are a
few percent of either figure, so both are slight lower bounds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile")


@dataclass(frozen=True)
class LinearWeights:
    """The weights a decode step multiplies by: how many, and how many bytes they take in the file; of
    them, the output head's."""

    params: int
    file_bytes: int
    head_params: int = 0

    def gflop_s(self, tok_s: float) -> float:
        return 2 * self.params * tok_s / 1e9

    def ops_per_generated_token(self, prompt_len: int, output_len: int) -> float:
        """Operations of the linears per generated token of a load whose every request has ``prompt_len``
        prompt tokens and ``output_len`` generated ones: each token the model runs meets every block weight
        (the prompt's and every generated one but the last, which is never fed back), and only the tokens
        whose next token is sampled meet the head (the prompt's last and the generated ones but the last)."""
        forwards = prompt_len + output_len - 1
        blocks = self.params - self.head_params
        return 2 * (blocks * forwards + self.head_params * output_len) / output_len

    def bound_tok_s(self, gop_s: float, prompt_len: int, output_len: int) -> float:
        """The most generated tokens per second of that load on ``gop_s`` billion operations a second spent
        on the linears alone, at any concurrency."""
        return gop_s * 1e9 / self.ops_per_generated_token(prompt_len, output_len)

    def gb_s(self, tok_s: float, bytes_per_param: float | None = None) -> float:
        """Weight bytes read per second: the file's own types, or bytes_per_param for a server that holds
        them converted (2 for bfloat16)."""
        size = self.file_bytes if bytes_per_param is None else self.params * bytes_per_param
        return size * tok_s / 1e9


def is_linear(name: str, shape: tuple[int, ...], names: set[str]) -> bool:
    """A block's 2-D projection, the output head, or the token embedding when it is the tied head."""
    if len(shape) != 2:
        return False
    if name.startswith("blk.") and name.endswith(".weight"):
        return True
    return name == "output.weight" or (name == "token_embd.weight" and "output.weight" not in names)


def linear_weights(tensors: list[tuple[str, tuple[int, ...], int, int]]) -> LinearWeights:
    """From (name, shape, element count, byte count) of every tensor of a GGUF file."""
    names = {name for name, *_ in tensors}
    chosen = [(name, count, size) for name, shape, count, size in tensors if is_linear(name, shape, names)]
    return LinearWeights(
        sum(c for _, c, _ in chosen),
        sum(s for *_, s in chosen),
        sum(c for name, c, _ in chosen if not name.startswith("blk.")),
    )


def gguf_linear_weights(path: str) -> LinearWeights:
    import gguf

    reader = gguf.GGUFReader(path)
    return linear_weights(
        [(t.name, tuple(int(d) for d in t.shape), int(t.n_elements), int(t.n_bytes)) for t in reader.tensors]
    )


def cpu_flags(cpuinfo: str) -> list[str]:
    """Which of FLAGS the first processor's flags line of /proc/cpuinfo text names."""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            present = set(line.split(":", 1)[1].split())
            return [flag for flag in FLAGS if flag in present]
    return []


def cpu_model(cpuinfo: str) -> str:
    for line in cpuinfo.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def matmul_gflop_s(threads: int, size: int = 1024, seconds: float = 2.0) -> float:
    """torch float32 matmul of two size x size matrices on `threads` threads, best of a bounded loop."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(size, size), torch.randn(size, size)
        torch.mm(a, b)
        best = 0.0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            torch.mm(a, b)
            best = max(best, 2 * size**3 / (time.perf_counter() - started) / 1e9)
        return best
    finally:
        torch.set_num_threads(previous)
