"""TextTokenizer must encode, decode and render chat templates like transformers on the same files."""

from __future__ import annotations

import pytest
import transformers

from roles.tokenizer.chat_template import ChatTemplateError, render_chat_template
from roles.tokenizer.text_tokenizer import TextTokenizer, load_text_tokenizer
from tests.tiny_checkpoint import write_tiny_llama

CORPUS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "naïve café résumé — déjà vu",
    "Grüße aus München, Straße 12",
    "日本語のテキストと中文字符混合。",
    "한국어 문장도 있습니다.",
    "Emoji: 🙂🚀👩‍💻 and flags 🇫🇷🇯🇵",
    "Numbers 1234567890 and 3.14159 and -42",
    "2024-06-01T12:30:00Z",
    "tabs\tand\ttabs",
    "trailing spaces   ",
    "   leading spaces",
    "multiple   spaces   between words",
    "line one\nline two\n\nline four\n",
    "\n\n\n",
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) { sum += x[i]; }",
    '{"key": "value", "list": [1, 2, 3]}',
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more text<|im_end|>",
    "I'm sure you'll see they've done it, it's John's.",
    "Ünïcödé ŝtrïñgš ∑∫√∞ ≈ ≠",
    "http://example.com/path?query=1&x=y#frag",
    "Mixed123Letters456",
]

# Whitespace directly before a digit: SmolLM's pre-tokenizer (digits isolated first, as in the model's own
# tokenizer.json and llama.cpp's "smollm") groups the whole whitespace run, while transformers' GGUF converter
# (no digit split) leaves its last space on its own. We follow the model's tokenizer; see the test below.
WHITESPACE_BEFORE_DIGITS = ["a  1", "x = 10\n\n  20", "tab\t\t7", "  42", "hi\n\n\n1"]

CONVERSATIONS = [
    [{"role": "user", "content": "What is 2 + 2?"}],
    [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Name a color."},
    ],
    [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke about 日本 🙂"},
    ],
]


@pytest.fixture(scope="module")
def smollm2_pair(smollm2_reference_tokenizer):
    return load_text_tokenizer("smollm2"), smollm2_reference_tokenizer


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    folder = write_tiny_llama(tmp_path_factory.mktemp("tiny_tok"))
    return load_text_tokenizer(str(folder)), transformers.AutoTokenizer.from_pretrained(folder)


@pytest.mark.parametrize("text", CORPUS)
def test_gguf_encoding_matches_transformers(smollm2_pair, text):
    ours, reference = smollm2_pair
    assert ours.encode(text, add_special_tokens=False) == reference.encode(text, add_special_tokens=False)
    assert ours.encode(text) == reference.encode(text)


def test_special_tokens_are_single_ids(smollm2_pair):
    ours, _ = smollm2_pair
    assert ours.encode("<|im_start|>") == [1]
    assert ours.encode("<|im_end|>") == [2]
    # <|im_end|> is the file's EOS; <|endoftext|> ends a turn too, as llama.cpp reads any vocabulary.
    assert ours.bos_token_id == 1 and ours.eos_token_ids == frozenset({0, 2})


@pytest.mark.parametrize("text", WHITESPACE_BEFORE_DIGITS)
def test_whitespace_before_digits_follows_smollm_pre_tokenizer(smollm2_pair, text):
    ours, reference = smollm2_pair
    ids = ours.encode(text, add_special_tokens=False)
    # Restore SmolLM's digit split on transformers' tokenizer: then the two agree exactly.
    from tokenizers import pre_tokenizers

    backend = reference.backend_tokenizer
    original = backend.pre_tokenizer
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    try:
        assert ids == reference.encode(text, add_special_tokens=False)
    finally:
        backend.pre_tokenizer = original
    assert ours.decode(ids) == text


@pytest.mark.parametrize("text", CORPUS + WHITESPACE_BEFORE_DIGITS)
def test_decode_round_trips(smollm2_pair, text):
    ours, reference = smollm2_pair
    ids = ours.encode(text, add_special_tokens=False)
    assert ours.decode(ids, skip_special_tokens=False) == text
    assert ours.decode(ids) == reference.decode(ids, skip_special_tokens=True)


@pytest.mark.parametrize("messages", CONVERSATIONS)
@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_gguf_chat_template_matches_transformers(smollm2_pair, messages, add_generation_prompt):
    ours, reference = smollm2_pair
    expected = reference.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=add_generation_prompt
    )
    assert ours.apply_chat_template(messages, add_generation_prompt=add_generation_prompt) == expected


@pytest.mark.parametrize("text", CORPUS[:12])
def test_hf_folder_encoding_matches_transformers(tiny_pair, text):
    ours, reference = tiny_pair
    assert ours.encode(text) == reference.encode(text)
    assert ours.decode(ours.encode(text)) == reference.decode(
        reference.encode(text), skip_special_tokens=True
    )


def test_hf_folder_chat_template_and_special_ids(tiny_pair):
    ours, reference = tiny_pair
    for messages in CONVERSATIONS:
        expected = reference.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert ours.apply_chat_template(messages) == expected
    assert ours.eos_token_ids >= {reference.eos_token_id}
    assert ours.bos_token_id == reference.bos_token_id
    assert isinstance(ours, TextTokenizer)


def test_template_helpers_bos_eos_and_raise_exception():
    source = (
        "{% if messages[0]['role'] == 'tool' %}{{ raise_exception('no tools here') }}{% endif %}"
        "{{ bos_token }}{% for m in messages %}{{ m['content'] | tojson }}{{ eos_token }}{% endfor %}"
    )
    rendered = render_chat_template(
        source, [{"role": "user", "content": "é"}], special_tokens={"bos_token": "<s>", "eos_token": "</s>"}
    )
    assert rendered == '<s>"é"</s>'
    with pytest.raises(ChatTemplateError, match="no tools here"):
        render_chat_template(source, [{"role": "tool", "content": "x"}])
    with pytest.raises(ChatTemplateError, match="no chat template"):
        render_chat_template(None, [])


def test_template_sandbox_blocks_attribute_escape():
    with pytest.raises(ChatTemplateError):
        render_chat_template("{{ messages.__class__.__mro__[1].__subclasses__() }}", [])


def test_encode_without_offsets_gives_the_same_ids(smollm2_pair):
    ours, _ = smollm2_pair
    for text in CORPUS:
        assert ours.encode(text) == ours.tokenizer.encode(text).ids
