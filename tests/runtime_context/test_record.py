import hashlib
import json

import pytest

from runtime_context import ResolvedConfig, resolve
from runtime_context.record import canonical_form


def test_record_is_immutable_and_its_fingerprint_is_canonical():
    resolved = resolve(environ={})
    with pytest.raises(AttributeError, match="immutable"):
        resolved.fingerprint = "x"
    with pytest.raises(TypeError):
        resolved.raw_values["http.port"] = 1
    assert resolve(environ={}).fingerprint == resolved.fingerprint
    assert resolve(sets=["http.port=1"], environ={}).fingerprint != resolved.fingerprint
    expected = hashlib.sha256(canonical_form(resolved.raw_values).encode()).hexdigest()
    assert resolved.fingerprint == expected


def test_secrets_enter_the_fingerprint_only_as_hashes():
    resolved = resolve(sets=["http.api_key=hunter2"], environ={})
    canonical = canonical_form(resolved.raw_values)
    assert "hunter2" not in canonical
    assert json.loads(canonical)["http.api_key"] == "sha256:" + hashlib.sha256(b"hunter2").hexdigest()
    assert resolved.display_value("http.api_key") == "***"
    assert resolve(sets=["http.api_key=other"], environ={}).fingerprint != resolved.fingerprint


def test_wire_round_trip_preserves_values_sources_and_fingerprint():
    resolved = resolve(sets=["http.api_key=k", "http.cors_origins="], environ={})
    wire = json.loads(json.dumps(resolved.to_wire()))
    again = ResolvedConfig.from_wire(wire)
    assert again == resolved
    assert again.raw_value("http.api_key") == "k"
    assert again.source("http.api_key") == resolved.source("http.api_key")
    wire["values"]["http.port"] = 1
    with pytest.raises(ValueError, match="fingerprint mismatch"):
        ResolvedConfig.from_wire(wire)
