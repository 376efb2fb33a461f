"""The scheduler behind ZMQ: Generate/Abort in, token batches out.

The loop never blocks while the engine has work: it drains waiting messages, runs one engine step, and
sends each tokenizer its events in one frame. The scheduler owns its queue, so it decides admission: a
request beyond schedule.max_running_requests + schedule.max_queued_requests is answered with Overloaded,
whichever tokenizer sent it. Its load goes out as one LoadReport to every tokenizer and the dp_controller.
"""

from __future__ import annotations

import logging
import time

import zmq

from roles.child_process import ChildLink
from roles.protocol import (
    Abort,
    ExpertCommand,
    ExpertCommandReply,
    FrameCounter,
    Generate,
    LoadReport,
    Overloaded,
    TokenBatch,
    TokenEvent,
    encode,
    request_decoder,
)
from roles.scheduler.engine.core import Engine, TokenOutput
from roles.scheduler.expert_stats.commands import run_recording_command
from roles.scheduler.sched.batch_scheduler import QueueFull
from roles.sockets import bind, connect, connect_push

log = logging.getLogger("roleserve.scheduler")

_IDLE_POLL_MS = 20
_LOAD_REPORT_EVERY_S = 0.05  # a load that only changed (nothing ended) is reported at most this often
# What an overloaded scheduler tells clients to wait: about the time a few running requests take to finish.
_RETRY_AFTER_S = 1.0


class SchedulerServer:
    def __init__(self, link: ChildLink, engine: Engine, recorder_dir: str):
        """recorder_dir: where dumps of the expert distribution recorder go (exec.moe.recorder_dir)."""
        self.link = link
        self.engine = engine
        endpoints, context = link.endpoints, link.zmq_context
        self.requests = context.socket(zmq.PULL)
        own_requests, keys = endpoints.scheduler_requests(link.spec.instance), endpoints.curve
        if endpoints.schedulers_bind_requests:
            bind(self.requests, own_requests)
        else:  # an actor: the dp_controller binds it on the launcher's machine
            connect(self.requests, own_requests, keys)
        self.results = [
            connect_push(context, endpoints.tokenizer_results(i), keys)
            for i in range(endpoints.num_tokenizers)
        ]
        self.load_readers = list(self.results)  # every tokenizer shows the load on /metrics
        if endpoints.has_dp_controller:  # the dp_controller forgets finished requests
            self.load_readers.append(connect_push(context, endpoints.dp_load, keys))
        self.poller = zmq.Poller()
        self.poller.register(self.requests, zmq.POLLIN)
        self.poller.register(link.control, zmq.POLLIN)
        self.frames = FrameCounter()
        self.reply_to: dict[str, int] = {}
        self.finished_since_report: list[str] = []
        self._last_load_report = 0.0
        self._last_load: LoadReport | None = None
        self.recorder_dir = recorder_dir
        self.started_at = time.time()
        self.num_steps = 0  # loop turns that ran the engine: the progress the heartbeat thread reports

    def progress(self) -> tuple[int, int]:
        """(steps completed, requests held): read by the heartbeat thread (roles/heartbeat.py)."""
        return self.num_steps, len(self.reply_to)

    def run(self) -> None:
        self.link.beat_from_thread(self.progress)  # a long step never silences it
        while self.link.shutdown_reason is None:
            timeout = 0 if self.engine.has_unfinished() else _IDLE_POLL_MS
            events = dict(self.poller.poll(timeout))
            if self.link.control in events:
                self.link.poll_control()
            if self.requests in events:
                self.drain_requests()
            if self.engine.has_unfinished():
                self.publish(self.engine.step())
                self.num_steps += 1
            self.link.heartbeat()
            self.report_load()

    def drain_requests(self) -> None:
        while True:
            try:
                frame = self.requests.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            message = self.frames.decode(request_decoder, frame)
            if isinstance(message, Generate | ExpertCommand) and not 0 <= message.reply_to < len(
                self.results
            ):
                self.frames.drop()  # no tokenizer to answer
            elif isinstance(message, Generate):
                self.admit(message)
            elif isinstance(message, Abort):
                self.engine.abort(message.request_id)
            elif isinstance(message, ExpertCommand):
                self.on_recording(message)

    def on_recording(self, message: ExpertCommand) -> None:
        if message.action == "rebalance":
            error = "rebalancing experts needs parallel.ep_size > 1 and expert_backup.enabled: true"
            self.results[message.reply_to].send(
                encode(ExpertCommandReply(message.query_id, self.link.spec.instance, error=error))
            )
            return
        reply = run_recording_command(
            self.engine.expert_recorder, message, self.link.spec.instance, self.recorder_dir
        )
        self.results[message.reply_to].send(encode(reply))

    def admit(self, message: Generate) -> None:
        try:
            self.engine.add_request(message.request_id, message.prompt_ids, message.sampling, message.grammar)
        except QueueFull:
            self.results[message.reply_to].send(encode(Overloaded(message.request_id, _RETRY_AFTER_S)))
            self.finished_since_report.append(message.request_id)
            return
        except ValueError as error:
            event = TokenEvent(message.request_id, -1, None, None, "error", str(error))
            self.results[message.reply_to].send(encode(TokenBatch([event])))
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
                output.request_id,
                token,
                output.logprob,
                output.top_logprobs,
                output.finish_reason,
                error=output.error,
                num_cached_tokens=output.num_cached_tokens,
                queue_time_s=output.queue_time_s,
            )
            by_tokenizer.setdefault(owner, []).append(event)
            if output.is_finished:
                del self.reply_to[output.request_id]
                self.finished_since_report.append(output.request_id)
        # Load first, on the same sockets: a tokenizer that sees a request end already has the load after it.
        self.report_load()
        for owner, events in by_tokenizer.items():
            self.results[owner].send(encode(TokenBatch(events)))

    def report_load(self) -> None:
        """Send the load to its readers at once when requests ended (or were refused); when only the
        numbers changed, at most every _LOAD_REPORT_EVERY_S."""
        now = time.monotonic()
        if not self.finished_since_report and now - self._last_load_report < _LOAD_REPORT_EVERY_S:
            return
        stats = self.engine.stats()
        report = LoadReport(
            self.link.spec.instance,
            stats["num_running"],
            stats["num_waiting"],
            stats["num_kv_pages_used"],
            stats["num_kv_pages_total"],
            self.frames.num_dropped + self.link.frames.num_dropped,
            self.finished_since_report,
            self.balancedness_snapshot(),
            self.rebalance_counts(),
            self.started_at,
            stats["num_prompt_tokens"],
            stats["num_cached_prompt_tokens"],
            bool(stats["is_full"]),
            stats["num_spec_drafted_tokens"],
            stats["num_spec_accepted_tokens"],
            stats["num_spec_verifications"],
            stats["num_spec_emitted_tokens"],
        )
        if report == self._last_load:  # nothing changed and nothing finished
            return
        self._last_load_report = now
        self._last_load = report
        self.finished_since_report = []
        frame = encode(report)
        for reader in self.load_readers:
            reader.send(frame)

    def rebalance_counts(self) -> dict[str, int] | None:
        rebalancer = self.engine.expert_rebalancer
        if rebalancer is None:
            return None
        return {"applied": rebalancer.num_applied, "skipped": rebalancer.num_skipped}

    def balancedness_snapshot(self):
        reporter = self.engine.expert_reporter
        return reporter.snapshot() if reporter is not None and reporter.exports else None
