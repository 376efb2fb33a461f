"""Tool calls in a model's answer: what the grammar allows when a call is required, how calls are read back
out of the text, and how a stream holds back text that may turn out to be a call.

A call is written the way Hermes-style chat templates (Qwen, SmolLM3, Hermes, ...) teach models to write
it, one block per call:

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

With ``tool_choice`` ``required`` or a named function, the output is held to that form by the grammar
engine and each ``arguments`` object to its function's JSON schema, so a call always parses. With
``auto`` the model writes what it likes; complete blocks naming a known function become ``tool_calls`` and
anything else stays text.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass

from roles.tokenizer.openai_errors import OpenAIError
from roles.tokenizer.structured_output import JSON_STYLE, checked

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(re.escape(OPEN) + r"\s*(.*?)\s*" + re.escape(CLOSE), re.DOTALL)
ANY_ARGUMENTS = {"type": "object"}


def resolve_tool_choice(body) -> str | None:
    """ "none", "auto", "required" or the name of the one function to call; 400 for an inconsistent request."""
    choice = body.tool_choice
    if not body.tools:
        if choice not in (None, "none"):
            raise OpenAIError(400, "tool_choice needs tools", "tool_choice", "invalid_value")
        return "none"
    names = [tool.function.name for tool in body.tools]
    if len(set(names)) != len(names):
        raise OpenAIError(400, "tools: two functions share a name", "tools", "invalid_value")
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        return choice
    if choice.function.name not in names:
        raise OpenAIError(
            400,
            f"tool_choice names {choice.function.name!r}, which is not among the tools ({', '.join(names)})",
            "tool_choice",
            "invalid_value",
        )
    return choice.function.name


def call_schema(function) -> dict:
    """The JSON schema of one call block's object: this function's name and its arguments."""
    return {
        "type": "object",
        "properties": {
            "name": {"const": function.name},
            "arguments": function.parameters if function.parameters is not None else ANY_ARGUMENTS,
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
        "x-guidance": JSON_STYLE,
    }


def tool_call_grammar(tools, choice: str, parallel: bool) -> str | None:
    """A Lark grammar (llguidance's dialect) of one or more call blocks, when a call is required."""
    if choice in ("none", "auto"):
        return None
    functions = [t.function for t in tools if choice == "required" or t.function.name == choice]
    rules = [f"fn_{i}: %json {json.dumps(call_schema(f))}" for i, f in enumerate(functions)]
    alternatives = " | ".join(f"fn_{i}" for i in range(len(functions)))
    start = 'start: call ("\\n" call)*' if parallel else "start: call"
    body = "\n".join([start, f'call: "{OPEN}\\n" ({alternatives}) "\\n{CLOSE}"', *rules])
    return checked(body, "tools", "function parameters schema")


@dataclass
class ParsedCall:
    name: str
    arguments: dict


def parse_tool_calls(text: str, names: set[str]) -> tuple[str | None, list[ParsedCall]]:
    """(content outside the blocks or None, the calls). A block that does not parse, or names no known
    function, means the text is not a call: all of it stays content."""
    calls = []
    for match in _BLOCK.finditer(text):
        try:
            call = json.loads(match.group(1))
        except ValueError:
            return text, []
        if (
            not isinstance(call, dict)
            or call.get("name") not in names
            or not isinstance(call.get("arguments"), dict)
        ):
            return text, []
        calls.append(ParsedCall(call["name"], call["arguments"]))
    if not calls:
        return text, []
    content = _BLOCK.sub("", text).strip()
    return content or None, calls


def openai_tool_calls(calls: list[ParsedCall], with_index: bool = False) -> list[dict]:
    """The calls in OpenAI's shape; a stream's deltas also carry each call's index."""
    shaped = []
    for index, call in enumerate(calls):
        entry = {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
        }
        shaped.append({"index": index, **entry} if with_index else entry)
    return shaped


class HeldText:
    """One streamed choice's text while tools may be called: text that could still be the start of a call
    block is held back, with its tokens (their logprobs go out with it); once it cannot be, it flows as
    content. ``feed`` returns what to send now."""

    def __init__(self, holds_everything: bool):
        self.holds_everything = holds_everything  # a call is required: the whole answer is calls
        self.held = ""
        self.held_tokens: list = []
        self.is_released = False

    def feed(self, text: str, tokens: list) -> tuple[str, list]:
        """(text, its tokens) to send now: nothing while held, everything held so far once released."""
        if self.is_released:
            return text, tokens
        self.held += text
        self.held_tokens += tokens
        start = self.held.lstrip()
        if self.holds_everything or start.startswith(OPEN) or OPEN.startswith(start):
            return "", []
        self.is_released = True
        released = self.held, self.held_tokens
        self.held, self.held_tokens = "", []
        return released
