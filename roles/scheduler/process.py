"""The scheduler role's process: the engine behind ZMQ. Generate/Abort in, token batches out.

The loop never blocks while the engine has work: it drains waiting messages, runs one engine step, and
sends each tokenizer its events in one frame.
"""

from __future__ import annotations

import logging
import time

import torch
import zmq

from roles.child_process import ChildLink
from roles.protocol import (
    Abort,
    FrameCounter,
    Generate,
    LoadReport,
    TokenBatch,
    TokenEvent,
    encode,
    request_decoder,
)
from roles.scheduler.engine import Engine, TokenOutput
from roles.scheduler.engine_settings import engine_config_from_context
from roles.scheduler.request import SamplingParams
from runtime_context import get_weight_cache

log = logging.getLogger("roleserve.scheduler")

_IDLE_POLL_MS = 20
_LOAD_KEYS = ("num_running", "num_waiting", "num_kv_pages_used", "num_kv_pages_total", "num_dropped_frames")


class SchedulerServer:
    def __init__(self, link: ChildLink, engine: Engine):
        self.link = link
        self.engine = engine
        endpoints, context = link.endpoints, link.zmq_context
        self.requests = context.socket(zmq.PULL)
        self.requests.bind(endpoints.scheduler_requests(link.spec.instance))
        self.results = []
        for index in range(endpoints.num_tokenizers):
            push = context.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 0)
            push.connect(endpoints.tokenizer_results(index))
            self.results.append(push)
        self.load = None
        if endpoints.dp_size > 1:
            self.load = context.socket(zmq.PUSH)
            self.load.setsockopt(zmq.LINGER, 0)
            self.load.connect(endpoints.dp_load)
        self.poller = zmq.Poller()
        self.poller.register(self.requests, zmq.POLLIN)
        self.poller.register(link.control, zmq.POLLIN)
        self.frames = FrameCounter()
        self.reply_to: dict[str, int] = {}
        self.finished_since_report: list[str] = []
        self._last_load_report = 0.0

    def load_numbers(self) -> dict[str, int]:
        stats = self.engine.stats()
        stats["num_dropped_frames"] = self.frames.num_dropped + self.link.frames.num_dropped
        return stats

    def run(self) -> None:
        while self.link.shutdown_reason is None:
            timeout = 0 if self.engine.has_unfinished() else _IDLE_POLL_MS
            events = dict(self.poller.poll(timeout))
            if self.link.control in events:
                self.link.poll_control()
            if self.requests in events:
                self.drain_requests()
            if self.engine.has_unfinished():
                self.publish(self.engine.step())
            self.link.heartbeat(self.load_numbers())
            self.report_load()

    def drain_requests(self) -> None:
        while True:
            try:
                frame = self.requests.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            message = self.frames.decode(request_decoder, frame)
            if isinstance(message, Generate):
                self.admit(message)
            elif isinstance(message, Abort):
                self.engine.abort(message.request_id)

    def admit(self, message: Generate) -> None:
        try:
            sampling = message.sampling
            params = SamplingParams(**{f: getattr(sampling, f) for f in sampling.__struct_fields__})
            self.engine.add_request(message.request_id, message.prompt_ids, params)
        except (ValueError, TypeError) as error:
            event = TokenEvent(message.request_id, -1, None, None, "error", str(error))
            self.send(message.reply_to, [event])
            self.finished_since_report.append(message.request_id)
            return
        self.reply_to[message.request_id] = message.reply_to

    def publish(self, outputs: list[TokenOutput]) -> None:
        by_tokenizer: dict[int, list[TokenEvent]] = {}
        for output in outputs:
            owner = self.reply_to.get(output.request_id)
            if owner is None:
                continue
            token = -1 if output.token_id is None else output.token_id
            event = TokenEvent(
                output.request_id, token, output.logprob, output.top_logprobs, output.finish_reason
            )
            by_tokenizer.setdefault(owner, []).append(event)
            if output.is_finished:
                del self.reply_to[output.request_id]
                self.finished_since_report.append(output.request_id)
        for owner, events in by_tokenizer.items():
            self.send(owner, events)

    def send(self, owner: int, events: list[TokenEvent]) -> None:
        stats = self.load_numbers()
        load = {key: stats[key] for key in _LOAD_KEYS}
        load["instance"] = self.link.spec.instance
        self.results[owner].send(encode(TokenBatch(events, load)))

    def report_load(self, every_s: float = 0.05) -> None:
        now = time.monotonic()
        if self.load is None or (not self.finished_since_report and now - self._last_load_report < every_s):
            return
        self._last_load_report = now
        stats = self.engine.stats()
        usage = stats["num_kv_pages_used"] / max(1, stats["num_kv_pages_total"])
        report = LoadReport(
            self.link.spec.instance,
            stats["num_running"],
            stats["num_waiting"],
            usage,
            self.finished_since_report,
        )
        self.finished_since_report = []
        self.load.send(encode(report))


def shared_model_or_none(link: ChildLink, config):
    """The model mapped from the weight_cache_daemon, or None to load from disk (weight_cache.on_unavailable)."""
    cache = get_weight_cache()
    if not cache.enabled or link.endpoints.weight_cache is None:
        return None
    from roles.scheduler.models.shared_model import load_shared_model
    from roles.shared_weights.client import WeightCacheUnavailable

    try:
        return load_shared_model(
            link.zmq_context, link.endpoints.weight_cache, config.model_path, config.weight_dtype
        )
    except (WeightCacheUnavailable, OSError, ValueError) as error:
        if cache.on_unavailable == "fail":
            raise SystemExit(
                f"scheduler: weight cache unavailable and weight_cache.on_unavailable is fail: {error}"
            ) from None
        log.warning("weight cache unavailable (%s); loading %s from disk", error, config.model_path)
        return None


def main(link: ChildLink) -> None:
    config = engine_config_from_context()
    started = time.monotonic()
    if config.threads:
        torch.set_num_threads(config.threads)
    log.info(
        "loading %s (weights %s, %d threads)", config.model_path, config.weight_dtype, config.threads or 0
    )
    engine = Engine(config, shared_model_or_none(link, config))
    log.info("model ready in %.1fs; KV cache %d tokens", time.monotonic() - started, config.kv_cache_tokens)
    server = SchedulerServer(link, engine)
    link.send_ready()
    server.run()
