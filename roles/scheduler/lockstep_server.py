"""The scheduler loop of an expert-parallel rank: the ranks turn together.

Each turn starts with a tick: every rank says whether it has requests, whether it was told to shut down,
and how many recording commands it has received. Then, the same on every rank:
- one asked to stop: all stop;
- recording and rebalance commands that every rank has received run now, in arrival order (the
  dp_controller sends each one to every rank), so a dump gathers the same passes everywhere and a
  rebalance swaps experts at the same step on every rank;
- one has requests: all run one pass, a rank with none an idle pass that still serves its experts; then,
  every exec.moe.eplb_rebalance_interval_passes passes, all rebalance.
A rank that does not arrive is named by the others (RankMissing) within parallel.ep_timeout_s.
"""

from __future__ import annotations

import logging

from roles.child_process import ChildLink
from roles.protocol import ExpertCommand, ExpertCommandReply, encode
from roles.scheduler.engine import Engine
from roles.scheduler.expert_parallel.group import ExpertParallelGroup, RankMissing
from roles.scheduler.expert_stats.commands import apply_recording_command, merge_rank_dumps, write_dump
from roles.scheduler.expert_stats.recorder import RecorderOff
from roles.scheduler.process import SchedulerServer

log = logging.getLogger("roleserve.scheduler")

_IDLE_POLL_MS = 20  # when no rank has work: how long a rank waits for messages before the next tick


class LockstepSchedulerServer(SchedulerServer):
    def __init__(self, link: ChildLink, engine: Engine, recorder_dir: str, group: ExpertParallelGroup):
        super().__init__(link, engine, recorder_dir)
        self.group = group
        self.commands: list[ExpertCommand] = []
        self.num_commands_run = 0

    def on_recording(self, message: ExpertCommand) -> None:
        self.commands.append(message)  # runs once every rank has it

    def run(self) -> None:
        others_busy = False
        try:
            while True:
                busy = others_busy or self.engine.has_unfinished()
                events = dict(self.poller.poll(0 if busy else _IDLE_POLL_MS))
                if self.link.control in events:
                    self.link.poll_control()
                if self.requests in events:
                    self.drain_requests()
                tick = self.group.tick(
                    self.engine.has_unfinished(), self.link.shutdown_reason is not None, len(self.commands)
                )
                if tick.any_stopping:
                    return
                while self.num_commands_run < tick.agreed_commands:
                    self.run_command(self.commands[self.num_commands_run])
                    self.num_commands_run += 1
                others_busy = tick.any_work
                if tick.any_work:
                    self.publish(self.engine.step())
                    rebalancer = self.engine.expert_rebalancer
                    if rebalancer is not None and rebalancer.due(self.engine.num_passes):
                        rebalancer.rebalance()  # every rank reached the same pass count together
                self.link.heartbeat()
                self.report_load()
        except RankMissing:
            if self.link.shutdown_reason is None:
                raise
            log.info("stopping: another rank stopped first")  # shutting down: the peers went away first
        finally:
            self.group.leave()

    def run_command(self, message: ExpertCommand) -> None:
        instance = self.link.spec.instance
        if message.action == "rebalance":
            rebalancer = self.engine.expert_rebalancer
            if rebalancer is None:  # the same on every rank: no collective is left waiting
                error = "rebalancing experts needs expert_backup.enabled: true"
                self.reply(message, ExpertCommandReply(message.query_id, instance, error=error))
                return
            outcome = rebalancer.rebalance()
            self.reply(message, ExpertCommandReply(message.query_id, instance, rebalance=outcome.as_dict()))
            return
        try:
            dump = apply_recording_command(self.engine.expert_recorder, message.action)
        except (RecorderOff, ValueError) as error:  # the same on every rank: no collective is left waiting
            self.reply(message, ExpertCommandReply(message.query_id, instance, error=str(error)))
            return
        if dump is None:
            self.reply(message, ExpertCommandReply(message.query_id, instance))
            return
        dumps = self.group.gather_objects(dump)
        path = None
        if dumps is not None:  # rank 0 writes the group's file
            path = write_dump(self.recorder_dir, "ep", merge_rank_dumps(dumps))
        self.reply(message, ExpertCommandReply(message.query_id, instance, path=path))

    def reply(self, message: ExpertCommand, reply: ExpertCommandReply) -> None:
        self.results[message.reply_to].send(encode(reply))
