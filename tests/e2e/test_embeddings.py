"""POST /v1/embeddings through the encoder role, and proof that it never holds up completions."""

from __future__ import annotations

import base64
import threading

import httpx
import numpy as np
import pytest
from serve_harness import ServeProcess
from server_probes import metrics, paused, pid_of, series, wait_until

from conftest import tiny_config
from roles.encoder.encoder_model import EncoderModel

ENCODER = "all-minilm-l6-v2"


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    config = tiny_config(tiny_model, encoder={"enabled": True, "max_wait_ms": 2})
    with ServeProcess(tmp_path_factory.mktemp("embed"), config) as running:
        yield running


@pytest.fixture(scope="module")
def client(server):
    return server.openai_client(timeout_s=120)


@pytest.fixture(scope="module")
def reference():
    return EncoderModel.load(ENCODER)


def test_models_lists_the_encoder(client):
    ids = {m.id for m in client.models.list().data}
    assert ids == {"tiny", ENCODER}


def test_embeddings_match_the_encoder_model_in_process(client, reference):
    texts = ["A sentence about cats.", "Ein Satz über Hunde.", "日本語の文", "def f(x): return x"]
    response = client.embeddings.create(model=ENCODER, input=texts)
    got = np.array([d.embedding for d in response.data], dtype=np.float32)
    want = reference.embed_texts(texts).numpy()
    assert got.shape == (4, reference.dimensions)
    assert np.abs(got - want).max() < 1e-5
    assert response.usage.prompt_tokens == sum(len(ids) for ids in reference.tokenize(texts))


def test_token_id_input_base64_and_dimensions(server, reference):
    ids = reference.tokenize(["hello there"])[0]
    body = {"model": ENCODER, "input": [ids], "encoding_format": "base64", "dimensions": 64}
    data = httpx.post(server.url + "/v1/embeddings", json=body, timeout=60).json()["data"][0]
    vector = np.frombuffer(base64.b64decode(data["embedding"]), dtype=np.float32)
    assert vector.shape == (64,)
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    full = reference.embed_token_ids([ids])[0].numpy()[:64]
    assert np.allclose(vector, full / np.linalg.norm(full), atol=1e-5)


@pytest.mark.parametrize(
    "body, status",
    [
        ({"model": "nope", "input": "x"}, 404),
        ({"model": ENCODER, "input": "x", "dimensions": 4096}, 400),
        ({"model": ENCODER, "input": "word " * 2000}, 400),
        ({"model": ENCODER, "input": [[999999999]]}, 400),
        ({"model": ENCODER, "input": []}, 400),
        ({"model": ENCODER, "input": "x", "encoding_format": "int8"}, 400),
    ],
)
def test_bad_embedding_requests(server, body, status):
    response = httpx.post(server.url + "/v1/embeddings", json=body, timeout=60)
    assert response.status_code == status, response.text
    assert response.json()["error"]["message"]


def test_an_embedding_batch_in_the_encoder_does_not_hold_up_completions(server):
    big = {
        "model": ENCODER,
        "input": [f"sentence number {i} " + "lorem ipsum dolor " * 40 for i in range(64)],
    }
    done = {}

    def embed():
        done["embedding"] = httpx.post(server.url + "/v1/embeddings", json=big, timeout=300)

    worker = threading.Thread(target=embed, daemon=True)
    waiting = series("roleserve_embeddings_in_flight", role="tokenizer", instance=0)
    # The encoder is paused: the batch cannot finish before the completion, however fast either runs.
    with paused(pid_of(server, "encoder")):
        worker.start()
        wait_until(
            lambda: metrics(server).get(waiting) == 1, "the tokenizer waiting on the encoder's batch", server
        )
        body = {"model": "tiny", "prompt": "Hello", "max_tokens": 32, "temperature": 0, "ignore_eos": True}
        response = httpx.post(server.url + "/v1/completions", json=body, timeout=120)
        assert response.json()["usage"]["completion_tokens"] == 32
        assert worker.is_alive() and "embedding" not in done
    worker.join(300)
    assert len(done["embedding"].json()["data"]) == 64
    assert metrics(server)[waiting] == 0
