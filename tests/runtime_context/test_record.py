import hashlib
import json

import pytest

from runtime_context import ResolvedConfig, resolve
from runtime_context.record import LeafWithheld, canonical_value, leaf_digest


def test_record_is_immutable_and_its_fingerprint_is_canonical():
    resolved = resolve(environ={})
    with pytest.raises(AttributeError, match="immutable"):
        resolved.fingerprint = "x"
    with pytest.raises(TypeError):
        resolved.raw_values["http.port"] = 1
    assert resolve(environ={}).fingerprint == resolved.fingerprint
    assert resolve(sets=["http.port=1"], environ={}).fingerprint != resolved.fingerprint
    lines = "".join(
        f"{key}:{leaf_digest(key, resolved.raw_value(key))}\n" for key in sorted(resolved.raw_values)
    )
    assert resolved.fingerprint == hashlib.sha256(lines.encode()).hexdigest()


def test_secrets_enter_the_fingerprint_only_as_hashes():
    resolved = resolve(sets=["http.api_key=hunter2"], environ={})
    canonical = canonical_value("http.api_key", "hunter2")
    assert "hunter2" not in canonical
    assert json.loads(canonical) == "sha256:" + hashlib.sha256(b"hunter2").hexdigest()
    assert resolved.display_value("http.api_key") == "***"
    assert "hunter2" not in repr(resolved)
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


def test_a_child_receives_only_its_projection_and_can_still_prove_the_fingerprint():
    resolved = resolve(sets=["http.api_key=hunter2", "memory.page_size=32"], environ={})
    wire = json.loads(json.dumps(resolved.for_projection(("parallel", "observability")).to_wire()))
    assert "hunter2" not in json.dumps(wire)
    assert {key.split(".")[0] for key in wire["values"]} == {"parallel", "observability", "roles"}
    child = ResolvedConfig.from_wire(wire)
    assert child.fingerprint == resolved.fingerprint
    assert child.raw_value("parallel.dp_size") == 1
    with pytest.raises(LeafWithheld, match="memory.page_size is outside this process's projection"):
        child.raw_value("memory.page_size")
    assert child.display_value("http.api_key") == "(withheld)"
    # A tampered digest of a withheld leaf breaks the proof just as a tampered value does.
    wire["withheld"]["memory.page_size"] = leaf_digest("memory.page_size", 16)
    with pytest.raises(ValueError, match="fingerprint mismatch"):
        ResolvedConfig.from_wire(wire)


def test_record_mode_children_get_every_value_except_secrets_outside_their_projection():
    resolved = resolve(sets=["http.api_key=hunter2", "roles.enforcement=record"], environ={})
    scheduler_like = resolved.for_projection(("model", "memory"))
    assert scheduler_like.raw_value("http.port") == 30000  # readable, so record mode can record the read
    assert "http.api_key" in scheduler_like.withheld
    front_like = resolved.for_projection(("http",))
    assert front_like.raw_value("http.api_key") == "hunter2"
    assert front_like.withheld == frozenset()
