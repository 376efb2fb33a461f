"""The pre-tokenizer table holds llama.cpp's own rules: each name's regexes, in order, as src/llama-vocab.cpp
of the pinned sdist lists them for the type that name maps to, with the same merge and BOS flags."""

from __future__ import annotations

import re

import pytest
from tokenizers import Regex, pre_tokenizers

from roles.model_files.pre_tokenizer_rules import PRE_TOKENIZERS
from tests.llama_cpp_suite import VOCAB_SOURCE, required

# Names llama.cpp splits by hand-written code rather than regexes alone (or not BPE at all): refused here.
NOT_REGEX_RULES = {"kimi-k2", "afmoe", "superbpe", "mmbert", "whitespace"}
_C_ESCAPES = {"\\": "\\", '"': '"', "r": "\r", "n": "\n", "t": "\t"}


def _c_string(literal: str) -> str:
    return re.sub(r"\\(.)", lambda m: _C_ESCAPES.get(m.group(1), "\\" + m.group(1)), literal)


def _regexes_by_type(source: str) -> dict[str, list[str]]:
    start = source.index("struct llm_tokenizer_bpe : llm_tokenizer {")
    body = source[start : source.index("std::vector<std::string> regex_exprs;", start)]
    found = {}
    for group in re.split(r"\n\s*break;", body):
        types = re.findall(r"case LLAMA_VOCAB_PRE_TYPE_(\w+):", group) + (
            ["DEFAULT"] if "default:" in group else []
        )
        listed = re.search(r"regex_exprs = \{(.*?)\n\s*\};", group, re.S)
        if listed is None:
            continue
        lines = [line.strip() for line in listed.group(1).split("\n")]
        regexes = [
            _c_string(re.match(r'"((?:[^"\\]|\\.)*)"', line).group(1)) for line in lines if line[:1] == '"'
        ]
        found.update(dict.fromkeys(types, regexes))
    return found


def _types_by_name(source: str) -> dict[str, tuple[str, bool, bool]]:
    """name -> (type, ignore_merges, add_bos) from llama_vocab::impl::load's chain of names."""
    start = source.index('} else if (tokenizer_pre == "default") {')
    block = source[start : source.index("unknown pre-tokenizer type", start)]
    found = {"default": ("DEFAULT", False, False)}
    for branch in re.finditer(r"else if \((.*?)\)\s*\{(.*?)(?=\}\s*else)", block, re.S):
        kind = re.search(r"LLAMA_VOCAB_PRE_TYPE_(\w+)", branch.group(2)).group(1)
        flags = ("ignore_merges = true" in branch.group(2), "add_bos = true" in branch.group(2))
        # llama.cpp forces BOS for Gemma 4 whatever the file says (its "workaround for Gemma 4").
        flags = (flags[0], flags[1] or kind == "GEMMA4")
        for name in re.findall(r'tokenizer_pre == "([^"]+)"', branch.group(1)):
            found[name] = (kind, *flags)
    return found


def _same_regex(ours: str, theirs: str) -> bool:
    """llama.cpp writes some CR/LF as the characters themselves, we as the escapes \\r and \\n."""
    return ours.replace("\\r", "\r").replace("\\n", "\n") == theirs.replace("\\r", "\r").replace("\\n", "\n")


@pytest.fixture(scope="module")
def llama_cpp_rules():
    source = required(VOCAB_SOURCE).read_text(encoding="utf-8")
    return _regexes_by_type(source), _types_by_name(source)


def test_every_name_llama_cpp_reads_is_a_row_or_refused(llama_cpp_rules):
    _, names = llama_cpp_rules
    assert set(PRE_TOKENIZERS) == set(names) - NOT_REGEX_RULES
    assert NOT_REGEX_RULES <= set(names)


@pytest.mark.parametrize("name", sorted(PRE_TOKENIZERS))
def test_rules_are_llama_cpp_rules(llama_cpp_rules, name):
    regexes, names = llama_cpp_rules
    kind, ignore_merges, add_bos = names[name]
    rules = PRE_TOKENIZERS[name]
    assert len(rules.regexes) == len(regexes[kind])
    for ours, theirs in zip(rules.regexes, regexes[kind], strict=True):
        assert _same_regex(ours, theirs), (name, ascii(ours), ascii(theirs))
    assert (rules.ignore_merges, rules.add_bos) == (ignore_merges, add_bos)


@pytest.mark.parametrize("name", sorted(PRE_TOKENIZERS))
def test_rules_compile_and_cut_the_converter_check_text(name):
    text = "\n \n\n \t\t 🚀 😶\u200d🌫️ 3.3 3..3 កាន់តែ 我想在apple工作1314151天～ нещо I've 'RE a'lL"
    splits = [
        pre_tokenizers.Split(Regex(regex), behavior="isolated") for regex in PRE_TOKENIZERS[name].regexes
    ]
    pieces = pre_tokenizers.Sequence(splits).pre_tokenize_str(text)
    assert "".join(piece for piece, _ in pieces) == text
