"""The model's tokenizer and the tokenizer.chat_template setting, checked before anything starts: an unknown
tokenizer model or pre-tokenizer, a missing template file or one that does not compile is exit 2 naming the
file, the key, the value and what is supported, from `serve config validate` and from `serve` alike."""

from __future__ import annotations

import pytest
from serve_command import run_serve

from launcher.tokenizer_check import tokenizer_problem
from tests.roles.model_files.gguf_fixtures import write_small_gguf


@pytest.mark.parametrize(
    ("tokenizer", "key", "listed"),
    [
        (
            ("gpt2", "llama-bpe-ish"),
            "tokenizer.ggml.pre = 'llama-bpe-ish'",
            "did you mean 'llama-bpe'? (supported: ",
        ),
        (("bert", "bert-bge"), "tokenizer.ggml.model = 'bert'", "gpt2, llama, gemma4"),
    ],
)
def test_an_unknown_tokenizer_is_exit_2_naming_file_key_value_and_the_supported_names(
    tmp_path, tokenizer, key, listed
):
    model = write_small_gguf(tmp_path / "model.gguf", tokenizer=tokenizer)
    for command in (("config", "validate"), ()):
        result = run_serve(*command, "--model", str(model), "--port", "1")
        assert result.returncode == 2, result.stdout + result.stderr
        assert (
            f"--model: model.path: its tokenizer cannot be served: {model}: {key} is not supported"
            in result.stderr
        )
        assert listed in result.stderr
        assert "ready" not in result.stdout


def test_a_served_tokenizer_passes(tmp_path):
    model = write_small_gguf(tmp_path / "model.gguf", tokenizer=("gpt2", "qwen2"))
    assert tokenizer_problem(str(model)) is None
    assert tokenizer_problem("smollm2") is None


def test_a_missing_or_broken_chat_template_is_exit_2_naming_the_file(tmp_path):
    result = run_serve("config", "validate", "--set", f"tokenizer.chat_template={tmp_path / 'none.jinja'}")
    assert result.returncode == 2
    assert f"tokenizer.chat_template: the file '{tmp_path / 'none.jinja'}' does not exist" in result.stderr
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% if messages %}no end")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"tokenizer:\n  chat_template: {broken}\n")
    for command in (("config", "validate"), ()):
        result = run_serve(*command, "--config", str(cfg), "--port", "1")
        assert result.returncode == 2
        assert f"{cfg}:2:18: tokenizer.chat_template: the file '{broken}' does not compile" in result.stderr
    good = tmp_path / "good.jinja"
    good.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    assert run_serve("config", "validate", "--set", f"tokenizer.chat_template={good}").returncode == 0
