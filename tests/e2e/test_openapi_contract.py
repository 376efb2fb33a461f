"""The server's own /openapi.json, held against the running server (tiny random model).

schemathesis generates requests for every operation, valid and invalid, and checks each answer against the
spec: never a 5xx, a declared status, a declared content type, the declared headers and a body of the declared
schema; a method an operation does not have is a 405 with Allow. Nothing is excluded: the /admin operations
answer a dense model too (a 409 in OpenAI shape, or a 404 for an unknown action).

The HTTP guard's answers (401 without the API key, 413 beyond http.max_request_bytes) are never generated,
so one more test sends them to every operation and validates them against the spec the same way.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import jsonschema
import pytest
import schemathesis
from schemathesis import checks
from serve_harness import ServeProcess

from conftest import tiny_config

KEY = "contract-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
MAX_REQUEST_BYTES = 1 << 16

ST = str(Path(sys.executable).with_name("st"))
ENCODER = "all-minilm-l6-v2"

# schemathesis.toml for `st run`.
ST_CONFIG = f"""
workers = 1
request-timeout = 60
headers = {{ Authorization = "Bearer {KEY}" }}

[generation]
max-examples = 30       # per operation, in the fuzzing phase
deterministic = true    # derandomized: the same requests every run
no-shrink = true        # a failure is reported as found; shrinking could cost minutes

[phases.stateful]
enabled = false         # no operation creates what another reads

[checks]
enabled = false
not_a_server_error.enabled = true
status_code_conformance.enabled = true
content_type_conformance.enabled = true
response_headers_conformance.enabled = true
response_schema_conformance.enabled = true
unsupported_method.enabled = true        # a method the operation does not have: 405 with Allow
negative_data_rejection.enabled = true   # a request the schema forbids is a 4xx

# A served model name most of the time, so requests reach generation and the encoder, not only the 404.
[dictionaries.models]
values = ["tiny", "{ENCODER}"]

# An action the route has, half the time (the other half are the 404 of an unknown one).
[dictionaries.actions]
values = ["start", "stop", "dump"]

[parameters]
"body.model" = {{ dictionary = "models", probability = 0.9 }}
"path.action" = {{ dictionary = "actions", probability = 0.5 }}
"""
GUARD_CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    # Generated completions take tokenizer.default_max_tokens (the request schemas leave max_tokens to
    # additionalProperties, so generation never sets it): 2 keeps every generation request short.
    config = tiny_config(
        tiny_model,
        http={"api_key": KEY, "max_request_bytes": MAX_REQUEST_BYTES},
        tokenizer={"default_max_tokens": 2},
        encoder={"enabled": True, "max_wait_ms": 2},
    )
    with ServeProcess(tmp_path_factory.mktemp("contract"), config) as running:
        yield running


@pytest.fixture(scope="module")
def api_schema(server):
    config = schemathesis.Config.from_dict({})  # not one discovered from the working directory
    return schemathesis.openapi.from_url(
        server.url + "/openapi.json", config=config, headers=AUTH, timeout=30
    )


def test_every_answer_is_one_the_spec_declares(server, tmp_path):
    # The command line rather than schemathesis' pytest plugin, whose fixture loader (from_fixture) reads a
    # node attribute pytest 9 no longer has. Its coverage phase also sends each operation the methods it lacks.
    config = tmp_path / "schemathesis.toml"
    config.write_text(ST_CONFIG)
    command = [ST, f"--config-file={config}", "--no-color", "run", server.url + "/openapi.json"]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def _operations(api_schema):
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 9, [op.label for op in operations]
    return operations


def _send(server, operation, headers: dict, content: bytes | None = None) -> httpx.Response:
    path = operation.path.replace("{action}", "start")
    return httpx.request(operation.method, server.url + path, headers=headers, content=content, timeout=30)


def _validate(operation, response: httpx.Response) -> None:
    operation.Case().validate_response(response, checks=GUARD_CHECKS)


def test_without_the_key_every_operation_but_the_probes_is_a_declared_401(server, api_schema):
    for operation in _operations(api_schema):
        response = _send(server, operation, headers={})
        is_open = operation.path in ("/health", "/ready")  # load balancers probe them without the key
        assert (response.status_code == 401) != is_open, (
            operation.label,
            response.status_code,
            response.text,
        )
        _validate(operation, response)


def test_a_body_over_the_bound_is_a_declared_413_on_every_operation(server, api_schema):
    body = b'{"pad": "' + b"x" * MAX_REQUEST_BYTES + b'"}'
    for operation in _operations(api_schema):
        headers = {**AUTH, "content-type": "application/json"}
        response = _send(server, operation, headers=headers, content=body)
        assert response.status_code == 413, (operation.label, response.text)
        _validate(operation, response)


def _request_schema(server, name: str) -> jsonschema.protocols.Validator:
    spec = httpx.get(server.url + "/openapi.json", headers=AUTH, timeout=30).json()
    schema = {"$ref": f"#/components/schemas/{name}", "components": spec["components"]}
    return jsonschema.Draft202012Validator(schema)


MESSAGES = [{"role": "user", "content": "Hi"}]


@pytest.mark.parametrize(
    ("path", "schema", "body", "is_valid"),
    [
        ("/tokenize", "TokenizeRequest", {"prompt": "Hi"}, True),
        ("/tokenize", "TokenizeRequest", {"messages": MESSAGES}, True),
        ("/tokenize", "TokenizeRequest", {}, False),
        ("/tokenize", "TokenizeRequest", {"prompt": None, "messages": None}, False),
        ("/tokenize", "TokenizeRequest", {"prompt": None, "messages": MESSAGES}, False),
        ("/tokenize", "TokenizeRequest", {"prompt": "Hi", "messages": MESSAGES}, False),
        ("/detokenize", "DetokenizeRequest", {"tokens": [0, 1, 2]}, True),
        ("/detokenize", "DetokenizeRequest", {"tokens": [3.0]}, True),  # JSON Schema: 3.0 is an integer
        ("/detokenize", "DetokenizeRequest", {"tokens": [3.5]}, False),
        ("/detokenize", "DetokenizeRequest", {"tokens": [-1]}, False),
        ("/detokenize", "DetokenizeRequest", {"tokens": [2**31 - 1]}, False),
    ],
)
def test_the_schema_and_the_handler_agree_on_tokenize_and_detokenize(server, path, schema, body, is_valid):
    """What the spec allows is answered 200, what it forbids 400: schemathesis trusts the spec both ways."""
    assert _request_schema(server, schema).is_valid(body) == is_valid
    response = httpx.post(server.url + path, json=body, headers=AUTH, timeout=30)
    assert response.status_code == (200 if is_valid else 400), response.text


def test_token_ids_in_the_spec_are_bounded_by_the_vocabulary(server):
    tokenize = httpx.post(server.url + "/tokenize", json={"prompt": "Hi"}, headers=AUTH, timeout=30).json()
    assert tokenize["tokens"]
    validator = _request_schema(server, "DetokenizeRequest")
    spec_max = validator.schema["components"]["schemas"]["DetokenizeRequest"]["properties"]["tokens"]["items"]
    vocab_size = spec_max["maximum"] + 1
    assert (
        httpx.post(server.url + "/detokenize", json={"tokens": [vocab_size - 1]}, headers=AUTH).status_code
        == 200
    )
    assert (
        httpx.post(server.url + "/detokenize", json={"tokens": [vocab_size]}, headers=AUTH).status_code == 400
    )
    completion = _request_schema(server, "CompletionRequest")
    assert completion.is_valid({"model": "tiny", "prompt": [vocab_size - 1]})
    assert not completion.is_valid({"model": "tiny", "prompt": [vocab_size]})
    assert not completion.is_valid({"model": "tiny", "prompt": [[0], [vocab_size]]})


def test_schemathesis_finds_every_request_the_spec_allows_accepted_by_tokenize_and_detokenize(
    server, tmp_path
):
    """Both ways on the two operations whose handlers check more than types: what the spec allows is never
    refused (positive_data_acceptance), what it forbids never accepted (negative_data_rejection)."""
    config = tmp_path / "schemathesis.toml"
    config.write_text(ST_CONFIG)
    command = [
        *(ST, f"--config-file={config}", "--no-color", "run"),
        *("--checks", "positive_data_acceptance,negative_data_rejection,not_a_server_error"),
        *("--include-path-regex", "^/(de)?tokenize$", server.url + "/openapi.json"),
    ]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
