"""The record walk's numba kernels: the loop of ``DefaultMessageStore.ReputMessageService.doReput``
over one window of a commitlog segment, reading each record as ``CommitLog.checkMessageAndReturnSize(buffer,
checkCRC=false, readBody=false)`` does (4.9.x and 5.x), and the resynchronisation scan.

The walk keeps the loop's three positions in a state vector (``S_*``):

* ``bufpos``    where the byte buffer stands: a record's *structural* end (its fields' lengths);
* ``reput``     ``reputFromOffset``: advanced by each record's *declared* ``totalSize``;
* ``read_size`` ``readSize``: advanced only by records that were dispatched.

The loop over record boundaries is inherently sequential, so it is JIT-compiled with numba; it
emits plain arrays (fields, and spans into the buffer for strings; see :mod:`store_format.walkresult`),
never Python objects.  :mod:`store_format.commitlog` feeds it windows and output memory.  The property
spans it emits are those of :data:`store_format.walkresult.PROPERTY_NAMES` (the dispatchers' properties and the
``__CRC32#`` value a 5.x recovery with ``forceVerifyPropCRC`` checks, :mod:`store_format.propcrc`); numba's
cache keys on this file only, so a change of those names must come with a change here.

Long module: the walk loop and the helpers numba compiles into it (a record's layout, its
properties, its tagsCode, its row of output), which read best beside the loop.
"""
from __future__ import annotations

import numba
import numpy as np

from .dispatch import bytes_equal as _bytes_equal
from .dispatch import dispatch_flags, multi_dispatch_units, put_index_keys, wants_multi_dispatch
from .dledger import (
    ENTRY_BLANK_MAGIC,
    ENTRY_HEADER_SIZE,
    ENTRY_MAGIC,
    OFF_ENTRY_BODY_SIZE,
    OFF_ENTRY_POS,
    OFF_ENTRY_SIZE,
)
from .javahash import utf16_hash_update
from .javatext import parse_java_long
from .layout import (
    BODY_LENGTH_LEN,
    BORN_HOST_OFFSET,
    HOST_V4_LEN,
    HOST_V6_LEN,
    MAGIC_BLANK,
    MAGIC_END,
    MAGIC_HIGH_BYTE,
    MAGIC_V1,
    MAGIC_V2,
    NAME_VALUE_SEPARATOR_BYTE,
    OFF_BODY_CRC,
    OFF_BORN_TIMESTAMP,
    OFF_FLAG,
    OFF_MAGIC,
    OFF_PHYSICAL_OFFSET,
    OFF_QUEUE_ID,
    OFF_QUEUE_OFFSET,
    OFF_SYSFLAG,
    OFF_TOTAL_SIZE,
    PREPARED_TX_OFFSET_LEN,
    PROPERTIES_LENGTH_LEN,
    PROPERTY_SEPARATOR_BYTE,
    RECONSUME_TIMES_LEN,
    SCHEDULE_TOPIC_BYTES,
    STORE_TIMESTAMP_LEN,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    TOTAL_SIZE_LEN,
    signed32,
)
from .prefetch import prefetch
from .walkresult import (
    F_CQ,
    F_INDEX,
    F_MULTI,
    F_TEXT_BAD,
    N_PROPS,
    P_DELAY,
    P_INNER_BASE,
    P_INNER_NUM,
    P_TAGS,
    PROPERTY_LOOKUP,
    PROPERTY_NAME_BYTES,
    PROPERTY_NAME_OFFSETS,
    R_BODY_LEN,
    R_BODY_START,
    R_BORN_HOST,
    R_BORN_TS,
    R_CRC,
    R_FLAG,
    R_FLAGS,
    R_KEY_COUNT,
    R_KEY_FIRST,
    R_PHYS,
    R_POS,
    R_PREP_TX,
    R_PROPS_LEN,
    R_PROPS_START,
    R_QID,
    R_QOFF,
    R_RECONSUME,
    R_STATUS,
    R_STORE_HOST,
    R_STORE_TS,
    R_STRUCT,
    R_SYSFLAG,
    R_TAGS_CODE,
    R_TOPIC_HASH,
    R_TOPIC_LEN,
    R_TOPIC_START,
    R_TOTAL,
    STATUS_DISPATCHED,
    STATUS_SIZE_MISMATCH,
)

__all__ = [
    "Stop", "walk_records", "find_record_start", "find_entry_start", "KEY_HEADROOM", "S_BUFPOS", "S_REPUT", "S_READ",
    "S_SLICE_SIZE", "S_STOP", "S_NEED",
]


# why a walk stopped (numba sees module constants, not class attributes; see Stop)
_SPLIT_END = 0   # the next record starts at or after the split end: it belongs to the next split
_BLANK = 1       # blank (end-of-segment) record at ``bufpos``
_BAD = 2         # a record the broker cannot read (bad magic, truncated, ...): rest of segment skipped
_SLICE_END = 3   # readSize reached the slice size (the data of the last segment ends here)
_LIMIT = 4       # 5.x: reputFromOffset + size passed the reput end offset
_NEED_MORE = 5   # internal: the buffer window is too short
_CAPACITY = 6    # internal: output arrays full


class Stop:
    """Why a walk stopped."""
    SPLIT_END = _SPLIT_END
    BLANK = _BLANK
    BAD = _BAD
    SLICE_END = _SLICE_END
    LIMIT = _LIMIT
    NEED_MORE = _NEED_MORE
    CAPACITY = _CAPACITY

    NAMES = {0: "split_end", 1: "blank", 2: "bad_record", 3: "slice_end", 4: "reput_end", 5: "need_more",
             6: "capacity"}


# walk state vector
S_BUFPOS, S_REPUT, S_READ, S_SLICE_SIZE, S_STOP, S_NEED = range(6)

# ``lay``: where a record's fields are, relative to its start (``_record_layout``)
(LAY_TOTAL, LAY_SYSFLAG, LAY_STORE_TS, LAY_STORE_HOST, LAY_RECONSUME, LAY_PREP, LAY_BODY, LAY_BODY_LEN, LAY_TOPIC,
 LAY_TOPIC_LEN, LAY_PROPS, LAY_PROPS_LEN, LAY_STRUCT, LAY_NEED) = range(14)
N_LAY = 14
_READABLE = -1

# room left in the key and LMQ outputs before a record is walked: one record can put this many
KEY_HEADROOM = 40000


# layout.signed32 itself, compiled for the kernels (numba calls only compiled functions)
_signed32 = numba.njit(cache=True, nogil=True, inline="always")(signed32)


@numba.njit(cache=True, nogil=True, inline="always")
def _i32(buf, p):
    return _signed32((np.int64(buf[p]) << 24) | (np.int64(buf[p + 1]) << 16) | (np.int64(buf[p + 2]) << 8)
                     | np.int64(buf[p + 3]))


@numba.njit(cache=True, nogil=True, inline="always")
def _i16(buf, p):
    v = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
    if v >= 0x8000:
        v -= 0x10000
    return v


@numba.njit(cache=True, nogil=True, inline="always")
def _i64(buf, p):
    hi = (np.int64(buf[p]) << 24) | (np.int64(buf[p + 1]) << 16) | (np.int64(buf[p + 2]) << 8) | np.int64(buf[p + 3])
    lo = ((np.int64(buf[p + 4]) << 24) | (np.int64(buf[p + 5]) << 16) | (np.int64(buf[p + 6]) << 8)
          | np.int64(buf[p + 7]))
    return (hi << 32) | lo  # wraps like a Java long


@numba.njit(cache=True, nogil=True)
def _record_layout(buf, p, remaining, accept_v2, is_5x, lay):
    """Where the fields of the record at ``buf[p]`` are, read in the order and with the underflow
    checks of ``CommitLog.checkMessageAndReturnSize`` (``readBody=false``: the body is skipped).

    ``remaining`` is ``ByteBuffer.remaining()`` of the slice.  Returns ``_READABLE`` with ``lay``
    filled, ``Stop.BLANK``, ``Stop.BAD`` (the broker cannot read it), or ``Stop.NEED_MORE`` with
    ``lay[LAY_NEED]`` = bytes of the record the window must hold.
    """
    buf_len = buf.shape[0]
    if is_5x and remaining <= TOTAL_SIZE_LEN:
        return _BAD
    if remaining < MAGIC_END:  # underflow reading totalSize or the magic code
        return _BAD
    if p + MAGIC_END > buf_len:
        lay[LAY_NEED] = MAGIC_END
        return _NEED_MORE
    total = _i32(buf, p + OFF_TOTAL_SIZE)
    if is_5x and remaining - TOTAL_SIZE_LEN < total - TOTAL_SIZE_LEN:
        return _BAD
    magic = _i32(buf, p + OFF_MAGIC)
    if magic == MAGIC_BLANK:
        return _BLANK
    topic_len_size = 1
    if magic == MAGIC_V2 and accept_v2:
        topic_len_size = 2
    elif magic != MAGIC_V1:
        return _BAD
    if total < 0:  # new byte[totalSize] throws
        return _BAD
    # fixed head through bornTimestamp
    if remaining < BORN_HOST_OFFSET:
        return _BAD
    if p + BORN_HOST_OFFSET > buf_len:
        lay[LAY_NEED] = BORN_HOST_OFFSET
        return _NEED_MORE
    sysflag = _i32(buf, p + OFF_SYSFLAG)
    bh = HOST_V6_LEN if (sysflag & SYSFLAG_BORNHOST_V6) != 0 else HOST_V4_LEN
    sh = HOST_V6_LEN if (sysflag & SYSFLAG_STOREHOST_V6) != 0 else HOST_V4_LEN
    if bh > total or sh > total:  # copying a host into bytesContent[totalSize] throws
        return _BAD
    o_store_ts = BORN_HOST_OFFSET + bh
    o_store_host = o_store_ts + STORE_TIMESTAMP_LEN
    o_reconsume = o_store_host + sh
    o_prep = o_reconsume + RECONSUME_TIMES_LEN
    o_body_len = o_prep + PREPARED_TX_OFFSET_LEN
    o_body = o_body_len + BODY_LENGTH_LEN
    if remaining < o_body:
        return _BAD
    if p + o_body > buf_len:
        lay[LAY_NEED] = o_body
        return _NEED_MORE
    body_len = _i32(buf, p + o_body_len)
    o_topic_len = o_body + (body_len if body_len > 0 else 0)
    if remaining < o_topic_len + topic_len_size:
        return _BAD
    if p + o_topic_len + topic_len_size > buf_len:
        lay[LAY_NEED] = o_topic_len + topic_len_size
        return _NEED_MORE
    if topic_len_size == 1:
        topic_len = np.int64(buf[p + o_topic_len])
        if topic_len >= 128:
            topic_len -= 256
    else:
        topic_len = _i16(buf, p + o_topic_len)
    if topic_len < 0 or topic_len > total:
        return _BAD
    o_topic = o_topic_len + topic_len_size
    o_props_len = o_topic + topic_len
    o_props = o_props_len + PROPERTIES_LENGTH_LEN
    if remaining < o_props:
        return _BAD
    if p + o_props > buf_len:
        lay[LAY_NEED] = o_props
        return _NEED_MORE
    props_len = _i16(buf, p + o_props_len)
    struct_len = o_props
    if props_len > 0:
        if props_len > total:
            return _BAD
        struct_len = o_props + props_len
        if remaining < struct_len:
            return _BAD
        if p + struct_len > buf_len:
            lay[LAY_NEED] = struct_len
            return _NEED_MORE
    lay[LAY_TOTAL] = total
    lay[LAY_SYSFLAG] = sysflag
    lay[LAY_STORE_TS] = o_store_ts
    lay[LAY_STORE_HOST] = o_store_host
    lay[LAY_RECONSUME] = o_reconsume
    lay[LAY_PREP] = o_prep
    lay[LAY_BODY] = o_body
    lay[LAY_BODY_LEN] = body_len
    lay[LAY_TOPIC] = o_topic
    lay[LAY_TOPIC_LEN] = topic_len
    lay[LAY_PROPS] = o_props
    lay[LAY_PROPS_LEN] = props_len if props_len > 0 else 0
    lay[LAY_STRUCT] = struct_len
    return _READABLE


@numba.njit(cache=True, nogil=True)
def _read_properties(buf, start, end, spans):
    """Spans of the properties the dispatchers read, as ``MessageDecoder.string2messageProperties``
    finds them: pairs split on 0x02, name and value on the first 0x01; a pair counts only with a
    non-empty name and value; a later duplicate wins.  Works on the bytes: both separators are
    ASCII, so positions and emptiness agree with the UTF-16 string the broker scans."""
    for k in range(N_PROPS):
        spans[k, 0] = -1
        spans[k, 1] = 0
    index = start
    while index < end:
        # one pass over the pair: where it ends (0x02) and where its first 0x01 is
        kv = -1
        j = index
        while j < end:
            c = buf[j]
            if c == PROPERTY_SEPARATOR_BYTE:
                break
            if c == NAME_VALUE_SEPARATOR_BYTE and kv < 0:
                kv = j
            j += 1
        # indexOf(0x01) from the pair's start: valid when inside the pair, after a non-empty name
        # and before a non-empty value
        if kv > index and kv < j - 1:
            name_len = kv - index
            if name_len < PROPERTY_LOOKUP.shape[0]:
                k = PROPERTY_LOOKUP[name_len, buf[index]]
                if k >= 0:
                    a = PROPERTY_NAME_OFFSETS[k]
                    same = True
                    for t in range(1, name_len):
                        if buf[index + t] != PROPERTY_NAME_BYTES[a + t]:
                            same = False
                            break
                    if same:
                        spans[k, 0] = kv + 1
                        spans[k, 1] = j - kv - 1
        index = j + 1


@numba.njit(cache=True, nogil=True)
def _tags_code(buf, p_topic, topic_len, spans, store_ts, delay_table):
    """The consume queue's tagsCode of a record, as ``checkMessageAndReturnSize`` computes it:
    ``String.hashCode`` of ``TAGS`` (0 without), or in ``SCHEDULE_TOPIC_XXXX`` with a ``DELAY`` level
    above 0 the delivery time (``ScheduleMessageService.computeDeliverTimestamp``, the level capped
    at the number of levels).  Returns (tagsCode, text valid UTF-8, readable): an unparsable
    ``DELAY`` (``Integer.parseInt`` throws) makes the record unreadable."""
    tags_code = np.int64(0)
    text_ok = True
    ts = spans[P_TAGS, 0]
    if ts >= 0 and spans[P_TAGS, 1] > 0:
        th, text_ok = utf16_hash_update(np.int64(0), buf, ts, ts + spans[P_TAGS, 1])
        tags_code = _signed32(th)
    ds = spans[P_DELAY, 0]
    if ds >= 0 and _bytes_equal(buf, p_topic, topic_len, SCHEDULE_TOPIC_BYTES):
        level, ok = parse_java_long(buf, ds, ds + spans[P_DELAY, 1], -2147483648, 2147483647)
        if not ok:
            return tags_code, text_ok, False
        max_level = delay_table.shape[0]
        if level > max_level:
            level = max_level
        if level > 0:
            tags_code = store_ts + delay_table[level - 1]
    return tags_code, text_ok, True


@numba.njit(cache=True, nogil=True)
def _inner_batch_readable(buf, spans):
    """5.x ``setBatchSizeIfNeeded``: with both ``INNER_NUM`` and ``INNER_BASE`` present it runs
    ``Long.parseLong(INNER_BASE)`` and ``Short.parseShort(INNER_NUM)``; a value that does not parse
    makes the record unreadable."""
    ib = spans[P_INNER_BASE, 0]
    inn = spans[P_INNER_NUM, 0]
    if ib < 0 or inn < 0:
        return True
    _v, ok_base = parse_java_long(buf, ib, ib + spans[P_INNER_BASE, 1], -9223372036854775808, 9223372036854775807)
    _n, ok_num = parse_java_long(buf, inn, inn + spans[P_INNER_NUM, 1], -32768, 32767)
    return ok_base and ok_num


@numba.njit(cache=True, nogil=True)
def _emit_record(rec, n, buf, p, bufpos, lay, tags_code):
    """Row ``n`` of ``rec``: the record's fields and where its strings are (segment positions)."""
    rec[n, R_POS] = bufpos
    rec[n, R_TOTAL] = lay[LAY_TOTAL]
    rec[n, R_STRUCT] = lay[LAY_STRUCT]
    rec[n, R_QID] = _i32(buf, p + OFF_QUEUE_ID)
    rec[n, R_QOFF] = _i64(buf, p + OFF_QUEUE_OFFSET)
    rec[n, R_PHYS] = _i64(buf, p + OFF_PHYSICAL_OFFSET)
    rec[n, R_SYSFLAG] = lay[LAY_SYSFLAG]
    rec[n, R_BORN_TS] = _i64(buf, p + OFF_BORN_TIMESTAMP)
    rec[n, R_STORE_TS] = _i64(buf, p + lay[LAY_STORE_TS])
    rec[n, R_CRC] = _i32(buf, p + OFF_BODY_CRC)
    rec[n, R_FLAG] = _i32(buf, p + OFF_FLAG)
    rec[n, R_RECONSUME] = _i32(buf, p + lay[LAY_RECONSUME])
    rec[n, R_PREP_TX] = _i64(buf, p + lay[LAY_PREP])
    rec[n, R_TAGS_CODE] = tags_code
    rec[n, R_BODY_START] = bufpos + lay[LAY_BODY]
    rec[n, R_BODY_LEN] = lay[LAY_BODY_LEN]
    rec[n, R_TOPIC_START] = bufpos + lay[LAY_TOPIC]
    rec[n, R_TOPIC_LEN] = lay[LAY_TOPIC_LEN]
    rec[n, R_PROPS_START] = bufpos + lay[LAY_PROPS]
    rec[n, R_PROPS_LEN] = lay[LAY_PROPS_LEN]
    rec[n, R_BORN_HOST] = bufpos + BORN_HOST_OFFSET
    rec[n, R_STORE_HOST] = bufpos + lay[LAY_STORE_HOST]
    rec[n, R_KEY_FIRST] = 0
    rec[n, R_KEY_COUNT] = 0
    rec[n, R_TOPIC_HASH] = 0
    rec[n, R_FLAGS] = 0


@numba.njit(cache=True, nogil=True, inline="always")
def _prefetch_next(buf, p, tail):
    """Ask for the heads and tails of the next two records, guessing that they are as long as this
    one and keep their properties where the previous record did (``tail``)."""
    if p + TOTAL_SIZE_LEN > buf.shape[0]:
        return
    total = _i32(buf, p + OFF_TOTAL_SIZE)
    if total <= 0:
        return
    for d in range(1, 3):
        q = p + d * total
        if q + tail + 192 > buf.shape[0]:
            return
        prefetch(buf, q)  # type: ignore[call-arg]
        prefetch(buf, q + tail)
        prefetch(buf, q + tail + 64)
        prefetch(buf, q + tail + 128)


@numba.njit(cache=True, nogil=True)
def _entry_header(buf, p, remaining, is_5x):
    """How ``DLedgerCommitLog.checkMessageAndReturnSize`` reads the start of a DLedger entry: the
    header's length before the record (``DLedgerEntry.BODY_OFFSET``), 0 when the second int is a
    commitlog magic code (a plain record; a walk that starts at a record's own position, as the
    lookups do, reads it so, and the entries after it with their headers), or
    ``-(stop + 1)``: a DLedger blank (magic -1) ends the file, a too short buffer is unreadable,
    ``NEED_MORE`` when the window does not hold the two ints."""
    if remaining < MAGIC_END:  # getInt underflows: the Throwable caught there
        return -(_BAD + 1)
    if p + MAGIC_END > buf.shape[0]:
        return -(_NEED_MORE + 1)
    second = _i32(buf, p + OFF_MAGIC)
    if second == MAGIC_BLANK or second == MAGIC_V1 or (is_5x and second == MAGIC_V2):
        return 0
    if _i32(buf, p) == ENTRY_BLANK_MAGIC:
        return -(_BLANK + 1)
    if remaining < ENTRY_HEADER_SIZE:  # position(pos + BODY_OFFSET) past the limit throws
        return -(_BAD + 1)
    return ENTRY_HEADER_SIZE


@numba.njit(cache=True, nogil=True)
def walk_records(buf, buf_origin, data_end, split_end, limit_rel, state, accept_v2, is_5x, dledger,
          delay_table, enable_multi_dispatch, enable_lmq, rec, key, lmq, prop_span, counts, index_tags):
    """Walk records from ``state[S_BUFPOS]`` (segment position) until a stop condition: the loop of
    ``doReput`` over one slice, the record read by :func:`_record_layout`, the dispatchers' rules
    from :mod:`store_format.dispatch`.

    ``buf[i]`` is the byte at segment position ``buf_origin + i``.  ``data_end`` is where the
    readable slice of the segment ends.  Outputs are appended to ``rec``/``key``/``lmq``/
    ``prop_span`` from ``counts[0..2]`` on.  ``dledger``: a DLedger data file, each record behind an
    entry header (:func:`_entry_header`); positions and sizes then count the header, as
    ``DLedgerCommitLog.checkMessageAndReturnSize`` gives the reput ``bufferSize``.
    """
    bufpos = state[S_BUFPOS]
    reput = state[S_REPUT]
    read_size = state[S_READ]
    slice_size = state[S_SLICE_SIZE]
    n_rec = counts[0]
    n_key = counts[1]
    n_lmq = counts[2]
    lay = np.zeros(N_LAY, dtype=np.int64)
    spans = np.empty((N_PROPS, 2), dtype=np.int64)
    stop = -1
    need = 0
    while True:
        # the loop conditions of doReput, and the split's end
        if read_size >= slice_size:
            stop = _SLICE_END
            break
        if is_5x and reput >= limit_rel:
            stop = _LIMIT
            break
        if bufpos >= split_end:
            stop = _SPLIT_END
            break
        if n_rec >= rec.shape[0] or n_key + KEY_HEADROOM > key.shape[0] or n_lmq + KEY_HEADROOM > lmq.shape[0]:
            stop = _CAPACITY
            break
        p = bufpos - buf_origin
        hdr = 0
        if dledger:
            hdr = _entry_header(buf, p, data_end - bufpos, is_5x)
            if hdr < 0:
                stop = -hdr - 1
                need = MAGIC_END
                break
            p += hdr
        _prefetch_next(buf, p, lay[LAY_PROPS])
        code = _record_layout(buf, p, data_end - bufpos - hdr, accept_v2, is_5x, lay)
        if code != _READABLE:
            stop = code
            need = lay[LAY_NEED] + hdr
            break
        p_topic = p + lay[LAY_TOPIC]
        topic_len = lay[LAY_TOPIC_LEN]
        if lay[LAY_PROPS_LEN] > 0:
            _read_properties(buf, p + lay[LAY_PROPS], p + lay[LAY_STRUCT], spans)
        else:
            for k in range(N_PROPS):
                spans[k, 0] = -1
                spans[k, 1] = 0
        store_ts = _i64(buf, p + lay[LAY_STORE_TS])
        tags_code, text_ok, readable = _tags_code(buf, p_topic, topic_len, spans, store_ts, delay_table)
        if not readable:
            stop = _BAD
            break
        size = lay[LAY_TOTAL] + hdr
        is_ok = lay[LAY_TOTAL] == lay[LAY_STRUCT]
        if is_5x and is_ok and not _inner_batch_readable(buf, spans):
            stop = _BAD
            break
        if is_5x and reput + size > limit_rel:
            stop = _LIMIT
            break
        _emit_record(rec, n_rec, buf, p, bufpos + hdr, lay, tags_code)
        for k in range(N_PROPS):
            s0 = spans[k, 0]
            prop_span[n_rec, k, 0] = s0 + buf_origin if s0 >= 0 else -1
            prop_span[n_rec, k, 1] = spans[k, 1]
        if is_ok:
            flags = dispatch_flags(lay[LAY_SYSFLAG])
            th, ok = utf16_hash_update(np.int64(0), buf, p_topic, p_topic + topic_len)
            text_ok = text_ok and ok
            rec[n_rec, R_TOPIC_HASH] = th
            rec[n_rec, R_KEY_FIRST] = n_key
            if flags & F_INDEX:
                n_first = n_key
                n_key, ok = put_index_keys(buf, buf_origin, n_rec, th, spans, key, n_key, index_tags)
                text_ok = text_ok and ok
                rec[n_rec, R_KEY_COUNT] = n_key - n_first
            # light units: the file queues' gate and rows (a RocksDB consume queue's walk passes enableLmq as
            # enable_multi_dispatch and reads the rows with store_format.rocksdb_cq.light_rows)
            if (enable_multi_dispatch and (flags & F_CQ) != 0
                    and wants_multi_dispatch(buf, p_topic, topic_len, spans, is_5x)):
                flags |= F_MULTI
                n_lmq = multi_dispatch_units(buf, buf_origin, n_rec, rec[n_rec, R_QID], spans, enable_lmq, is_5x,
                                             lmq, n_lmq)
            if not text_ok:
                flags |= F_TEXT_BAD
            rec[n_rec, R_STATUS] = STATUS_DISPATCHED
            rec[n_rec, R_FLAGS] = flags
            n_rec += 1
            reput += size
            read_size += size
            bufpos += size
        else:
            rec[n_rec, R_STATUS] = STATUS_SIZE_MISMATCH
            rec[n_rec, R_KEY_FIRST] = n_key
            n_rec += 1
            reput += size
            bufpos += lay[LAY_STRUCT] + hdr  # the buffer stands at the record's structural end
    state[S_BUFPOS] = bufpos
    state[S_REPUT] = reput
    state[S_READ] = read_size
    state[S_STOP] = stop
    state[S_NEED] = need
    counts[0] = n_rec
    counts[1] = n_key
    counts[2] = n_lmq


@numba.njit(cache=True, nogil=True)
def find_entry_start(buf, buf_origin, seg_base, start, end):
    """First position in [start, end) of a DLedger data file where an entry starts: its magic, its
    stored pos equal to the file base plus that position, its size the body size plus the header
    (what ``DLedgerMmapFileStore.recover`` checks).  -1 if none."""
    n = buf.shape[0]
    for pos in range(start, end):
        p = pos - buf_origin
        if p + ENTRY_HEADER_SIZE > n:
            return -1
        if (_i32(buf, p) == ENTRY_MAGIC and _i64(buf, p + OFF_ENTRY_POS) == seg_base + pos
                and _i32(buf, p + OFF_ENTRY_SIZE) == _i32(buf, p + OFF_ENTRY_BODY_SIZE) + ENTRY_HEADER_SIZE):
            return pos
    return -1


@numba.njit(cache=True, nogil=True)
def find_record_start(buf, buf_origin, seg_base, start, end, accept_v2):
    """First segment position in [start, end) where a record starts: a known magic code and a
    stored physicalOffset equal to the segment base plus that position.  -1 if none."""
    # positions whose head through physicalOffset lies in the buffer
    for pos in range(start, min(end, buf_origin + buf.shape[0] - OFF_SYSFLAG + 1)):
        p = pos - buf_origin
        if buf[p + OFF_MAGIC] != MAGIC_HIGH_BYTE:   # one comparison for most positions
            continue
        m = _i32(buf, p + OFF_MAGIC)
        if m == MAGIC_V1 or (accept_v2 and m == MAGIC_V2):
            if _i64(buf, p + OFF_PHYSICAL_OFFSET) == seg_base + pos:
                return pos
    return -1

