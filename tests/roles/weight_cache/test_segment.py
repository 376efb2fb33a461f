import os
import stat

import pytest
import torch

from roles.shared_weights.segment import MappedSegment, segment_exists, write_segment


def test_tensors_round_trip_read_only_and_owner_only():
    tensors = {
        "a": torch.arange(12, dtype=torch.float32).view(3, 4),
        "b": torch.tensor([1, -2, 3], dtype=torch.int8),
        "c": torch.randint(0, 100, (5, 7), dtype=torch.int32),
    }
    name = f"roleserve-test-{os.getpid()}"
    segment, entries = write_segment(name, tensors)
    try:
        assert stat.S_IMODE(os.stat(f"/dev/shm/{name}").st_mode) == 0o600
        assert all(entry.offset % 64 == 0 for entry in entries)
        mapped = MappedSegment(name)
        views = mapped.tensors(entries)
        for key, tensor in tensors.items():
            assert torch.equal(views[key], tensor) and views[key].dtype == tensor.dtype
        assert memoryview(mapped.map).readonly
    finally:
        segment.close()
        segment.unlink()
    assert not segment_exists(name)


def test_mapping_a_missing_segment_is_a_clear_error():
    with pytest.raises(FileNotFoundError):
        MappedSegment("roleserve-no-such-segment")
