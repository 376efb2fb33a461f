"""speculative_method draft_model's draft, checked before anything starts: no path, a path that does not
resolve, or a draft whose tokenizer is not the served model's is exit 2 naming the key and the file."""

from __future__ import annotations

from serve_command import run_serve

from launcher.draft_model_check import draft_problem, model_tokens
from tests.tiny_checkpoint import write_tiny_llama

DRAFTING = ("--set", "exec.speculative_method=draft_model")


def test_draft_model_without_a_path_is_exit_2_naming_the_key():
    result = run_serve("config", "validate", *DRAFTING)
    assert result.returncode == 2
    assert "exec.speculative_draft_model: must name the draft model" in result.stderr


def test_a_draft_that_does_not_resolve_or_has_another_tokenizer_is_exit_2_before_anything_starts(tmp_path):
    missing = tmp_path / "none.gguf"
    result = run_serve("config", "validate", *DRAFTING, "--set", f"exec.speculative_draft_model={missing}")
    assert result.returncode == 2
    assert (
        f"exec.speculative_draft_model: cannot draft for model.path: model path '{missing}'" in result.stderr
    )
    other = write_tiny_llama(tmp_path / "tiny")  # 320 tokens (the first three SmolLM2's too) against 49152
    for command in (("config", "validate"), ()):
        result = run_serve(
            *command, *DRAFTING, "--set", f"exec.speculative_draft_model={other}", "--port", "1"
        )
        assert result.returncode == 2, result.stdout + result.stderr
        assert (
            f"exec.speculative_draft_model: cannot draft for model.path: {other}: its tokenizer is not the "
            "served model's: 320 tokens against 49152, the first different at id 3"
        ) in result.stderr
        assert "ready" not in result.stdout


def test_a_draft_with_the_served_tokenizer_passes_gguf_and_folder_alike(tmp_path):
    assert draft_problem("smollm2", "smollm2") is None
    folder = write_tiny_llama(tmp_path / "a")
    assert (
        draft_problem(str(folder), str(write_tiny_llama(tmp_path / "b", seed=3, num_hidden_layers=1))) is None
    )
    assert len(model_tokens("smollm2")) == 49152
    assert model_tokens(str(folder))[:3] == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
