"""The scheduler owns its queue: it holds schedule.max_running_requests running plus
schedule.max_queued_requests waiting, whoever sends the requests, and answers the next one with Overloaded.

Driven through the real Engine on the tiny random Llama, and through the real SchedulerServer over real ZMQ
sockets with two tokenizers' ends played by plain sockets."""

from __future__ import annotations

import tempfile

import pytest
import zmq

from roles.child_process import ChildLink, ChildSpec
from roles.endpoints import Endpoints
from roles.protocol import (
    Generate,
    LoadReport,
    Overloaded,
    SamplingFields,
    TokenBatch,
    encode,
    result_decoder,
)
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from roles.scheduler.role import ROLE
from roles.scheduler.sched.batch_scheduler import QueueFull
from roles.scheduler.server.scheduler_server import SchedulerServer
from tests.tiny_checkpoint import write_tiny_llama

LONG = SamplingFields(temperature=0, max_tokens=1000, ignore_eos=True)


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory) -> str:
    return str(write_tiny_llama(tmp_path_factory.mktemp("tiny-llama")))


def bounded_engine(path: str, max_running: int, max_queued: int) -> Engine:
    config = engine_config(
        model_path=path,
        max_running_requests=max_running,
        max_queued_requests=max_queued,
        chunked_prefill_size=64,
        kv_cache_tokens=4096,
        page_size=8,
    )
    return Engine(config)


def test_the_engine_holds_running_plus_queued_and_refuses_the_next(tiny_path):
    engine = bounded_engine(tiny_path, max_running=2, max_queued=1)
    for i in range(3):
        engine.add_request(f"r{i}", [5, 6, 7], LONG)
    engine.step()  # two run, one waits: the bound counts both
    assert engine.stats()["num_running"] == 2 and engine.stats()["num_waiting"] == 1
    with pytest.raises(QueueFull, match=r"max_running_requests 2 \+ schedule.max_queued_requests 1"):
        engine.add_request("r3", [5, 6, 7], LONG)
    assert not engine.abort("r3")  # the refused request left no trace
    assert engine.abort("r0")  # room again
    engine.add_request("r3", [5, 6, 7], LONG)
    with pytest.raises(QueueFull):
        engine.add_request("r4", [5, 6, 7], LONG)


def test_a_finished_request_makes_room_and_the_bound_is_running_plus_queued(tiny_path):
    engine = bounded_engine(tiny_path, max_running=1, max_queued=0)
    engine.add_request("short", [5, 6], SamplingFields(temperature=0, max_tokens=2, ignore_eos=True))
    with pytest.raises(QueueFull):
        engine.add_request("refused", [5, 6], LONG)
    while engine.has_unfinished():
        engine.step()
    engine.add_request("next", [5, 6], LONG)
    roomy = bounded_engine(tiny_path, max_running=1, max_queued=49)
    for i in range(50):
        roomy.add_request(f"r{i}", [5, 6], LONG)
    assert roomy.stats()["num_waiting"] == 50  # nothing has run yet: all 50 wait
    with pytest.raises(QueueFull):
        roomy.add_request("r50", [5, 6], LONG)


class TokenizerEnds:
    """The tokenizers' side of the sockets: results bound per tokenizer, one push to the scheduler."""

    def __init__(self, endpoints: Endpoints, context: zmq.Context):
        self.results = []
        for index in range(endpoints.num_tokenizers):
            pull = context.socket(zmq.PULL)
            pull.bind(endpoints.tokenizer_results(index))
            self.results.append(pull)
        self.requests = context.socket(zmq.PUSH)
        self.requests.connect(endpoints.scheduler_requests(0))

    def next_message(self, tokenizer: int, timeout_ms: int = 60_000):
        assert self.results[tokenizer].poll(timeout_ms), f"tokenizer {tokenizer} got nothing"
        return result_decoder.decode(self.results[tokenizer].recv())

    def close(self) -> None:
        for socket in (*self.results, self.requests):
            socket.close(0)


@pytest.fixture
def server_and_tokenizers(tiny_path):
    runtime_dir = tempfile.mkdtemp(prefix="rs-")  # short: ipc paths are limited to ~100 characters
    endpoints = Endpoints(runtime_dir, num_tokenizers=2, dp_size=1)
    link = ChildLink(ChildSpec(ROLE.name, 0, ROLE.entry, ROLE.projection), endpoints)
    server = SchedulerServer(link, bounded_engine(tiny_path, max_running=1, max_queued=1), runtime_dir)
    tokenizers = TokenizerEnds(endpoints, link.zmq_context)
    yield server, tokenizers
    tokenizers.close()
    for socket in (server.requests, *server.results, link.control):
        socket.close(0)


def take_requests(server: SchedulerServer, total: int) -> None:
    """Let the server take Generate messages until ``total`` are held or refused, without stepping the engine."""
    while server.engine.scheduler.num_unfinished + len(server.finished_since_report) < total:
        assert server.requests.poll(60_000), "the scheduler got no request"
        server.drain_requests()


def test_the_scheduler_bounds_its_queue_across_tokenizers_and_answers_overloaded(server_and_tokenizers):
    server, tokenizers = server_and_tokenizers
    tokenizers.requests.send(encode(Generate("t0-0", 0, [5, 6, 7], LONG)))
    tokenizers.requests.send(encode(Generate("t1-0", 1, [5, 6, 7], LONG)))
    take_requests(server, 2)
    tokenizers.requests.send(encode(Generate("t1-1", 1, [5, 6, 7], LONG)))
    tokenizers.requests.send(encode(Generate("t0-1", 0, [5, 6, 7], LONG)))
    take_requests(server, 4)
    # One tokenizer each, two admitted in all: the bound is the scheduler's, not each tokenizer's.
    assert server.engine.stats()["num_waiting"] == 2  # not stepped yet: both still queued
    assert tokenizers.next_message(1) == Overloaded("t1-1", pytest.approx(1.0))
    assert tokenizers.next_message(0) == Overloaded("t0-1", pytest.approx(1.0))
    server.publish(server.engine.step())
    for tokenizer in (0, 1):
        report = tokenizers.next_message(tokenizer)  # the load goes first: a request's end never outruns it
        assert isinstance(report, LoadReport)
        assert (report.num_running, report.num_waiting) == (1, 1)
        assert sorted(report.finished) == ["t0-1", "t1-1"]  # refused ones end at once (dp_controller forgets)
    first = tokenizers.next_message(0)
    assert isinstance(first, TokenBatch) and [event.request_id for event in first.events] == ["t0-0"]
