"""The HTTP API's operations, declared once: served on Starlette, described by FastAPI when /openapi.json is
first asked for.

An operation is an async function whose parameters say what it takes, the way FastAPI reads them: the
request (annotated ``Request``), the body (annotated with a pydantic model; request_body.py reads it with
FastAPI's rules) or a path parameter (by its name in the path). ``Operations.app`` serves them;
``Operations.spec`` hands the very same functions and declarations to FastAPI, which writes the OpenAPI
document from them, so the document and the handlers cannot drift apart.

FastAPI is imported there only: importing it took 0.2-0.3 s of the preloaded parent's 0.75 s of imports,
which every role waits for before it starts (docs/benchmarks.md). The document is rendered once, on its
first request, in a worker thread.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from roles.tokenizer.request_body import read_body

Endpoint = Callable[..., typing.Awaitable[typing.Any]]


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    endpoint: Endpoint
    declared: dict  # FastAPI's add_api_route keywords: responses, response_model, response_class, ...


def _response(value) -> Response:
    """What an endpoint returned, as FastAPI answers it: a Response as it is, a model as its JSON dump,
    anything else as JSON."""
    if isinstance(value, Response):
        return value
    if isinstance(value, BaseModel):
        return JSONResponse(value.model_dump(mode="json", by_alias=True))
    return JSONResponse(value)


def _handler(endpoint: Endpoint) -> Callable[[Request], typing.Awaitable[Response]]:
    """The Starlette endpoint that gives ``endpoint`` its arguments by their annotations."""
    hints = typing.get_type_hints(endpoint)
    takes: list[tuple[str, str, type | None]] = []
    for name in inspect.signature(endpoint).parameters:
        kind = hints.get(name)
        if isinstance(kind, type) and issubclass(kind, Request):
            takes.append((name, "request", None))
        elif isinstance(kind, type) and issubclass(kind, BaseModel):
            takes.append((name, "body", kind))
        else:
            takes.append((name, "path", None))

    async def handle(request: Request) -> Response:
        arguments = {}
        for name, source, model in takes:
            if source == "request":
                arguments[name] = request
            elif source == "body":
                arguments[name] = await read_body(request, model)
            else:
                arguments[name] = request.path_params[name]
        return _response(await endpoint(**arguments))

    return handle


def one_method_route(path: str, endpoint, method: str, **options) -> Route:
    """A Starlette route answering ``method`` alone: Starlette answers HEAD wherever GET is; FastAPI's routes,
    which the spec describes, do not."""
    route = Route(path, endpoint, methods=[method], **options)
    route.methods = {method}
    return route


@dataclass
class Operations:
    """The operations, and what to change in the document FastAPI writes (``finish_spec``)."""

    title: str
    operations: list[Operation] = field(default_factory=list)
    finishers: list[Callable[[dict], None]] = field(default_factory=list)

    def add(self, method: str, path: str, **declared) -> Callable[[Endpoint], Endpoint]:
        def register(endpoint: Endpoint) -> Endpoint:
            self.operations.append(Operation(method, path, endpoint, declared))
            return endpoint

        return register

    def get(self, path: str, **declared) -> Callable[[Endpoint], Endpoint]:
        return self.add("GET", path, **declared)

    def post(self, path: str, **declared) -> Callable[[Endpoint], Endpoint]:
        return self.add("POST", path, **declared)

    def finish_spec(self, finisher: Callable[[dict], None]) -> None:
        """``finisher`` edits the document in place after FastAPI wrote it."""
        self.finishers.append(finisher)

    def routes(self) -> list[BaseRoute]:
        return [
            one_method_route(operation.path, _handler(operation.endpoint), operation.method)
            for operation in self.operations
        ]

    def spec(self) -> dict:
        """The OpenAPI document, written by FastAPI from these operations, then finished."""
        from fastapi import FastAPI

        described = FastAPI(title=self.title, docs_url=None, redoc_url=None, openapi_url=None)
        for operation in self.operations:
            described.add_api_route(
                operation.path, operation.endpoint, methods=[operation.method], **operation.declared
            )
        with warnings.catch_warnings():
            # FastAPI wraps a body model in a field aliased "body"; for a model built on first use
            # (lazy_model.py) pydantic builds that wrapper late and warns that the alias does nothing there.
            # It does nothing anywhere: one body parameter is the whole body. The document is the same.
            warnings.filterwarnings("ignore", message="The 'alias' attribute with value 'body'")
            spec = described.openapi()
        for finisher in self.finishers:
            finisher(spec)
        return spec


class OperationsApp(Starlette):
    """The served app: ``operations`` plus ``extra_routes`` (not API: no place in the spec), and
    GET /openapi.json."""

    def __init__(self, operations: Operations, extra_routes: list[BaseRoute] = ()):
        self.operations = operations
        self._spec: dict | None = None
        self._spec_lock = threading.Lock()
        spec_route = Route("/openapi.json", self._serve_spec, include_in_schema=False)
        super().__init__(routes=[*operations.routes(), *extra_routes, spec_route])

    def openapi(self) -> dict:
        with self._spec_lock:
            if self._spec is None:
                self._spec = self.operations.spec()
            return self._spec

    async def _serve_spec(self, request: Request) -> Response:
        return JSONResponse(await asyncio.to_thread(self.openapi))
