"""`serve model upcycle`: the written Mixtral folder of the bundled SmolLM2 behaves like the dense model.

Exact copies (perturb 0) route any top-k over identical experts with renormalised weights, which is the dense
MLP: transformers' MixtralForCausalLM on the folder greedily generates what LlamaForCausalLM on the dense
weights does. That proves the Mixtral layout, the tensor names and the Q/K (un)permutation."""

from __future__ import annotations

import hashlib
import json

import pytest
import torch
import transformers
from safetensors import safe_open

from launcher.cli import main
from roles.model_files.gguf_checkpoint import GGUFCheckpoint
from roles.model_files.model_path import resolve_model_path
from roles.tokenizer.text_tokenizer import TextTokenizer, load_text_tokenizer

PROMPTS = ["The three primary colors are", "def fibonacci(n):", "<|im_start|>user\nSay hello.<|im_end|>\n"]
NEW_TOKENS = 8


def upcycle(out, *extra: str) -> int:
    return main(["model", "upcycle", "--experts", "2", "--top-k", "1", "--out", str(out), *extra])


@pytest.fixture(scope="module")
def exact_folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("moe") / "exact"
    assert upcycle(out) == 0
    assert [p.name for p in out.parent.iterdir()] == ["exact"]  # written aside, renamed into place
    return out


def dense_llama() -> transformers.LlamaForCausalLM:
    checkpoint = GGUFCheckpoint(resolve_model_path("smollm2"))
    shape = checkpoint.shape()
    config = transformers.LlamaConfig(
        vocab_size=shape.vocab_size,
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.num_layers,
        num_attention_heads=shape.num_heads,
        num_key_value_heads=shape.num_kv_heads,
        head_dim=shape.head_dim,
        rms_norm_eps=shape.rms_norm_eps,
        rope_theta=shape.rope_theta,
        max_position_embeddings=shape.context_length,
        tie_word_embeddings=shape.tie_word_embeddings,
    )
    model = transformers.LlamaForCausalLM(config).to(torch.float32)
    state = {name: checkpoint.tensor(gguf_name) for name, gguf_name in checkpoint.hf_tensor_names().items()}
    model.load_state_dict(state, strict=False)
    model.tie_weights()
    return model.eval()


def greedy(model, prompt_ids: list[int]) -> list[int]:
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt_ids]), max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0
        )
    return out[0, len(prompt_ids) :].tolist()


def test_exact_copies_generate_like_the_dense_model(exact_folder):
    config = json.loads((exact_folder / "config.json").read_text())
    assert config["model_type"] == "mixtral" and config["architectures"] == ["MixtralForCausalLM"]
    assert (config["num_local_experts"], config["num_experts_per_tok"]) == (2, 1)
    moe = transformers.MixtralForCausalLM.from_pretrained(exact_folder, dtype=torch.float32).eval()
    dense = dense_llama()
    tokenizer = load_text_tokenizer("smollm2")
    for prompt in PROMPTS:
        ids = tokenizer.encode(prompt)
        assert greedy(moe, ids) == greedy(dense, ids), prompt
    # Both models read the same un-permuted Q/K rows; sensible text shows that convention is HF's.
    answer = tokenizer.decode(greedy(moe, tokenizer.encode("The capital of France is")))
    assert "Paris" in answer, answer


def test_folder_tokenizer_equals_the_gguf_tokenizer(exact_folder):
    folder, dense = TextTokenizer.from_hf_folder(exact_folder), load_text_tokenizer("smollm2")
    for prompt in PROMPTS:
        assert folder.encode(prompt) == dense.encode(prompt)
    messages = [{"role": "user", "content": "Say hello."}]
    assert folder.apply_chat_template(messages) == dense.apply_chat_template(messages)
    # The folder names the GGUF's EOS; read from the GGUF, <|endoftext|> also ends a turn (as in llama.cpp).
    assert folder.eos_token_ids == {2} and dense.eos_token_ids == {0, 2}
    assert folder.bos_token_id == dense.bos_token_id


def file_hash(folder) -> str:
    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


def test_perturbation_is_seeded_and_changes_the_experts(tmp_path, exact_folder):
    first, again, other = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out, seed in ((first, "1"), (again, "1"), (other, "2")):
        assert upcycle(out, "--perturb", "0.01", "--seed", seed) == 0
    assert file_hash(first) == file_hash(again)
    assert file_hash(first) != file_hash(other)
    expert = "model.layers.3.block_sparse_moe.experts.{}.w2.weight"
    with (
        safe_open(first / "model.safetensors", "pt") as moe,
        safe_open(exact_folder / "model.safetensors", "pt") as exact,
    ):
        perturbed, copy = moe.get_tensor(expert.format(0)), exact.get_tensor(expert.format(0))
        assert not torch.equal(perturbed, copy)
        assert not torch.equal(perturbed, moe.get_tensor(expert.format(1)))
        torch.testing.assert_close(perturbed, copy, rtol=0.1, atol=0)  # a small multiplicative change
        assert torch.equal(exact.get_tensor(expert.format(1)), copy)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--experts", "1", "--top-k", "1"], "--experts must be between 2"),
        (["--experts", "2", "--top-k", "3"], "--top-k must be between 1 and --experts (2), got 3"),
        (["--experts", "2", "--top-k", "1", "--perturb", "-1"], "--perturb must be >= 0"),
        (["--experts", "2", "--top-k", "1", "--model", "no-such-model"], "'no-such-model' does not exist"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(tmp_path, capsys, args, message):
    assert main(["model", "upcycle", *args, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_non_empty_out_folder_is_refused(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    assert upcycle(tmp_path) == 2
    assert "is not empty" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_roleserve_serves_the_upcycled_folder_like_the_dense_model(exact_folder):
    """Our own engine, MoE path, on the folder: greedy tokens equal our dense exact engine's on smollm2."""
    from roles.protocol import SamplingFields
    from roles.scheduler.engine.core import Engine
    from roles.scheduler.engine.settings import engine_config

    tokenizer = load_text_tokenizer("smollm2")
    prompts = [tokenizer.encode(prompt) for prompt in PROMPTS]
    params = SamplingFields(temperature=0, max_tokens=NEW_TOKENS, ignore_eos=True)
    moe = Engine(engine_config(model_path=str(exact_folder), weight_dtype="exact", kv_cache_tokens=2048))
    assert moe.shape.num_experts == 2 and moe.shape.experts_per_token == 1
    ours = moe.generate(prompts, params)
    del moe
    dense = Engine(engine_config(model_path="smollm2", weight_dtype="exact", kv_cache_tokens=2048))
    assert ours == dense.generate(prompts, params)
