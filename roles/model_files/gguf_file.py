"""A direct reader of the GGUF container: metadata as Python values, tensors as views of one memory map.

gguf.GGUFReader builds a numpy view per metadata item, which for a tokenizer of ~50k tokens and ~50k
merges takes seconds on every open; the launcher, tokenizer, weight cache and scheduler each open the
file. Here strings are sliced from one ``bytes`` buffer and numeric arrays are unpacked in one struct call,
so an open costs tens of milliseconds. Tensor data stays in the map until a caller converts it.
"""

from __future__ import annotations

import mmap
import os
import pathlib
import struct
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where tensor bytes are read (as np)
    import numpy

_MAGIC = b"GGUF"
_DEFAULT_ALIGNMENT = 32
# GGUF value types -> struct format, little-endian: of one value, or with a count of an array's items. No
# numpy at parse time: the launcher parses headers without importing it (0.1 s of its start).
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9


class GGUFFormatError(ValueError):
    pass


@dataclass(frozen=True)
class GGUFTensorInfo:
    name: str
    dims: tuple[int, ...]  # innermost first, as GGUF lists them
    type_id: int  # ggml type id (gguf.GGMLQuantizationType value)
    offset: int  # absolute byte offset of the data in the file


def _string_at(buffer, offset: int) -> tuple[str, int]:
    """The length-prefixed UTF-8 string at ``offset`` and the offset just past it."""
    start = offset + 8
    end = start + struct.unpack_from("<Q", buffer, offset)[0]
    if end > len(buffer):
        raise GGUFFormatError("a string runs past the end of the file")
    return bytes(buffer[start:end]).decode("utf-8", errors="replace"), end


_U64 = struct.Struct("<Q").unpack_from


class LazyStrings(Sequence):
    """A GGUF string array decoded on first read: the tokenizer's ~100k strings cost the processes that
    only need the model's shape and weights nothing but a walk over their lengths."""

    def __init__(self, buffer, starts: list[int], ends: list[int]):
        self._buffer, self._starts, self._ends, self._values = buffer, starts, ends, None

    def _decoded(self) -> list[str]:
        if self._values is None:
            buffer = self._buffer
            self._values = [
                buffer[s:e].decode("utf-8", "replace") for s, e in zip(self._starts, self._ends, strict=True)
            ]
        return self._values

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, index):
        return self._decoded()[index]

    def __iter__(self):
        # Sequence's own __iter__ would call __getitem__ once per string: a third of a tokenizer's load.
        return iter(self._decoded())


class _Cursor:
    def __init__(self, buffer):
        self.buffer, self.offset = buffer, 0

    def unpack(self, fmt: str):
        value = struct.unpack_from(fmt, self.buffer, self.offset)[0]
        self.offset += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        value, self.offset = _string_at(self.buffer, self.offset)
        return value

    def string_array(self, count: int) -> LazyStrings:
        """Skip over ``count`` strings, remembering where each one's bytes start and end; decode them only
        when read. Offsets only grow, so the last end inside the file puts every string inside it."""
        buffer, offset = self.buffer, self.offset
        if count > (len(buffer) - offset) // 8:  # each string's length alone takes 8 bytes
            raise GGUFFormatError("a string array runs past the end of the file")
        starts, ends = [0] * count, [0] * count
        for i in range(count):
            starts[i] = start = offset + 8
            ends[i] = offset = start + _U64(buffer, offset)[0]
        if offset > len(buffer):
            raise GGUFFormatError("a string array runs past the end of the file")
        self.offset = offset
        return LazyStrings(buffer, starts, ends)

    def value(self, type_id: int):
        if type_id == _STRING:
            return self.string()
        if type_id == _ARRAY:
            item_type, count = self.unpack("<I"), self.unpack("<Q")
            if item_type == _STRING:
                return self.string_array(count)
            if item_type not in _SCALARS:
                raise GGUFFormatError(f"unsupported array item type {item_type}")
            item = _SCALARS[item_type]
            if count * struct.calcsize(item) > len(self.buffer) - self.offset:
                raise GGUFFormatError("an array runs past the end of the file")
            items = struct.Struct(f"<{count}{item[1]}")
            values = list(items.unpack_from(self.buffer, self.offset))
            self.offset += items.size
            return values
        if type_id not in _SCALARS:
            raise GGUFFormatError(f"unsupported value type {type_id}")
        return self.unpack(_SCALARS[type_id])


class GGUFFile:
    """``fields``: key -> value (str, number, bool or list); ``tensors``: name -> GGUFTensorInfo."""

    def __init__(self, path: str | pathlib.Path):
        self.path = pathlib.Path(path)
        self._map, self.mtime_ns = _mapped(self.path)
        self.size = len(self._map)
        cursor = _Cursor(self._map)
        try:
            if cursor.buffer[:4] != _MAGIC:
                raise GGUFFormatError("not a GGUF file (bad magic)")
            cursor.offset = 4
            version = cursor.unpack("<I")
            if version not in (2, 3):
                raise GGUFFormatError(f"GGUF version {version} is not supported (2 or 3)")
            num_tensors, num_fields = cursor.unpack("<Q"), cursor.unpack("<Q")
            self.fields: dict[str, object] = {}
            for _ in range(num_fields):
                key = cursor.string()
                self.fields[key] = cursor.value(cursor.unpack("<I"))
            infos = []
            for _ in range(num_tensors):
                name = cursor.string()
                dims = tuple(cursor.unpack("<Q") for _ in range(cursor.unpack("<I")))
                infos.append((name, dims, cursor.unpack("<I"), cursor.unpack("<Q")))
        except (struct.error, ValueError) as error:
            raise GGUFFormatError(f"truncated or malformed header: {error}") from None
        alignment = int(self.fields.get("general.alignment", _DEFAULT_ALIGNMENT))
        data_start = -(-cursor.offset // alignment) * alignment
        self.tensors = {name: GGUFTensorInfo(name, dims, t, data_start + off) for name, dims, t, off in infos}

    def tensor_bytes(self, info: GGUFTensorInfo, nbytes: int) -> numpy.ndarray:
        """The raw bytes of a tensor as a read-only uint8 view of the map (no copy)."""
        import numpy as np

        if info.offset + nbytes > len(self._map):
            raise GGUFFormatError(f"tensor {info.name!r} runs past the end of the file")
        return np.frombuffer(self._map, dtype=np.uint8, count=nbytes, offset=info.offset)

    def __reduce__(self):
        """Pickled as the parse's result (the map is made again where it is unpickled): a child handed the
        launcher's parse does not walk the header's ~100k tokenizer strings again (``remember``)."""
        fields = {
            key: _StringSpans(value) if isinstance(value, LazyStrings) else value
            for key, value in self.fields.items()
        }
        return _reopened, (str(self.path), self.mtime_ns, self.size, fields, self.tensors)


def _mapped(path: pathlib.Path) -> tuple[mmap.mmap, int]:
    with open(path, "rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ), os.fstat(handle.fileno()).st_mtime_ns


class _StringSpans:
    """A LazyStrings' offsets in pickled form: two arrays of int64, not 2 x 50k Python ints."""

    def __init__(self, strings: LazyStrings):
        self.starts = array("q", strings._starts)
        self.ends = array("q", strings._ends)

    def over(self, buffer) -> LazyStrings:
        return LazyStrings(buffer, self.starts.tolist(), self.ends.tolist())


def _reopened(path: str, mtime_ns: int, size: int, fields: dict, tensors: dict) -> GGUFFile | None:
    """An unpickled parse: the file mapped again and the parse taken as it was; None where the file is no
    longer the one parsed (another size or modification time, or gone): the process then opens it itself,
    and a file that is now unreadable fails there with that open's own error."""
    file = GGUFFile.__new__(GGUFFile)
    file.path = pathlib.Path(path)
    try:
        file._map, file.mtime_ns = _mapped(file.path)
    except (OSError, ValueError):  # gone, unreadable, or empty (mmap refuses a 0-byte file)
        return None
    file.size = len(file._map)
    if (file.mtime_ns, file.size) != (mtime_ns, size):
        return None
    file.fields = {
        key: value.over(file._map) if isinstance(value, _StringSpans) else value
        for key, value in fields.items()
    }
    file.tensors = tensors
    return file


# (resolved path, mtime_ns, size) -> its parse, the newest last; at most _KEEP.
_OPENED: dict[tuple[str, int, int], GGUFFile] = {}
_KEEP = 4


def open_gguf(path: str | pathlib.Path) -> GGUFFile:
    """The parsed header of ``path``, parsed once per process while the file is unchanged: the launcher's
    checks and derivations (shape, tensors, tokenizer) each read the same header, and its children are
    handed that parse (``remember``)."""
    stat = os.stat(path)
    key = (str(pathlib.Path(path).resolve()), stat.st_mtime_ns, stat.st_size)
    found = _OPENED.get(key)
    if found is None:
        found = GGUFFile(key[0])
        remember([found])
    return found


def opened() -> list[GGUFFile]:
    """Every parse this process keeps, for a child it starts."""
    return list(_OPENED.values())


def remember(files: list[GGUFFile | None]) -> None:
    """Keep ``files`` (parses made here or handed over by the launcher; None: one whose file changed) for
    open_gguf."""
    for file in filter(None, files):
        key = (str(file.path), file.mtime_ns, file.size)
        _OPENED.pop(key, None)
        _OPENED[key] = file
    while len(_OPENED) > _KEEP:
        del _OPENED[next(iter(_OPENED))]


def forget_all() -> None:
    """Drop every kept parse (tests that count parses)."""
    _OPENED.clear()
