"""bench/peers.py's table: figures from a measurement, roleserve over the best peer per figure (highest or
lowest), and columns for peers that did not run. Measurements are made up here: no server runs."""

from __future__ import annotations

import pytest

from bench.peers import (
    FIGURES,
    OURS,
    PEERS,
    figures,
    format_table,
    load_bound,
    ratio_to_best_peer,
    read_share,
    run_one,
)
from bench.roofline import LinearWeights

WEIGHTS = LinearWeights(params=100_000_000, file_bytes=60_000_000)


def measurement(tok_s_1: float, tok_s_32: float, ttft: float = 0.05, **extra) -> dict:
    rows = [
        {"tok_s": tok_s_1, "ttft_p50": ttft, "itl_p50": 1 / tok_s_1},
        {"tok_s": tok_s_32, "ttft_p50": ttft * 20, "itl_p50": 32 / tok_s_32},
    ]
    return {"rows": rows, "ready_s": 1.5, "pss_mib": 800.0, **extra}


def test_figures_carry_every_row_in_the_shown_units():
    shown = figures(measurement(80.0, 160.0), WEIGHTS)
    assert list(shown) == [figure for figure, _ in FIGURES]
    assert shown["c=1 TTFT p50 (ms)"] == pytest.approx(50.0)
    assert shown["c=32 GFLOP/s (2 x linear weights x tok/s)"] == pytest.approx(2 * 100e6 * 160 / 1e9)
    assert shown["c=1 GB/s (weight bytes x tok/s)"] == pytest.approx(60e6 * 80 / 1e9)


def test_a_server_holding_bfloat16_weights_reads_two_bytes_a_weight():
    shown = figures(measurement(80.0, 160.0, bytes_per_param=2), WEIGHTS)
    assert shown["c=1 GB/s (weight bytes x tok/s)"] == pytest.approx(2 * 100e6 * 80 / 1e9)


def test_the_load_is_bounded_by_the_fastest_int8_multiply_and_ours_shown_against_it():
    weights = LinearWeights(params=1_000_000, file_bytes=600_000, head_params=200_000)
    ops = weights.ops_per_generated_token(128, 128)
    rates = {"vpmaddubsw ymm": 100.0, "vpdpbusd zmm": 400.0}
    lines = load_bound(weights, 128, 128, rates, figures(measurement(80.0, 160.0), weights))
    bound = 400e9 / ops
    assert f"{ops / 1e6:.0f} M operations per generated token" in lines[0]
    assert f"vpdpbusd zmm alone (400.0 GOP/s) bounds it at {bound:.0f} tok/s" in lines[0]
    assert lines[1] == f"roleserve's c=32 160.0 tok/s is {160 / bound:.0%} of that bound"
    assert load_bound(weights, 128, 128, {}, figures(measurement(80.0, 160.0), weights)) == []


def test_the_c1_weight_traffic_is_held_against_the_read_rate_on_the_engines_threads():
    ours = figures(measurement(80.0, 160.0), WEIGHTS)  # c=1: 60 MB x 80 tok/s = 4.8 GB/s
    lines = read_share(2, 10.0, 16.0, ours)
    assert lines[0] == "reading memory (bench/read_rate.py): 10.0 GB/s on one thread, 16.0 GB/s on 2"
    assert lines[1] == "roleserve's c=1 reads its weights at 4.8 GB/s: 30% of that on 2"
    assert read_share(2, 10.0, 16.0, "did not start: port in use") == lines[:1]


def test_the_best_peer_is_the_highest_or_the_lowest():
    values = {PEERS[0]: 100.0, PEERS[1]: 150.0, PEERS[2]: None, OURS: 120.0}
    assert ratio_to_best_peer(values, higher_is_better=True) == (pytest.approx(0.8), PEERS[1])
    assert ratio_to_best_peer(values, higher_is_better=False) == (pytest.approx(1.2), PEERS[0])


def test_no_ratio_without_roleserve_or_without_any_peer():
    assert ratio_to_best_peer({PEERS[0]: 100.0, OURS: None}, True) is None
    assert ratio_to_best_peer({PEERS[0]: None, PEERS[1]: None, OURS: 100.0}, True) is None


def test_the_table_names_peers_not_run_and_the_best_peer_per_row():
    results = {
        PEERS[0]: figures(measurement(70.0, 120.0, ttft=0.04), WEIGHTS),
        PEERS[1]: figures(measurement(90.0, 110.0, ttft=0.06), WEIGHTS),
        PEERS[2]: "no --vllm-python given",
        OURS: figures(measurement(80.0, 160.0), WEIGHTS),
    }
    lines = format_table(results).splitlines()
    assert lines[0] == "| figure | " + " | ".join([*PEERS, OURS]) + " | roleserve / best peer |"
    assert len(lines) == 2 + len(FIGURES)
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in lines[2:]}
    assert rows["c=1 output tok/s"] == ["70.0", "90.0", "not run", "80.0", "0.89x (ik_llama.cpp server) |"]
    assert rows["c=1 TTFT p50 (ms)"][-1] == "1.25x (llama.cpp server) |"
    assert rows["c=32 output tok/s"][-1] == "1.33x (llama.cpp server) |"
    assert rows["c=1 GB/s (weight bytes x tok/s)"][-1] == "- |"


def test_ready_takes_the_asked_starts():
    from bench.gguf_files import earlier_starts

    assert earlier_starts(type("Args", (), {"ready_starts": 5})()) == 4
    assert earlier_starts(object()) == 0  # bench/gguf_files.py's own runs: one start


class _SilentError(Exception):
    """As httpx's ReadError when a server drops its connection: no message at all."""


def _raise(error: BaseException):
    raise error


def test_a_server_that_fails_is_reported_by_its_first_line_or_its_error_type(capsys):
    assert run_one("peer", lambda: _raise(RuntimeError("port taken\nmore"))) == "failed: port taken"
    assert run_one("peer", lambda: _raise(_SilentError())) == "failed: _SilentError"
    assert run_one("peer", lambda: _raise(SystemExit("no binary"))) == "failed: no binary"
    assert "failed: _SilentError" in capsys.readouterr().out
