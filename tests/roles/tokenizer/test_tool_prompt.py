"""Tools and earlier calls reach the model through its chat template: natively when the template reads
``tools``, in words (a system message and call blocks) when it does not."""

import json

from roles.tokenizer.chat_template import render_chat_template
from roles.tokenizer.schemas import ChatCompletionRequest
from roles.tokenizer.tool_prompt import template_inputs

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
WITH_TOOLS = (
    "{% if tools %}TOOLS:{% for t in tools %}{{ t.function.name }};{% endfor %}\n{% endif %}"
    "{% for m in messages %}{{ m.role }}:{{ m.content }}"
    "{% for c in m.tool_calls or [] %}[{{ c.function.name }} {{ c.function.arguments | tojson }}]{% endfor %}"
    "{% if m.tool_call_id %}({{ m.tool_call_id }}){% endif %}\n{% endfor %}"
)
TOOL = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": '{"zone": "UTC"}'}}


def conversation() -> ChatCompletionRequest:
    return ChatCompletionRequest(
        model="m",
        tools=[TOOL],
        messages=[
            {"role": "user", "content": "What time is it?"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "12:00"},
        ],
    )


def test_a_template_that_knows_tools_gets_them_and_the_calls_natively():
    body = conversation()
    messages, extra = template_inputs(body.messages, body.tools, WITH_TOOLS)
    text = render_chat_template(WITH_TOOLS, messages, add_generation_prompt=False, **extra)
    assert text.startswith("TOOLS:get_time;")
    assert '[get_time {"zone": "UTC"}]' in text and "tool:12:00(call_1)" in text


def test_a_plain_template_gets_the_tools_and_calls_in_words():
    body = conversation()
    messages, extra = template_inputs(body.messages, body.tools, CHATML)
    assert extra == {}
    text = render_chat_template(CHATML, messages)
    system = text.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system") and json.dumps(TOOL["function"]) in system
    assert '<tool_call>\n{"name": "get_time", "arguments": {"zone": "UTC"}}\n</tool_call>' in text
    assert "<|im_start|>user\n<tool_response>\n12:00\n</tool_response>" in text


def test_no_tools_offered_leaves_the_conversation_as_it_was():
    body = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    assert template_inputs(body.messages, None, CHATML) == ([{"role": "user", "content": "hi"}], {})
