"""file_pages: a file-backed weight's pages leave the process and come back on the next read, unchanged;
memory no file backs is never dropped."""

from __future__ import annotations

import mmap
import warnings

import numpy as np
import torch

from roles.scheduler.models.file_pages import drop_file_pages, file_backed_spans

PAGES = 64


def _resident_pages(array: np.ndarray) -> int:
    """Pages of the array's mapping this process holds, from /proc/self/smaps."""
    address = array.ctypes.data
    with open("/proc/self/smaps") as smaps:
        inside = False
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
                start, end = (int(value, 16) for value in fields[0].split("-"))
                inside = start <= address < end
            elif inside and fields[0] == "Rss:":
                return int(fields[1]) * 1024 // mmap.PAGESIZE
    raise AssertionError("the mapping is not in /proc/self/smaps")


def test_a_mapped_files_pages_are_dropped_and_read_back_unchanged(tmp_path):
    path = tmp_path / "weights.bin"
    values = np.random.default_rng(0).integers(0, 255, PAGES * mmap.PAGESIZE, dtype=np.uint8)
    path.write_bytes(values.tobytes())
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    array = np.frombuffer(mapped, dtype=np.uint8)
    with warnings.catch_warnings():  # read-only memory: torch warns that it may not write it
        warnings.simplefilter("ignore", UserWarning)
        tensor = torch.from_numpy(array)
    assert int(tensor.sum()) == int(values.sum())  # every page read: resident
    assert _resident_pages(array) == PAGES
    dropped = drop_file_pages(array, file_backed_spans())
    assert dropped == PAGES * mmap.PAGESIZE
    assert _resident_pages(array) == 0
    assert torch.equal(tensor, torch.from_numpy(values))  # read again from the file
    assert _resident_pages(array) == PAGES


def test_memory_no_file_backs_is_kept():
    tensor = torch.arange(PAGES * mmap.PAGESIZE // 4, dtype=torch.int32)
    assert drop_file_pages(tensor.numpy(), file_backed_spans()) == 0
    assert torch.equal(tensor, torch.arange(PAGES * mmap.PAGESIZE // 4, dtype=torch.int32))
