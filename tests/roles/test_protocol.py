import msgspec

from roles.protocol import (
    Abort,
    FrameCounter,
    Generate,
    InspectQuery,
    Ready,
    SamplingFields,
    TokenBatch,
    TokenEvent,
    control_decoder,
    encode,
    request_decoder,
    result_decoder,
)


def test_messages_round_trip_through_their_channel_decoders():
    generate = Generate("r1", 0, [1, 2, 3], SamplingFields(temperature=0.0, stop_token_ids=[5], logprobs=2))
    assert request_decoder.decode(encode(generate)) == generate
    assert request_decoder.decode(encode(Abort("r1"))) == Abort("r1")
    batch = TokenBatch([TokenEvent("r1", 7, -0.5, [(7, -0.5), (8, -1.5)], None)], {"num_running": 1})
    assert result_decoder.decode(encode(batch)) == batch
    ready = Ready("scheduler", 0, 123, "ab" * 32, ["model"])
    assert control_decoder.decode(encode(ready)) == ready


def test_malformed_and_wrong_channel_frames_are_dropped_and_counted():
    frames = FrameCounter()
    assert frames.decode(request_decoder, b"\x00garbage") is None
    assert (
        frames.decode(request_decoder, encode(InspectQuery(1))) is None
    )  # a control message on the request channel
    assert (
        frames.decode(request_decoder, msgspec.msgpack.encode({"type": "Generate", "request_id": 5})) is None
    )
    assert frames.num_dropped == 3
    assert frames.decode(request_decoder, encode(Abort("x"))) == Abort("x")
    assert frames.num_dropped == 3
