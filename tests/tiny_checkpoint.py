"""Write a tiny random Llama checkpoint in Hugging Face folder layout, for fast tests across the project.

The folder holds config.json, model.safetensors (via transformers' save_pretrained), a byte-level BPE
tokenizer.json trained on a few sentences, and tokenizer_config.json with a ChatML chat template.
"""

from __future__ import annotations

import json
import pathlib
import tempfile

import torch

TINY_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

TINY_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

_TRAINING_SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello world! This is a tiny tokenizer for tests.",
    "def add(a, b):\n    return a + b\n",
    "Numbers like 12345 and 3.14159 appear in text.",
    "Serving language models means batching many requests together.",
    "The cache keeps keys and values in fixed-size pages.",
]

# The dimensions every tiny test checkpoint shares, dense and MoE (tests/moe_checkpoint.py).
TINY_DIMS = dict(
    vocab_size=320,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=2048,
    rms_norm_eps=1e-5,
)

LLAMA3_ROPE_SCALING = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 256,
}

# Small enough to be fast, big enough to exercise GQA, several layers and llama3 rope scaling.
_TINY_CONFIG = dict(
    TINY_DIMS,
    intermediate_size=128,
    rope_theta=10000.0,
    rope_scaling=LLAMA3_ROPE_SCALING,
    tie_word_embeddings=True,
    # Wider than HF's 0.02 so logits are spread out and greedy argmax is not decided by rounding noise.
    initializer_range=0.2,
    bos_token_id=0,
    eos_token_id=2,
    pad_token_id=0,
)


def _write_tokenizer(folder: pathlib.Path, vocab_size: int) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=TINY_SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_TRAINING_SENTENCES, trainer=trainer)
    tokenizer.save(str(folder / "tokenizer.json"))
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<|endoftext|>",
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "add_bos_token": False,
        "chat_template": TINY_CHAT_TEMPLATE,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2))


def add_gguf_tokenizer(writer, vocab_size: int) -> None:
    """The tiny BPE (as written to tokenizer.json) as llama.cpp's ``gpt2`` tokenizer metadata of a GGUF."""
    with tempfile.TemporaryDirectory() as folder:
        _write_tokenizer(pathlib.Path(folder), vocab_size)
        spec = json.loads((pathlib.Path(folder) / "tokenizer.json").read_text())
    vocab = spec["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.get)
    special = {entry["content"] for entry in spec["added_tokens"]}
    merges = [merge if isinstance(merge, str) else " ".join(merge) for merge in spec["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_merges(merges)
    writer.add_token_types([3 if token in special else 1 for token in tokens])
    writer.add_bos_token_id(vocab["<|endoftext|>"])
    writer.add_eos_token_id(vocab["<|im_end|>"])
    writer.add_chat_template(TINY_CHAT_TEMPLATE)


def write_tiny_llama(path, **overrides) -> pathlib.Path:
    """Write a tiny random LlamaForCausalLM to ``path`` and return it as a Path.

    ``overrides`` replace LlamaConfig fields (e.g. ``tie_word_embeddings=False``, ``rope_scaling=None``);
    ``seed`` (default 0) fixes the random weights.
    """
    import transformers

    folder = pathlib.Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    seed = overrides.pop("seed", 0)
    config = transformers.LlamaConfig(**{**_TINY_CONFIG, **overrides})
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).to(torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    # Never larger than the model vocabulary, so every token id has an embedding row.
    _write_tokenizer(folder, min(config.vocab_size, 320))
    return folder
