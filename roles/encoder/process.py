"""The encoder role's process: embedding requests in over ZMQ, batched, one forward pass, vectors out.

A separate process with its own sockets: a slow embedding batch never holds up the schedulers.
"""

from __future__ import annotations

import logging
import time

import torch
import zmq

from roles.child_process import ChildLink
from roles.encoder.batcher import EmbeddingBatcher, PendingEmbedding
from roles.encoder.encoder_model import EncoderModel, InputTooLong
from roles.protocol import EmbedRequest, EmbedResult, EncoderInfo, FrameCounter, embed_decoder, encode
from roles.sockets import connect_push
from runtime_context import get_encoder, get_exec

log = logging.getLogger("roleserve.encoder")

_INFO_EVERY_S = 2.0


class EncoderServer:
    def __init__(self, link: ChildLink, model: EncoderModel, truncate: bool, batcher: EmbeddingBatcher):
        self.link, self.model, self.truncate, self.batcher = link, model, truncate, batcher
        endpoints, context = link.endpoints, link.zmq_context
        self.requests = context.socket(zmq.PULL)
        self.requests.bind(endpoints.encoder_requests(link.spec.instance))
        self.replies = [
            connect_push(context, endpoints.tokenizer_embeddings(i)) for i in range(endpoints.num_tokenizers)
        ]
        self.poller = zmq.Poller()
        self.poller.register(self.requests, zmq.POLLIN)
        self.poller.register(link.control, zmq.POLLIN)
        self.frames = FrameCounter()
        self.info = EncoderInfo(model.name, model.dimensions, model.max_input_tokens)
        self._last_info = 0.0
        # The progress the heartbeat thread reports (plain ints the loop assigns): batches run, requests held.
        self.num_batches = 0
        self.num_held = 0

    def progress(self) -> tuple[int, int]:
        return self.num_batches, self.num_held

    def announce(self) -> None:
        now = time.monotonic()
        if now - self._last_info >= _INFO_EVERY_S:
            self._last_info = now
            for push in self.replies:
                push.send(encode(self.info), zmq.NOBLOCK)

    def run(self) -> None:
        # A batch of long inputs can take longer than launcher.late_after_s (seconds on a slow CPU): beating
        # from a thread, the encoder stays heard while it computes and /health stays true (roles/heartbeat.py).
        self.link.beat_from_thread(self.progress)
        while self.link.shutdown_reason is None:
            due = self.batcher.seconds_until_due()
            timeout_ms = 200 if due is None else int(due * 1000)
            events = dict(self.poller.poll(timeout_ms))
            if self.link.control in events:
                self.link.poll_control()
            if self.requests in events:
                self.drain()
            if self.batcher.seconds_until_due() == 0.0:
                batch = self.batcher.take_batch()
                self.num_held = len(batch) + len(self.batcher.pending)
                self.run_batch(batch)
                self.num_batches += 1
            self.num_held = len(self.batcher.pending)
            self.announce()
            self.link.heartbeat()

    def drain(self) -> None:
        while self.requests.poll(0):
            message = self.frames.decode(embed_decoder, self.requests.recv())
            if not isinstance(message, EmbedRequest):
                continue
            if not 0 <= message.reply_to < len(self.replies):
                self.frames.drop()  # no tokenizer to answer
                continue
            try:
                ids = self.prepare(message)
            except (InputTooLong, ValueError) as error:
                self.reply(message.reply_to, EmbedResult(message.request_id, error=str(error)))
                continue
            self.batcher.add(PendingEmbedding(message.request_id, message.reply_to, ids))

    def prepare(self, message: EmbedRequest) -> list[list[int]]:
        if message.texts is not None:
            ids = self.model.tokenize(message.texts)
        else:
            ids = [list(row) for row in message.token_ids or []]
            vocab = self.model.vocab_size
            if any(not 0 <= t < vocab for row in ids for t in row):
                raise ValueError(f"token ids must be in [0, {vocab}) for {self.model.name}")
        if not ids or any(len(row) == 0 for row in ids):
            raise ValueError("every input must hold at least one token")
        return self.model.fit_lengths(ids, truncate=self.truncate)

    def run_batch(self, batch: list[PendingEmbedding]) -> None:
        flat = [ids for request in batch for ids in request.token_ids]
        vectors = self.model.embed_token_ids(flat).to(torch.float32).contiguous()
        start = 0
        for request in batch:
            rows = vectors[start : start + len(request.token_ids)]
            start += len(request.token_ids)
            self.reply(
                request.reply_to,
                EmbedResult(request.request_id, rows.numpy().tobytes(), rows.shape[1], request.num_tokens),
            )

    def reply(self, owner: int, result: EmbedResult) -> None:
        self.replies[owner].send(encode(result))


def main(link: ChildLink) -> None:
    settings = get_encoder()
    started = time.monotonic()
    model = EncoderModel.load(settings.model, threads=get_exec().threads)
    log.info("encoder %s loaded in %.1fs (%d dims)", model.name, time.monotonic() - started, model.dimensions)
    batcher = EmbeddingBatcher(settings.max_batch_tokens, settings.max_wait_ms)
    server = EncoderServer(link, model, settings.truncate, batcher)
    link.send_ready()
    server.announce()
    server.run()
