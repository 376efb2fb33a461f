"""The engine core, usable in-process without any server: requests in, one token per request per step out
(a few when a speculative draft was kept, exec.speculative_method).

``step()`` = schedule (continuous batching, chunked prefill, preemption) -> drafts (speculative/) -> build
one ForwardBatch -> model forward over the paged KV cache -> sample the rows whose sequences are fully
computed, verify the drafted ones -> stop checks.
A stop token (eos or stop_token_ids) is reported and kept in the request's output ids; the layer that
turns ids into text decides whether to show it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from roles.protocol import SamplingFields
from roles.scheduler.engine.eos_ids import eos_token_ids
from roles.scheduler.expert_stats.noop_recorder import NoopRecorder
from roles.scheduler.kernels import native
from roles.scheduler.kv_cache.kv_groups import build_kv_groups, kv_cache_of
from roles.scheduler.models.rope_frequencies import long_rope_from
from roles.scheduler.sampling.sampler import Sampler, logits_array
from roles.scheduler.sampling.token_constraints import GrammarFailure, TokenConstraints, advance
from roles.scheduler.sched.batch_scheduler import BatchScheduler
from roles.scheduler.sched.forward_batch import ForwardBatch
from roles.scheduler.sched.request import Request
from roles.scheduler.sched.step_inputs import build_forward_batch
from roles.scheduler.speculative.choice import build_speculator
from roles.scheduler.speculative.speculator import Speculator, first_logit_rows

if TYPE_CHECKING:
    from roles.scheduler.expert_stats.reporter import BalancednessReporter
    from roles.scheduler.moe.shard_view import ShardFor


@dataclass
class EngineConfig:
    """What the engine is built from. No defaults of its own: the server fills it from the scheduler's bags
    and in-process users from the declarations (see engine_settings), so the two can never disagree."""

    model_path: str
    weight_dtype: str
    kernel_isa: str  # the CPU kernels' instruction set: auto, or a path to force
    activation_dtype: str  # float32 | int16 | int8: how the kernels multiply quantised weights
    threads: int  # compute threads of the kernels and torch; 0: the physical cores (native.default_threads)
    max_running_requests: int
    max_queued_requests: int  # waiting beyond the running ones; past both, submit raises QueueFull
    chunked_prefill_size: int  # new tokens per step, prefill chunks and decodes together
    kv_cache_tokens: int  # KV budget; kv_cache_tokens // page_size pages are usable
    kv_cache_dtype: str  # float32 | float16
    page_size: int
    enable_prefix_cache: bool
    speculative_method: str  # none | ngram | draft_model (speculative/)
    speculative_num_draft_tokens: int
    speculative_ngram_min: int
    speculative_ngram_max: int
    speculative_draft_model: str  # the draft model's path or alias (speculative_method draft_model)


@dataclass
class TokenOutput:
    """One event per request and new token (a step can give a request several, from a kept draft), or the
    end of an aborted request (token_id None)."""

    request_id: str
    token_id: int | None
    # Both from the post-penalty, pre-temperature distribution, when the request asked for logprobs.
    logprob: float | None = None  # of token_id
    top_logprobs: list[tuple[int, float]] | None = None  # [(token id, logprob)], highest first
    is_finished: bool = False
    finish_reason: str | None = None  # "stop" | "length" | "abort" | "error" (its grammar was refused)
    error: str | None = None  # with "error": why
    num_cached_tokens: int | None = None  # on a request's first token: prompt tokens the prefix cache held
    queue_time_s: float | None = None  # on a request's first token: its wait before it was first scheduled


class Engine:
    def __init__(
        self,
        config: EngineConfig,
        model_and_shape: tuple | None = None,
        expert_shard_for: ShardFor | None = None,
    ):
        """Loads ``config.model_path`` unless ``model_and_shape`` (model, ModelShape) is given (tests).
        expert_shard_for: this expert-parallel rank's experts, when loading here."""
        if config.page_size < 1 or config.kv_cache_tokens < config.page_size:
            raise ValueError(
                f"kv_cache_tokens must be >= page_size >= 1; got {config.kv_cache_tokens} and {config.page_size}"
            )
        # The one place a scheduler sets its compute threads (torch's too, once a torch model is loaded).
        native.set_threads(config.threads)
        if config.weight_dtype == "auto" and native.unavailable_reason() is None:
            native.select_isa(config.kernel_isa)
            native.set_activation_dtype(config.activation_dtype)
        loaded_here = model_and_shape is None
        if loaded_here:
            from roles.scheduler.loading.from_file import load_engine_model

            model_and_shape = load_engine_model(
                config.model_path,
                weight_dtype=config.weight_dtype,
                expert_shard_for=expert_shard_for,
            )
        self.config = config
        self.model, self.shape = model_and_shape
        _prepare(self.model, config.threads)
        self.eos_token_ids = eos_token_ids(self.model, config.model_path if loaded_here else None)
        num_pages = config.kv_cache_tokens // config.page_size + 1  # + the reserved page 0
        self.kv_groups = build_kv_groups(self.shape, config)
        self.kv_cache = kv_cache_of(self.kv_groups)
        self.prefix_cache = self.kv_groups[0].cache  # counts each request's prefix hit
        self.scheduler = BatchScheduler(
            self.kv_groups,
            config.max_running_requests,
            config.chunked_prefill_size,
            config.max_queued_requests,
            long_rope_from(self.shape.rope_scaling),
        )
        self.sampler = Sampler()
        self.speculator = build_speculator(config, self.shape)
        self.constraints = TokenConstraints(config.model_path, self.shape.vocab_size, self.eos_token_ids)
        # A request alone must always fit, or preemption could not make progress.
        self.max_total_tokens = min(self.shape.context_length, (num_pages - 1) * config.page_size)
        self._requests: dict[str, Request] = {}
        self._pending_outputs: list[TokenOutput] = []
        self._arrivals = itertools.count()
        # What MoE routing did: a no-op unless attach_expert_stats gives a recorder (exec.moe settings).
        self.expert_recorder: NoopRecorder = NoopRecorder()
        self.expert_reporter: BalancednessReporter | None = None
        self.expert_rebalancer = None  # expert_parallel.rebalance.ExpertRebalancer, fed every pass's counts
        self.num_passes = 0
        # Counted at each request's first token, like usage.cached_tokens: the prefix cache's hit ratio.
        self.num_prompt_tokens = 0
        self.num_cached_prompt_tokens = 0

    @property
    def expert_shard(self):
        """This expert-parallel rank's ExpertShard (the model's), or None: then every rank runs every pass
        together, one with no tokens an idle pass."""
        return getattr(self.model, "expert_shard", None)

    def attach_expert_stats(self, recorder: NoopRecorder, reporter: BalancednessReporter | None) -> None:
        """Record routing with `recorder` (the model's MoE layers report to it) and report balancedness."""
        self.expert_recorder, self.expert_reporter = recorder, reporter
        on_route = None if type(recorder) is NoopRecorder else recorder.on_route
        for module in self.model.modules():
            if hasattr(module, "on_route"):  # each MoE block tells what it routed
                module.on_route = on_route

    # ---- requests -------------------------------------------------------------------------------------
    def add_request(
        self,
        request_id: str,
        prompt_ids: list[int],
        params: SamplingFields | None = None,
        grammar: str | None = None,
    ) -> None:
        """Queue a request; ValueError if it can never run, QueueFull if the scheduler holds too many now.
        ``grammar``: an llguidance grammar every output token must keep to (structured output)."""
        params = params or SamplingFields()
        if request_id in self._requests:
            raise ValueError(f"request id {request_id!r} is already in use")
        if len(prompt_ids) >= self.max_total_tokens:
            raise ValueError(
                f"the prompt must be shorter than {self.max_total_tokens} tokens (context length / KV budget); "
                f"got {len(prompt_ids)}"
            )
        if prompt_ids and not 0 <= min(prompt_ids) <= max(prompt_ids) < self.shape.vocab_size:
            raise ValueError(f"prompt token ids must be in [0, {self.shape.vocab_size})")
        request = Request(request_id, prompt_ids, params, next(self._arrivals), self.max_total_tokens)
        if grammar is not None:
            request.matcher = self.constraints.compile(grammar)  # settled by the request's first mask
        self.scheduler.add(request)
        self._requests[request_id] = request

    def abort(self, request_id: str) -> bool:
        """Stop a waiting or running request now (its pages are freed at once); the next step() reports it."""
        request = self._requests.pop(request_id, None)
        if request is None:
            return False
        self.scheduler.finish(request, "abort")
        if self.speculator is not None:
            self.speculator.forget(request_id)
        self._pending_outputs.append(TokenOutput(request_id, None, is_finished=True, finish_reason="abort"))
        return True

    def has_unfinished(self) -> bool:
        return bool(self._requests) or bool(self._pending_outputs)

    # ---- the step -------------------------------------------------------------------------------------
    def step(self) -> list[TokenOutput]:
        outputs, self._pending_outputs = self._pending_outputs, []
        try:
            return self._step(outputs)
        except BaseException:  # an expert-parallel peer went away mid-pass: the same tokens run again later
            self._pending_outputs = outputs + self._pending_outputs
            raise

    def _step(self, outputs: list[TokenOutput]) -> list[TokenOutput]:
        batch = self.scheduler.schedule()
        if batch.is_empty:
            if self.expert_shard is not None:
                self._run_pass(None)
            return outputs
        drafts = self.speculator.propose(batch, self.scheduler) if self.speculator is not None else None
        forward_batch: ForwardBatch = build_forward_batch(batch, self.config.page_size, drafts)
        # The sequences this step computes up to their last token get a token; partially prefilled ones do not.
        rows = [
            i
            for i, (r, n) in enumerate(zip(batch.requests, batch.num_new_tokens, strict=True))
            if r.num_computed_tokens + n == r.num_tokens
        ]
        logit_rows, drafted = rows, []
        if drafts is not None:  # drafted requests are verified apart; the rest sample as usual
            starts = first_logit_rows(drafts)
            drafted = [i for i in rows if drafts[i]]
            rows = [i for i in rows if not drafts[i]]
            logit_rows = [starts[i] for i in rows]
        masks = self.constraints.start_masks(batch.requests, rows)  # made during the forward
        logits = self._run_pass(forward_batch)
        self.scheduler.on_computed(batch)
        for i in drafted:
            draft = drafts[i]
            self._emit_verified(
                batch.requests[i], logits[starts[i] : starts[i] + len(draft) + 1], draft, outputs
            )
        if not rows:
            return outputs
        requests = batch.requests if len(rows) == len(batch.requests) else [batch.requests[i] for i in rows]
        if len(logit_rows) != logits.shape[0]:
            logits = logits[logit_rows]
        if masks is not None:
            self.constraints.apply(logits, masks, rows)
        sampled = self.sampler.sample(logits, requests)
        for request, token_id, logprobs in zip(requests, sampled.token_ids, sampled.logprobs, strict=True):
            if isinstance(request.matcher, GrammarFailure):
                outputs.append(self._end(request, "error", request.matcher.message))
            else:
                outputs.append(self._append_token(request, token_id, logprobs))
        return outputs

    def _run_pass(self, forward_batch: ForwardBatch | None) -> np.ndarray | None:
        """One forward pass, told to the expert recorder and reporter; None: the idle pass of an
        expert-parallel rank with no tokens (it still serves the other ranks' tokens)."""
        pass_id = self.num_passes
        self.num_passes += 1
        self.expert_recorder.begin_pass(pass_id, None if forward_batch is None else forward_batch.positions)
        logits = None
        if forward_batch is None:
            self.model.idle_pass()
        else:
            logits = logits_array(self.model.forward(forward_batch, self.kv_cache))
        routed = self.expert_recorder.end_pass()
        if self.expert_rebalancer is not None and routed is not None:
            self.expert_rebalancer.observe(routed)
        if self.expert_reporter is not None and routed is not None:
            if self.expert_shard is not None:  # balancedness is about every rank's tokens
                routed = self.expert_shard.group.sum(routed)
            self.expert_reporter.observe(pass_id, routed)
        return logits

    def _append_token(self, request: Request, token_id: int, logprobs) -> TokenOutput:
        request.token_ids.append(token_id)
        output = TokenOutput(request.request_id, token_id)
        if request.num_output_tokens == 1:
            output.num_cached_tokens = request.num_cached_tokens
            output.queue_time_s = request.queue_time_s
            self.num_prompt_tokens += request.num_prompt_tokens
            self.num_cached_prompt_tokens += request.num_cached_tokens
        if logprobs is not None:
            request.logprobs.append(logprobs)
            output.logprob, output.top_logprobs = logprobs
        params = request.params
        reason = None
        try:
            is_complete = request.matcher is not None and advance(request.matcher, token_id)
        except ValueError as failure:
            self._retire(request, "error")
            output.is_finished, output.finish_reason, output.error = True, "error", str(failure)
            return output
        if (
            token_id in params.stop_token_ids
            or (not params.ignore_eos and token_id in self.eos_token_ids)
            or is_complete
        ):
            reason = "stop"
        elif request.num_output_tokens >= params.max_tokens or request.num_tokens >= request.max_total_tokens:
            reason = "length"
        if reason is not None:
            self._retire(request, reason)
            output.is_finished = True
            output.finish_reason = reason
        return output

    def _emit_verified(self, request: Request, logits: np.ndarray, draft: list[int], outputs: list) -> None:
        """Emit what verification kept, one token at a time through the stop checks; count the kept drafted
        tokens as computed unless the request ended on the way (then its pages are already freed)."""
        emitted = self.speculator.verify(request, logits, draft)
        for token_id in emitted:
            output = self._append_token(request, token_id, None)
            outputs.append(output)
            if output.is_finished:
                return
        self.scheduler.advance(request, len(emitted) - 1)

    def _end(self, request: Request, reason: str, error: str) -> TokenOutput:
        """End a request that gets no token this step (its grammar was refused)."""
        self._retire(request, reason)
        return TokenOutput(request.request_id, None, is_finished=True, finish_reason=reason, error=error)

    def _retire(self, request: Request, reason: str) -> None:
        self.scheduler.finish(request, reason)
        del self._requests[request.request_id]
        if self.speculator is not None:
            self.speculator.forget(request.request_id)

    # ---- conveniences ---------------------------------------------------------------------------------
    def generate(
        self, prompts: list[list[int]], params: SamplingFields | list[SamplingFields] | None = None
    ) -> list[list[int]]:
        """Run prompts to completion together; each result holds the output ids (stop token included)."""
        params_list = params if isinstance(params, list) else [params or SamplingFields()] * len(prompts)
        base = next(self._arrivals)
        ids = [f"generate-{base}-{i}" for i in range(len(prompts))]
        for request_id, prompt, request_params in zip(ids, prompts, params_list, strict=True):
            self.add_request(request_id, prompt, request_params)
        results: dict[str, list[int]] = {request_id: [] for request_id in ids}
        while self.has_unfinished():
            for output in self.step():
                if output.request_id in results and output.token_id is not None:
                    results[output.request_id].append(output.token_id)
        return [results[request_id] for request_id in ids]

    def stats(self) -> dict[str, int]:
        cache = self.prefix_cache
        caches = [group.cache for group in self.kv_groups]  # pages of every attention group together
        return {
            "num_running": len(self.scheduler.running),
            "num_waiting": len(self.scheduler.waiting),
            "num_kv_pages_used": sum(c.num_used_pages for c in caches),
            "num_kv_pages_total": sum(c.allocator.num_usable_pages for c in caches),
            "num_prefix_cached_pages": sum(c.num_cached_pages for c in caches),
            "num_prefix_hit_tokens": cache.num_hit_tokens,
            "num_prefix_queried_tokens": cache.num_queried_tokens,
            "num_prefix_evictions": sum(c.num_evictions for c in caches),
            "num_preemptions": self.scheduler.num_preemptions,
            "num_prompt_tokens": self.num_prompt_tokens,
            "num_cached_prompt_tokens": self.num_cached_prompt_tokens,
            "is_full": int(self.scheduler.is_full),  # a new request would be refused (QueueFull)
            **(self.speculator.stats() if self.speculator is not None else Speculator.NO_STATS),
        }


def _prepare(model, threads: int) -> None:
    """The model's kernel views built (and their packed tiles made) before the first request; a torch model
    also gets the engine's thread count. A NativeModel needs no torch, and this imports none for it."""
    from roles.scheduler.models.native_model import NativeModel

    if isinstance(model, NativeModel):
        from roles.scheduler.models.kernel_linear import prepare_views

        prepare_views(model.linears())
        return
    import torch

    if threads:
        torch.set_num_threads(threads)
    if isinstance(model, torch.nn.Module) and native.unavailable_reason() is None:
        from roles.scheduler.models.block_linear import prepare_kernel_views

        prepare_kernel_views(model)
