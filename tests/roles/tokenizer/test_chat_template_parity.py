"""Real chat templates (llama.cpp's models/templates, from the pinned sdist) render byte for byte as transformers'
apply_chat_template renders them: a conversation with a system message, two turns and the generation prompt,
and, where the template takes tools, one that offers tools, calls one and reads its result."""

from __future__ import annotations

import pytest
import tokenizers
import transformers

from roles.tokenizer.chat_template import ChatTemplateError, render_chat_template
from tests.llama_cpp_suite import TEMPLATES, required, template_path

# The list: these must render exactly (file stem -> the model's bos/eos tokens).
LISTED = {
    "meta-llama-Llama-3.1-8B-Instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "meta-llama-Llama-3.2-3B-Instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "meta-llama-Llama-3.3-70B-Instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "Qwen-Qwen2.5-7B-Instruct": (None, "<|im_end|>"),
    "Qwen-Qwen3-0.6B": (None, "<|im_end|>"),
    "microsoft-Phi-3.5-mini-instruct": ("<s>", "<|endoftext|>"),
    "mistralai-Mistral-Nemo-Instruct-2407": ("<s>", "</s>"),
    "google-gemma-2-2b-it": ("<bos>", "<eos>"),
    "google-gemma-4-31B-it": ("<bos>", "<eos>"),
    "HuggingFaceTB-SmolLM3-3B": (None, "<|im_end|>"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": (
        "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
        "<\uff5cend\u2581of\u2581sentence\uff5c>",
    ),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": (
        "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
        "<\uff5cend\u2581of\u2581sentence\uff5c>",
    ),
}

CHAT = [
    {"role": "system", "content": "You are a terse assistant. Answer in one line."},
    {"role": "user", "content": "Name a colour of the French flag."},
    {"role": "assistant", "content": "Bleu — blue."},
    {"role": "user", "content": "And the others? Réponds en français 🙂"},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }
]
TOOL_CHAT = [
    {"role": "system", "content": "You can look up the weather."},
    {"role": "user", "content": "How warm is it in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call00001",  # nine alphanumerics: Mistral's templates refuse anything else
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call00001", "content": '{"temperature": 21}'},
]
# Templates that refuse a system message (Gemma 2's) get the same conversation without it.
WITHOUT_SYSTEM = {"google-gemma-2-2b-it"}
# The listed templates that take no tools (the server writes tools into their prompt in words instead).
TAKE_NO_TOOLS = {
    "microsoft-Phi-3.5-mini-instruct",
    "google-gemma-2-2b-it",
    "HuggingFaceTB-SmolLM3-3B",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
}


def _reference(bos: str | None, eos: str | None, source: str):
    model = tokenizers.models.WordLevel({"<unk>": 0}, unk_token="<unk>")
    specials = {"bos_token": bos, "eos_token": eos}
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizers.Tokenizer(model),
        chat_template=source,
        **{name: text for name, text in specials.items() if text is not None},
    )


def _render_both(stem: str, messages: list[dict], tools: list[dict] | None):
    bos, eos = LISTED.get(stem, ("<s>", "</s>"))
    source = template_path(stem).read_text(encoding="utf-8")
    reference = _reference(bos, eos, source)
    try:
        expected = reference.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=True
        )
    except Exception as error:  # the template refuses this conversation: ours must refuse it alike
        expected = ChatTemplateError(str(error))
    specials = {name: text for name, text in (("bos_token", bos), ("eos_token", eos)) if text is not None}
    try:
        ours = render_chat_template(source, messages, True, special_tokens=specials, tools=tools)
    except ChatTemplateError as error:
        ours = error
    return ours, expected, source


def _same(ours, expected) -> bool:
    if isinstance(expected, Exception) or isinstance(ours, Exception):
        # Both refuse: ours names the fault's type where jinja2 does not (TypeError: ...).
        return type(ours) is type(expected) and str(ours).endswith(str(expected))
    return ours == expected


ALL_TEMPLATES = (
    sorted(path.stem for path in required(TEMPLATES).glob("*.jinja")) if TEMPLATES.is_dir() else []
)


def test_the_listed_templates_are_in_the_suite():
    assert set(LISTED) <= set(ALL_TEMPLATES)


@pytest.mark.parametrize("stem", sorted(LISTED))
def test_listed_template_renders_a_conversation_as_transformers(stem):
    ours, expected, _ = _render_both(stem, CHAT[1:] if stem in WITHOUT_SYSTEM else CHAT, None)
    assert not isinstance(expected, Exception), expected
    assert ours == expected


@pytest.mark.parametrize("stem", sorted(set(LISTED) - TAKE_NO_TOOLS))
def test_listed_template_renders_tools_as_transformers(stem):
    ours, expected, _ = _render_both(stem, TOOL_CHAT, TOOLS)
    assert not isinstance(expected, Exception), expected
    assert ours == expected


def test_the_listed_templates_without_tools_never_read_them():
    for stem in TAKE_NO_TOOLS:
        assert "tools" not in template_path(stem).read_text(encoding="utf-8"), stem


@pytest.mark.parametrize("stem", ALL_TEMPLATES)
def test_every_template_of_the_suite_renders_as_transformers(stem):
    for messages, tools in ((CHAT, None), (TOOL_CHAT, TOOLS)):
        ours, expected, _ = _render_both(stem, messages, tools)
        assert _same(ours, expected), (stem, tools is not None, ours, expected)
