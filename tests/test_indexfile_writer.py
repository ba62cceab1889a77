"""The index file written window by window (direct I/O) holds the bytes of the in-memory assembly."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store_format import indexfile
from store_format.indexfile import build_index_array, write_index_file


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 3000), slots=st.integers(1, 700), spare=st.integers(1, 500), blocks=st.integers(1, 4),
       prev_ts=st.sampled_from([0, 1_600_000_000_000]), seed=st.integers(0, 2**32 - 1))
def test_windows_give_the_bytes_of_the_whole_file(tmp_path_factory, n, slots, spare, blocks, prev_ts, seed) -> None:
    """Windows of 4 KiB and more cut entries (20 bytes) and the slot table at every possible place."""
    rng = np.random.default_rng(seed)
    key_hash = rng.integers(0, 2**31 - 1, n).astype(np.int32)
    offset = np.sort(rng.integers(0, 2**40, n))
    store_ts = np.sort(rng.integers(1_600_000_000_000, 1_700_000_000_000, n))
    expected = build_index_array(key_hash, offset, store_ts, max_hash_slot_num=slots, max_index_num=n + spare,
                                 prev_end_offset=7, prev_end_ts=prev_ts)
    path = tmp_path_factory.mktemp("idx") / "f"
    size = write_index_file(str(path), key_hash, offset, store_ts, max_hash_slot_num=slots, max_index_num=n + spare,
                            prev_end_offset=7, prev_end_ts=prev_ts, window=4096 * blocks)
    got = np.fromfile(path, dtype=np.uint8)
    assert size == len(expected) == len(got)
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("direct", [True, False])
def test_a_full_file_and_the_buffered_path(tmp_path, monkeypatch, direct) -> None:
    """A file whose entries fill it to the last byte, with direct I/O and without it."""
    if not direct:
        monkeypatch.setattr(os, "O_DIRECT", 0, raising=False)
    n, slots = 999, 97
    rng = np.random.default_rng(1)
    key_hash = rng.integers(0, 2**31 - 1, n).astype(np.int32)
    offset = np.arange(n, dtype=np.int64) * 300
    store_ts = np.full(n, 1_650_000_000_000, dtype=np.int64)
    expected = build_index_array(key_hash, offset, store_ts, max_hash_slot_num=slots, max_index_num=n + 1)
    path = tmp_path / "full"
    write_index_file(str(path), key_hash, offset, store_ts, max_hash_slot_num=slots, max_index_num=n + 1,
                     window=8192)
    assert np.array_equal(np.fromfile(path, dtype=np.uint8), expected)
    assert indexfile.read_header(expected).index_count == n + 1


@settings(max_examples=40, deadline=None)
@given(n=st.integers(600, 6000), slots=st.integers(1, 900), spare=st.integers(1, 300), parts=st.integers(2, 6),
       blocks=st.integers(1, 3), prev_ts=st.sampled_from([0, 1_600_000_000_000]), seed=st.integers(0, 2**32 - 1))
def test_parts_written_side_by_side_in_any_order_give_the_file(tmp_path_factory, n, slots, spare, parts, blocks,
                                                                prev_ts, seed) -> None:
    """One file cut into parts (each part's slots seeded from the keys before it; the last part adds
    the header, the slot table and the block they share with the first entries) holds the bytes of
    the file built key after key, whatever order the parts are written in."""
    rng = np.random.default_rng(seed)
    key_hash = rng.integers(0, 2**31 - 1, n).astype(np.int32)
    offset = np.sort(rng.integers(0, 2**40, n))
    store_ts = np.sort(rng.integers(1_600_000_000_000, 1_700_000_000_000, n))
    expected = build_index_array(key_hash, offset, store_ts, max_hash_slot_num=slots, max_index_num=n + spare,
                                 prev_end_offset=offset[0], prev_end_ts=prev_ts)
    cuts = indexfile.index_part_bounds(n, parts, slots)
    assert cuts[0] == 0 and cuts[-1] == n and cuts == sorted(set(cuts))
    head = (key_hash[:indexfile.HEAD_ENTRIES], offset[:indexfile.HEAD_ENTRIES], store_ts[:indexfile.HEAD_ENTRIES])
    path = tmp_path_factory.mktemp("idx") / "f"
    order = rng.permutation(len(cuts) - 1)
    for p in order:
        a, b = cuts[p], cuts[p + 1]
        size = indexfile.write_index_file_part(str(path), key_hash[:a], key_hash[a:b], offset[a:b], store_ts[a:b],
                                               head=head if a > 0 else None, entries=n, max_hash_slot_num=slots,
                                               max_index_num=n + spare, prev_end_ts=prev_ts, window=4096 * blocks)
    got = np.fromfile(path, dtype=np.uint8)
    assert size == len(expected) == len(got)
    assert np.array_equal(got, expected)


def test_a_later_part_without_the_file_s_first_keys_is_refused(tmp_path) -> None:
    """A part after the first counts timeDiff from the file's first key: without it, no bytes."""
    n, slots = 3000, 7
    cuts = indexfile.index_part_bounds(n, 2, slots)
    key_hash = np.arange(n, dtype=np.int32)
    offset = np.arange(n, dtype=np.int64) * 100
    store_ts = np.full(n, 1_650_000_000_000, dtype=np.int64)
    a = cuts[1]
    with pytest.raises(ValueError, match="first keys"):
        indexfile.write_index_file_part(str(tmp_path / "f"), key_hash[:a], key_hash[a:], offset[a:], store_ts[a:],
                                        head=None, entries=n, max_hash_slot_num=slots, max_index_num=n + 1)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 400), slots=st.integers(1, 64), wrong_slots=st.integers(1, 5_000_000),
       cut=st.integers(0, 20_000), seed=st.integers(0, 2**32 - 1))
def test_the_slot_walk_never_reads_past_the_buffer(n, slots, wrong_slots, cut, seed) -> None:
    """Read with other settings than it was written with, or cut short, a file gives what lies inside
    it and never a read past its end (the kernel has no bounds checks of numba's to fall back on)."""
    rng = np.random.default_rng(seed)
    key_hash = rng.integers(0, 2**31 - 1, n).astype(np.int32)
    whole = build_index_array(key_hash, np.arange(n, dtype=np.int64) * 100, np.full(n, 1_600_000_000_000),
                              max_hash_slot_num=slots, max_index_num=n + 1)
    data = whole[:max(indexfile.INDEX_HEADER_SIZE, len(whole) - cut)].copy()
    hashes = key_hash.astype(np.int64)
    offsets, owners = indexfile.select_phy_offsets_of_hashes(data, hashes, max_hash_slot_num=wrong_slots,
                                                             max_num=10_000)
    assert len(offsets) == len(owners) and ((owners >= 0) & (owners < n)).all()
    right, _ = indexfile.select_phy_offsets_of_hashes(whole, hashes, max_hash_slot_num=slots, max_num=10_000)
    assert sorted(set(right.tolist())) == sorted(int(i) * 100 for i in range(n))
