"""The scheduler loop of an expert-parallel rank: the ranks turn together.

Each turn starts with a tick: every rank says whether it has requests, whether it was told to shut down,
and the highest command number it has received. Then, the same on every rank:
- one asked to stop: all stop;
- recording and rebalance commands that every rank has received run now, in the dp_controller's order
  (it numbers each and sends it to every rank), so a dump gathers the same passes everywhere and a
  rebalance swaps experts at the same step on every rank;
- one has requests: all run one pass, a rank with none an idle pass that still serves its experts; then,
  every exec.moe.eplb_rebalance_interval_passes passes, all rebalance.
A rank that does not arrive is named by the others (RankMissing) within parallel.ep_timeout_s. They then
wait for the launcher to restart it (launcher.restart_policy: on-failure) and form the group again with
it, keeping their own requests; under restart_policy never the launcher stops everything meanwhile.
"""

from __future__ import annotations

import logging

from roles.child_process import ChildLink
from roles.protocol import ExpertCommand, ExpertCommandReply, encode
from roles.scheduler.engine.core import Engine
from roles.scheduler.expert_parallel.group import ExpertParallelGroup, RankMissing
from roles.scheduler.expert_stats.commands import apply_recording_command, merge_rank_dumps, write_dump
from roles.scheduler.expert_stats.recorder import RecorderOff
from roles.scheduler.server.scheduler_server import SchedulerServer

log = logging.getLogger("roleserve.scheduler")

_IDLE_POLL_MS = 20  # when no rank has work: how long a rank waits for messages before the next tick


class _ShuttingDown(Exception):
    pass


class LockstepSchedulerServer(SchedulerServer):
    def __init__(self, link: ChildLink, engine: Engine, recorder_dir: str, group: ExpertParallelGroup):
        super().__init__(link, engine, recorder_dir)
        self.group = group
        self.commands: dict[int, ExpertCommand] = {}  # by the dp_controller's sequence number
        self.last_run = 0  # commands up to this sequence number have run (or were dropped)
        self.others_busy = False  # another rank had work at the last tick: no idle wait before the next

    def on_recording(self, message: ExpertCommand) -> None:
        self.commands[message.sequence] = message  # runs once every rank has it

    def run(self) -> None:
        self.link.beat_from_thread(
            self.progress
        )  # a long step (or a wait for the other ranks) never silences it
        self.agree_after_joining()
        try:
            while True:
                try:
                    if self.turn():
                        return
                except RankMissing as error:
                    if self.link.shutdown_reason is not None:
                        log.info("stopping: another rank stopped first")
                        return
                    self.recover(error)
        except _ShuttingDown:
            log.info("stopping while waiting for a rank to come back")
        finally:
            self.group.leave()

    def turn(self) -> bool:
        """One loop turn; True when the ranks stop."""
        busy = self.others_busy or self.engine.has_unfinished()
        events = dict(self.poller.poll(0 if busy else _IDLE_POLL_MS))
        if self.link.control in events:
            self.link.poll_control()
        if self.requests in events:
            self.drain_requests()
        received = max(self.commands, default=self.last_run)
        tick = self.group.tick(self.engine.has_unfinished(), self.link.shutdown_reason is not None, received)
        if tick.any_stopping:
            return True
        for sequence in sorted(s for s in self.commands if self.last_run < s <= tick.agreed_commands):
            self.run_command(self.commands.pop(sequence))
        self.last_run = max(self.last_run, tick.agreed_commands)
        self.others_busy = tick.any_work
        if tick.any_work:
            self.publish(self.engine.step())
            rebalancer = self.engine.expert_rebalancer
            if rebalancer is not None and rebalancer.due(self.engine.num_passes):
                rebalancer.rebalance()  # every rank reached the same pass count together
        self.num_steps += 1  # a turn every rank took together: progress, whether or not this rank had work
        self.link.heartbeat()
        self.report_load()
        return False

    def recover(self, error: RankMissing) -> None:
        """A peer is gone: wait for the launcher to restart it (launcher.restart_policy: on-failure), then go
        on with it; this rank's requests are kept, and the pass that failed runs again. Under
        restart_policy never the launcher stops everything meanwhile."""
        log.warning("%s; waiting for the rank to come back", error)

        def keep_alive() -> None:
            self.link.heartbeat()
            self.link.poll_control()
            if self.link.shutdown_reason is not None:
                raise _ShuttingDown()

        self.group.regroup(keep_alive)
        log.info("expert-parallel group formed again (generation %d)", self.group.generation)
        self.others_busy = False
        self.agree_after_joining()

    def agree_after_joining(self) -> None:
        """After the group formed: count passes alike (interval rebalances fall on the same pass), and drop
        the commands not every rank can have seen (a restarted rank never got them): each is answered with
        an error, and later ones run everywhere."""
        self.engine.num_passes = self.group.max(self.engine.num_passes)
        floor = self.group.max(max(self.commands, default=self.last_run))
        for sequence in sorted(s for s in self.commands if s <= floor):
            message = self.commands.pop(sequence)
            error = "an expert-parallel rank restarted before every rank had this command; send it again"
            self.reply(message, ExpertCommandReply(message.query_id, self.link.spec.instance, error=error))
        self.last_run = max(self.last_run, floor)

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
