"""The numba kernels that lay a batch of records into commitlog bytes, as the broker's append does:
where each record goes and where blank records close a segment
(``CommitLog.DefaultAppendMessageCallback.doAppend``), the queue offsets handed out by the
topic/queue counters (``CommitLog.topicQueueTable``), and the bytes of each record in the field order
of :mod:`store_format.layout` (``MessageExtEncoder.encode`` in 5.x, ``doAppend`` in 4.9.x).
"""
from __future__ import annotations

import numba

from .layout import (
    BODY_LENGTH_LEN,
    BORN_HOST_OFFSET,
    END_FILE_MIN_BLANK_LENGTH,
    MAGIC_BLANK,
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
    RECONSUME_TIMES_LEN,
    STORE_TIMESTAMP_LEN,
)

__all__ = ["place_records", "assign_queue_offsets", "encode_records"]


@numba.njit(cache=True, nogil=True)
def place_records(total, file_size, cur, rec_off, blank_off, blank_size):
    """Global offset of each record from write position ``cur``, with the blank records the broker
    writes where a record does not fit the rest of its segment.  Returns ``(cur, n_blanks)``."""
    nb = 0
    for i in range(total.shape[0]):
        space = file_size - cur % file_size
        if total[i] + END_FILE_MIN_BLANK_LENGTH > space:  # msgLen + END_FILE_MIN_BLANK_LENGTH > maxBlank
            blank_off[nb] = cur
            blank_size[nb] = space
            nb += 1
            cur += space
        rec_off[i] = cur
        cur += total[i]
    return cur, nb


@numba.njit(cache=True, nogil=True)
def assign_queue_offsets(group, counts, zero, counters, qoff):
    """Topic/queue counter values for records that take one; prepared/rolled-back records get 0."""
    for i in range(group.shape[0]):
        if counts[i]:
            qoff[i] = counters[group[i]]
            counters[group[i]] += 1
        elif zero[i]:
            qoff[i] = 0


@numba.njit(cache=True, nogil=True, inline="always")
def _put32(out, p, v):
    out[p] = (v >> 24) & 0xFF
    out[p + 1] = (v >> 16) & 0xFF
    out[p + 2] = (v >> 8) & 0xFF
    out[p + 3] = v & 0xFF


@numba.njit(cache=True, nogil=True, inline="always")
def _put64(out, p, v):
    _put32(out, p, (v >> 32) & 0xFFFFFFFF)
    _put32(out, p + 4, v & 0xFFFFFFFF)


@numba.njit(cache=True, nogil=True, inline="always")
def _copy(out, p, src, start, length):
    out[p:p + length] = src[start:start + length]


@numba.njit(cache=True, nogil=True)
def encode_records(out, base, rec_off, total, magic, crc, qid, flag, qoff, sysflag, born_ts, born_host, born_len,
            store_ts, store_host, store_len, reconsume, prep, body_data, body_start, body_len,
            topic_data, topic_start, topic_len, topic_len_size, props_data, props_start, props_len,
            blank_off, blank_size, n_blank):
    """Write each record's bytes at ``rec_off[i] - base`` in ``out`` (field order of the layout), and
    each blank record followed by zeros to its segment's end (``out`` is reused, not zeroed)."""
    for b in range(n_blank):
        p = blank_off[b] - base
        _put32(out, p + OFF_TOTAL_SIZE, blank_size[b])
        _put32(out, p + OFF_MAGIC, MAGIC_BLANK)
        for j in range(p + END_FILE_MIN_BLANK_LENGTH, p + blank_size[b]):
            out[j] = 0
    for i in range(rec_off.shape[0]):
        p = rec_off[i] - base
        _put32(out, p + OFF_TOTAL_SIZE, total[i])
        _put32(out, p + OFF_MAGIC, magic[i])
        _put32(out, p + OFF_BODY_CRC, crc[i])
        _put32(out, p + OFF_QUEUE_ID, qid[i])
        _put32(out, p + OFF_FLAG, flag[i])
        _put64(out, p + OFF_QUEUE_OFFSET, qoff[i])
        _put64(out, p + OFF_PHYSICAL_OFFSET, rec_off[i])
        _put32(out, p + OFF_SYSFLAG, sysflag[i])
        _put64(out, p + OFF_BORN_TIMESTAMP, born_ts[i])
        q = p + BORN_HOST_OFFSET
        _copy(out, q, born_host[i], 0, born_len[i])
        q += born_len[i]
        _put64(out, q, store_ts[i])
        q += STORE_TIMESTAMP_LEN
        _copy(out, q, store_host[i], 0, store_len[i])
        q += store_len[i]
        _put32(out, q, reconsume[i])
        q += RECONSUME_TIMES_LEN
        _put64(out, q, prep[i])
        q += PREPARED_TX_OFFSET_LEN
        _put32(out, q, body_len[i])
        q += BODY_LENGTH_LEN
        _copy(out, q, body_data, body_start[i], body_len[i])
        q += body_len[i]
        if topic_len_size[i] == 2:
            out[q] = (topic_len[i] >> 8) & 0xFF
            out[q + 1] = topic_len[i] & 0xFF
        else:
            out[q] = topic_len[i] & 0xFF
        q += topic_len_size[i]
        _copy(out, q, topic_data, topic_start[i], topic_len[i])
        q += topic_len[i]
        out[q] = (props_len[i] >> 8) & 0xFF
        out[q + 1] = props_len[i] & 0xFF
        q += PROPERTIES_LENGTH_LEN
        _copy(out, q, props_data, props_start[i], props_len[i])
