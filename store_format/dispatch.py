"""What the dispatchers make of walked records: consume queue units and index keys, as arrays.

* ``CommitLogDispatcherBuildConsumeQueue``: records of transaction type not/commit go to their
  ``topic/queueId``; with multi-dispatch the same unit also goes to each listed light queue
  (``ConsumeQueue.multiDispatchLmqQueue``), right after the record's own unit.
* ``CommitLogDispatcherBuildIndex`` → ``IndexService.buildIndex``: records not rolled back put
  ``topic#UNIQ_KEY`` then ``topic#k`` for each non-empty token of ``KEYS``.

Every dispatcher rule (consume queue, index keys, multi-dispatch) and their array results are in
one place.
"""
from __future__ import annotations

import dataclasses

import numba
import numpy as np
import pyarrow as pa

from .batchconsumequeue import inner_batch_fields
from .javahash import index_hash, index_key, java_string_hashes, java_utf8_decode, utf16_hash_update
from .javatext import is_blank, parse_java_long
from .layout import (
    INDEX_KEY_SEPARATOR,
    LMQ_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC_BYTES,
    SYSFLAG_TRANSACTION_MASK,
    SYSTEM_TOPIC_PREFIX,
    TRANSACTION_COMMIT,
    TRANSACTION_NOT,
    TRANSACTION_ROLLBACK,
)
from .prefetch import prefetch
from .walkresult import (
    F_CQ,
    F_INDEX,
    F_TEXT_BAD,
    K_HASH,
    K_KIND,
    K_LEN,
    K_REC,
    K_START,
    KEY_KIND_KEY,
    KEY_KIND_TAG,
    KEY_KIND_UNIQ,
    L_NAME_LEN,
    L_NAME_START,
    L_QID,
    L_QOFF,
    L_REC,
    L_STATUS,
    LMQ_BAD_OFFSET,
    LMQ_EMPTY_NAME,
    LMQ_OK,
    LMQ_SKIPPED_SEPARATOR,
    LMQ_SKIPPED_SEPARATOR_BAD_OFFSET,
    P_DELAY,
    P_INNER_BASE,
    P_INNER_NUM,
    P_KEYS,
    P_MULTI_DISPATCH,
    P_MULTI_OFFSET,
    P_TAGS,
    P_UNIQ,
    R_FLAGS,
    R_KEY_COUNT,
    R_KEY_FIRST,
    R_PHYS,
    R_QID,
    R_QOFF,
    R_STATUS,
    R_STORE_TS,
    R_TAGS_CODE,
    R_TOPIC_HASH,
    R_TOPIC_LEN,
    R_TOPIC_START,
    R_TOTAL,
    STATUS_DISPATCHED,
    WalkResult,
    light_units_put,
)

__all__ = ["dispatch_flags", "put_index_keys", "wants_multi_dispatch", "multi_dispatch_units", "gather_strings",
           "fix_malformed_text", "queue_units", "index_keys", "QueueUnits", "IndexKeys", "gather_spans", "stable_order"]


def _bytes_of(text: str) -> np.ndarray:
    return np.frombuffer(text.encode(), dtype=np.uint8).copy()


_LMQ_PREFIX_BYTES = _bytes_of(LMQ_PREFIX)
_RETRY_PREFIX_BYTES = _bytes_of(RETRY_GROUP_TOPIC_PREFIX)
_SYSTEM_PREFIX_BYTES = _bytes_of(SYSTEM_TOPIC_PREFIX)
_INDEX_KEY_SEPARATOR_CODE = ord(INDEX_KEY_SEPARATOR)  # one UTF-16 unit: String.hashCode steps over it once
_INDEX_TAG_TYPE_CODE = ord("T")   # MessageConst.INDEX_TAG_TYPE (5.5.1)


# ---------------------------------------------------------------------------------------------
# the dispatchers' rules, called by the walk (store_format.walkkernel.walk_records) for each record


@numba.njit(cache=True, nogil=True, inline="always")
def bytes_equal(buf, start, length, pattern):
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
def dispatch_flags(sysflag):
    """Which dispatchers take a record, by its transaction type
    (``CommitLogDispatcherBuildConsumeQueue.dispatch``, ``CommitLogDispatcherBuildIndex`` →
    ``IndexService.buildIndex``): not/commit go to the consume queue; everything but a rollback
    puts its index keys (a prepared message is indexed but not queued)."""
    tx = sysflag & SYSFLAG_TRANSACTION_MASK
    flags = 0
    if tx == TRANSACTION_NOT or tx == TRANSACTION_COMMIT:
        flags |= F_CQ
    if tx != TRANSACTION_ROLLBACK:
        flags |= F_INDEX
    return flags


@numba.njit(cache=True, nogil=True)
def put_index_keys(buf, origin, n_rec, topic_hash, spans, key, n_key, index_tags=False):
    """The keys ``IndexService.buildIndex`` puts for a record, in order: ``topic#UNIQ_KEY`` when
    present, then ``topic#k`` for each non-empty token of ``KEYS`` split on single spaces
    (duplicates kept), then (``index_tags``: 5.5.1, ``buildKey(topic, tags, INDEX_TAG_TYPE)``)
    ``topic#T#tags`` when the record has a non-empty ``TAGS`` property (the whole value, not split).
    Hashes continue ``String.hashCode`` of the topic over ``#`` and the key.
    Appends rows to ``key`` from ``n_key``; returns (rows used, text valid UTF-8)."""
    hash_prefix = (topic_hash * 31 + _INDEX_KEY_SEPARATOR_CODE) & 0xFFFFFFFF  # hashCode of buildKey's "topic#"
    text_ok = True
    us = spans[P_UNIQ, 0]
    if us >= 0:
        kh, ok = utf16_hash_update(hash_prefix, buf, us, us + spans[P_UNIQ, 1])
        text_ok = text_ok and ok
        key[n_key, K_REC] = n_rec
        key[n_key, K_KIND] = KEY_KIND_UNIQ
        key[n_key, K_START] = us + origin
        key[n_key, K_LEN] = spans[P_UNIQ, 1]
        key[n_key, K_HASH] = kh
        n_key += 1
    ks = spans[P_KEYS, 0]
    if ks >= 0:
        ke = ks + spans[P_KEYS, 1]
        t0 = ks
        while t0 <= ke:
            t1 = t0
            while t1 < ke and buf[t1] != 32:
                t1 += 1
            if t1 > t0:
                kh, ok = utf16_hash_update(hash_prefix, buf, t0, t1)
                text_ok = text_ok and ok
                key[n_key, K_REC] = n_rec
                key[n_key, K_KIND] = KEY_KIND_KEY
                key[n_key, K_START] = t0 + origin
                key[n_key, K_LEN] = t1 - t0
                key[n_key, K_HASH] = kh
                n_key += 1
            t0 = t1 + 1
    ts = spans[P_TAGS, 0]
    if index_tags and ts >= 0 and spans[P_TAGS, 1] > 0:
        tag_prefix = (((hash_prefix * 31 + _INDEX_TAG_TYPE_CODE) & 0xFFFFFFFF) * 31
                      + _INDEX_KEY_SEPARATOR_CODE) & 0xFFFFFFFF   # hashCode of "topic#T#"
        kh, ok = utf16_hash_update(tag_prefix, buf, ts, ts + spans[P_TAGS, 1])
        text_ok = text_ok and ok
        key[n_key, K_REC] = n_rec
        key[n_key, K_KIND] = KEY_KIND_TAG
        key[n_key, K_START] = ts + origin
        key[n_key, K_LEN] = spans[P_TAGS, 1]
        key[n_key, K_HASH] = kh
        n_key += 1
    return n_key, text_ok


@numba.njit(cache=True, nogil=True)
def wants_multi_dispatch(buf, p_topic, topic_len, spans, is_5x):
    """Whether a record that went to its own consume queue is also put into light queues
    (4.9: ``DefaultMessageStore.checkMultiDispatchQueue``; 5.x: ``MultiDispatchUtils.checkMultiDispatchQueue``):
    non-blank ``INNER_MULTI_DISPATCH`` and ``INNER_MULTI_QUEUE_OFFSET`` (``StringUtils.isBlank``);
    5.x also leaves out retry, system and schedule topics."""
    ms = spans[P_MULTI_DISPATCH, 0]
    mo = spans[P_MULTI_OFFSET, 0]
    if ms < 0 or mo < 0:
        return False
    if is_blank(buf, ms, spans[P_MULTI_DISPATCH, 1]) or is_blank(buf, mo, spans[P_MULTI_OFFSET, 1]):
        return False
    if is_5x and (_starts_with(buf, p_topic, topic_len, _RETRY_PREFIX_BYTES)
                  or _starts_with(buf, p_topic, topic_len, _SYSTEM_PREFIX_BYTES)
                  or bytes_equal(buf, p_topic, topic_len, SCHEDULE_TOPIC_BYTES)):
        return False
    return True


@numba.njit(cache=True, nogil=True)
def _split_count(buf, start, end):
    """Number of parts of ``String.split(",")``: trailing empty parts are dropped."""
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
    return last_nonempty  # all parts empty (e.g. ","): Java returns an empty array


@numba.njit(cache=True, nogil=True)
def multi_dispatch_units(buf, origin, n_rec, queue_id, spans, enable_lmq, is_5x, lmq, n_lmq):
    """The light-queue units of one record (4.9: ``ConsumeQueue.multiDispatchLmqQueue``; 5.x:
    ``ConsumeQueue``/``MultiDispatchUtils``): both properties split on ``,`` and paired by position
    (different counts dispatch none); the queue id is 0 for ``%LMQ%`` names when ``enableLmq``,
    else the record's own.  A queue offset that ``Long.parseLong`` refuses is marked
    ``LMQ_BAD_OFFSET``; 5.x file queues skip names holding the path separator (``LMQ_SKIPPED_SEPARATOR``, or
    ``LMQ_SKIPPED_SEPARATOR_BAD_OFFSET`` when that offset is one ``Long.parseLong`` refuses: a RocksDB consume queue
    puts such names, :func:`store_format.rocksdb_cq.light_rows`); an empty name (``",%LMQ%a"``: ``String.split``
    drops trailing empty parts only) whose offset parses is ``LMQ_EMPTY_NAME``, a unit of topic "" under the
    record's queue id, put like an ``LMQ_OK`` one (:func:`store_format.walkresult.light_units_put`).  Returns rows
    used."""
    ms = spans[P_MULTI_DISPATCH, 0]
    mo = spans[P_MULTI_OFFSET, 0]
    qe_all = ms + spans[P_MULTI_DISPATCH, 1]
    oe_all = mo + spans[P_MULTI_OFFSET, 1]
    n_q = _split_count(buf, ms, qe_all)
    if n_q != _split_count(buf, mo, oe_all):
        return n_lmq
    qa = ms
    oa = mo
    for _i in range(n_q):
        qb = qa
        while qb < qe_all and buf[qb] != 44:
            qb += 1
        ob = oa
        while ob < oe_all and buf[ob] != 44:
            ob += 1
        lmq[n_lmq, L_REC] = n_rec
        lmq[n_lmq, L_NAME_START] = qa + origin
        lmq[n_lmq, L_NAME_LEN] = qb - qa
        qv, ok = parse_java_long(buf, oa, ob, -9223372036854775808, 9223372036854775807)
        lmq[n_lmq, L_QOFF] = qv
        lmq[n_lmq, L_STATUS] = LMQ_OK if ok else LMQ_BAD_OFFSET
        if ok and qb == qa:
            lmq[n_lmq, L_STATUS] = LMQ_EMPTY_NAME
        if is_5x:
            for j in range(qa, qb):
                if buf[j] == 47:  # File.separator
                    lmq[n_lmq, L_STATUS] = LMQ_SKIPPED_SEPARATOR if ok else LMQ_SKIPPED_SEPARATOR_BAD_OFFSET
        if enable_lmq and _starts_with(buf, qa, qb - qa, _LMQ_PREFIX_BYTES):
            lmq[n_lmq, L_QID] = 0
        else:
            lmq[n_lmq, L_QID] = queue_id
        n_lmq += 1
        qa = qb + 1
        oa = ob + 1
    return n_lmq


# ---------------------------------------------------------------------------------------------
# the dispatchers' results over a whole walk, as arrays


_GATHER_AHEAD = 16   # spans between a span's prefetch and its copy


@numba.njit(cache=True, nogil=True)
def gather_spans(text, origin, starts, lens, data, offsets):
    """Copy byte spans of ``text`` (positions ``starts - origin``; a negative start or a length of
    0 gives an empty value) one after the other into ``data``, with their ``offsets``.  Spans of
    successive records lie a body apart: each is a cache (and often a TLB) miss, so the spans a few
    rows ahead are asked for early, and each span is copied as a slice (measured on a 128 MiB split
    of the bench commitlog, eight string columns of 109 k records: 66 -> 20 ms)."""
    n_spans = starts.shape[0]
    o = 0
    for i in range(n_spans):
        if i + _GATHER_AHEAD < n_spans and starts[i + _GATHER_AHEAD] >= 0:
            ahead = starts[i + _GATHER_AHEAD] - origin
            prefetch(text, ahead)  # type: ignore[call-arg]
            prefetch(text, ahead + lens[i + _GATHER_AHEAD])
        offsets[i] = o
        n = lens[i]
        if n > 0 and starts[i] >= 0:
            s = starts[i] - origin
            data[o:o + n] = text[s:s + n]
            o += n
    offsets[starts.shape[0]] = o


@numba.njit(cache=True, nogil=True)
def _valid_utf8(data, offsets, out):
    for i in range(offsets.shape[0] - 1):
        j = offsets[i]
        end = offsets[i + 1]
        ok = True
        while j < end:
            b = data[j]
            if b < 0x80:
                j += 1
                continue
            if 0xC2 <= b <= 0xDF:
                n = 1
            elif 0xE0 <= b <= 0xEF:
                n = 2
            elif 0xF0 <= b <= 0xF4:
                n = 3
            else:
                ok = False
                break
            if j + n >= end:  # truncated sequence
                ok = False
                break
            for k in range(1, n + 1):
                if (data[j + k] & 0xC0) != 0x80:
                    ok = False
            if not ok:
                break
            if n == 2:
                cp = ((b & 0x0F) << 12) | ((data[j + 1] & 0x3F) << 6) | (data[j + 2] & 0x3F)
                if cp < 0x800 or (0xD800 <= cp <= 0xDFFF):
                    ok = False
                    break
            elif n == 3:
                cp = ((b & 0x07) << 18) | ((data[j + 1] & 0x3F) << 12)
                if cp < 0x10000 or cp > 0x10FFFF:
                    ok = False
                    break
            j += n + 1
        out[i] = ok


def gather_strings(text: np.ndarray, origin: int, starts: np.ndarray, lens: np.ndarray,
                   null_mask: np.ndarray | None = None) -> pa.StringArray:
    """Arrow strings from byte spans of the walked text (segment positions); malformed UTF-8 is
    decoded with replacement characters, as Java's ``new String(bytes, UTF_8)`` does
    (:func:`store_format.javahash.java_utf8_decode`)."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    lens = np.ascontiguousarray(np.maximum(lens, 0), dtype=np.int64)
    n = len(starts)
    offsets = np.empty(n + 1, dtype=np.int64)
    data = np.empty(int(lens.sum()), dtype=np.uint8)
    gather_spans(np.asarray(text, dtype=np.uint8), np.int64(origin), starts, lens, data, offsets)
    valid = np.empty(n, dtype=np.bool_)
    _valid_utf8(data, offsets, valid)
    mask_buf = None
    if null_mask is not None and null_mask.any():
        mask_buf = pa.array(~null_mask).buffers()[1]
    if not valid.all():
        values = [java_utf8_decode(data[offsets[i]:offsets[i + 1]]) for i in range(n)]
        return pa.array(values, type=pa.string(), mask=null_mask)
    if offsets[-1] < 2**31:
        arr = pa.StringArray.from_buffers(n, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data), mask_buf,
                                          null_count=-1 if mask_buf is not None else 0)
        return arr
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data), mask_buf,
                                            null_count=-1 if mask_buf is not None else 0).cast(pa.string())


def _decode(text: np.ndarray, origin: int, start: int, length: int) -> str:
    return java_utf8_decode(text[start - origin:start - origin + length])


def fix_malformed_text(res: WalkResult, delay_levels: int = 1) -> None:
    """Recompute the hashes the kernel could not (records whose topic, tags or keys are not valid
    UTF-8), over the string Java decodes, with U+FFFD for malformed bytes.  Rare: done per record.
    ``delay_levels``: the number of delay levels the walk knew (``len(config.delay_levels_ms)``)."""
    rec = res.rec
    bad = np.nonzero((rec[:, R_STATUS] == STATUS_DISPATCHED) & ((rec[:, R_FLAGS] & F_TEXT_BAD) != 0))[0]
    text = np.asarray(res.text, dtype=np.uint8)
    for i in bad:
        r = rec[i]
        topic = _decode(text, res.text_origin, int(r[R_TOPIC_START]), int(r[R_TOPIC_LEN]))
        r[R_TOPIC_HASH] = int(java_string_hashes([topic])[0]) & 0xFFFFFFFF
        ts, tl = res.prop_span[i, P_TAGS]
        if ts >= 0 and tl > 0 and not (delay_levels > 0 and _is_delay_tagged(res, int(i), text)):
            r[R_TAGS_CODE] = int(java_string_hashes([_decode(text, res.text_origin, int(ts), int(tl))])[0])
        first, count = int(r[R_KEY_FIRST]), int(r[R_KEY_COUNT])
        if count:
            ks = res.key[first:first + count]
            keys = [index_key(topic, _decode(text, res.text_origin, int(k[K_START]), int(k[K_LEN]))) for k in ks]
            ks[:, K_HASH] = java_string_hashes(keys).astype(np.int64) & 0xFFFFFFFF


def _is_delay_tagged(res: WalkResult, i: int, text: np.ndarray) -> bool:
    """Whether the delivery time replaced the tags hash: a ``SCHEDULE_TOPIC_XXXX`` record whose
    ``DELAY`` level is above 0 [checkMessageAndReturnSize: ``if (delayLevel > 0)``]; a level of 0
    or below leaves the tags hash (as does any level when no delay level is known: the level is first
    capped to ``getMaxDelayLevel()``, 0 then)."""
    r = res.rec[i]
    topic = bytes(text[r[R_TOPIC_START] - res.text_origin:r[R_TOPIC_START] - res.text_origin + r[R_TOPIC_LEN]])
    ds, dl = (int(v) for v in res.prop_span[i, P_DELAY])
    if topic != SCHEDULE_TOPIC_BYTES.tobytes() or ds < 0:
        return False
    # the walk read this record, so the value parsed as Integer.parseInt reads it (ASCII digits, a sign)
    return int(bytes(text[ds - res.text_origin:ds - res.text_origin + dl])) > 0


@numba.njit(cache=True, nogil=True)
def _number_queues(text, origin, starts, lens, qids, table, first, out):
    """Number the distinct (name bytes, queue id) pairs of the units in order of first appearance:
    ``out[i]`` = number of unit i's queue, ``first[q]`` = the first unit of queue q.  An open
    addressing table (FNV-1a of the bytes and the id) compares candidates byte for byte, so equal
    hashes never merge two queues.  Returns the number of queues."""
    mask = table.shape[0] - 1
    for t in range(table.shape[0]):
        table[t] = -1
    n_q = 0
    n_units = starts.shape[0]
    for i in range(n_units):
        if i + _GATHER_AHEAD < n_units:   # each name a body away from the last (see gather_spans)
            prefetch(text, starts[i + _GATHER_AHEAD] - origin)  # type: ignore[call-arg]
        s = starts[i] - origin
        n = lens[i]
        h = np.uint64(14695981039346656037) ^ np.uint64(qids[i] & 0xFFFFFFFF)
        for j in range(n):
            h = (h ^ np.uint64(text[s + j])) * np.uint64(1099511628211)
        slot = np.int64(h & np.uint64(mask))
        while True:
            q = table[slot]
            if q < 0:
                table[slot] = n_q
                first[n_q] = i
                out[i] = n_q
                n_q += 1
                break
            f = first[q]
            if lens[f] == n and qids[f] == qids[i]:
                fs = starts[f] - origin
                same = True
                for j in range(n):
                    if text[fs + j] != text[s + j]:
                        same = False
                        break
                if same:
                    out[i] = q
                    break
            slot = (slot + 1) & mask
    return n_q


def stable_order(values: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` of integers in ``[0, bound)``: as 16-bit integers when they
    fit, which numpy sorts by radix (queue numbers and buckets, a few hundred values over millions of units)."""
    if bound <= 1 << 16:
        return np.argsort(values.astype(np.uint16), kind="stable")
    return np.argsort(values, kind="stable")


@dataclasses.dataclass
class QueueUnits:
    """Consume queue units in dispatch order (record order; a record's own queue before its light
    queues).  ``queue[i]`` numbers unit i's queue in ``queues``: (topic as Java decodes it, queue id)
    — the key under which the broker finds a consume queue (``findConsumeQueue(topic, queueId)``)."""
    record: np.ndarray        # row in the walk's record matrix
    queue: np.ndarray         # int32 index into ``queues``
    queues: list[tuple[str, int]]
    offset: np.ndarray
    size: np.ndarray
    tags_code: np.ndarray
    queue_offset: np.ndarray
    own: np.ndarray           # bool: the record's own queue (False: a light queue's unit)
    # with BatchCQ topics only (else None): store time, msgBaseOffset and batchSize of each unit
    # (store_format.batchconsumequeue)
    store_timestamp: np.ndarray | None = None
    base_offset: np.ndarray | None = None
    batch_size: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.record)

    def first_of_each_record(self) -> np.ndarray:
        """Row of each record's first unit, its own queue's when it has one (a record's own unit comes
        before its light queues'; units are in record order, so no sort is needed)."""
        r = self.record
        if not len(r):
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(np.r_[True, r[1:] != r[:-1]])

    @property
    def queue_id(self) -> np.ndarray:
        ids = np.array([q for _, q in self.queues], dtype=np.int32)
        return ids[self.queue] if len(ids) else np.zeros(0, dtype=np.int32)


def queue_units(res: WalkResult, batch_topics: frozenset[str] = frozenset()) -> QueueUnits:
    """What ``CommitLogDispatcherBuildConsumeQueue`` hands the consume queues for a walk's records:
    each dispatched record of type not/commit to its own queue, then (multi-dispatch) to each light
    queue whose offset parsed (:func:`store_format.walkresult.light_units_put`; an empty name is topic "").

    ``batch_topics``: the store's BatchCQ topics.  Their records get no light queue units (only
    ``ConsumeQueue.putMessagePositionInfoWrapper`` dispatches to light queues, not
    ``BatchConsumeQueue``'s), and with any such topic the units carry the batch queue columns."""
    rec = res.rec
    own = np.nonzero((rec[:, R_STATUS] == STATUS_DISPATCHED) & ((rec[:, R_FLAGS] & F_CQ) != 0))[0]
    lmq = res.lmq[light_units_put(res.lmq)]
    light = None
    if len(lmq):
        record = np.concatenate([own, lmq[:, L_REC]])
        sub = np.concatenate([np.zeros(len(own), dtype=np.int64), np.arange(1, len(lmq) + 1, dtype=np.int64)])
        order = np.lexsort((sub, record))
        record = record[order]
        light = sub[order] > 0
        starts = np.concatenate([rec[own, R_TOPIC_START], lmq[:, L_NAME_START]])[order]
        lens = np.concatenate([rec[own, R_TOPIC_LEN], lmq[:, L_NAME_LEN]])[order]
        qid = np.concatenate([rec[own, R_QID], lmq[:, L_QID]])[order]
        qoff = np.concatenate([rec[own, R_QOFF], lmq[:, L_QOFF]])[order]
        is_own = sub[order] == 0
    else:
        record, starts, lens = own, rec[own, R_TOPIC_START], rec[own, R_TOPIC_LEN]
        qid, qoff = rec[own, R_QID], rec[own, R_QOFF]
        is_own = np.ones(len(own), dtype=bool)
    n = len(record)
    table = np.empty(1 << max(4, int(2 * max(n, 1)).bit_length()), dtype=np.int64)
    first = np.empty(max(n, 1), dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    text = np.asarray(res.text, dtype=np.uint8)
    n_q = _number_queues(text, np.int64(res.text_origin), np.ascontiguousarray(starts, dtype=np.int64),
                         np.ascontiguousarray(lens, dtype=np.int64), np.ascontiguousarray(qid, dtype=np.int64),
                         table, first, queue)
    # the broker keys queues by the decoded topic: byte strings that decode alike (malformed UTF-8
    # becomes U+FFFD) are one queue
    queues: list[tuple[str, int]] = []
    number: dict[tuple[str, int], int] = {}
    remap = np.empty(n_q, dtype=np.int64)
    for q in range(n_q):
        f = int(first[q])
        s = int(starts[f]) - res.text_origin
        name = java_utf8_decode(text[s:s + int(lens[f])])
        k = (name, int(qid[f]))
        if k not in number:
            number[k] = len(queues)
            queues.append(k)
        remap[q] = number[k]
    if len(queues) != n_q:
        queue = remap[queue]
    units = QueueUnits(record=record, queue=queue.astype(np.int32), queues=queues, offset=rec[record, R_PHYS],
                       size=rec[record, R_TOTAL].astype(np.int32), tags_code=rec[record, R_TAGS_CODE],
                       queue_offset=np.asarray(qoff, dtype=np.int64), own=is_own)
    return _with_batch_columns(res, units, light, batch_topics) if batch_topics else units


def _with_batch_columns(res: WalkResult, units: QueueUnits, light: np.ndarray | None,
                        batch_topics: frozenset[str]) -> QueueUnits:
    """The units without the light queue units of BatchCQ topics' records, with the batch columns."""
    if light is not None and light.any():
        batch_queue = np.array([t in batch_topics for t, _ in units.queues], dtype=bool)
        batch_records = units.record[~light & batch_queue[units.queue]]
        drop = light & np.isin(units.record, batch_records)
        if drop.any():
            keep = ~drop
            units = dataclasses.replace(units, record=units.record[keep], queue=units.queue[keep],
                                        offset=units.offset[keep], size=units.size[keep],
                                        tags_code=units.tags_code[keep], queue_offset=units.queue_offset[keep],
                                        own=units.own[keep])
    rows = units.record
    base, batch = inner_batch_fields(np.asarray(res.text, dtype=np.uint8), res.text_origin,
                                     res.prop_span[rows, P_INNER_BASE], res.prop_span[rows, P_INNER_NUM],
                                     units.queue_offset)
    return dataclasses.replace(units, store_timestamp=res.rec[units.record, R_STORE_TS], base_offset=base,
                               batch_size=batch)


@dataclasses.dataclass
class IndexKeys:
    """Index keys of records handed to the index builder, in put order (before the offset check)."""
    record: np.ndarray
    kind: np.ndarray
    key_hash: np.ndarray       # IndexFile.indexKeyHashMethod of topic#key
    offset: np.ndarray
    store_ts: np.ndarray

    def __len__(self) -> int:
        return len(self.record)


def index_keys(res: WalkResult) -> IndexKeys:
    k = res.key
    record = k[:, K_REC]
    return IndexKeys(record=record, kind=k[:, K_KIND].astype(np.int8), key_hash=index_hash(k[:, K_HASH]),
                     offset=res.rec[record, R_PHYS], store_ts=res.rec[record, R_STORE_TS])
