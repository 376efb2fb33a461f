"""The tokenizer's link to the encoder processes: its own sockets, apart from the completion path."""

from __future__ import annotations

import asyncio
import itertools

import zmq
import zmq.asyncio

from roles.endpoints import Endpoints
from roles.protocol import EmbedRequest, EmbedResult, EncoderInfo, FrameCounter, embed_decoder, encode
from roles.sockets import connect


class EmbedClient:
    def __init__(self, endpoints: Endpoints, instance: int, context: zmq.asyncio.Context):
        self.instance = instance
        self.requests = context.socket(zmq.PUSH)  # PUSH spreads requests over every connected encoder
        self.requests.setsockopt(zmq.LINGER, 0)
        for index in range(endpoints.num_encoders):
            connect(self.requests, endpoints.encoder_requests(index))
        self.results = context.socket(zmq.PULL)
        self.results.bind(endpoints.tokenizer_embeddings(instance))
        self.waiting: dict[str, asyncio.Future] = {}
        self.info: EncoderInfo | None = None
        self.frames = FrameCounter()
        self._ids = itertools.count()

    async def embed(self, texts: list[str] | None, token_ids: list[list[int]] | None) -> EmbedResult:
        request_id = f"e{self.instance}-{next(self._ids)}"
        future = asyncio.get_running_loop().create_future()
        self.waiting[request_id] = future
        try:
            await self.requests.send(encode(EmbedRequest(request_id, self.instance, texts, token_ids)))
            return await future
        finally:
            self.waiting.pop(request_id, None)

    def fail_all(self, error: Exception) -> None:
        """Raise ``error`` in every request waiting for an embedding (its encoder died or hung)."""
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(error)

    async def receive_forever(self) -> None:
        while True:
            message = self.frames.decode(embed_decoder, await self.results.recv())
            if isinstance(message, EncoderInfo):
                self.info = message
            elif isinstance(message, EmbedResult):
                future = self.waiting.get(message.request_id)
                if future is not None and not future.done():
                    future.set_result(message)
