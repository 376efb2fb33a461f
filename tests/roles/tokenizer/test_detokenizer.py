import pytest
from tokenizers import Tokenizer

from roles.tokenizer.detokenizer import IncrementalDetokenizer, StopStringMatcher
from tests.llama_cpp_suite import suite_tokenizer, vocab_cases
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


# One vocabulary of each kind: byte-level BPE, SentencePiece (space marker, byte fallback), raw UTF-8 BPE.
KINDS = ("llama-bpe", "qwen2", "llama-spm", "phi-3", "gemma-4")


def _whole_characters_before(tokenizer, ids: list[int], end: int) -> str:
    """The text of ids[:end] up to its last whole character (what a prompt has shown)."""
    while end and tokenizer.decode(ids[:end]).endswith("\ufffd"):
        end -= 1
    return tokenizer.decode(ids[:end])


@pytest.mark.parametrize("name", KINDS)
def test_a_continuation_streams_the_text_the_whole_decode_adds(name):
    """Prompt = the first k tokens, reply = the rest: the streamed reply is exactly what decoding everything
    adds to the prompt's text (a SentencePiece reply keeps its leading space), and never a broken character."""
    tokenizer = suite_tokenizer(name)
    for text, _ in vocab_cases(name):
        ids = tokenizer.encode(text, add_special_tokens=True).ids
        for k in sorted({0, 1, 2, len(ids) // 2, len(ids) - 1} & set(range(len(ids)))):
            detokenizer = IncrementalDetokenizer(tokenizer, context=ids[:k])
            pieces = [detokenizer.push(token_id) for token_id in ids[k:]] + [detokenizer.flush()]
            whole = tokenizer.decode(ids)
            assert "".join(pieces) == whole[len(_whole_characters_before(tokenizer, ids, k)) :], (
                name,
                text,
                k,
            )
            assert all("\ufffd" not in piece for piece in pieces), (name, text, k)


@pytest.mark.parametrize("name", KINDS)
def test_a_stop_string_across_tokens_cuts_the_stream_for_every_kind(name):
    tokenizer = suite_tokenizer(name)
    text = "Grüße 🦙 aus Zürich: the answer is forty-two, füńf 日本語 and then more text"
    prompt, reply = tokenizer.encode("Q: ").ids, tokenizer.encode(text, add_special_tokens=False).ids
    text = tokenizer.decode(prompt + reply)[len(tokenizer.decode(prompt)) :]  # SentencePiece: " Grüße ..."
    for stop in ("swer is fo", "ńf 日", "🦙 a"):
        detokenizer, matcher = IncrementalDetokenizer(tokenizer, context=prompt), StopStringMatcher([stop])
        shown = ""
        for token_id in reply:
            shown += matcher.feed(detokenizer.push(token_id))
            if matcher.is_stopped:
                break
        assert matcher.is_stopped and shown == text[: text.index(stop)], (name, stop, shown)
