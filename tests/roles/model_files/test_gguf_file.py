"""The GGUF reader against the gguf package's own: the same metadata values from a file its writer wrote, and a
clear GGUFFormatError, never a crash or a huge allocation, for a file cut inside a string array or one whose
array claims more strings than the file holds. A parse handed to another process (pickled, as the launcher
hands its parses to its children) reads the same values there without parsing again, and one whose file
changed or went since is dropped, the file then parsed anew."""

from __future__ import annotations

import os
import pickle
import struct

import gguf
import numpy as np
import pytest

from roles.model_files import gguf_file
from roles.model_files.gguf_file import GGUFFile, GGUFFormatError

TOKENS = ["<s>", "", "héllo", "▁wörld", "日本", "a b", "\n", "x" * 300]


def _write(path) -> None:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_token_list(TOKENS)
    writer.add_token_merges(["h é", "l l"])
    writer.add_token_types([3, 1, 1, 1, 1, 1, 1, 1])
    writer.add_string("general.name", "tiny")
    writer.add_tensor("t", np.arange(8, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_values_match_the_gguf_packages_reader(tmp_path):
    path = tmp_path / "m.gguf"
    _write(path)
    ours = GGUFFile(path)
    theirs = gguf.GGUFReader(str(path))
    assert list(ours.fields["tokenizer.ggml.tokens"]) == theirs.fields["tokenizer.ggml.tokens"].contents()
    assert list(ours.fields["tokenizer.ggml.merges"]) == ["h é", "l l"]
    assert ours.fields["tokenizer.ggml.token_type"] == [3, 1, 1, 1, 1, 1, 1, 1]
    assert ours.fields["general.name"] == "tiny"
    assert ours.fields["tokenizer.ggml.tokens"][2] == "héllo"
    assert len(ours.fields["tokenizer.ggml.tokens"]) == len(TOKENS)
    info = ours.tensors["t"]
    assert info.offset == theirs.tensors[0].data_offset


NUMERIC = {
    gguf.GGUFValueType.UINT8: [0, 7, 255],
    gguf.GGUFValueType.INT8: [-128, 0, 127],
    gguf.GGUFValueType.UINT16: [0, 65535],
    gguf.GGUFValueType.INT16: [-32768, 5],
    gguf.GGUFValueType.UINT32: [0, 2**32 - 1],
    gguf.GGUFValueType.INT32: [-(2**31), 3],
    gguf.GGUFValueType.FLOAT32: [0.5, -1.25, 3e38],
    gguf.GGUFValueType.BOOL: [True, False, True],
    gguf.GGUFValueType.UINT64: [0, 2**64 - 1],
    gguf.GGUFValueType.INT64: [-(2**63), 9],
    gguf.GGUFValueType.FLOAT64: [0.1, -2.5e300],
}


def test_numeric_arrays_of_every_item_type_match_the_gguf_packages_reader(tmp_path):
    path = tmp_path / "m.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    for item_type, values in NUMERIC.items():
        writer.add_key_value(f"a.{item_type.name}", values, gguf.GGUFValueType.ARRAY, sub_type=item_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    ours, theirs = GGUFFile(path), gguf.GGUFReader(str(path))
    for item_type, values in NUMERIC.items():
        key = f"a.{item_type.name}"
        assert ours.fields[key] == theirs.fields[key].contents(), key
        assert ours.fields[key] == pytest.approx(values, rel=1e-7), key  # float32 rounds 0.1-like values


def test_a_numeric_array_claiming_more_items_than_the_file_holds_is_refused(tmp_path):
    path = tmp_path / "m.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_key_value("a", [1, 2, 3], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.INT32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    data = bytearray(path.read_bytes())
    at = data.index(struct.pack("<IIQ", 9, 5, 3)) + 8  # the array's type, item type (int32), then count
    for count in (4, 2**40, 2**63):
        struct.pack_into("<Q", data, at, count)
        path.write_bytes(bytes(data))
        with pytest.raises(GGUFFormatError, match="runs past the end"):
            GGUFFile(path)


def _string_array_at(data: bytes) -> int:
    """Where the token list's item count sits: after its key, its value type (array) and its item type."""
    key = b"tokenizer.ggml.tokens"
    at = data.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
    assert struct.unpack_from("<II", data, at) == (9, 8)  # array of strings
    return at + 8


def test_a_file_cut_inside_a_string_array_is_refused(tmp_path):
    path = tmp_path / "m.gguf"
    _write(path)
    data = path.read_bytes()
    path.write_bytes(data[: _string_array_at(data) + 8 + 20])
    with pytest.raises(GGUFFormatError):
        GGUFFile(path)


@pytest.mark.parametrize("count", [len(TOKENS) + 1, 2**40, 2**63])
def test_an_array_claiming_more_strings_than_the_file_holds_is_refused(tmp_path, count):
    path = tmp_path / "m.gguf"
    _write(path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<Q", data, _string_array_at(bytes(data)), count)
    path.write_bytes(bytes(data))
    with pytest.raises(GGUFFormatError):
        GGUFFile(path)


def test_a_handed_parse_reads_the_same_values_and_is_not_parsed_again(tmp_path, monkeypatch):
    path = tmp_path / "m.gguf"
    _write(path)
    gguf_file.forget_all()
    parsed = gguf_file.open_gguf(path)
    handed = pickle.loads(pickle.dumps(gguf_file.opened()))
    gguf_file.forget_all()
    parses = []
    original = GGUFFile.__init__

    def counting(self, file_path):
        parses.append(file_path)
        original(self, file_path)

    monkeypatch.setattr(GGUFFile, "__init__", counting)
    gguf_file.remember(handed)
    opened = gguf_file.open_gguf(path)
    assert parses == [] and opened is handed[0]
    assert list(opened.fields["tokenizer.ggml.tokens"]) == TOKENS
    assert opened.fields["tokenizer.ggml.token_type"] == parsed.fields["tokenizer.ggml.token_type"]
    assert opened.tensors == parsed.tensors
    np.testing.assert_array_equal(
        opened.tensor_bytes(opened.tensors["t"], 32).view(np.float32), np.arange(8, dtype=np.float32)
    )
    gguf_file.forget_all()


def test_a_parse_handed_over_after_its_file_changed_or_went_is_dropped_and_the_file_parsed_anew(tmp_path):
    path = tmp_path / "m.gguf"
    _write(path)
    pickled = pickle.dumps(GGUFFile(path))
    data = path.read_bytes().replace(b"tiny", b"tinz")
    path.write_bytes(data)
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert pickle.loads(pickled) is None
    gguf_file.forget_all()
    gguf_file.remember([pickle.loads(pickled)])
    assert gguf_file.open_gguf(path).fields["general.name"] == "tinz"
    path.unlink()
    assert pickle.loads(pickled) is None  # gone: the role's own open says so, with its own error
    gguf_file.forget_all()
