"""Walk a byte range of a commitlog segment as the reput does, into columnar arrays: the windows,
output memory and result around the walk's kernels (:mod:`store_format.walkkernel`).

The walk mirrors ``CommitLog.checkMessageAndReturnSize(buffer, checkCRC=false, readBody=false)``
called in the loop of ``DefaultMessageStore.ReputMessageService.doReput`` (4.9.x and 5.x), record
by record, keeping the loop's three positions:

* ``bufpos``    where the byte buffer stands: a record's *structural* end (its fields' lengths);
* ``reput``     ``reputFromOffset``: advanced by each record's *declared* ``totalSize``;
* ``read_size`` ``readSize``: advanced only by records that were dispatched.

They differ only after a record whose totalSize disagrees with its fields; the pipeline's driver
uses them to chain splits and segments exactly as the broker would (see :mod:`store_format.reput`).

This module reads the segment's bytes (mapped in place, or a window at a time into reused
memory), sizes and grows the output arrays, and hands back a :class:`WalkResult` whose columns are
named in :mod:`store_format.walkresult` (re-exported here: ``cl.R_POS``, ``cl.F_CQ``, ...).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .config import BrokerConfig
from .errors import StoreLayoutError
from .layout import MAGIC_HIGH_BYTE, OFF_MAGIC, TOTAL_SIZE_LEN, segment_name
from .walkkernel import (
    KEY_HEADROOM,
    S_BUFPOS,
    S_NEED,
    S_READ,
    S_REPUT,
    S_SLICE_SIZE,
    S_STOP,
    Stop,
    find_entry_start,
    find_record_start,
    walk_records,
)
from .walkresult import *  # noqa: F403  (the output's column names are part of this module's interface)
from .walkresult import (
    N_KEY_FIELDS,
    N_LMQ_FIELDS,
    N_PROPS,
    N_REC_FIELDS,
    STATUS_BELOW_ROCKSDB_START,
    STATUS_DISPATCHED,
    STATUS_SIZE_MISMATCH,
    WalkResult,
    WalkState,
)

__all__ = [
    "Stop", "Status", "WalkState", "WalkResult", "walk_range", "resync", "Scratch", "use_system_allocator",
]


class Status:
    """Per-record outcome."""
    DISPATCHED = STATUS_DISPATCHED
    SIZE_MISMATCH = STATUS_SIZE_MISMATCH
    BELOW_ROCKSDB_START = STATUS_BELOW_ROCKSDB_START


Reader = Callable[[int, int], "bytes | memoryview | np.ndarray"]


def use_system_allocator() -> None:
    """Make Arrow allocate with the C library's ``malloc`` in this process.

    Arrow's own allocator hands freed pages back to the system and faults them in again at the next
    allocation; page faults are what does not scale on a small VM (two processes writing work files
    ran no faster than one: 1.27 s for either; with this, 0.66 s on two), and ``malloc`` keeps them.
    Called by the tasks of the jobs, once per process.
    """
    import pyarrow as pa
    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())


class Scratch:
    """Memory reused by walks that run one after another in one process (a scan task's splits).

    Fresh memory costs page faults and zeroing on first touch, which on a small VM costs more than
    the walk itself (measured here: 2.2 s per GiB of never-touched memory, 0.03 s per GiB reused);
    a result walked with a scratch is only valid until the next walk using it.
    """

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}

    def array(self, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        need = int(np.prod(shape))
        a = self._arrays.get(name)
        if a is None or a.size < need or a.dtype != np.dtype(dtype):
            a = self._arrays[name] = np.empty(max(need, 1), dtype=dtype)
        return a[:need].reshape(shape)

    def grow(self, name: str, current: np.ndarray, rows: int) -> np.ndarray:
        """``current`` (an array from :meth:`array` or any array) with room for ``rows`` rows; the
        rows it holds are kept."""
        shape = (rows, *current.shape[1:])
        a = np.empty(int(np.prod(shape)), dtype=current.dtype).reshape(shape)
        a[:len(current)] = current
        self._arrays[name] = a.reshape(-1)
        return a


def _read_window(read: Reader, pos: int, length: int, scratch: Scratch | None) -> np.ndarray:
    into = getattr(read, "read_into", None)
    if scratch is not None and into is not None:
        out = scratch.array("window", (length,), np.uint8)
        return out[:into(pos, out)]
    return _as_u8(read(pos, length))


def _outputs(scratch: Scratch | None, records: int, keys: int) -> list[np.ndarray]:
    shapes = {"rec": ((records, N_REC_FIELDS), np.int64), "key": ((keys, N_KEY_FIELDS), np.int64),
              "lmq": ((keys, N_LMQ_FIELDS), np.int64), "prop": ((records, N_PROPS, 2), np.int64)}
    if scratch is None:
        return [np.empty(shape, dtype=dtype) for shape, dtype in shapes.values()]
    return [scratch.array(name, shape, dtype) for name, (shape, dtype) in shapes.items()]


def walk_range(read: Reader, seg_base: int, data_end: int, state: WalkState, split_end: int,
               config: BrokerConfig, *, limit_rel: int | None = None, window: int = 64 << 20,
               keep_text: bool = True, scratch: Scratch | None = None, dledger: bool = False) -> WalkResult:
    """Walk records of one segment from ``state`` until a stop condition other than buffer/capacity.

    Args:
        read: ``read(pos, length)`` returns segment bytes from ``pos`` (shorter at end of file).  A
            reader with ``view(pos, length)`` (a mapped file: :class:`store_format.store.Reader` on
            a local file) is walked in place, without copying the bytes.
        seg_base: the segment's base offset (its name).
        data_end: segment position where the readable data ends (the file size).
        state: entering loop state.
        split_end: records starting at or after this segment position are left to the next split.
        config: broker settings (delay levels, multi-dispatch, 4.9 or 5.x reput).
        limit_rel: 5.x reput end offset relative to the segment base (None: no limit).
        window: bytes read at a time when the reader cannot map the file.
        scratch: reusable memory (see :class:`Scratch`); the result then lives until its next use.
        dledger: a DLedger data file (:mod:`store_format.dledger`): records behind entry headers.
    Returns:
        A :class:`WalkResult`; string spans refer to segment positions resolvable in ``text``.
    """
    delay = np.asarray(config.delay_levels_ms, dtype=np.int64)
    accept_v2 = config.accepts_v2_records
    limit = np.int64(limit_rel if limit_rel is not None else np.iinfo(np.int64).max)
    st = state.as_array()
    win_start = state.bufpos
    view = getattr(read, "view", None)
    span = max(min(split_end, data_end) - win_start, 0)
    if view is not None:
        buf = _as_u8(view(win_start, max(data_end - win_start, 0)))
    else:
        win_len = max(min(window, span + (1 << 20)), 1 << 16)
        buf = _read_window(read, win_start, min(win_len, max(data_end - win_start, 0)), scratch)
    # a first guess of the output rows (records of ~256 bytes), grown when a walk fills them
    rec_cap = max(1024, min(span, 1 << 30) // 256 + 1024)
    key_cap = rec_cap * 4 + 2 * KEY_HEADROOM
    rec, key, lmq, prop = _outputs(scratch, rec_cap, key_cap)
    counts = np.zeros(3, dtype=np.int64)
    while True:
        walk_records(buf, win_start, data_end, split_end, limit, st, accept_v2, config.is_5x, dledger, delay,
              config.enableMultiDispatch, config.enableLmq, rec, key, lmq, prop, counts, config.indexes_tags)
        stop = int(st[S_STOP])
        if stop == Stop.CAPACITY:
            n_rec, n_key, n_lmq = (int(c) for c in counts)
            if n_rec >= len(rec):
                rec = _grow(scratch, "rec", rec, n_rec)
                prop = _grow(scratch, "prop", prop, n_rec)
            if n_key + KEY_HEADROOM > len(key):
                key = _grow(scratch, "key", key, n_key)
            if n_lmq + KEY_HEADROOM > len(lmq):
                lmq = _grow(scratch, "lmq", lmq, n_lmq)
            continue
        if stop == Stop.NEED_MORE:
            # the record at ``pos`` runs past the window: grow the window (doubling), so that all
            # string spans stay in one buffer
            pos = int(st[S_BUFPOS])
            total = _peek_total(buf, pos - win_start)
            end = max(pos + max(int(st[S_NEED]), total + 4096), win_start + 2 * len(buf))
            want = min(end, data_end) - win_start
            new_buf = _read_window(read, win_start, want, scratch)  # same origin: a grown window
            if len(new_buf) < min(want, pos - win_start + int(st[S_NEED])):
                raise StoreLayoutError(
                    f"segment {segment_name(seg_base)}: short read at position {pos} ({len(new_buf)} of {want} bytes); "
                    "was the file truncated while being read?")
            buf = new_buf
            continue
        break
    n_rec, n_key, n_lmq = (int(c) for c in counts)
    final = WalkState(int(st[S_BUFPOS]), int(st[S_REPUT]), int(st[S_READ]), int(st[S_SLICE_SIZE]))
    # the window only ever grows from where the walk started, so it holds every string span
    text, text_origin = (buf, win_start) if keep_text and n_rec else (np.zeros(0, dtype=np.uint8), 0)
    return WalkResult(rec[:n_rec], key[:n_key], lmq[:n_lmq], prop[:n_rec], final, stop, text, text_origin)


def _grow(scratch: Scratch | None, name: str, current: np.ndarray, used: int) -> np.ndarray:
    rows = 2 * len(current) + KEY_HEADROOM
    if scratch is None:
        a = np.empty((rows, *current.shape[1:]), dtype=current.dtype)
        a[:used] = current[:used]
        return a
    return scratch.grow(name, current[:used], rows)


def resync(read: Reader, seg_base: int, start: int, end: int, data_end: int, window: int = 1 << 20,
           dledger: bool = False) -> int:
    """First record start in [start, end) found by content, or -1
    (:func:`store_format.walkkernel.find_record_start`, a window at a time); in a DLedger data file
    the first entry start (:func:`store_format.walkkernel.find_entry_start`)."""
    view = getattr(read, "view", None)   # a mapped file: no copy of each window
    pos = start
    while pos < end:
        length = min(window + 64, data_end - pos)
        if length <= 0:
            return -1
        buf = _as_u8(view(pos, length) if view is not None else read(pos, length))
        stop_at = min(end, pos + window)
        if dledger:
            found = find_entry_start(buf, pos, seg_base, pos, stop_at)
        else:
            first = _first_magic_byte(buf, stop_at - pos)
            found = -1 if first < 0 else find_record_start(buf, pos, seg_base, pos + first, stop_at, True)
        if found >= 0:
            return int(found)
        pos = stop_at
    return -1


def _first_magic_byte(buf: np.ndarray, span: int) -> int:
    """The first of the window's ``span`` positions whose magic code could be a record's (its first
    byte is :data:`MAGIC_HIGH_BYTE`), or -1: one vectorized comparison passes over a window without
    one, such as the zeros of a segment's unwritten tail, where most splits past the data resync."""
    where = buf[OFF_MAGIC:OFF_MAGIC + span] == MAGIC_HIGH_BYTE
    i = int(np.argmax(where)) if len(where) else 0
    return i if len(where) and where[i] else -1


def _peek_total(buf: np.ndarray, p: int) -> int:
    if p + TOTAL_SIZE_LEN <= len(buf):
        v = int.from_bytes(bytes(buf[p:p + TOTAL_SIZE_LEN]), "big", signed=True)
        return max(v, 0)
    return 0


def _as_u8(data) -> np.ndarray:
    if isinstance(data, np.ndarray):
        return data.view(np.uint8) if data.dtype != np.uint8 else data
    return np.frombuffer(data, dtype=np.uint8)
