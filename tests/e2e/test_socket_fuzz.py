"""Every socket a role listens on survives any frames a same-user peer sends: random bytes, wrong frame
counts, and well-formed messages with hostile values (indices out of range, unknown ids, huge numbers).
The server keeps serving and no process dies; what cannot be acted on is dropped and counted."""

from __future__ import annotations

import msgspec
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_harness import ServeProcess

from conftest import tiny_config

# Messages a peer may send to some socket, by tag, with fields of any value. Left out: the commands a
# same-user peer may legitimately give (DropEntries stops the weight cache by design).
TAGS = [
    "Generate",
    "Abort",
    "ExpertCommand",
    "TokenBatch",
    "Overloaded",
    "LoadReport",
    "ExpertCommandReply",
    "EmbedRequest",
    "EmbedResult",
    "EncoderInfo",
    "Ready",
    "Heartbeat",
    "InspectQuery",
    "InspectReply",
    "Ping",
    "WeightQuery",
    "ListEntries",
]
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=10,
)
FIELDS = st.sampled_from(
    [
        "request_id",
        "reply_to",
        "prompt_ids",
        "sampling",
        "action",
        "query_id",
        "events",
        "instance",
        "finished",
        "texts",
        "token_ids",
        "role",
        "pid",
        "fingerprint",
        "identity",
        "sequence",
        "started_at",
    ]
)
MESSAGES = st.builds(
    lambda tag, fields: msgspec.msgpack.encode({"type": tag, **fields}),
    st.sampled_from(TAGS),
    st.dictionaries(FIELDS, VALUES, max_size=6),
)
FRAMES = st.lists(MESSAGES | st.binary(max_size=64), min_size=1, max_size=4)


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    run = tmp_path_factory.mktemp("run")
    config = tiny_config(
        tiny_model,
        parallel={"dp_size": 2},
        weight_cache={"enabled": True},
        encoder={"enabled": True},
        launcher={"runtime_dir": str(run)},
    )
    with ServeProcess(tmp_path_factory.mktemp("fuzz"), config) as running:
        (private,) = run.iterdir()
        sockets = sorted(p for p in private.iterdir() if p.is_socket())
        assert len(sockets) >= 8, sockets  # control, weight cache, 2 schedulers, dp_controller x2, ...
        context = zmq.Context.instance()
        peers = []
        for path in sockets:  # a PUSH reaches PULL sockets, a DEALER reaches ROUTER sockets
            for kind in (zmq.PUSH, zmq.DEALER):
                peer = context.socket(kind)
                peer.setsockopt(zmq.LINGER, 0)
                peer.setsockopt(zmq.SNDTIMEO, 100)
                peer.connect(f"ipc://{path}")
                peers.append((path.name, peer))
        yield running, peers
        for _, peer in peers:
            peer.close(0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frames=FRAMES)
def test_any_frames_on_any_socket_leave_every_role_running(server, frames):
    running, peers = server
    for _, peer in peers:
        try:
            peer.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:  # a peer of the wrong kind never connects: nothing to send to
            pass
    assert running.process.poll() is None, running.output[-3000:]


def test_the_server_still_answers_after_the_fuzzing(server):
    running, _ = server
    import httpx

    assert httpx.get(running.url + "/health", timeout=30).status_code == 200
    body = {"model": "tiny", "prompt": "Hello", "max_tokens": 3, "temperature": 0}
    response = httpx.post(running.url + "/v1/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    embedded = httpx.post(
        running.url + "/v1/embeddings", json={"model": "all-minilm-l6-v2", "input": "a sentence"}, timeout=60
    )
    assert embedded.status_code == 200, embedded.text
    assert (
        "ready (pid" in running.output and "exited" not in running.output and "killed" not in running.output
    )
