"""tokenizer.chat_template through a real `serve`: the given template replaces the model's for
/v1/chat/completions and /tokenize with messages, /roles names it as the source, and a template that fails
on a conversation is a 400 in the OpenAI shape naming the template's source, never a 500."""

from __future__ import annotations

import httpx
import pytest
from serve_harness import ServeProcess

from conftest import tiny_config
from roles.tokenizer.text_tokenizer import load_text_tokenizer

TEMPLATE = (
    "{% if messages[0].content == 'boom' %}{{ raise_exception('no boom here') }}{% endif %}"
    "{% if messages[0].content == 'add' %}{{ messages[0].content + 1 }}{% endif %}"
    "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there!"}]


@pytest.fixture(scope="module")
def template_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("template") / "chat.jinja"
    path.write_text(TEMPLATE)
    return path


@pytest.fixture(scope="module")
def server(tiny_model, template_file, tmp_path_factory):
    config = tiny_config(tiny_model, tokenizer={"chat_template": str(template_file)})
    with ServeProcess(tmp_path_factory.mktemp("chat-template"), config) as running:
        yield running


def test_the_setting_template_makes_the_prompt(server, tiny_model):
    expected = load_text_tokenizer(tiny_model).encode(
        "[system] Be brief.\n[user] Hi there!\n[assistant]", add_special_tokens=False
    )
    tokenized = httpx.post(f"{server.url}/tokenize", json={"messages": MESSAGES}).json()
    assert tokenized["tokens"] == expected
    answer = httpx.post(
        f"{server.url}/v1/chat/completions",
        json={"model": "tiny", "messages": MESSAGES, "max_tokens": 2},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["usage"]["prompt_tokens"] == len(expected)


@pytest.mark.parametrize(("content", "fault"), [("boom", "no boom here"), ("add", "TypeError")])
def test_a_template_that_fails_is_a_400_naming_its_source(server, template_file, content, fault):
    body = {"model": "tiny", "messages": [{"role": "user", "content": content}], "max_tokens": 2}
    answer = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=60)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == "messages" and error["type"] == "invalid_request_error"
    assert f"tokenizer.chat_template file {template_file}" in error["message"] and fault in error["message"]


def test_roles_names_the_template_source_and_the_tokenizer(server, template_file):
    processes = httpx.get(f"{server.url}/roles", timeout=30).json()["processes"]
    tokenizer = next(p for p in processes if p["role"] == "tokenizer")
    facts = {fact["key"]: (fact["value"], fact["source"]) for fact in tokenizer["facts"]["tokenizer"]}
    assert facts["chat_template"] == (
        "from the setting tokenizer.chat_template",
        f"tokenizer.chat_template file {template_file}",
    )
    assert facts["kind"][0] == "BPE (tokenizer.json)" and facts["vocab_size"][0] == 320
    leaf = next(leaf for leaf in tokenizer["leaves"] if leaf["key"] == "tokenizer.chat_template")
    assert leaf["value"] == str(template_file) and leaf["source"].startswith("file ")
