"""IndexFile assembly and lookup.

Mirrors ``IndexService.buildIndex`` / ``getAndCreateLastIndexFile`` and ``IndexFile.putKey`` /
``selectPhyOffset`` with ``IndexHeader`` (4.9.x and 5.x write the same bytes):

* a file holds entries 1 .. maxIndexNum-1; entry n is ``keyHash, commitlogOffset, timeDiff,
  prevIndex`` where prevIndex is the slot's previous entry in the same file (0: none);
* slot = keyHash % maxHashSlotNum holds the slot's latest entry number;
* header: begin timestamp/offset of the first entry, end of the last, the number of puts that found
  their slot empty, and ``entries + 1``;
* a new file starts with begin = end = the previous file's end values (when > 0), so its first
  entry's timeDiff is measured from the previous file's last store time;
* a file created with nothing put (the broker creates the next file as soon as any record is
  dispatched after a full one) keeps those begin/end values and counts 0.

Long module: the writer kernels, the lookup kernel and verify's walk of every slot chain
(:func:`reachable_entries`) read and write the same entry layout, kept in one place.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt

import numba
import numpy as np

from .javahash import index_key_hash
from .layout import (
    INDEX_ENTRY_DTYPE,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_DTYPE,
    INDEX_HEADER_SIZE,
    INDEX_SLOT_SIZE,
    index_file_size,
)
from .prefetch import prefetch
from .timeutil import datetime_to_ms, ms_to_datetime

__all__ = [
    "accepted_by_index", "build_index_file", "build_index_array", "index_file_pieces", "IndexHeader", "read_header",
    "select_phy_offsets", "select_phy_offsets_of_hashes", "reachable_entries",
    "index_file_names", "index_file_names_checked", "write_index_file", "write_index_file_part", "index_part_bounds",
    "HEAD_ENTRIES", "trailing_empty_file", "fill_index_window", "slot_table",
    "trailing_file_time",
]



@numba.njit(cache=True, nogil=True)
def _accepted(offsets, carry_in, out):
    e = carry_in
    for i in range(offsets.shape[0]):
        out[i] = offsets[i] >= e
        if offsets[i] > e:
            e = offsets[i]
    return e


def accepted_by_index(record_offsets: np.ndarray, carry_in: int = 0) -> tuple[np.ndarray, int]:
    """Which records with index keys the broker indexes, and the carry for the next batch.

    ``buildIndex`` drops a record whose commitlog offset is below the current file's endPhyOffset,
    the offset of the last record that put a key (carried into a new file).  Since only records at or
    above it are put, it equals the running maximum of the offsets of all earlier records with keys,
    starting from 0: a prefix maximum, so batches chain through ``carry_in``.
    """
    out = np.empty(len(record_offsets), dtype=np.bool_)
    carry = _accepted(np.ascontiguousarray(record_offsets, dtype=np.int64), np.int64(carry_in), out)
    return out, int(carry)


@dataclasses.dataclass(frozen=True)
class IndexHeader:
    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int
    hash_slot_count: int
    index_count: int


def index_file_pieces(key_hash: np.ndarray, offset: np.ndarray, store_ts: np.ndarray, *, max_hash_slot_num: int,
                      max_index_num: int, prev_end_offset: int = 0, prev_end_ts: int = 0,
                      empty_index_count: int = 0) -> list[np.ndarray | int]:
    """One IndexFile holding the given entries in put order, as pieces to write one after the other:
    byte arrays, and ints that stand for that many zero bytes (the unused entries), so that a
    mostly empty 400 MB file never has to exist in memory.

    Args:
        key_hash: index hash of each key (non-negative int32, :func:`javahash.index_key_hashes`).
        offset, store_ts: commitlog offset and store timestamp of the record of each key.
        prev_end_offset, prev_end_ts: end values of the previous index file (0 for the first).
        empty_index_count: the indexCount a file with no entry keeps on disk: 0 where nothing
            writes the header back (4.9.x), 1 where the broker's clean shutdown flushes the
            in-memory header (5.x ``IndexService.shutdown`` → ``IndexFile.shutdown`` → ``flush``).
    """
    n = len(key_hash)
    if n > max_index_num - 1:
        raise ValueError(f"{n} entries do not fit an index file of maxIndexNum={max_index_num}")
    header = np.zeros(1, dtype=INDEX_HEADER_DTYPE)
    begin_ts = prev_end_ts if prev_end_ts > 0 else 0
    if prev_end_offset > 0:
        header["beginPhyOffset"] = header["endPhyOffset"] = prev_end_offset
    if prev_end_ts > 0:
        header["beginTimestamp"] = header["endTimestamp"] = prev_end_ts
    unused_entries = (max_index_num - 1 - n) * INDEX_ENTRY_SIZE
    if not n:
        header["indexCount"] = empty_index_count
        return [header.view(np.uint8), INDEX_SLOT_SIZE * max_hash_slot_num + INDEX_ENTRY_SIZE + unused_entries]
    key_hash = np.ascontiguousarray(key_hash, dtype=np.int32)
    offset = np.ascontiguousarray(offset, dtype=np.int64)
    store_ts = np.ascontiguousarray(store_ts, dtype=np.int64)
    table = np.zeros(max_hash_slot_num, dtype=np.int32)
    entries = np.empty((n + 1) * INDEX_ENTRY_SIZE, dtype=np.uint8)  # entry 0 is never used
    entries[:INDEX_ENTRY_SIZE] = 0
    _, used_slots = fill_index_window(key_hash, offset, store_ts, np.int64(begin_ts), np.int64(store_ts[0]),
                                 np.int64(max_hash_slot_num), table, np.int64(0), np.int64(0), np.int64(0), np.int64(0),
                                 entries)
    header["beginTimestamp"] = store_ts[0]
    header["beginPhyOffset"] = offset[0]
    header["endTimestamp"] = store_ts[-1]
    header["endPhyOffset"] = offset[-1]
    header["hashSlotCount"] = used_slots
    header["indexCount"] = n + 1
    return [header.view(np.uint8), table.astype(">i4").view(np.uint8), entries, unused_entries]


_AHEAD = 16  # keys between a slot's prefetch and its use
# where an entry's fields lie in its 20 bytes (layout.INDEX_ENTRY_DTYPE), as constants for the kernel
_E_HASH, _E_OFFSET, _E_TIME_DIFF, _E_PREV = (int(INDEX_ENTRY_DTYPE.fields[f][1])  # type: ignore[index]
                                             for f in ("keyHash", "commitlogOffset", "timeDiff", "prevIndex"))


@numba.njit(cache=True, nogil=True, inline="always")
def _put_be(out, pos, value, width):
    for j in range(width):
        out[pos + j] = (value >> (8 * (width - 1 - j))) & 0xFF


@numba.njit(cache=True, nogil=True)
def fill_index_window(key_hash, offset, store_ts, begin_ts, first_ts, slot_num, table, i0, i, entries_at, w0, out):
    """Entries from key ``i`` on, for the part of the file in ``out`` (file bytes ``w0 .. w0+len(out)``;
    entry ``k`` at ``entries_at + 20 k``): slot chains (the slot's previous entry; the slot keeps its
    latest) and timeDiff in seconds (Java long division, clamped to [0, Integer.MAX_VALUE], 0 while
    the file's begin time is not positive: the file's first entry against the carried begin, later
    ones against the first entry's time ``first_ts``).  The keys given are the file's entries from
    ``i0`` on (key ``i`` is the file's entry ``i0 + i + 1``; ``table`` holds the slots as entry
    ``i0`` begins).  A key's entry is put (its slot updated) once all its bytes are in a window;
    one that runs past the window's end is written in part and put by the next window, which
    computes the same bytes again.  Returns the next key and how many puts found their slot empty
    (``hashSlotCount``).  One window over a whole entries buffer (``entries_at = w0 = 0``) builds them
    all at once."""
    n = key_hash.shape[0]
    w1 = w0 + out.shape[0]
    empty_hits = 0
    tmp = np.empty(INDEX_ENTRY_SIZE, dtype=np.uint8)
    while i < n:
        pos = entries_at + (i0 + i + 1) * INDEX_ENTRY_SIZE
        if pos >= w1:
            break
        if i + _AHEAD < n:
            prefetch(table, np.int64(key_hash[i + _AHEAD]) % slot_num)  # type: ignore[call-arg]
        h = np.int64(key_hash[i])
        s = h % slot_num
        prev = np.int64(table[s])
        base = begin_ts if i0 + i == 0 else first_ts
        td = np.int64(0)
        if base > 0:
            d = store_ts[i] - base
            td = d // 1000 if d >= 0 else -((-d) // 1000)
            if td < 0:
                td = 0
            elif td > 0x7FFFFFFF:
                td = 0x7FFFFFFF
        if pos >= w0 and pos + INDEX_ENTRY_SIZE <= w1:
            at = pos - w0
            _put_be(out, at + _E_HASH, h, 4)
            _put_be(out, at + _E_OFFSET, offset[i], 8)
            _put_be(out, at + _E_TIME_DIFF, td, 4)
            _put_be(out, at + _E_PREV, prev, 4)
        else:  # the entry crosses a window edge: its bytes that fall in this window
            _put_be(tmp, _E_HASH, h, 4)
            _put_be(tmp, _E_OFFSET, offset[i], 8)
            _put_be(tmp, _E_TIME_DIFF, td, 4)
            _put_be(tmp, _E_PREV, prev, 4)
            for j in range(INDEX_ENTRY_SIZE):
                if w0 <= pos + j < w1:
                    out[pos + j - w0] = tmp[j]
            if pos + INDEX_ENTRY_SIZE > w1:
                break  # put by the next window
        if prev == 0:
            empty_hits += 1
        table[s] = i0 + i + 1
        i += 1
    return i, empty_hits


_DIRECT_ALIGN = 4096


def write_index_file(path: str, key_hash: np.ndarray, offset: np.ndarray, store_ts: np.ndarray, *,
                     max_hash_slot_num: int, max_index_num: int, prev_end_offset: int = 0, prev_end_ts: int = 0,
                     empty_index_count: int = 0, window: int = 8 << 20) -> int:
    """:func:`index_file_pieces` written to a local file window by window from one reused buffer,
    with direct I/O where the filesystem offers it (``O_DIRECT``; else through the page cache).
    The file is made its full size at the end (sparse, as ``MappedFile`` creates it).

    Why direct I/O: an index file is hundreds of megabytes written once.  Through the page cache
    every page is fresh memory the kernel must find and fill; written directly it goes from the
    window to the disk (measured on the 2-core bench VM: 220 MB of entries 0.40 s buffered, 0.08 s
    direct).  The bytes are the same.  Returns the file size."""
    n = len(key_hash)
    if n > max_index_num - 1:
        raise ValueError(f"{n} entries do not fit an index file of maxIndexNum={max_index_num}")
    if not n:
        size = index_file_size(max_hash_slot_num, max_index_num)
        header = index_file_pieces(key_hash, offset, store_ts, max_hash_slot_num=max_hash_slot_num,
                                   max_index_num=max_index_num, prev_end_offset=prev_end_offset,
                                   prev_end_ts=prev_end_ts, empty_index_count=empty_index_count)[0]
        with open(path, "w+b") as f:
            f.truncate(size)
            f.write(np.asarray(header).tobytes())
        return size
    open(path, "wb").close()   # a new file: nothing of an earlier one may stay in the unused entries
    return write_index_file_part(path, np.zeros(0, np.int32), key_hash, offset, store_ts, head=None, entries=n,
                                max_hash_slot_num=max_hash_slot_num, max_index_num=max_index_num,
                                prev_end_ts=prev_end_ts, window=window)


HEAD_ENTRIES = 256   # more than the entries that share the slot table's last block (4096 / 20 + 1)


def index_part_bounds(entries: int, parts: int, max_hash_slot_num: int) -> list[int]:
    """Where to cut a file of ``entries`` entries into about ``parts`` equal parts built side by side
    (:func:`write_index_file_part`): entry numbers (0-based keys) whose first byte starts a direct-I/O
    block, so that no two parts write into the same block.  Returns ``[0, ..., entries]``."""
    entries_at = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * max_hash_slot_num
    # key k starts at entries_at + 20 (k + 1): on a block edge every 1024 keys (20 * 1024 = 5 * 4096)
    step = _DIRECT_ALIGN // 4
    phase = next(k for k in range(step) if (entries_at + INDEX_ENTRY_SIZE * (k + 1)) % _DIRECT_ALIGN == 0)
    cuts = [0]
    for p in range(1, max(parts, 1)):
        want = entries * p // parts
        k = want - (want - phase) % step
        if k > cuts[-1] + HEAD_ENTRIES and k < entries:
            cuts.append(k)
    return cuts + [entries]


@numba.njit(cache=True, nogil=True)
def slot_table(key_hash, slot_num, table):
    """The slot table after putting the keys (entry ``i + 1`` for key ``i``)."""
    for i in range(key_hash.shape[0]):
        table[np.int64(key_hash[i]) % slot_num] = i + 1


def write_index_file_part(path: str, before_hash: np.ndarray, key_hash: np.ndarray, offset: np.ndarray,
                          store_ts: np.ndarray, *, head: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
                          entries: int, max_hash_slot_num: int, max_index_num: int, prev_end_ts: int = 0,
                          window: int = 8 << 20) -> int:
    """Write the entries of keys ``len(before_hash) ..`` of an index file of ``entries`` entries into
    ``path``, which several parts write side by side (cut by :func:`index_part_bounds`): each part
    sets its slots' starting state from the hashes of the keys before it (``before_hash``), so the
    slot chains (``IndexFile.putKey``: prevIndex = the slot's previous entry) are those of one file
    built key after key.  The part holding the last key writes the header and the slot table, with
    the block they share with the first keys' entries, which it computes again, and makes the file
    its full size.  ``head``: hash, offset and store time of the file's first :data:`HEAD_ENTRIES`
    keys, which every part after the first needs (the first key's time is what timeDiff counts
    from, and the header's begin values); None for the first part.  The file is never truncated: parts may run in any
    order.  Returns the file size."""
    import mmap
    import os
    size = index_file_size(max_hash_slot_num, max_index_num)
    a = len(before_hash)
    m = len(key_hash)
    last = a + m == entries
    if entries > max_index_num - 1:
        raise ValueError(f"{entries} entries do not fit an index file of maxIndexNum={max_index_num}")
    key_hash = np.ascontiguousarray(key_hash, dtype=np.int32)
    offset = np.ascontiguousarray(offset, dtype=np.int64)
    store_ts = np.ascontiguousarray(store_ts, dtype=np.int64)
    if a == 0:
        first_ts, first_offset = int(store_ts[0]), int(offset[0])
    elif head is None:
        raise ValueError("a part after the first needs the file's first keys (head)")
    else:
        first_ts, first_offset = int(head[2][0]), int(head[1][0])
    begin_ts = np.int64(prev_end_ts if prev_end_ts > 0 else 0)
    entries_at = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * max_hash_slot_num
    part_end = entries_at + (a + m + 1) * INDEX_ENTRY_SIZE
    window = max(_DIRECT_ALIGN, window - window % _DIRECT_ALIGN)
    first = entries_at - entries_at % _DIRECT_ALIGN   # the block where the slot table ends and entries begin
    w0 = first if a == 0 else entries_at + (a + 1) * INDEX_ENTRY_SIZE
    if w0 % _DIRECT_ALIGN:
        raise ValueError(f"a part must start on a block edge (index_part_bounds), not at key {a}")
    table = np.zeros(max_hash_slot_num, dtype=np.int32)
    slot_table(np.ascontiguousarray(before_hash, dtype=np.int32), np.int64(max_hash_slot_num), table)
    fd = _open_direct(path)
    try:
        buf = mmap.mmap(-1, window)                 # page aligned, as direct I/O wants
        out = np.frombuffer(buf, dtype=np.uint8)
        i = 0
        head_block = np.zeros(_DIRECT_ALIGN, dtype=np.uint8)
        while w0 < part_end:
            out[:] = 0
            i, _ = fill_index_window(key_hash, offset, store_ts, begin_ts, np.int64(first_ts),
                                np.int64(max_hash_slot_num), table, np.int64(a), np.int64(i), np.int64(entries_at),
                                np.int64(w0), out)
            length = min(window, part_end - w0)
            length += -length % _DIRECT_ALIGN
            skip = 0
            if w0 == first:   # the shared block goes last, with the header and the slot table
                head_block[:] = out[:_DIRECT_ALIGN]
                skip = _DIRECT_ALIGN
            if length > skip:
                _pwrite_all(fd, memoryview(buf)[skip:length], w0 + skip)
            w0 += window
        del out
        buf.close()
        if last:
            if head is not None:   # a > 0: the first keys' entries in the shared block, as the first part computed them
                head_hash, head_off, head_ts = (np.ascontiguousarray(x) for x in head)
                block = np.zeros(_DIRECT_ALIGN, dtype=np.uint8)
                fill_index_window(head_hash.astype(np.int32), head_off.astype(np.int64), head_ts.astype(np.int64),
                             begin_ts, np.int64(first_ts), np.int64(max_hash_slot_num),
                             np.zeros(max_hash_slot_num, dtype=np.int32), np.int64(0), np.int64(0),
                             np.int64(entries_at), np.int64(first), block)
                head_block[:] = block
            start = np.zeros(first + _DIRECT_ALIGN, dtype=np.uint8)
            header = np.zeros(1, dtype=INDEX_HEADER_DTYPE)
            header["beginTimestamp"] = first_ts
            header["beginPhyOffset"] = first_offset
            header["endTimestamp"], header["endPhyOffset"] = store_ts[-1], offset[-1]
            # puts that found their slot empty: the slots used, once each (a slot never empties)
            header["hashSlotCount"] = int(np.count_nonzero(table))
            header["indexCount"] = entries + 1
            start[:INDEX_HEADER_SIZE] = header.view(np.uint8)
            start[INDEX_HEADER_SIZE:entries_at] = table.astype(">i4").view(np.uint8)
            start[entries_at:] = head_block[entries_at - first:]
            aligned = mmap.mmap(-1, len(start))
            aligned[:] = start.tobytes()
            _pwrite_all(fd, memoryview(aligned), 0)
            aligned.close()
            os.ftruncate(fd, size)
    finally:
        os.close(fd)
    return size


def _open_direct(path: str) -> int:
    """A new file for writing, with ``O_DIRECT`` where the filesystem takes it."""
    import os
    flags = os.O_WRONLY | os.O_CREAT   # never truncated: the parts of one file write side by side
    try:
        return os.open(path, flags | getattr(os, "O_DIRECT", 0), 0o644)
    except OSError:
        return os.open(path, flags, 0o644)


def _pwrite_all(fd: int, data: memoryview, pos: int) -> None:
    import os
    done = 0
    while done < len(data):
        done += os.pwrite(fd, data[done:], pos + done)


def build_index_array(key_hash: np.ndarray, offset: np.ndarray, store_ts: np.ndarray, *, max_hash_slot_num: int,
                      max_index_num: int, prev_end_offset: int = 0, prev_end_ts: int = 0,
                      empty_index_count: int = 0) -> np.ndarray:
    """:func:`index_file_pieces` as one uint8 array (the whole file)."""
    pieces = index_file_pieces(key_hash, offset, store_ts, max_hash_slot_num=max_hash_slot_num,
                               max_index_num=max_index_num, prev_end_offset=prev_end_offset,
                               prev_end_ts=prev_end_ts, empty_index_count=empty_index_count)
    buf = np.zeros(index_file_size(max_hash_slot_num, max_index_num), dtype=np.uint8)
    pos = 0
    for piece in pieces:
        if isinstance(piece, int):
            pos += piece
        else:
            buf[pos:pos + len(piece)] = piece
            pos += len(piece)
    return buf


def build_index_file(key_hash: np.ndarray, offset: np.ndarray, store_ts: np.ndarray, *, max_hash_slot_num: int,
                     max_index_num: int, prev_end_offset: int = 0, prev_end_ts: int = 0,
                     empty_index_count: int = 0) -> bytes:
    """:func:`build_index_array` as ``bytes``."""
    return build_index_array(key_hash, offset, store_ts, max_hash_slot_num=max_hash_slot_num,
                             max_index_num=max_index_num, prev_end_offset=prev_end_offset,
                             prev_end_ts=prev_end_ts, empty_index_count=empty_index_count).tobytes()


def read_header(data: bytes | memoryview | np.ndarray) -> IndexHeader:
    h = np.frombuffer(bytes(data[:INDEX_HEADER_SIZE]), dtype=INDEX_HEADER_DTYPE)[0]
    return IndexHeader(int(h["beginTimestamp"]), int(h["endTimestamp"]), int(h["beginPhyOffset"]),
                       int(h["endPhyOffset"]), int(h["hashSlotCount"]), int(h["indexCount"]))


def select_phy_offsets(data: bytes | memoryview | np.ndarray, key: str, *, max_hash_slot_num: int,
                       max_num: int = 64, begin: int = 0, end: int = 2**63 - 1) -> list[int]:
    """Commitlog offsets for ``key`` (``topic#key``) in one index file, newest first, exactly as
    ``IndexFile.selectPhyOffset`` walks the slot chain: it compares the hash only, so keys with equal
    hashes return each other's offsets."""
    offsets, _ = select_phy_offsets_of_hashes(data, np.array([index_key_hash(key)], dtype=np.int64),
                                              max_hash_slot_num=max_hash_slot_num, max_num=max_num, begin=begin,
                                              end=end)
    return offsets.tolist()


def select_phy_offsets_of_hashes(data: bytes | memoryview | np.ndarray, key_hashes: np.ndarray, *,
                                 max_hash_slot_num: int, max_num: int | np.ndarray = 64, begin: int = 0,
                                 end: int = 2**63 - 1) -> tuple[np.ndarray, np.ndarray]:
    """:func:`select_phy_offsets` of many keys, given by their index hashes
    (:func:`~store_format.javahash.index_key_hashes`), in one pass over the file; ``max_num``: one
    for all keys, or one per key.  Returns the offsets found (each key's newest first) and, for
    each, the position of its key in ``key_hashes``."""
    buf = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
    header = read_header(buf)
    hashes = np.asarray(key_hashes, dtype=np.int64)
    if header.index_count <= 1 or not len(hashes):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    limits = np.broadcast_to(np.asarray(max_num, dtype=np.int64), hashes.shape).copy()
    return _walk_slot_chains(buf, hashes, max_hash_slot_num, header.index_count, header.begin_timestamp, limits,
                             begin, end)


@numba.njit(cache=True, nogil=True, inline="always")
def _be_int(buf, pos, width):
    v = 0
    for i in range(width):
        v = (v << 8) | buf[pos + i]
    if v >= 1 << (8 * width - 1):
        v -= 1 << (8 * width)
    return v


@numba.njit(cache=True, nogil=True)
def _walk_slot_chains(buf, hashes, slot_num, index_count, begin_ts, max_nums, begin, end):
    """``IndexFile.selectPhyOffset`` for each hash: its slot, then the chain of entries (newest first)
    through ``prevIndex``; an entry counts when its hash and its time (``beginTimestamp`` + ``timeDiff``
    seconds) match; the walk ends at a negative timeDiff, a ``prevIndex`` out of range or pointing to
    itself, a time before ``begin``, the hash's ``max_nums`` offsets, or an entry past the end of ``buf`` (a file
    read with settings other than those it was written with).  Returns the offsets and their hash's index."""
    cap = 1024
    offsets = np.empty(cap, dtype=np.int64)
    owners = np.empty(cap, dtype=np.int64)
    n = 0
    entries_at = INDEX_HEADER_SIZE + slot_num * INDEX_SLOT_SIZE
    for k in range(len(hashes)):
        h = hashes[k]
        slot_at = INDEX_HEADER_SIZE + (h % slot_num) * INDEX_SLOT_SIZE
        if slot_at + INDEX_SLOT_SIZE > len(buf):   # a file shorter than its settings say: nothing to read
            continue
        slot_value = _be_int(buf, slot_at, 4)
        if slot_value <= 0 or slot_value > index_count:
            continue
        nxt = slot_value
        found = 0
        while found < max_nums[k]:
            pos = entries_at + nxt * INDEX_ENTRY_SIZE
            if pos + INDEX_ENTRY_SIZE > len(buf):
                break
            entry_hash = _be_int(buf, pos + _E_HASH, 4)
            time_diff = _be_int(buf, pos + _E_TIME_DIFF, 4)
            prev = _be_int(buf, pos + _E_PREV, 4)
            if time_diff < 0:
                break
            time_read = begin_ts + time_diff * 1000
            if entry_hash == h and begin <= time_read and time_read <= end:
                if n == cap:
                    cap *= 2
                    offsets = np.concatenate((offsets, np.empty(cap - n, dtype=np.int64)))
                    owners = np.concatenate((owners, np.empty(cap - n, dtype=np.int64)))
                offsets[n] = _be_int(buf, pos + _E_OFFSET, 8)
                owners[n] = k
                n += 1
                found += 1
            if prev <= 0 or prev > index_count or prev == nxt or time_read < begin:
                break
            nxt = prev
    return offsets[:n], owners[:n]


@numba.njit(cache=True, nogil=True)
def reachable_entries(slots, key_hash, time_diff, prev, index_count, out):  # pragma: no cover - numba
    """Entries some lookup can return: every slot's chain walked as ``IndexFile.selectPhyOffset``
    walks it (used by ``verify`` to find keys a damaged file no longer finds).

    A slot value outside (0, indexCount] finds nothing (nor does any slot while indexCount <= 1);
    the walk stops at a negative timeDiff and at a prevIndex outside (0, indexCount] or equal to
    the current entry; an entry counts for the slot only if its keyHash maps to that slot (a
    lookup of that entry's own hash would compare equal).  Writes entry numbers to ``out`` and
    returns how many.

    The stop rules are those of :func:`_walk_slot_chains`, but this is not that walk with another
    stop: the lookup walks one slot per queried hash, keeps entries whose hash equals the query and
    whose time lies in [begin, end], and ends after ``maxNum`` offsets; this walk visits every slot
    once, keeps every entry that maps to the slot (any hash, any time, no count limit), and cuts a
    cycle of prevIndex where an entry is seen again (a lookup in a damaged file goes round such a
    cycle until it has ``maxNum`` offsets, forever if none matches).  In a file without cycles,
    the lookup run once per distinct hash with no time window and no count limit would give the
    same set, at one chain walk per hash instead of one per slot.  Inputs are the parsed arrays
    (slots, entry columns), not the file's bytes: verify parses both files once for its
    comparisons."""
    n_slots = slots.shape[0]
    n_entries = key_hash.shape[0]
    seen = np.full(n_entries, -1, dtype=np.int64)
    n = 0
    if index_count <= 1:
        return 0
    for s in range(n_slots):
        cur = np.int64(slots[s])
        if cur <= 0 or cur > index_count:
            continue
        while cur < n_entries and seen[cur] != s:
            seen[cur] = s
            if time_diff[cur] < 0:
                break
            h = np.int64(key_hash[cur])
            if h >= 0 and h % n_slots == s:
                out[n] = cur
                n += 1
            p = np.int64(prev[cur])
            if p <= 0 or p > index_count or p == cur:
                break
            cur = p
    return n


def trailing_empty_file(keys: int, per_file: int, dispatched_after_last_key: bool) -> bool:
    """Whether the broker leaves an index file with no entry after the last full one
    (``IndexService.buildIndex`` → ``retryGetAndCreateIndexFile``: the next dispatched record of any
    kind creates the next file once the current one is full; with no key at all, the first record
    creates the first file)."""
    return keys == 0 or (keys % per_file == 0 and dispatched_after_last_key)


def trailing_file_time(prev_end_ts: int, first_dispatch_ts: int | None) -> int:
    """The time an empty trailing index file is named by: the previous file's end time, or, without
    one, the first dispatched record's store time."""
    return prev_end_ts if prev_end_ts > 0 else (first_dispatch_ts or 0)


def index_file_names(first_store_ts: list[int], tz: _dt.tzinfo = _dt.timezone.utc) -> list[str]:
    """``yyyyMMddHHmmssSSS`` names from each file's first store time, made strictly increasing
    (+1 ms where needed) so that the broker, which sorts index files by name, keeps their order.
    Store times a name cannot show are clamped: see :func:`index_file_names_checked`."""
    return index_file_names_checked(first_store_ts, tz)[0]


def index_file_names_checked(first_store_ts: list[int],
                             tz: _dt.tzinfo = _dt.timezone.utc) -> tuple[list[str], list[int]]:
    """:func:`index_file_names`, and the positions whose store time was out of range.

    The broker names an index file by the wall-clock time it creates it (``IndexService.
    getAndCreateLastIndexFile``, ``UtilAll.timeMillisToHumanString``) and never parses a record's
    store timestamp, so a corrupt or far-future timestamp must not stop a rebuild: a time before
    1970 or past 9999-12-31 23:59:59.999 (in ``tz``, and in UTC) is clamped into that range.  Names
    are then made strictly increasing as ``tz`` local times (+1 ms after a name not above the
    previous one, which also keeps the order across a daylight-saving fall-back), and names that
    would pass the last representable millisecond are pulled back, one millisecond apart, so they
    stay valid, unique and in order.

    Returns:
        The names in file order, and the (sorted) positions of the files whose first store time lay
        outside the representable range (report them as anomalies).
    """
    top = _dt.datetime(9999, 12, 31, 23, 59, 59, 999000)
    # the last millisecond whose local and UTC times are both datetimes (all values here are whole
    # milliseconds, which datetime_to_ms gives exactly)
    max_ms = min(datetime_to_ms(top.replace(tzinfo=tz)), datetime_to_ms(top.replace(tzinfo=_dt.timezone.utc)))
    top_local = datetime_to_ms(top)
    local_ms: list[int] = []  # local wall time of each name, as ms since 1970-01-01T00:00 local
    clamped: list[int] = []
    for i, ts in enumerate(first_store_ts):
        t = int(ts)
        if t < 0 or t > max_ms:
            clamped.append(i)
            t = min(max(t, 0), max_ms)
        local = datetime_to_ms(ms_to_datetime(t).astimezone(tz).replace(tzinfo=None))
        if local_ms and local <= local_ms[-1]:
            local = local_ms[-1] + 1
        local_ms.append(local)
    limit = top_local
    for i in range(len(local_ms) - 1, -1, -1):
        local_ms[i] = min(local_ms[i], limit)
        limit = local_ms[i] - 1
    names = []
    for n in local_ms:
        stamp = ms_to_datetime(n)  # the local wall time, held as UTC only to be formatted
        names.append(stamp.strftime("%Y%m%d%H%M%S") + f"{stamp.microsecond // 1000:03d}")
    return names, clamped
