"""bench/read_rate.py: its loop reads every byte it is given, on any number of threads, and the rate it
reports is a finite positive figure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench import read_rate


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_loop_reads_every_word_once_on_any_number_of_threads(threads):
    # 8,208 words: 513 loop steps of 128 bytes, an odd number to share between the threads
    data = np.random.default_rng(threads).integers(-(2**62), 2**62, size=8 * 1026, dtype=np.int64)
    assert read_rate.xor_of(data, threads) == int(np.bitwise_xor.reduce(data))
    data[-1] ^= 1  # the last word counts
    assert read_rate.xor_of(data, threads) == int(np.bitwise_xor.reduce(data))


def test_data_the_loop_cannot_step_through_is_refused():
    with pytest.raises(ValueError, match="128-byte steps"):
        read_rate.xor_of(np.zeros(8 * 16 + 1, dtype=np.int64), 1)
    with pytest.raises(ValueError, match="contiguous"):
        read_rate.xor_of(np.zeros(8 * 32, dtype=np.int64)[::2], 1)


def test_the_rate_is_a_finite_positive_figure():
    rate = read_rate.read_gb_s(threads=1, mib=8, repeats=2)
    assert math.isfinite(rate) and rate > 0
