"""The tokenizer's link to the schedulers: send Generate/Abort, route token events to per-request queues."""

from __future__ import annotations

import asyncio
import itertools
import logging

import zmq
import zmq.asyncio

from roles.endpoints import Endpoints
from roles.protocol import (
    Abort,
    FrameCounter,
    Generate,
    SamplingFields,
    TokenBatch,
    TokenEvent,
    encode,
    result_decoder,
)

log = logging.getLogger("roleserve.tokenizer")


class EngineClient:
    def __init__(self, endpoints: Endpoints, instance: int, context: zmq.asyncio.Context):
        self.instance = instance
        self.requests = context.socket(zmq.PUSH)
        self.requests.setsockopt(zmq.LINGER, 0)
        self.requests.connect(endpoints.request_entry)
        self.results = context.socket(zmq.PULL)
        self.results.bind(endpoints.tokenizer_results(instance))
        self.queues: dict[str, asyncio.Queue[TokenEvent]] = {}
        self.frames = FrameCounter()
        self.scheduler_load: dict[int, dict[str, int]] = {}  # scheduler instance -> its latest load
        self._ids = itertools.count()

    def new_request_id(self) -> str:
        return f"t{self.instance}-{next(self._ids)}"

    @property
    def num_in_flight(self) -> int:
        return len(self.queues)

    async def submit(self, request_id: str, prompt_ids: list[int], sampling: SamplingFields) -> asyncio.Queue:
        queue: asyncio.Queue[TokenEvent] = asyncio.Queue()
        self.queues[request_id] = queue
        await self.requests.send(encode(Generate(request_id, self.instance, prompt_ids, sampling)))
        return queue

    async def abort(self, request_id: str) -> None:
        if self.queues.pop(request_id, None) is not None:
            await self.requests.send(encode(Abort(request_id)))

    def release(self, request_id: str) -> None:
        """Forget a request that finished normally."""
        self.queues.pop(request_id, None)

    async def receive_forever(self) -> None:
        while True:
            frame = await self.results.recv()
            batch = self.frames.decode(result_decoder, frame)
            if not isinstance(batch, TokenBatch):
                continue
            self.scheduler_load[batch.load.get("instance", 0)] = batch.load
            for event in batch.events:
                queue = self.queues.get(event.request_id)
                if queue is not None:
                    queue.put_nowait(event)
                    if event.finish_reason is not None:
                        self.queues.pop(event.request_id, None)
