import msgspec
import pytest

from roles.protocol import (
    Abort,
    FrameCounter,
    Generate,
    Heartbeat,
    InspectQuery,
    LoadReport,
    Overloaded,
    Ready,
    SamplingError,
    SamplingFields,
    TokenBatch,
    TokenEvent,
    control_decoder,
    encode,
    request_decoder,
    result_decoder,
    validate_sampling,
)


def test_messages_round_trip_through_their_channel_decoders():
    generate = Generate("r1", 0, [1, 2, 3], SamplingFields(temperature=0.0, stop_token_ids=[5], logprobs=2))
    assert request_decoder.decode(encode(generate)) == generate
    assert request_decoder.decode(encode(Abort("r1"))) == Abort("r1")
    batch = TokenBatch([TokenEvent("r1", 7, -0.5, [(7, -0.5), (8, -1.5)], None)])
    assert result_decoder.decode(encode(batch)) == batch
    assert result_decoder.decode(encode(Overloaded("r2", 1.0))) == Overloaded("r2", 1.0)
    report = LoadReport(
        1, num_running=2, num_waiting=3, num_kv_pages_used=4, num_kv_pages_total=8, finished=["r1"]
    )
    assert result_decoder.decode(encode(report)) == report
    assert report.kv_usage == 0.5
    ready = Ready("scheduler", 0, 123, "ab" * 32, ["model"])
    assert control_decoder.decode(encode(ready)) == ready
    assert control_decoder.decode(encode(Heartbeat("tokenizer", 1))) == Heartbeat("tokenizer", 1)


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


def test_validate_sampling_fills_defaults_and_accepts_json_numbers():
    fields = validate_sampling({"temperature": 0, "top_p": 0.5, "seed": 3, "stop_token_ids": [2]})
    assert fields == SamplingFields(temperature=0.0, top_p=0.5, seed=3, stop_token_ids=[2])
    assert fields.is_greedy and not fields.has_penalties
    assert validate_sampling({}) == SamplingFields()


@pytest.mark.parametrize(
    ("field", "value", "bound"),
    [
        ("top_p", 1.5, "<= 1"),
        ("top_p", 0.0, "> 0"),
        ("temperature", -0.1, ">= 0"),
        ("temperature", 2.5, "<= 2"),
        ("temperature", float("nan"), ">= 0"),
        ("top_k", -1, ">= 0"),
        ("top_k", 1.5, "Expected `int`"),
        ("min_p", 1.2, "<= 1"),
        ("repetition_penalty", 0.0, "> 0"),
        ("frequency_penalty", 3.0, "<= 2"),
        ("presence_penalty", -2.5, ">= -2"),
        ("max_tokens", 0, ">= 1"),
        ("seed", -3, ">= 0"),
        ("seed", 2**70, "<= 9223372036854775807"),
        ("logprobs", 21, "<= 20"),
        ("stop_token_ids", [3, -1], ">= 0"),
        ("ignore_eos", "yes", "Expected `bool`"),
    ],
)
def test_validate_sampling_names_the_field_out_of_bounds(field, value, bound):
    with pytest.raises(SamplingError, match=f"^{field}: .*{bound}") as caught:
        validate_sampling({field: value})
    assert caught.value.field == field


def test_validate_sampling_names_the_field_as_the_caller_spelled_it():
    with pytest.raises(SamplingError) as caught:
        validate_sampling({"max_tokens": 0}, {"max_tokens": "max_completion_tokens"})
    assert caught.value.field == "max_completion_tokens"
    assert str(caught.value).startswith("max_completion_tokens: ")


def test_the_wire_enforces_the_same_bounds():
    """A Generate whose sampling breaks a bound never reaches the engine: its frame is dropped."""
    bad = Generate("r1", 0, [1], SamplingFields(temperature=9.0))  # constructing does not validate
    frames = FrameCounter()
    assert frames.decode(request_decoder, encode(bad)) is None
    assert frames.num_dropped == 1
