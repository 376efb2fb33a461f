"""The OpenAI-compatible HTTP app of one tokenizer process: its operations (operations.py), the error
handlers that answer in the OpenAI shape, the HTTP guard and the web page."""

from __future__ import annotations

import time

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from roles.tokenizer import openapi_responses as declared
from roles.tokenizer.chat import create_chat_completion
from roles.tokenizer.completions import create_completion
from roles.tokenizer.embeddings import EmbeddingRequest, create_embeddings
from roles.tokenizer.expert_recording import control_expert_recording, rebalance_experts
from roles.tokenizer.front_state import FrontState
from roles.tokenizer.http_guard import HTTPGuard
from roles.tokenizer.openai_errors import OpenAIError, install_error_handlers
from roles.tokenizer.operations import Operations, OperationsApp
from roles.tokenizer.request_prep import check_not_draining
from roles.tokenizer.schemas import ChatCompletionRequest, CompletionRequest
from roles.tokenizer.tokenize_routes import add_tokenize_routes
from roles.tokenizer.web_page import web_page_routes


def create_app(state: FrontState, cors_origins: tuple[str, ...] = ()) -> OperationsApp:
    api = Operations(title="roleserve")
    api.finish_spec(declared.drop_validation_422)

    @api.post("/v1/completions", responses=declared.GENERATION)
    async def completions(body: CompletionRequest, request: Request):
        return await create_completion(state, request, body)

    @api.post("/v1/chat/completions", responses=declared.GENERATION)
    async def chat_completions(body: ChatCompletionRequest, request: Request):
        return await create_chat_completion(state, request, body)

    @api.post("/v1/embeddings", responses=declared.EMBEDDINGS)
    async def embeddings(body: EmbeddingRequest):
        check_not_draining(state, "encoder")
        return await create_embeddings(state.embed_client, body)

    add_tokenize_routes(api, state, declared.TOKENIZE)

    @api.get("/v1/models", responses=declared.MODELS)
    async def models():
        model = {
            "id": state.settings.served_name,
            "object": "model",
            "created": state.created,
            "owned_by": "roleserve",
            "max_model_len": state.settings.context_length,
        }
        data = [model]
        info = state.embed_client.info if state.embed_client is not None else None
        if info is not None:
            data.append(
                {
                    "id": info.name,
                    "object": "model",
                    "created": state.created,
                    "owned_by": "roleserve",
                    "max_model_len": info.max_input_tokens,
                    "dimensions": info.dimensions,
                }
            )
        return {"object": "list", "data": data}

    # Liveness: every process runs and makes progress. A busy scheduler is alive (its heartbeat comes from a
    # thread), so a liveness probe never restarts a server for being loaded.
    @api.get("/health", responses=declared.HEALTH)
    async def health():
        if state.is_draining:
            return JSONResponse({"status": "draining"}, 503)
        if state.unavailable:  # a role requests wait on is late or down, or the server is starting
            return JSONResponse({"status": "unavailable", "unavailable": state.unavailable}, 503)
        return {"status": "ok"}

    # Readiness: whether this server should be sent new requests now. Also 503 while every scheduler's queue
    # is full (a new request would be refused): a load balancer sends it elsewhere until there is room.
    @api.get("/ready", responses=declared.READY)
    async def ready():
        if state.is_draining:
            return JSONResponse({"status": "draining"}, 503)
        if state.unavailable:
            return JSONResponse({"status": "unavailable", "unavailable": state.unavailable}, 503)
        if state.is_at_capacity():
            return JSONResponse({"status": "at capacity"}, 503)
        return {"status": "ready"}

    # The bare Response class: the spec then declares no JSON 200 and files the errors under application/json.
    @api.get("/metrics", response_class=Response, responses=declared.METRICS)
    async def metrics():
        if not state.settings.metrics_enabled:
            raise OpenAIError(404, "metrics are disabled (observability.metrics: false)")
        state.note_worker_metrics()  # this worker's own figures are fresh; the others' as of their last write
        text = state.metrics.render(state.client.scheduler_load, state.settings.exports_expert_balancedness)
        return Response(text, media_type=CONTENT_TYPE_LATEST)

    @api.post("/admin/expert_distribution/{action}", responses=declared.EXPERT_DISTRIBUTION)
    async def expert_distribution(action: str):
        return await control_expert_recording(state, action)

    @api.post("/admin/eplb/rebalance", responses=declared.REBALANCE)
    async def eplb_rebalance():
        return await rebalance_experts(state)

    @api.get("/roles", responses=declared.ROLES)
    async def roles():
        if state.inspect is None:
            raise OpenAIError(503, "live inspect is not available")
        return {"processes": await state.inspect(), "at": time.time()}

    app = OperationsApp(api, web_page_routes())
    install_error_handlers(app)
    if cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(cors_origins), allow_methods=["*"], allow_headers=["*"]
        )
    app.add_middleware(HTTPGuard, state=state, router=app.router)
    return app
