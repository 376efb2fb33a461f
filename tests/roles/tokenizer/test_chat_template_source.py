"""Where the chat template comes from: the tokenizer.chat_template setting (a path or the text) over the model's
own (a GGUF's tokenizer.chat_template[.<name>], a folder's chat_template.jinja or tokenizer_config.json), and
the tool_use template for a conversation that offers tools."""

from __future__ import annotations

import json

import pytest

from roles.tokenizer.chat_template import ChatTemplateError
from roles.tokenizer.chat_template_source import folder_templates, templates_from_setting
from roles.tokenizer.text_tokenizer import TextTokenizer, load_text_tokenizer
from tests.llama_cpp_suite import vocab_path

PLAIN = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<go>{% endif %}"
HI = [{"role": "user", "content": "hi"}]


def test_the_setting_takes_template_text_or_a_file(tmp_path):
    assert templates_from_setting(PLAIN).pick(False) == (PLAIN, "tokenizer.chat_template (template text)")
    path = tmp_path / "mine.jinja"
    path.write_text(PLAIN)
    assert templates_from_setting(str(path)).pick(True) == (PLAIN, f"tokenizer.chat_template file {path}")


def test_a_missing_or_broken_setting_names_the_file_or_the_fault(tmp_path):
    with pytest.raises(ChatTemplateError, match=r"the file 'nowhere\.jinja' does not exist"):
        templates_from_setting("nowhere.jinja")
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% for m in messages %}")
    with pytest.raises(ChatTemplateError, match=r"broken\.jinja' does not compile"):
        templates_from_setting(str(broken))
    with pytest.raises(ChatTemplateError, match=r"the template text does not compile"):
        templates_from_setting("{{ messages[")


def test_the_setting_replaces_the_model_template():
    tokenizer = load_text_tokenizer("smollm2", chat_template=PLAIN)
    assert tokenizer.apply_chat_template(HI) == "<user>hi<go>"
    assert tokenizer.chat_template_for(False)[1] == "tokenizer.chat_template (template text)"


def test_a_gguf_named_tool_use_template_serves_conversations_with_tools():
    tokenizer = TextTokenizer.from_gguf(vocab_path("command-r"))
    default, origin = tokenizer.chat_template_for(False)
    tool_use, tool_origin = tokenizer.chat_template_for(True)
    assert default and tool_use and default != tool_use
    assert origin.endswith("ggml-vocab-command-r.gguf (tokenizer.chat_template)")
    assert tool_origin == f"{origin}, template 'tool_use'"
    assert "## Available Tools" in tokenizer.apply_chat_template(HI, tools=[])


def test_a_folder_template_file_wins_over_tokenizer_config(tmp_path):
    config = {"chat_template": [{"name": "default", "template": "A"}, {"name": "tool_use", "template": "B"}]}
    templates = folder_templates(tmp_path, config)
    assert (templates.pick(False), templates.pick(True)[0]) == (("A", templates.origin), "B")
    assert templates.origin == f"{tmp_path / 'tokenizer_config.json'} (chat_template)"
    (tmp_path / "chat_template.jinja").write_text("C")
    (tmp_path / "additional_chat_templates").mkdir()
    (tmp_path / "additional_chat_templates" / "tool_use.jinja").write_text("D")
    templates = folder_templates(tmp_path, config)
    assert (templates.pick(False)[0], templates.pick(True)[0]) == ("C", "D")
    assert templates.origin == str(tmp_path / "chat_template.jinja")
    assert folder_templates(tmp_path / "none", {}).pick(False)[0] is None
    json.dumps(templates.named)
