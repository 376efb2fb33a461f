"""Our EncoderModel (own BERT + pooling) against sentence-transformers on the same local folder."""

from __future__ import annotations

import json
import os
import pathlib

os.environ["HF_HUB_OFFLINE"] = "1"  # never reach a model hub; the folder is local

import pytest
import torch
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformer

from roles.encoder.encoder_model import EncoderModel, InputTooLong
from roles.encoder.model_folder import resolve_encoder_path

_LONG_PARAGRAPH = (
    "The committee reviewed the annual report on regional water management and discussed several "
    "proposals for improving irrigation efficiency across the northern districts. "
)

CORPUS = [
    "hello",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    _LONG_PARAGRAPH * 9,  # ~200 words, just under the 256-token limit
    "Ünïcödé façade naïve café résumé — “quoted” text…",
    "Привет, как дела? Всё хорошо.",
    "我喜欢在周末去公园散步。",
    "東京は日本の首都です。",
    "안녕하세요, 만나서 반갑습니다.",
    "مرحبا بالعالم",
    "🎉🔥 party time 😀👍🏽",
    "def add(a, b):\n    return a + b  # sum two numbers",
    'SELECT id, name FROM users WHERE age > 21 ORDER BY name; {"key": [1, 2, 3]}',
    " ",
    "",
    "\t\n",
    "3.14159 2718 1e-9 +44 (0)20 7946 0958 2026-12-02",
    "a",
    "UPPER CASE and lower case MiXeD",
    "repeated repeated repeated repeated repeated words",
    "https://example.com/path?query=1&other=two#frag",
    "The cat sat on the mat. " * 20,
]


@pytest.fixture(scope="module")
def folder() -> pathlib.Path:
    return resolve_encoder_path("all-minilm-l6-v2")


@pytest.fixture(scope="module")
def ours() -> EncoderModel:
    return EncoderModel.load("all-minilm-l6-v2")


@pytest.fixture(scope="module")
def theirs(folder) -> SentenceTransformer:
    return SentenceTransformer(str(folder), device="cpu")


@pytest.fixture(scope="module")
def reference(theirs) -> torch.Tensor:
    return theirs.encode(CORPUS, convert_to_tensor=True, show_progress_bar=False).to(torch.float32)


def _cosines(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a, b, dim=1)


def test_shape_properties(ours):
    assert ours.name == "all-minilm-l6-v2"
    assert ours.dimensions == 384
    assert ours.max_input_tokens == 256
    assert ours.vocab_size == 30522


def test_corpus_fits_without_truncation(ours):
    lengths = [len(ids) for ids in ours.tokenize(CORPUS)]
    assert max(lengths) <= ours.max_input_tokens
    assert max(lengths) > 200  # the long paragraph really is long


def test_token_ids_match_sentence_transformers(ours, theirs):
    batch = theirs.preprocess(CORPUS)
    reference = [
        ids[mask.bool()].tolist()
        for ids, mask in zip(batch["input_ids"], batch["attention_mask"], strict=True)
    ]
    assert ours.tokenize(CORPUS) == reference


def test_embeddings_match_sentence_transformers(ours, reference):
    embeddings = ours.embed_texts(CORPUS)
    assert embeddings.shape == (len(CORPUS), 384) and embeddings.dtype == torch.float32
    cosines = _cosines(embeddings, reference)
    worst = int(cosines.argmin())
    assert cosines.min() >= 0.9999, f"cosine {cosines[worst]:.6f} for {CORPUS[worst]!r}"
    assert torch.allclose(embeddings.norm(dim=1), torch.ones(len(CORPUS)), atol=1e-5)  # Normalize module


def test_batched_equals_one_at_a_time(ours):
    batched = ours.embed_texts(CORPUS)
    single = torch.cat([ours.embed_texts([text]) for text in CORPUS])
    assert torch.allclose(batched, single, atol=2e-5), (batched - single).abs().max()


def test_token_ids_in_equal_texts_in(ours):
    ids = ours.tokenize(CORPUS[:5])
    assert all(row[0] == 101 and row[-1] == 102 for row in ids)  # [CLS] ... [SEP]
    assert torch.equal(ours.embed_token_ids(ids), ours.embed_texts(CORPUS[:5]))


def test_truncation_matches_sentence_transformers(ours, theirs):
    text = _LONG_PARAGRAPH * 30  # ~700 tokens
    ids = ours.tokenize([text])
    assert len(ids[0]) > ours.max_input_tokens
    cut = ours.fit_lengths(ids, truncate=True)[0]
    reference_ids = theirs.preprocess([text])["input_ids"][0].tolist()
    assert cut == reference_ids  # [CLS] + first 254 text tokens + [SEP]
    ours_vector = ours.embed_texts([text], truncate=True)
    theirs_vector = theirs.encode([text], convert_to_tensor=True, show_progress_bar=False)
    assert _cosines(ours_vector, theirs_vector.to(torch.float32)).min() >= 0.9999


def test_too_long_input_raises_without_truncate(ours):
    text = _LONG_PARAGRAPH * 30
    length = len(ours.tokenize([text])[0])
    with pytest.raises(InputTooLong) as raised:
        ours.embed_texts(["short one", text])
    message = str(raised.value)
    assert "256" in message and str(length) in message and "input 1" in message


def test_empty_row_and_out_of_vocab_ids_are_rejected(ours):
    with pytest.raises(ValueError, match="at least one token"):
        ours.embed_token_ids([[101, 102], []])
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 30522\)"):
        ours.embed_token_ids([[101, 30522, 102]])


def _copy_folder(source: pathlib.Path, target: pathlib.Path, pooling: dict | None, prefix_keys: bool) -> None:
    """A folder of the same model with another pooling config and/or 'bert.'-prefixed weight names."""
    target.mkdir()
    for name in (
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "modules.json",
        "vocab.txt",
        "special_tokens_map.json",
        "sentence_bert_config.json",
        "config_sentence_transformers.json",
    ):
        if (source / name).is_file():
            (target / name).symlink_to(source / name)
    (target / "1_Pooling").mkdir()
    pooling_config = json.loads((source / "1_Pooling" / "config.json").read_text())
    pooling_config.update(pooling or {})
    (target / "1_Pooling" / "config.json").write_text(json.dumps(pooling_config))
    if prefix_keys:
        tensors = load_file(str(source / "model.safetensors"))
        save_file(
            {f"bert.{name}": tensor for name, tensor in tensors.items()}, str(target / "model.safetensors")
        )
    else:
        (target / "model.safetensors").symlink_to(source / "model.safetensors")


_CLS = {"pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}
_MAX = {"pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": True}


@pytest.mark.parametrize("pooling", [_CLS, _MAX], ids=["cls", "max"])
def test_other_pooling_modes_match(folder, tmp_path, pooling):
    variant = tmp_path / "variant"
    _copy_folder(folder, variant, pooling, prefix_keys=False)
    texts = CORPUS[:12]
    ours = EncoderModel.load(str(variant)).embed_texts(texts)
    theirs = SentenceTransformer(str(variant), device="cpu").encode(
        texts, convert_to_tensor=True, show_progress_bar=False
    )
    assert _cosines(ours, theirs.to(torch.float32)).min() >= 0.9999


def test_bert_prefixed_weight_names_load(folder, tmp_path, ours):
    variant = tmp_path / "prefixed"
    _copy_folder(folder, variant, None, prefix_keys=True)
    prefixed = EncoderModel.load(str(variant))
    assert prefixed.name == "prefixed"
    assert torch.equal(prefixed.embed_texts(CORPUS[:6]), ours.embed_texts(CORPUS[:6]))
