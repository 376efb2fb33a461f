"""bench/int8_peak.py: the loops it compiles are the instructions it names, each runs where the CPU has it,
and the rate it reports counts what the loop does."""

from __future__ import annotations

import math
import subprocess

import pytest

from bench import int8_peak
from roles.scheduler.kernels.isa import cpu_flags


@pytest.fixture(params=list(int8_peak.INSTRUCTIONS))
def instruction(request):
    flags = cpu_flags()
    missing = [flag for flag in int8_peak.INSTRUCTIONS[request.param][1] if flag not in flags]
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)} ({request.param})")
    return request.param


def test_each_loop_is_the_instruction_it_is_named_for():
    built = int8_peak.library_path()
    listing = subprocess.run(["objdump", "-d", str(built)], capture_output=True, text=True, check=True).stdout
    for name, (function, _, _) in int8_peak.INSTRUCTIONS.items():
        body = listing.split(f"<{function}._omp_fn.0>:", 1)[1].split("\n\n", 1)[0]
        mnemonic, register = name.split()
        # every chain of the loop, unrolled or not, is one such instruction on that register width
        assert body.count(f"{mnemonic} ") >= int8_peak.CHAINS
        assert all(f"%{register}" in line for line in body.splitlines() if f"{mnemonic} " in line)


def test_the_instructions_offered_are_those_the_cpu_flags_name():
    flags = cpu_flags()
    offered = int8_peak.available()
    assert ("vpmaddubsw ymm" in offered) == ("avx2" in flags)
    assert ("vpmaddubsw zmm" in offered) == ({"avx512f", "avx512bw"} <= flags)
    assert ("vpdpbusd zmm" in offered) == ({"avx512f", "avx512bw", "avx512_vnni"} <= flags)


def test_a_loop_runs_and_its_rate_is_a_finite_positive_figure(instruction):
    rate = int8_peak.peak_gop_s(instruction, threads=1, seconds=0.05)
    assert math.isfinite(rate) and rate > 0
