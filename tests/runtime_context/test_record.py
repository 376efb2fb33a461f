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


def test_nothing_of_a_secrets_value_enters_the_fingerprint():
    resolved = resolve(sets=["http.api_key=hunter2"], environ={})
    canonical = canonical_value("http.api_key", "hunter2")
    assert json.loads(canonical) == "(secret set)"
    assert resolved.display_value("http.api_key") == "***"
    assert "hunter2" not in repr(resolved)
    # A guessed key cannot be checked against the public fingerprint: every key gives the same one.
    assert resolve(sets=["http.api_key=other"], environ={}).fingerprint == resolved.fingerprint
    assert resolve(environ={}).fingerprint != resolved.fingerprint  # whether one is set still counts


def test_secret_values_are_compared_by_a_keyed_digest_made_per_resolution():
    resolved = resolve(sets=["http.api_key=hunter2"], environ={})
    again = resolve(sets=["http.api_key=hunter2"], environ={})
    assert resolved.secrets_digest() != again.secrets_digest()  # per run: nothing identifies the key
    wire = json.loads(json.dumps(resolved.for_projection(("http",)).to_wire()))
    assert ResolvedConfig.from_wire(wire).secrets_digest() == resolved.secrets_digest()
    wire["values"]["http.api_key"] = "other"  # same fingerprint, but not the launcher's secret
    with pytest.raises(ValueError, match="secrets mismatch"):
        ResolvedConfig.from_wire(wire)


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
