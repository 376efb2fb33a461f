"""Tool calls in the tokenizer: the choice is checked, a required call has a grammar that only admits valid
call blocks, call blocks are read back out of text, and a stream holds back only what may be a call."""

import json

import llguidance
import pytest

from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.schemas import ChatCompletionRequest
from roles.tokenizer.tool_calls import HeldText, parse_tool_calls, resolve_tool_choice, tool_call_grammar

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
            "required": ["city", "unit"],
        },
    },
}
TIME = {"type": "function", "function": {"name": "get_time"}}


def chat(**fields) -> ChatCompletionRequest:
    return ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], **fields)


def test_the_tool_choice_defaults_and_refusals():
    assert resolve_tool_choice(chat()) == "none"
    assert resolve_tool_choice(chat(tools=[WEATHER])) == "auto"
    assert resolve_tool_choice(chat(tools=[WEATHER], tool_choice="required")) == "required"
    named = {"type": "function", "function": {"name": "get_weather"}}
    assert resolve_tool_choice(chat(tools=[WEATHER], tool_choice=named)) == "get_weather"
    for body in (
        chat(tool_choice="required"),
        chat(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "nope"}}),
        chat(tools=[WEATHER, WEATHER]),
    ):
        with pytest.raises(OpenAIError) as caught:
            resolve_tool_choice(body)
        assert caught.value.status == 400


def _byte_tokenizer():
    """A tokenizer whose tokens are the 256 bytes (the byte-level alphabet, no merges): any text, one token
    per byte."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tokenizer = Tokenizer(models.BPE(vocab={char: i for i, char in enumerate(alphabet)}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def matches(grammar: str, text: str) -> bool:
    tokenizer = _byte_tokenizer()
    matcher = llguidance.LLMatcher(llguidance.LLTokenizer(tokenizer.to_str()), grammar)
    ok = matcher.consume_tokens(tokenizer.encode(text).ids)
    return ok and matcher.is_accepting()


def test_a_required_call_admits_only_call_blocks_whose_arguments_match():
    tools = chat(tools=[WEATHER, TIME]).tools
    grammar = tool_call_grammar(tools, "required", parallel=True)
    good = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "c"}}\n</tool_call>'
    other = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
    assert matches(grammar, good)
    assert matches(grammar, good + "\n" + other)
    assert not matches(grammar, good.replace('"c"', '"k"'))  # not in the enum
    assert not matches(grammar, good.replace("get_weather", "get_wether"))
    assert not matches(grammar, "Sure! " + good)
    single = tool_call_grammar(tools, "get_time", parallel=False)
    assert matches(single, other) and not matches(single, good) and not matches(single, other + "\n" + other)
    assert tool_call_grammar(tools, "auto", parallel=True) is None


def test_a_bad_parameters_schema_is_a_400():
    broken = {"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}
    with pytest.raises(OpenAIError) as caught:
        tool_call_grammar(chat(tools=[broken]).tools, "required", parallel=True)
    assert caught.value.status == 400 and "objekt" in caught.value.message


def test_call_blocks_are_read_back_and_anything_else_stays_text():
    names = {"get_weather", "get_time"}
    call = {"name": "get_weather", "arguments": {"city": "Oslo"}}
    text = f"Let me check.\n<tool_call>\n{json.dumps(call)}\n</tool_call>"
    content, calls = parse_tool_calls(text, names)
    assert content == "Let me check." and [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    assert parse_tool_calls("just words", names) == ("just words", [])
    for broken in (
        "<tool_call>\n{not json}\n</tool_call>",
        '<tool_call>{"name": "rm", "arguments": {}}</tool_call>',
    ):
        assert parse_tool_calls(broken, names) == (broken, [])


def test_a_stream_holds_back_only_what_may_still_be_a_call_and_its_tokens_with_it():
    auto = HeldText(holds_everything=False)
    assert auto.feed("  <tool", [1, 2]) == ("", []) and auto.feed("_call>\n{", [3]) == ("", [])
    assert auto.held_tokens == [1, 2, 3]
    words = HeldText(holds_everything=False)
    assert words.feed("<t", [1]) == ("", [])
    assert words.feed("he answer", [2, 3]) == ("<the answer", [1, 2, 3])
    assert words.feed(" is", [4]) == (" is", [4])
    required = HeldText(holds_everything=True)
    assert required.feed("anything", [5]) == ("", []) and required.held == "anything"
