"""Chat messages and tools as the model's chat template takes them.

A template that knows tools (it reads ``tools``, as Hermes-style ones do) gets them as Hugging Face passes
them: ``tools=[{"type": "function", "function": {...}}]``, assistant messages with ``tool_calls`` (their
arguments as objects) and ``tool`` messages. A template that does not (plain ChatML, like SmolLM2's) gets
the same conversation in words: a system message describing the functions and the call format, earlier
calls written as call blocks and tool results as ``<tool_response>`` user turns.
"""

from __future__ import annotations

import json

from roles.tokenizer.tool_calls import CLOSE, OPEN

_INSTRUCTIONS = (
    "You may call functions to answer. To call one, reply with one block per call and nothing else:\n"
    f'{OPEN}\n{{"name": "<function name>", "arguments": {{<arguments as a JSON object>}}}}\n{CLOSE}\n'
    "The functions:\n<tools>\n{functions}\n</tools>"
)


def _arguments(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text  # a client's malformed arguments are shown as they came


def _call_block(call) -> str:
    payload = {"name": call.function.name, "arguments": _arguments(call.function.arguments)}
    return f"{OPEN}\n{json.dumps(payload, ensure_ascii=False)}\n{CLOSE}"


def _native(message) -> dict:
    entry = {"role": message.role, "content": message.text}
    if message.tool_calls:
        entry["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": _arguments(call.function.arguments)},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        entry["tool_call_id"] = message.tool_call_id
    return entry


def _in_words(message) -> dict:
    if message.role == "tool":
        return {"role": "user", "content": f"<tool_response>\n{message.text}\n</tool_response>"}
    if message.tool_calls:
        blocks = [_call_block(call) for call in message.tool_calls]
        return {"role": message.role, "content": "\n".join(([message.text] if message.text else []) + blocks)}
    return {"role": message.role, "content": message.text}


def template_inputs(messages, tools, template_source: str | None) -> tuple[list[dict], dict]:
    """(messages as dicts, extra template variables) for ``render_chat_template``; ``tools`` None: none
    are offered."""
    knows_tools = bool(template_source) and "tools" in template_source
    if knows_tools:
        extra = {"tools": [tool.model_dump(exclude_none=True) for tool in tools]} if tools else {}
        return [_native(m) for m in messages], extra
    plain = [_in_words(m) for m in messages]
    if tools:
        functions = "\n".join(
            json.dumps(t.function.model_dump(exclude_none=True), ensure_ascii=False) for t in tools
        )
        instructions = _INSTRUCTIONS.replace("{functions}", functions)
        if plain[0]["role"] == "system":
            plain[0] = {"role": "system", "content": f"{plain[0]['content']}\n\n{instructions}"}
        else:
            plain.insert(0, {"role": "system", "content": instructions})
    return plain, {}
