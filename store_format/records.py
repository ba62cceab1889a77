"""Walked records as Arrow columns: the lean ones the rebuild needs, and the details the tables publish."""
from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

from . import commitlog as cl
from .crc import body_crc_spans
from .dispatch import gather_spans, gather_strings
from .javahash import index_hash
from .layout import (
    HOST_V4_LEN,
    HOST_V6_LEN,
    NAME_VALUE_SEPARATOR_BYTE,
    PROPERTY_SEPARATOR_BYTE,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    SYSFLAG_TRANSACTION_MASK,
)
from .msgid import hex_chars, offset_msg_id_bytes
from .walkresult import light_units_put

__all__ = ["LEAN_FIELDS", "DETAIL_FIELDS", "BODY_FIELD", "lean_columns", "detail_columns", "hex_strings",
           "host_strings", "list_array", "gather_binary", "properties_map"]

LEAN_FIELDS = [
    pa.field("position", pa.int64(), False),           # position in the segment (where the record starts)
    pa.field("commitlog_offset", pa.int64(), False),   # stored PHYSICALOFFSET (what queues and index use)
    pa.field("size", pa.int32(), False),               # declared totalSize
    pa.field("status", pa.int8(), False),              # commitlog.Status
    pa.field("flags", pa.int8(), False),               # commitlog.F_* bits
    pa.field("topic", pa.string(), True),
    pa.field("queue_id", pa.int32(), False),
    pa.field("queue_offset", pa.int64(), False),
    pa.field("tags_code", pa.int64(), False),
    pa.field("store_timestamp", pa.int64(), False),
    pa.field("key_hashes", pa.list_(pa.int32()), True),     # index hashes of topic#key, in put order
    pa.field("lmq_topics", pa.list_(pa.string()), True),    # multi-dispatch light queues
    pa.field("lmq_queue_ids", pa.list_(pa.int32()), True),
    pa.field("lmq_queue_offsets", pa.list_(pa.int64()), True),
]

DETAIL_FIELDS = [
    pa.field("sys_flag", pa.int32()),
    pa.field("transaction_type", pa.int8()),
    pa.field("born_timestamp", pa.int64()),
    pa.field("born_host", pa.string()),
    pa.field("store_host", pa.string()),
    pa.field("msg_id", pa.string()),
    pa.field("body_crc", pa.int32()),
    pa.field("body_crc_ok", pa.bool_()),                # UtilAll.crc32(body) equals the stored bodyCRC
    pa.field("body_size", pa.int32()),
    pa.field("flag", pa.int32()),
    pa.field("reconsume_times", pa.int32()),
    pa.field("prepared_transaction_offset", pa.int64()),
    pa.field("tags", pa.string()),
    pa.field("keys", pa.list_(pa.string())),
    pa.field("key_kinds", pa.list_(pa.int8())),
    pa.field("uniq_key", pa.string()),
    pa.field("real_topic", pa.string()),
    pa.field("real_queue_id", pa.string()),
    pa.field("delay_level", pa.string()),
    pa.field("retry_topic", pa.string()),
    pa.field("properties", pa.string()),
    pa.field("body_start", pa.int64()),                 # segment position of the body
    pa.field("structural_size", pa.int32()),            # length the record's own fields give
]

BODY_FIELD = pa.field("body", pa.binary())              # only when asked for (``with_body``)


def list_array(offsets: np.ndarray, values: pa.Array) -> pa.ListArray:
    return pa.ListArray.from_arrays(pa.array(np.asarray(offsets, dtype=np.int32)), values)


def _record_offsets(rec_index: np.ndarray, n_rec: int) -> np.ndarray:
    counts = np.bincount(rec_index, minlength=n_rec) if len(rec_index) else np.zeros(n_rec, dtype=np.int64)
    offsets = np.zeros(n_rec + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def lean_columns(res: cl.WalkResult) -> dict[str, pa.Array]:
    """Columns of :data:`LEAN_FIELDS` for every walked record (dispatched or size-mismatched)."""
    rec = res.rec
    n = len(rec)
    ok = rec[:, cl.R_STATUS] == cl.Status.DISPATCHED
    topic = gather_strings(np.asarray(res.text, dtype=np.uint8), res.text_origin, rec[:, cl.R_TOPIC_START],
                           np.where(rec[:, cl.R_TOPIC_LEN] > 0, rec[:, cl.R_TOPIC_LEN], 0))
    key_offsets = _record_offsets(res.key[:, cl.K_REC], n)
    key_hashes = list_array(key_offsets, pa.array(index_hash(res.key[:, cl.K_HASH])))
    lmq = res.lmq[light_units_put(res.lmq)]
    lmq_offsets = _record_offsets(lmq[:, cl.L_REC], n)
    lmq_names = gather_strings(np.asarray(res.text, dtype=np.uint8), res.text_origin, lmq[:, cl.L_NAME_START],
                               lmq[:, cl.L_NAME_LEN])
    return {
        "position": pa.array(rec[:, cl.R_POS]),
        "commitlog_offset": pa.array(rec[:, cl.R_PHYS]),
        "size": pa.array(rec[:, cl.R_TOTAL].astype(np.int32)),
        "status": pa.array(rec[:, cl.R_STATUS].astype(np.int8)),
        "flags": pa.array(np.where(ok, rec[:, cl.R_FLAGS], 0).astype(np.int8)),
        "topic": topic,
        "queue_id": pa.array(rec[:, cl.R_QID].astype(np.int32)),
        "queue_offset": pa.array(rec[:, cl.R_QOFF]),
        "tags_code": pa.array(rec[:, cl.R_TAGS_CODE]),
        "store_timestamp": pa.array(rec[:, cl.R_STORE_TS]),
        "key_hashes": key_hashes,
        "lmq_topics": list_array(lmq_offsets, lmq_names),
        "lmq_queue_ids": list_array(lmq_offsets, pa.array(lmq[:, cl.L_QID].astype(np.int32))),
        "lmq_queue_offsets": list_array(lmq_offsets, pa.array(lmq[:, cl.L_QOFF])),
    }


def hex_strings(byte_matrix: np.ndarray) -> pa.StringArray:
    """Upper-case hex of each row of a uint8 matrix (``UtilAll.bytes2string``), as Arrow strings."""
    n, width = byte_matrix.shape
    chars = hex_chars(byte_matrix)
    offsets = np.arange(n + 1, dtype=np.int32) * (width * 2)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars))


def _gather_fixed(text: np.ndarray, origin: int, starts: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` bytes at each start, as a (rows, width) matrix."""
    n = len(starts)
    data = np.empty(n * width, dtype=np.uint8)
    gather_spans(np.asarray(text, dtype=np.uint8), np.int64(origin), np.ascontiguousarray(starts, dtype=np.int64),
            np.full(n, width, dtype=np.int64), data, np.empty(n + 1, dtype=np.int64))
    return data.reshape(n, width)


@numba.njit(cache=True, nogil=True, inline="always")
def _put_decimal(out, o, value):
    """Write a non-negative int as decimal digits at ``out[o]``; returns the position after them."""
    digits = 1
    v = value
    while v >= 10:
        v //= 10
        digits += 1
    for k in range(digits - 1, -1, -1):
        out[o + k] = 48 + value % 10
        value //= 10
    return o + digits


@numba.njit(cache=True, nogil=True)
def _format_v4_hosts(b, data, offsets):
    """``a.b.c.d:port`` of each row of 4 address bytes and a 4-byte big-endian port (as unsigned)."""
    o = 0
    for i in range(b.shape[0]):
        offsets[i] = o
        for k in range(4):
            o = _put_decimal(data, o, np.int64(b[i, k]))
            data[o] = 46 if k < 3 else 58   # '.' between the bytes, ':' before the port
            o += 1
        port = (np.int64(b[i, 4]) << 24) | (np.int64(b[i, 5]) << 16) | (np.int64(b[i, 6]) << 8) | np.int64(b[i, 7])
        o = _put_decimal(data, o, port)
    offsets[b.shape[0]] = o


def host_strings(text: np.ndarray, origin: int, starts: np.ndarray, v6: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """``ip:port`` of socket addresses stored as 4+4 (or 16+4) bytes, and the raw address bytes
    (ip + port) of each row as a list of bytes objects-free matrix pair (v4 rows, v6 rows)."""
    n = len(starts)
    v4_rows = np.nonzero(~v6)[0]
    v4: pa.Array | None = None
    if len(v4_rows):
        b = _gather_fixed(text, origin, starts[v4_rows], HOST_V4_LEN)
        data = np.empty(len(v4_rows) * 26, dtype=np.uint8)   # 4 x "255." less a dot, ':' and 10 digits
        offsets = np.empty(len(v4_rows) + 1, dtype=np.int32)
        _format_v4_hosts(b, data, offsets)
        v4 = pa.StringArray.from_buffers(len(v4_rows), pa.py_buffer(offsets), pa.py_buffer(data))
        if len(v4_rows) == n:
            return v4, v4_rows   # all IPv4 (the usual case): the Arrow strings as they are
    out = np.empty(n, dtype=object)
    if v4 is not None:
        out[v4_rows] = v4.to_numpy(zero_copy_only=False)
    v6_rows = np.nonzero(v6)[0]
    if len(v6_rows):
        import ipaddress
        b = _gather_fixed(text, origin, starts[v6_rows], HOST_V6_LEN)
        for j, row in enumerate(b):  # IPv6 hosts are rare; formatted one by one
            port6 = int.from_bytes(bytes(row[16:20]), "big")
            out[v6_rows[j]] = f"[{ipaddress.IPv6Address(bytes(row[:16]))}]:{port6}"
    return pa.array(out, type=pa.string()), v4_rows


def gather_binary(text: np.ndarray, origin: int, starts: np.ndarray, lens: np.ndarray) -> pa.Array:
    """Arrow binary values from byte spans of the walked text (segment positions)."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    lens = np.ascontiguousarray(np.maximum(lens, 0), dtype=np.int64)
    offsets = np.empty(len(starts) + 1, dtype=np.int64)
    data = np.empty(int(lens.sum()), dtype=np.uint8)
    gather_spans(np.asarray(text, dtype=np.uint8), np.int64(origin), starts, lens, data, offsets)
    if offsets[-1] < 2**31:
        return pa.BinaryArray.from_buffers(pa.binary(), len(starts), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                                      pa.py_buffer(data)])
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(starts),
                                            [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def properties_map(properties: pa.Array) -> pa.MapArray:
    """Each properties string as a map, parsed as ``MessageDecoder.string2messageProperties`` does.

    Pairs are separated by ``\\x02``; a pair is kept when its first ``\\x01`` has a non-empty name
    before it and a non-empty value after it (the value keeps any further ``\\x01``); a later pair
    with the same name replaces an earlier one, and the map lists the pairs kept in the order of
    their (last) occurrence.  (The Java rule "at least 3 characters" follows from those two.)
    A null string gives an empty map.
    """
    props = properties.cast(pa.string()) if properties.type != pa.string() else properties
    if isinstance(props, pa.ChunkedArray):
        props = props.combine_chunks()
    n = len(props)
    _, offsets_buf, data_buf = props.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[props.offset:props.offset + n + 1] if n else \
        np.zeros(1, dtype=np.int32)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None and data_buf.size else \
        np.zeros(1, dtype=np.uint8)
    valid = np.ones(n, dtype=np.bool_) if props.null_count == 0 else \
        np.asarray(props.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    spans = np.empty((max(int(offsets[-1] - offsets[0]) // 2 + n, 1), 4), dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    m = _property_pairs(data, offsets.astype(np.int64), valid, spans, counts)
    spans = spans[:m]
    name = _strings(data, spans[:, 0], spans[:, 1])
    value = _strings(data, spans[:, 2], spans[:, 3])
    map_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=map_offsets[1:])
    return pa.MapArray.from_arrays(pa.array(map_offsets), name, value)


def _strings(data: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> pa.StringArray:
    out = np.empty(int(lens.sum()), dtype=np.uint8)
    offsets = np.empty(len(starts) + 1, dtype=np.int64)
    gather_spans(data, np.int64(0), np.ascontiguousarray(starts), np.ascontiguousarray(lens), out, offsets)
    return pa.StringArray.from_buffers(len(starts), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(out))


@numba.njit(cache=True, nogil=True)
def _property_pairs(data, offsets, valid, spans, counts):
    """The kept (name, value) byte spans of every string, in order: ``spans`` rows are name start,
    name length, value start, value length; ``counts[r]`` pairs belong to string r.  An earlier pair
    of a string with the same name as a later one is dropped.  Returns the number of pairs."""
    m = 0
    for r in range(offsets.shape[0] - 1):
        if not valid[r]:
            continue
        first = m
        end = offsets[r + 1]
        p = offsets[r]
        while p < end:
            q = p
            while q < end and data[q] != PROPERTY_SEPARATOR_BYTE:
                q += 1
            c = p
            while c < q and data[c] != NAME_VALUE_SEPARATOR_BYTE:
                c += 1
            if p < c < q - 1:  # a name, the separator, and a value
                name_len = c - p
                j = first
                while j < m:  # a later pair with the same name replaces the earlier one
                    if spans[j, 1] == name_len:
                        same = True
                        for t in range(name_len):
                            if data[spans[j, 0] + t] != data[p + t]:
                                same = False
                                break
                        if same:
                            for u in range(j, m - 1):
                                spans[u, 0] = spans[u + 1, 0]
                                spans[u, 1] = spans[u + 1, 1]
                                spans[u, 2] = spans[u + 1, 2]
                                spans[u, 3] = spans[u + 1, 3]
                            m -= 1
                            break
                    j += 1
                spans[m, 0] = p
                spans[m, 1] = name_len
                spans[m, 2] = c + 1
                spans[m, 3] = q - c - 1
                m += 1
            p = q + 1
        counts[r] = m - first
    return m


def detail_columns(res: cl.WalkResult, with_body: bool = False,
                   crc_mismatches: np.ndarray | None = None) -> dict[str, pa.Array]:
    """Columns of :data:`DETAIL_FIELDS` for every walked record (and :data:`BODY_FIELD` if asked).

    ``body_crc_ok``: the stored bodyCRC equals ``UtilAll.crc32`` of the body (0 for an empty one).
    ``crc_mismatches``: the segment positions of this walk's records with a non-empty body whose CRC
    differs, when an earlier pass over the same records found them (the scan's findings); the bodies'
    CRCs are then not computed again."""
    rec = res.rec
    n = len(rec)
    text = np.asarray(res.text, dtype=np.uint8)
    org = res.text_origin
    sysflag = rec[:, cl.R_SYSFLAG]
    born_v6 = (sysflag & SYSFLAG_BORNHOST_V6) != 0
    store_v6 = (sysflag & SYSFLAG_STOREHOST_V6) != 0
    born_host, _ = host_strings(text, org, rec[:, cl.R_BORN_HOST], born_v6)
    store_host, _ = host_strings(text, org, rec[:, cl.R_STORE_HOST], store_v6)
    # offset msgId: store host address bytes + commitlog offset [MessageDecoder.createMessageId]
    msg_id = np.empty(n, dtype=object)
    for v6, width in ((False, HOST_V4_LEN), (True, HOST_V6_LEN)):
        rows = np.nonzero(store_v6 == v6)[0]
        if len(rows):
            host = _gather_fixed(text, org, rec[rows, cl.R_STORE_HOST], width)
            ids = hex_strings(offset_msg_id_bytes(host, rec[rows, cl.R_PHYS]))
            if len(rows) == n:
                msg_id = ids   # all hosts of one kind (the usual case): the Arrow strings as they are
                break
            msg_id[rows] = ids.to_numpy(zero_copy_only=False)

    def prop(k: int) -> pa.Array:
        s = res.prop_span[:, k]
        return gather_strings(text, org, s[:, 0], s[:, 1], null_mask=s[:, 0] < 0)

    key_offsets = _record_offsets(res.key[:, cl.K_REC], n)
    keys = gather_strings(text, org, res.key[:, cl.K_START], res.key[:, cl.K_LEN])
    stored_crc = rec[:, cl.R_CRC].astype(np.int32)
    if crc_mismatches is None:
        crc_ok = body_crc_spans(text, org, rec[:, cl.R_BODY_START], rec[:, cl.R_BODY_LEN]) == stored_crc
    else:   # a non-empty body: not among the mismatches; an empty one: its CRC is 0
        crc_ok = np.where(rec[:, cl.R_BODY_LEN] > 0, ~np.isin(rec[:, cl.R_POS], crc_mismatches), stored_crc == 0)
    out = {
        "sys_flag": pa.array(sysflag.astype(np.int32)),
        "transaction_type": pa.array((sysflag & SYSFLAG_TRANSACTION_MASK).astype(np.int8)),
        "born_timestamp": pa.array(rec[:, cl.R_BORN_TS]),
        "born_host": born_host,
        "store_host": store_host,
        "msg_id": msg_id if isinstance(msg_id, pa.Array) else pa.array(msg_id, type=pa.string()),
        "body_crc": pa.array(stored_crc),
        "body_crc_ok": pa.array(crc_ok),
        "body_size": pa.array(rec[:, cl.R_BODY_LEN].astype(np.int32)),
        "flag": pa.array(rec[:, cl.R_FLAG].astype(np.int32)),
        "reconsume_times": pa.array(rec[:, cl.R_RECONSUME].astype(np.int32)),
        "prepared_transaction_offset": pa.array(rec[:, cl.R_PREP_TX]),
        "tags": prop(cl.P_TAGS),
        "keys": list_array(key_offsets, keys),
        "key_kinds": list_array(key_offsets, pa.array(res.key[:, cl.K_KIND].astype(np.int8))),
        "uniq_key": prop(cl.P_UNIQ),
        "real_topic": prop(cl.P_REAL_TOPIC),
        "real_queue_id": prop(cl.P_REAL_QID),
        "delay_level": prop(cl.P_DELAY),
        "retry_topic": prop(cl.P_RETRY_TOPIC),
        "properties": gather_strings(text, org, rec[:, cl.R_PROPS_START], rec[:, cl.R_PROPS_LEN]),
        "body_start": pa.array(rec[:, cl.R_BODY_START]),
        "structural_size": pa.array(rec[:, cl.R_STRUCT].astype(np.int32)),
    }
    if with_body:
        out["body"] = gather_binary(text, org, rec[:, cl.R_BODY_START], rec[:, cl.R_BODY_LEN])
    return out
