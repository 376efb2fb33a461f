"""Operations: served on Starlette with each endpoint given what its parameters ask for, and described by
the document FastAPI writes from the very same functions."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI
from pydantic import BaseModel
from starlette.requests import Request

from roles.tokenizer.operations import Operations, OperationsApp


class Note(BaseModel):
    text: str


class Echo(BaseModel):
    action: str
    text: str
    method: str


ANSWERS = {200: {"model": Echo, "description": "the echo"}}


async def echo(action: str, body: Note, request: Request):
    return Echo(action=action, text=body.text, method=request.method)


async def health():
    return {"status": "ok"}


def _operations() -> Operations:
    api = Operations(title="t")
    api.post("/echo/{action}", response_model=Echo, responses=ANSWERS)(echo)
    api.get("/health")(health)
    api.finish_spec(lambda spec: spec["info"].update(version="finished"))
    return api


def _send(app, method: str, path: str, **kwargs) -> httpx.Response:
    async def send():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://front") as client:
            return await client.request(method, path, **kwargs)

    return asyncio.run(send())


def test_an_endpoint_gets_its_path_parameter_body_and_request():
    response = _send(OperationsApp(_operations()), "POST", "/echo/start", json={"text": "hi"})
    assert response.status_code == 200
    assert response.json() == {"action": "start", "text": "hi", "method": "POST"}


def test_a_plain_return_is_json():
    response = _send(OperationsApp(_operations()), "GET", "/health")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_only_the_declared_method_is_served_and_head_is_not_added():
    app = OperationsApp(_operations())
    for method in ("HEAD", "POST"):
        response = _send(app, method, "/health")
        assert response.status_code == 405, method
        assert response.headers["allow"] == "GET"
    assert _send(app, "GET", "/nowhere").status_code == 404


def test_the_spec_is_fastapis_for_the_same_functions_then_finished():
    described = FastAPI(title="t", docs_url=None, redoc_url=None)
    described.post("/echo/{action}", response_model=Echo, responses=ANSWERS)(echo)
    described.get("/health")(health)
    expected = described.openapi()
    expected["info"]["version"] = "finished"
    assert _operations().spec() == expected


def test_the_spec_is_served_and_written_once():
    api = _operations()
    writes = []
    api.finish_spec(writes.append)
    app = OperationsApp(api)
    first = _send(app, "GET", "/openapi.json")
    second = _send(app, "GET", "/openapi.json")
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json() == app.openapi()
    assert set(first.json()["paths"]) == {"/echo/{action}", "/health"}
    assert len(writes) == 1
