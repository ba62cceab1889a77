"""What the dispatchers make of walked records: consume queue units and index keys, as arrays.

* ``CommitLogDispatcherBuildConsumeQueue``: records of transaction type not/commit go to their
  ``topic/queueId``; with multi-dispatch the same unit also goes to each listed light queue
  (``ConsumeQueue.multiDispatchLmqQueue``), right after the record's own unit.
* ``CommitLogDispatcherBuildIndex`` → ``IndexService.buildIndex``: records not rolled back put
  ``topic#UNIQ_KEY`` then ``topic#k`` for each non-empty token of ``KEYS``.
"""
from __future__ import annotations

import dataclasses

import numba
import numpy as np
import pyarrow as pa

from . import commitlog as cl
from .javahash import java_string_hashes, java_utf8_decode

__all__ = ["gather_strings", "fix_malformed_text", "queue_units", "index_keys", "to_index_hash", "QueueUnits",
           "IndexKeys"]


@numba.njit(cache=True, nogil=True)
def _gather(text, origin, starts, lens, data, offsets):
    o = 0
    for i in range(starts.shape[0]):
        offsets[i] = o
        n = lens[i]
        if n > 0 and starts[i] >= 0:
            s = starts[i] - origin
            for j in range(n):
                data[o + j] = text[s + j]
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
    _gather(np.asarray(text, dtype=np.uint8), np.int64(origin), starts, lens, data, offsets)
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


def fix_malformed_text(res: cl.WalkResult) -> None:
    """Recompute the hashes the kernel could not (records whose topic, tags or keys are not valid
    UTF-8), over the string Java decodes, with U+FFFD for malformed bytes.  Rare: done per record."""
    rec = res.rec
    bad = np.nonzero((rec[:, cl.R_STATUS] == cl.Status.DISPATCHED) & ((rec[:, cl.R_FLAGS] & cl.F_TEXT_BAD) != 0))[0]
    text = np.asarray(res.text, dtype=np.uint8)
    for i in bad:
        r = rec[i]
        topic = _decode(text, res.text_origin, int(r[cl.R_TOPIC_START]), int(r[cl.R_TOPIC_LEN]))
        r[cl.R_TOPIC_HASH] = int(java_string_hashes([topic])[0]) & 0xFFFFFFFF
        ts, tl = res.prop_span[i, cl.P_TAGS]
        if ts >= 0 and tl > 0 and not _is_delay_tagged(res, i, text):
            r[cl.R_TAGS_CODE] = int(java_string_hashes([_decode(text, res.text_origin, int(ts), int(tl))])[0])
        first, count = int(r[cl.R_KEY_FIRST]), int(r[cl.R_KEY_COUNT])
        if count:
            ks = res.key[first:first + count]
            keys = [topic + "#" + _decode(text, res.text_origin, int(k[cl.K_START]), int(k[cl.K_LEN])) for k in ks]
            ks[:, cl.K_HASH] = java_string_hashes(keys).astype(np.int64) & 0xFFFFFFFF


def _is_delay_tagged(res: cl.WalkResult, i: int, text: np.ndarray) -> bool:
    """Whether the delivery time replaced the tags hash: a ``SCHEDULE_TOPIC_XXXX`` record whose
    ``DELAY`` level is above 0 [checkMessageAndReturnSize: ``if (delayLevel > 0)``]; a level of 0
    or below leaves the tags hash."""
    r = res.rec[i]
    topic = bytes(text[r[cl.R_TOPIC_START] - res.text_origin:r[cl.R_TOPIC_START] - res.text_origin + r[cl.R_TOPIC_LEN]])
    ds, dl = (int(v) for v in res.prop_span[i, cl.P_DELAY])
    if topic != cl.SCHEDULE_TOPIC.encode() or ds < 0:
        return False
    # the walk read this record, so the value parsed as Integer.parseInt reads it (ASCII digits, a sign)
    return int(bytes(text[ds - res.text_origin:ds - res.text_origin + dl])) > 0


def to_index_hash(java_hash_u32: np.ndarray) -> np.ndarray:
    """``IndexFile.indexKeyHashMethod`` from a hashCode held as unsigned 32 bits."""
    h = np.asarray(java_hash_u32, dtype=np.int64)
    signed = np.where(h >= 2**31, h - 2**32, h)
    out = np.abs(signed)
    out[out > 0x7FFFFFFF] = 0
    return out.astype(np.int32)


@dataclasses.dataclass
class QueueUnits:
    """Consume queue units in dispatch order (record order, then own queue before light queues)."""
    record: np.ndarray        # row in the walk's record matrix
    topic: pa.StringArray     # queue's topic (the light queue's name for LMQ units)
    queue_id: np.ndarray
    offset: np.ndarray
    size: np.ndarray
    tags_code: np.ndarray
    queue_offset: np.ndarray

    def __len__(self) -> int:
        return len(self.record)


def queue_units(res: cl.WalkResult) -> QueueUnits:
    rec = res.rec
    own = np.nonzero((rec[:, cl.R_STATUS] == cl.Status.DISPATCHED) & ((rec[:, cl.R_FLAGS] & cl.F_CQ) != 0))[0]
    lmq = res.lmq[(res.lmq[:, cl.L_STATUS] == cl.LMQ_OK) & (res.lmq[:, cl.L_NAME_LEN] > 0)]
    n_own, n_lmq = len(own), len(lmq)
    record = np.concatenate([own, lmq[:, cl.L_REC]])
    sub = np.concatenate([np.zeros(n_own, dtype=np.int64), np.arange(1, n_lmq + 1, dtype=np.int64)])
    order = np.lexsort((sub, record))
    starts = np.concatenate([rec[own, cl.R_TOPIC_START], lmq[:, cl.L_NAME_START]])[order]
    lens = np.concatenate([rec[own, cl.R_TOPIC_LEN], lmq[:, cl.L_NAME_LEN]])[order]
    record = record[order]
    topic = gather_strings(res.text, res.text_origin, starts, lens)
    qid = np.concatenate([rec[own, cl.R_QID], lmq[:, cl.L_QID]])[order]
    qoff = np.concatenate([rec[own, cl.R_QOFF], lmq[:, cl.L_QOFF]])[order]
    return QueueUnits(record=record, topic=topic, queue_id=qid.astype(np.int32), offset=rec[record, cl.R_PHYS],
                      size=rec[record, cl.R_TOTAL].astype(np.int32), tags_code=rec[record, cl.R_TAGS_CODE],
                      queue_offset=qoff)


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


def index_keys(res: cl.WalkResult) -> IndexKeys:
    k = res.key
    record = k[:, cl.K_REC]
    return IndexKeys(record=record, kind=k[:, cl.K_KIND].astype(np.int8), key_hash=to_index_hash(k[:, cl.K_HASH]),
                     offset=res.rec[record, cl.R_PHYS], store_ts=res.rec[record, cl.R_STORE_TS])
