"""Decode a byte range of a commitlog segment into columnar arrays, walking it as the reput does.

The walk mirrors ``CommitLog.checkMessageAndReturnSize(buffer, checkCRC=false, readBody=false)``
called in the loop of ``DefaultMessageStore.ReputMessageService.doReput`` (4.9.x and 5.x), record
by record, keeping the loop's three positions:

* ``bufpos``    where the byte buffer stands: a record's *structural* end (its fields' lengths);
* ``reput``     ``reputFromOffset``: advanced by each record's *declared* ``totalSize``;
* ``read_size`` ``readSize``: advanced only by records that were dispatched.

They differ only after a record whose totalSize disagrees with its fields; the pipeline's driver
uses them to chain splits and segments exactly as the broker would (see :mod:`store_format.reput`).

The loop over record boundaries is inherently sequential, so it is JIT-compiled with numba; it
emits plain arrays (fields, and spans into the buffer for strings), never Python objects.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numba
import numpy as np

from .config import BrokerConfig
from .errors import StoreLayoutError
from .javahash import utf16_hash_update
from .layout import (BORN_HOST_OFFSET, HOST_V4_LEN, HOST_V6_LEN, MAGIC_BLANK, MAGIC_V1, MAGIC_V2,
                     OFF_BODY_CRC, OFF_BORN_TIMESTAMP, OFF_FLAG, OFF_MAGIC, OFF_PHYSICAL_OFFSET,
                     OFF_QUEUE_ID, OFF_QUEUE_OFFSET, OFF_SYSFLAG, OFF_TOTAL_SIZE, SYSFLAG_BORNHOST_V6,
                     SYSFLAG_STOREHOST_V6, SYSFLAG_TRANSACTION_MASK, TRANSACTION_COMMIT, TRANSACTION_NOT,
                     TRANSACTION_ROLLBACK)

__all__ = [
    "Stop", "Status", "PROPERTY_NAMES", "WalkState", "WalkResult", "walk_range", "resync", "Scratch",
]


class Stop:
    """Why a walk stopped."""
    SPLIT_END = 0   # the next record starts at or after the split end: it belongs to the next split
    BLANK = 1       # blank (end-of-segment) record at ``bufpos``
    BAD = 2         # a record the broker cannot read (bad magic, truncated, ...): rest of segment skipped
    SLICE_END = 3   # readSize reached the slice size (the data of the last segment ends here)
    LIMIT = 4       # 5.x: reputFromOffset + size passed the reput end offset
    NEED_MORE = 5   # internal: the buffer window is too short
    CAPACITY = 6    # internal: output arrays full

    NAMES = {0: "split_end", 1: "blank", 2: "bad_record", 3: "slice_end", 4: "reput_end", 5: "need_more",
             6: "capacity"}


class Status:
    """Per-record outcome."""
    DISPATCHED = 0       # success, size > 0: handed to the dispatchers
    SIZE_MISMATCH = 1    # totalSize differs from the length its fields give: skipped


# Properties the dispatchers read [MessageConst]; column order of the ``prop_span`` output.
PROPERTY_NAMES = (
    "KEYS", "UNIQ_KEY", "TAGS", "DELAY", "INNER_MULTI_DISPATCH", "INNER_MULTI_QUEUE_OFFSET",
    "REAL_TOPIC", "REAL_QID", "RETRY_TOPIC", "INNER_NUM", "INNER_BASE",
)
(P_KEYS, P_UNIQ, P_TAGS, P_DELAY, P_MULTI_DISPATCH, P_MULTI_OFFSET, P_REAL_TOPIC, P_REAL_QID, P_RETRY_TOPIC,
 P_INNER_NUM, P_INNER_BASE) = range(len(PROPERTY_NAMES))
_PROP_NAME_BYTES = np.frombuffer("".join(PROPERTY_NAMES).encode(), dtype=np.uint8).copy()
_PROP_NAME_OFFSETS = np.cumsum([0] + [len(n) for n in PROPERTY_NAMES]).astype(np.int64)

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"  # TopicValidator.RMQ_SYS_SCHEDULE_TOPIC
_SCHEDULE_TOPIC_BYTES = np.frombuffer(SCHEDULE_TOPIC.encode(), dtype=np.uint8).copy()
LMQ_PREFIX = "%LMQ%"  # MixAll.LMQ_PREFIX
_LMQ_PREFIX_BYTES = np.frombuffer(LMQ_PREFIX.encode(), dtype=np.uint8).copy()
_RETRY_PREFIX_BYTES = np.frombuffer(b"%RETRY%", dtype=np.uint8).copy()   # MixAll.RETRY_GROUP_TOPIC_PREFIX
_SYSTEM_PREFIX_BYTES = np.frombuffer(b"rmq_sys_", dtype=np.uint8).copy()  # TopicValidator.SYSTEM_TOPIC_PREFIX

KEY_KIND_UNIQ = 0
KEY_KIND_KEY = 1

LMQ_OK = 0
LMQ_BAD_OFFSET = 1       # Long.parseLong failed: the broker's dispatch throws here
LMQ_SKIPPED_SEPARATOR = 2  # 5.x skips queue names containing the path separator

# per-record int64 field columns of the ``rec`` output matrix
R_POS, R_TOTAL, R_STRUCT, R_QID, R_QOFF, R_PHYS, R_SYSFLAG, R_BORN_TS, R_STORE_TS, R_CRC, R_FLAG, \
    R_RECONSUME, R_PREP_TX, R_TAGS_CODE, R_BODY_START, R_BODY_LEN, R_TOPIC_START, R_TOPIC_LEN, \
    R_PROPS_START, R_PROPS_LEN, R_BORN_HOST, R_STORE_HOST, R_STATUS, R_KEY_FIRST, R_KEY_COUNT, \
    R_TOPIC_HASH, R_FLAGS = range(27)
N_REC_FIELDS = 27
# bits of R_FLAGS
F_CQ = 1          # goes to its consume queue (transaction type not/commit)
F_INDEX = 2       # handed to the index builder with keys (not a rollback)
F_TEXT_BAD = 4    # topic or a key is not valid UTF-8: hashes need the slow path
F_MULTI = 8       # carries a multi-dispatch (LMQ) request

# per-key columns of the ``key`` output matrix
K_REC, K_KIND, K_START, K_LEN, K_HASH = range(5)
N_KEY_FIELDS = 5
# per-LMQ-unit columns of the ``lmq`` output matrix
L_REC, L_NAME_START, L_NAME_LEN, L_QOFF, L_QID, L_STATUS = range(6)
N_LMQ_FIELDS = 6

# walk state vector
S_BUFPOS, S_REPUT, S_READ, S_SLICE_SIZE, S_STOP, S_NEED = range(6)


@numba.njit(cache=True, nogil=True, inline="always")
def _i32(buf, p):
    v = (np.int64(buf[p]) << 24) | (np.int64(buf[p + 1]) << 16) | (np.int64(buf[p + 2]) << 8) | np.int64(buf[p + 3])
    if v >= 0x80000000:
        v -= 0x100000000
    return v


@numba.njit(cache=True, nogil=True, inline="always")
def _i16(buf, p):
    v = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
    if v >= 0x8000:
        v -= 0x10000
    return v


@numba.njit(cache=True, nogil=True, inline="always")
def _i64(buf, p):
    hi = (np.int64(buf[p]) << 24) | (np.int64(buf[p + 1]) << 16) | (np.int64(buf[p + 2]) << 8) | np.int64(buf[p + 3])
    lo = (np.int64(buf[p + 4]) << 24) | (np.int64(buf[p + 5]) << 16) | (np.int64(buf[p + 6]) << 8) | np.int64(buf[p + 7])
    return (hi << 32) | lo  # wraps like a Java long


@numba.njit(cache=True, nogil=True, inline="always")
def _bytes_equal(buf, start, length, pattern):
    if length != pattern.shape[0]:
        return False
    for j in range(length):
        if buf[start + j] != pattern[j]:
            return False
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _starts_with(buf, start, length, pattern):
    if length < pattern.shape[0]:
        return False
    for j in range(pattern.shape[0]):
        if buf[start + j] != pattern[j]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _parse_java_long(buf, start, end):
    """``Long.parseLong`` / ``Integer.parseInt`` for ASCII digits: returns (value, ok)."""
    if start >= end:
        return 0, False
    neg = False
    i = start
    if buf[i] == 45 or buf[i] == 43:  # '-' '+'
        neg = buf[i] == 45
        i += 1
        if i >= end:
            return 0, False
    v = 0
    while i < end:
        d = np.int64(buf[i]) - 48
        if d < 0 or d > 9:
            return 0, False
        if v > 922337203685477580:
            return 0, False
        v = v * 10 + d
        i += 1
    return (-v if neg else v), True


@numba.njit(cache=True, nogil=True)
def _is_blank(buf, start, length):
    """``StringUtils.isBlank`` for a present value (ASCII whitespace)."""
    for j in range(length):
        c = buf[start + j]
        if not (c == 32 or (c >= 9 and c <= 13) or (c >= 28 and c <= 31)):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _parse_properties(buf, start, end, names, name_offsets, spans):
    """Find the properties the dispatchers read, as ``MessageDecoder.string2messageProperties``:
    pairs split on 0x02, name/value on the first 0x01; a pair counts only with a non-empty name
    and value; a later duplicate wins.  Works on bytes: both separators are ASCII, so positions
    and emptiness agree with the UTF-16 string the broker scans."""
    n_names = name_offsets.shape[0] - 1
    for k in range(n_names):
        spans[k, 0] = -1
        spans[k, 1] = 0
    index = start
    next_kv = start - 1  # cached result of indexOf(0x01, index)
    while index < end:
        new_index = index
        while new_index < end and buf[new_index] != 2:
            new_index += 1
        if new_index - index >= 3:
            if next_kv < index:
                next_kv = index
                while next_kv < end and buf[next_kv] != 1:
                    next_kv += 1
                if next_kv >= end:
                    next_kv = end + 1  # none left
            kv = next_kv
            if kv <= end and kv > index and kv < new_index - 1:
                name_len = kv - index
                for k in range(n_names):
                    a = name_offsets[k]
                    b = name_offsets[k + 1]
                    if b - a == name_len:
                        same = True
                        for j in range(name_len):
                            if buf[index + j] != names[a + j]:
                                same = False
                                break
                        if same:
                            spans[k, 0] = kv + 1
                            spans[k, 1] = new_index - kv - 1
                            break
        index = new_index + 1


@numba.njit(cache=True, nogil=True)
def _walk(buf, buf_origin, data_end, split_end, limit_rel, state, accept_v2, is_5x,
          delay_table, enable_multi_dispatch, enable_lmq,
          rec, key, lmq, prop_span, counts):
    """Walk records from ``state[S_BUFPOS]`` (segment position) until a stop condition.

    ``buf[i]`` is the byte at segment position ``buf_origin + i``.  ``data_end`` is where the
    readable slice of the segment ends.  Outputs are appended to ``rec``/``key``/``lmq``/
    ``prop_span`` from ``counts[0..2]`` on.
    """
    buf_len = buf.shape[0]
    bufpos = state[S_BUFPOS]
    reput = state[S_REPUT]
    read_size = state[S_READ]
    slice_size = state[S_SLICE_SIZE]
    n_rec = counts[0]
    n_key = counts[1]
    n_lmq = counts[2]
    cap_rec = rec.shape[0]
    cap_key = key.shape[0]
    cap_lmq = lmq.shape[0]
    tmp_spans = np.empty((len(PROPERTY_NAMES), 2), dtype=np.int64)
    stop = -1
    need = 0
    while True:
        if read_size >= slice_size:
            stop = 3  # SLICE_END
            break
        if is_5x and reput >= limit_rel:
            stop = 4  # LIMIT
            break
        if bufpos >= split_end:
            stop = 0  # SPLIT_END
            break
        if n_rec >= cap_rec or n_key + 40000 > cap_key or n_lmq + 40000 > cap_lmq:
            stop = 6  # CAPACITY
            break
        p = bufpos - buf_origin
        remaining = data_end - bufpos  # ByteBuffer.remaining() of the slice
        # -- total size and magic code
        if is_5x and remaining <= 4:
            stop = 2
            break
        if remaining < 8:  # underflow reading totalSize or the magic code
            stop = 2
            break
        if p + 8 > buf_len:
            stop = 5
            need = 8
            break
        total = _i32(buf, p + OFF_TOTAL_SIZE)
        if is_5x and remaining - 4 < total - 4:
            stop = 2
            break
        magic = _i32(buf, p + OFF_MAGIC)
        if magic == MAGIC_BLANK:
            stop = 1  # BLANK
            break
        topic_len_size = 1
        if magic == MAGIC_V2 and accept_v2:
            topic_len_size = 2
        elif magic != MAGIC_V1:
            stop = 2
            break
        if total < 0:  # new byte[totalSize] throws
            stop = 2
            break
        # -- fixed head through bornTimestamp
        if remaining < BORN_HOST_OFFSET:
            stop = 2
            break
        if p + BORN_HOST_OFFSET > buf_len:
            stop = 5
            need = BORN_HOST_OFFSET
            break
        sysflag = _i32(buf, p + OFF_SYSFLAG)
        bh = HOST_V6_LEN if (sysflag & SYSFLAG_BORNHOST_V6) != 0 else HOST_V4_LEN
        sh = HOST_V6_LEN if (sysflag & SYSFLAG_STOREHOST_V6) != 0 else HOST_V4_LEN
        if bh > total:  # copying the host into bytesContent[totalSize] throws
            stop = 2
            break
        o_store_ts = BORN_HOST_OFFSET + bh
        o_store_host = o_store_ts + 8
        if sh > total:
            stop = 2
            break
        o_reconsume = o_store_host + sh
        o_prep = o_reconsume + 4
        o_body_len = o_prep + 8
        o_body = o_body_len + 4
        if remaining < o_body:
            stop = 2
            break
        if p + o_body > buf_len:
            stop = 5
            need = o_body
            break
        body_len = _i32(buf, p + o_body_len)
        o_topic_len = o_body + (body_len if body_len > 0 else 0)
        if remaining < o_topic_len + topic_len_size:
            stop = 2
            break
        if p + o_topic_len + topic_len_size > buf_len:
            stop = 5
            need = o_topic_len + topic_len_size
            break
        if topic_len_size == 1:
            topic_len = np.int64(buf[p + o_topic_len])
            if topic_len >= 128:
                topic_len -= 256
        else:
            topic_len = _i16(buf, p + o_topic_len)
        if topic_len < 0 or topic_len > total:
            stop = 2
            break
        o_topic = o_topic_len + topic_len_size
        o_props_len = o_topic + topic_len
        if remaining < o_props_len + 2:
            stop = 2
            break
        if p + o_props_len + 2 > buf_len:
            stop = 5
            need = o_props_len + 2
            break
        props_len = _i16(buf, p + o_props_len)
        o_props = o_props_len + 2
        o_end = o_props
        if props_len > 0:
            if props_len > total:
                stop = 2
                break
            o_end = o_props + props_len
            if remaining < o_end:
                stop = 2
                break
            if p + o_end > buf_len:
                stop = 5
                need = o_end
                break
        # -- properties the dispatchers read
        if props_len > 0:
            _parse_properties(buf, p + o_props, p + o_end, _PROP_NAME_BYTES, _PROP_NAME_OFFSETS, tmp_spans)
        else:
            for k in range(tmp_spans.shape[0]):
                tmp_spans[k, 0] = -1
                tmp_spans[k, 1] = 0
        store_ts = _i64(buf, p + o_store_ts)
        text_bad = False
        tags_code = np.int64(0)
        ts = tmp_spans[P_TAGS, 0]
        if ts >= 0 and tmp_spans[P_TAGS, 1] > 0:
            th, ok = utf16_hash_update(np.int64(0), buf, ts, ts + tmp_spans[P_TAGS, 1])
            if not ok:
                text_bad = True
            tags_code = th - 0x100000000 if th >= 0x80000000 else th
        # delayed messages: the consume queue's tagsCode is the delivery time
        ds = tmp_spans[P_DELAY, 0]
        if ds >= 0 and _bytes_equal(buf, p + o_topic, topic_len, _SCHEDULE_TOPIC_BYTES):
            level, ok = _parse_java_long(buf, ds, ds + tmp_spans[P_DELAY, 1])
            if not ok or level > 2147483647 or level < -2147483648:
                stop = 2  # Integer.parseInt throws: the record reads as unreadable
                break
            max_level = delay_table.shape[0]
            if level > max_level:
                level = max_level
            if level > 0:
                tags_code = store_ts + delay_table[level - 1]
        struct_len = o_end if props_len > 0 else o_props
        is_ok = total == struct_len
        size = total
        # 5.x setBatchSizeIfNeeded: Long.parseLong(INNER_BASE), Short.parseShort(INNER_NUM) when both
        # are present; a value that does not parse makes the record unreadable
        if is_5x and is_ok and tmp_spans[P_INNER_NUM, 0] >= 0 and tmp_spans[P_INNER_BASE, 0] >= 0:
            ib = tmp_spans[P_INNER_BASE, 0]
            _v, ok_base = _parse_java_long(buf, ib, ib + tmp_spans[P_INNER_BASE, 1])
            inn = tmp_spans[P_INNER_NUM, 0]
            num, ok_num = _parse_java_long(buf, inn, inn + tmp_spans[P_INNER_NUM, 1])
            if not ok_base or not ok_num or num < -32768 or num > 32767:
                stop = 2
                break
        if is_5x and reput + size > limit_rel:
            stop = 4
            break
        # -- emit the record
        r = rec[n_rec]
        r[R_POS] = bufpos
        r[R_TOTAL] = total
        r[R_STRUCT] = struct_len
        r[R_QID] = _i32(buf, p + OFF_QUEUE_ID)
        r[R_QOFF] = _i64(buf, p + OFF_QUEUE_OFFSET)
        r[R_PHYS] = _i64(buf, p + OFF_PHYSICAL_OFFSET)
        r[R_SYSFLAG] = sysflag
        r[R_BORN_TS] = _i64(buf, p + OFF_BORN_TIMESTAMP)
        r[R_STORE_TS] = store_ts
        r[R_CRC] = _i32(buf, p + OFF_BODY_CRC)
        r[R_FLAG] = _i32(buf, p + OFF_FLAG)
        r[R_RECONSUME] = _i32(buf, p + o_reconsume)
        r[R_PREP_TX] = _i64(buf, p + o_prep)
        r[R_TAGS_CODE] = tags_code
        r[R_BODY_START] = bufpos + o_body
        r[R_BODY_LEN] = body_len
        r[R_TOPIC_START] = bufpos + o_topic
        r[R_TOPIC_LEN] = topic_len
        r[R_PROPS_START] = bufpos + o_props
        r[R_PROPS_LEN] = props_len if props_len > 0 else 0
        r[R_BORN_HOST] = bufpos + BORN_HOST_OFFSET
        r[R_STORE_HOST] = bufpos + o_store_host
        r[R_KEY_FIRST] = n_key
        r[R_KEY_COUNT] = 0
        r[R_TOPIC_HASH] = 0
        for k in range(tmp_spans.shape[0]):
            s0 = tmp_spans[k, 0]
            prop_span[n_rec, k, 0] = s0 + buf_origin if s0 >= 0 else -1
            prop_span[n_rec, k, 1] = tmp_spans[k, 1]
        flags = 0
        if is_ok:
            r[R_STATUS] = 0
            tx = sysflag & SYSFLAG_TRANSACTION_MASK
            if tx == TRANSACTION_NOT or tx == TRANSACTION_COMMIT:
                flags |= F_CQ
            if tx != TRANSACTION_ROLLBACK:
                flags |= F_INDEX
            th, ok = utf16_hash_update(np.int64(0), buf, p + o_topic, p + o_topic + topic_len)
            if not ok:
                text_bad = True
            r[R_TOPIC_HASH] = th
            if flags & F_INDEX:
                # index keys: topic#UNIQ_KEY, then topic#k for each non-empty token of KEYS
                hash_prefix = (th * 31 + 35) & 0xFFFFFFFF  # '#'
                us = tmp_spans[P_UNIQ, 0]
                if us >= 0:
                    kh, ok = utf16_hash_update(hash_prefix, buf, us, us + tmp_spans[P_UNIQ, 1])
                    if not ok:
                        text_bad = True
                    k_ = key[n_key]
                    k_[K_REC] = n_rec
                    k_[K_KIND] = 0
                    k_[K_START] = us + buf_origin
                    k_[K_LEN] = tmp_spans[P_UNIQ, 1]
                    k_[K_HASH] = kh
                    n_key += 1
                ks = tmp_spans[P_KEYS, 0]
                if ks >= 0:
                    ke = ks + tmp_spans[P_KEYS, 1]
                    t0 = ks
                    while t0 <= ke:
                        t1 = t0
                        while t1 < ke and buf[t1] != 32:
                            t1 += 1
                        if t1 > t0:
                            kh, ok = utf16_hash_update(hash_prefix, buf, t0, t1)
                            if not ok:
                                text_bad = True
                            k_ = key[n_key]
                            k_[K_REC] = n_rec
                            k_[K_KIND] = 1
                            k_[K_START] = t0 + buf_origin
                            k_[K_LEN] = t1 - t0
                            k_[K_HASH] = kh
                            n_key += 1
                        t0 = t1 + 1
                r[R_KEY_COUNT] = n_key - r[R_KEY_FIRST]
            # multi-dispatch to light message queues [checkMultiDispatchQueue, multiDispatchLmqQueue]
            ms = tmp_spans[P_MULTI_DISPATCH, 0]
            mo = tmp_spans[P_MULTI_OFFSET, 0]
            if (enable_multi_dispatch and (flags & F_CQ) and ms >= 0 and mo >= 0
                    and not _is_blank(buf, ms, tmp_spans[P_MULTI_DISPATCH, 1])
                    and not _is_blank(buf, mo, tmp_spans[P_MULTI_OFFSET, 1])):
                topic_ok = True
                if is_5x:
                    if (_starts_with(buf, p + o_topic, topic_len, _RETRY_PREFIX_BYTES)
                            or _starts_with(buf, p + o_topic, topic_len, _SYSTEM_PREFIX_BYTES)
                            or _bytes_equal(buf, p + o_topic, topic_len, _SCHEDULE_TOPIC_BYTES)):
                        topic_ok = False
                if topic_ok:
                    flags |= F_MULTI
                    n_q = _split_count(buf, ms, ms + tmp_spans[P_MULTI_DISPATCH, 1])
                    n_o = _split_count(buf, mo, mo + tmp_spans[P_MULTI_OFFSET, 1])
                    if n_q == n_o:
                        qa = ms
                        oa = mo
                        qe_all = ms + tmp_spans[P_MULTI_DISPATCH, 1]
                        oe_all = mo + tmp_spans[P_MULTI_OFFSET, 1]
                        for _i in range(n_q):
                            qb = qa
                            while qb < qe_all and buf[qb] != 44:
                                qb += 1
                            ob = oa
                            while ob < oe_all and buf[ob] != 44:
                                ob += 1
                            u = lmq[n_lmq]
                            u[L_REC] = n_rec
                            u[L_NAME_START] = qa + buf_origin
                            u[L_NAME_LEN] = qb - qa
                            qv, ok = _parse_java_long(buf, oa, ob)
                            u[L_QOFF] = qv
                            u[L_STATUS] = LMQ_OK if ok else LMQ_BAD_OFFSET
                            if is_5x:
                                for j in range(qa, qb):
                                    if buf[j] == 47:  # File.separator
                                        u[L_STATUS] = LMQ_SKIPPED_SEPARATOR
                            if enable_lmq and _starts_with(buf, qa, qb - qa, _LMQ_PREFIX_BYTES):
                                u[L_QID] = 0
                            else:
                                u[L_QID] = r[R_QID]
                            n_lmq += 1
                            qa = qb + 1
                            oa = ob + 1
            if text_bad:
                flags |= F_TEXT_BAD
            r[R_FLAGS] = flags
            n_rec += 1
            reput += size
            read_size += size
            bufpos += size
        else:
            r[R_STATUS] = 1
            r[R_FLAGS] = 0
            n_rec += 1
            reput += size
            bufpos += struct_len  # the buffer stands at the record's structural end
    state[S_BUFPOS] = bufpos
    state[S_REPUT] = reput
    state[S_READ] = read_size
    state[S_STOP] = stop
    state[S_NEED] = need
    counts[0] = n_rec
    counts[1] = n_key
    counts[2] = n_lmq


@numba.njit(cache=True, nogil=True)
def _split_count(buf, start, end):
    """Number of parts of ``String.split(",")``: trailing empty parts are dropped."""
    n = 1
    last_nonempty = 0
    part_start = start
    idx = 1
    for j in range(start, end + 1):
        if j == end or buf[j] == 44:
            if j > part_start:
                last_nonempty = idx
            part_start = j + 1
            if j < end:
                idx += 1
                n += 1
    return last_nonempty  # all parts empty (e.g. ","): Java returns an empty array


@numba.njit(cache=True, nogil=True)
def _resync(buf, buf_origin, seg_base, start, end, accept_v2):
    """First segment position in [start, end) where a record starts: a known magic code and a
    stored physicalOffset equal to the segment base plus that position.  -1 if none."""
    n = buf.shape[0]
    for pos in range(start, end):
        p = pos - buf_origin
        if p + OFF_PHYSICAL_OFFSET + 8 > n:
            return -1
        m = _i32(buf, p + OFF_MAGIC)
        if m == MAGIC_V1 or (accept_v2 and m == MAGIC_V2):
            if _i64(buf, p + OFF_PHYSICAL_OFFSET) == seg_base + pos:
                return pos
    return -1


# ---------------------------------------------------------------------------------------------
# Python side: windows, capacity, and the result object


@dataclasses.dataclass
class WalkState:
    """The reput loop's positions, relative to the segment base (see module docstring)."""
    bufpos: int
    reput: int
    read_size: int
    slice_size: int

    def as_array(self) -> np.ndarray:
        return np.array([self.bufpos, self.reput, self.read_size, self.slice_size, -1, 0], dtype=np.int64)

    @classmethod
    def at_slice_start(cls, pos: int, data_end: int) -> "WalkState":
        return cls(pos, pos, 0, data_end - pos)


@dataclasses.dataclass
class WalkResult:
    """Columnar output of one walk over part of one segment.

    ``rec``: int64 matrix, one row per record, columns ``R_*``; ``key``: one row per index key
    (``K_*``); ``lmq``: one row per multi-dispatch unit (``L_*``); ``prop_span``: per record and
    :data:`PROPERTY_NAMES` entry, (segment position, byte length) of the value, -1 if absent.
    ``text``: bytes of every string span, as ``text[pos - text_origin]``.
    """
    rec: np.ndarray
    key: np.ndarray
    lmq: np.ndarray
    prop_span: np.ndarray
    state: WalkState
    stop: int
    text: bytes | memoryview | np.ndarray
    text_origin: int


Reader = Callable[[int, int], "bytes | memoryview | np.ndarray"]


class Scratch:
    """Memory reused by walks that run one after another in one process (a scan task's splits).

    Fresh memory costs page faults and zeroing on first touch, which on a small VM costs more than
    the walk itself; a result walked with a scratch is only valid until the next walk using it.
    """

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}

    def array(self, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        need = int(np.prod(shape))
        a = self._arrays.get(name)
        if a is None or a.size < need or a.dtype != np.dtype(dtype):
            a = self._arrays[name] = np.empty(max(need, 1), dtype=dtype)
        return a[:need].reshape(shape)


def _read_window(read: Reader, pos: int, length: int, scratch: Scratch | None) -> np.ndarray:
    into = getattr(read, "read_into", None)
    if scratch is not None and into is not None:
        out = scratch.array("window", (length,), np.uint8)
        return out[:into(pos, out)]
    return _as_u8(read(pos, length))


def walk_range(read: Reader, seg_base: int, data_end: int, state: WalkState, split_end: int,
               config: BrokerConfig, *, limit_rel: int | None = None, window: int = 64 << 20,
               keep_text: bool = True, scratch: Scratch | None = None) -> WalkResult:
    """Walk records of one segment from ``state`` until a stop condition other than buffer/capacity.

    Args:
        read: ``read(pos, length)`` returns segment bytes from ``pos`` (shorter at end of file).
        seg_base: the segment's base offset (its name).
        data_end: segment position where the readable data ends (the file size).
        state: entering loop state.
        split_end: records starting at or after this segment position are left to the next split.
        config: broker settings (delay levels, multi-dispatch, 4.9 or 5.x reput).
        limit_rel: 5.x reput end offset relative to the segment base (None: no limit).
        window: bytes read at a time.
        scratch: reusable memory (see :class:`Scratch`); the result then lives until its next use.
    Returns:
        A :class:`WalkResult`; string spans refer to segment positions resolvable in ``text``.
    """
    delay = np.asarray(config.delay_levels_ms, dtype=np.int64)
    accept_v2 = True  # a 4.9 broker never writes V2 records; reading them is harmless
    is_5x = config.is_5x
    limit = np.int64(limit_rel if limit_rel is not None else np.iinfo(np.int64).max)
    st = state.as_array()
    recs, keys, lmqs, props = [], [], [], []
    win_start = state.bufpos
    win_len = max(min(window, max(split_end - win_start, 0) + (1 << 20)), 1 << 16)
    buf = _read_window(read, win_start, min(win_len, max(data_end - win_start, 0)), scratch)
    cap = max(1024, min(1 << 17, len(buf) // 64 + 1024))
    key_cap = cap * 4 + 80000
    chunk = 0
    while True:
        if scratch is not None:
            rec = scratch.array(f"rec{chunk}", (cap, N_REC_FIELDS), np.int64)
            key = scratch.array(f"key{chunk}", (key_cap, N_KEY_FIELDS), np.int64)
            lmq = scratch.array(f"lmq{chunk}", (key_cap, N_LMQ_FIELDS), np.int64)
            prop = scratch.array(f"prop{chunk}", (cap, len(PROPERTY_NAMES), 2), np.int64)
        else:
            rec = np.empty((cap, N_REC_FIELDS), dtype=np.int64)
            key = np.empty((key_cap, N_KEY_FIELDS), dtype=np.int64)
            lmq = np.empty((key_cap, N_LMQ_FIELDS), dtype=np.int64)
            prop = np.empty((cap, len(PROPERTY_NAMES), 2), dtype=np.int64)
        chunk += 1
        counts = np.zeros(3, dtype=np.int64)
        _walk(buf, win_start, data_end, split_end, limit, st, accept_v2, is_5x, delay,
              config.enableMultiDispatch, config.enableLmq, rec, key, lmq, prop, counts)
        n_rec, n_key, n_lmq = (int(c) for c in counts)
        if n_rec:
            key[:n_key, K_REC] += sum(len(r) for r in recs)
            lmq[:n_lmq, L_REC] += sum(len(r) for r in recs)
            recs.append(rec[:n_rec])
            keys.append(key[:n_key])
            lmqs.append(lmq[:n_lmq])
            props.append(prop[:n_rec])
        stop = int(st[S_STOP])
        if stop == Stop.CAPACITY:
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
                    f"segment {seg_base:020d}: short read at position {pos} ({len(new_buf)} of {want} bytes); "
                    "was the file truncated while being read?")
            buf = new_buf
            continue
        break
    final = WalkState(int(st[S_BUFPOS]), int(st[S_REPUT]), int(st[S_READ]), int(st[S_SLICE_SIZE]))
    rec_all = np.concatenate(recs) if recs else np.empty((0, N_REC_FIELDS), dtype=np.int64)
    key_all = np.concatenate(keys) if keys else np.empty((0, N_KEY_FIELDS), dtype=np.int64)
    lmq_all = np.concatenate(lmqs) if lmqs else np.empty((0, N_LMQ_FIELDS), dtype=np.int64)
    prop_all = np.concatenate(props) if props else np.empty((0, len(PROPERTY_NAMES), 2), dtype=np.int64)
    # the window only ever grows from where the walk started, so it holds every string span
    text, text_origin = (buf, win_start) if keep_text and recs else (np.zeros(0, dtype=np.uint8), 0)
    return WalkResult(rec_all, key_all, lmq_all, prop_all, final, int(st[S_STOP]), text, text_origin)


def resync(read: Reader, seg_base: int, start: int, end: int, data_end: int, window: int = 1 << 20) -> int:
    """First record start in [start, end) found by content (see :func:`_resync`), or -1."""
    pos = start
    while pos < end:
        length = min(window + 64, data_end - pos)
        if length <= 0:
            return -1
        buf = _as_u8(read(pos, length))
        stop_at = min(end, pos + window)
        found = _resync(buf, pos, seg_base, pos, stop_at, True)
        if found >= 0:
            return int(found)
        pos = stop_at
    return -1


def _peek_total(buf: np.ndarray, p: int) -> int:
    if p + 4 <= len(buf):
        v = int.from_bytes(bytes(buf[p:p + 4]), "big", signed=True)
        return max(v, 0)
    return 0


def _as_u8(data) -> np.ndarray:
    if isinstance(data, np.ndarray):
        return data.view(np.uint8) if data.dtype != np.uint8 else data
    return np.frombuffer(data, dtype=np.uint8)
