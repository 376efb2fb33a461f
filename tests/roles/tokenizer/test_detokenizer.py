import pytest
from tokenizers import Tokenizer

from roles.tokenizer.detokenizer import IncrementalDetokenizer, StopStringMatcher
from tests.tiny_checkpoint import write_tiny_llama


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    folder = write_tiny_llama(tmp_path_factory.mktemp("tiny"))
    return Tokenizer.from_file(str(folder / "tokenizer.json"))


@pytest.mark.parametrize(
    "text",
    [
        "Hello world!",
        "héllo wörld — naïve café",
        "日本語のテキスト",
        "emoji 🙂🚀 mixed",
        "tabs\tand\nnewlines  ",
        "a" * 40,
    ],
)
def test_incremental_text_equals_full_decode_and_never_shows_broken_characters(tokenizer, text):
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    detokenizer = IncrementalDetokenizer(tokenizer)
    pieces = [detokenizer.push(token_id) for token_id in ids]
    assert "".join(pieces) == tokenizer.decode(ids)
    assert all("\ufffd" not in piece for piece in pieces)
    if any(len(ch.encode()) > 1 for ch in text):
        assert "" in pieces or len(ids) == len(text)  # some character spans several byte tokens


@pytest.mark.parametrize("text", ["naïve", "日本語", "emoji 🙂🚀"])
def test_a_reply_that_ends_inside_a_character_ends_as_the_whole_decode_does(tokenizer, text):
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    for end in range(1, len(ids) + 1):
        detokenizer = IncrementalDetokenizer(tokenizer)
        shown = "".join(detokenizer.push(token_id) for token_id in ids[:end]) + detokenizer.flush()
        assert shown == tokenizer.decode(ids[:end])
        assert detokenizer.flush() == ""


def test_stop_string_spanning_pieces_is_cut_and_nothing_after_it_shows():
    matcher = StopStringMatcher(["STOP"])
    shown = [matcher.feed(piece) for piece in ["Hello S", "T", "OP and more", "later"]]
    assert "".join(shown) == "Hello "
    assert matcher.is_stopped
    assert matcher.flush() == ""


def test_held_tail_is_released_when_it_cannot_become_a_stop():
    matcher = StopStringMatcher(["</end>"])
    assert matcher.feed("a </e") == "a "  # "</e" is held: it could still become </end>
    assert matcher.feed("x") == "</ex"
    assert matcher.feed("</") == ""
    assert matcher.flush() == "</"
    assert not matcher.is_stopped


def test_earliest_of_several_stops_wins_and_no_stops_passes_through():
    matcher = StopStringMatcher(["bb", "a"])
    assert matcher.feed("xxbba") == "xx"
    assert StopStringMatcher([]).feed("anything") == "anything"
