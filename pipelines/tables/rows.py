"""Rows of the ``messages`` and ``message_keys`` tables for one split, from its walk as Arrow columns
(:func:`pipelines.scan.records_batch`), where its consume queue units went and which of its keys
the index took.  Arrow only: they run in the tables tasks (:mod:`.publish`)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from store_format import commitlog as cl
from store_format.indexfile import accepted_by_index
from store_format.layout import CQ_UNIT_SIZE, SYSFLAG_TRANSACTION_MASK, TRANSACTION_ROLLBACK
from store_format.records import properties_map

from .schema import MAX_KEY_BUCKETS, MAX_TS_MS, MESSAGE_KEYS_SCHEMA, MESSAGES_SCHEMA, MIN_TS_MS, TS, TX_NAMES

__all__ = ["SplitContext", "message_rows", "encoded_key_rows", "ENCODED_KEYS_SCHEMA", "indexed_records", "ts_array",
           "np_col", "NOT_DISPATCHED", "SIZE_MISMATCH_DISPATCH",
           "ROCKSDB_START_DISPATCH", "ext_put_dispatch_texts"]


@dataclasses.dataclass
class SplitContext:
    """What the per-split row builders need, broadcast to the tasks."""
    segment_names: dict[int, str]                     # split_id -> segment name
    index_in: dict[int, tuple[int, int]]              # split_id -> (endPhyOffset carry, keys before)
    queue_plan: dict[int, np.ndarray]                 # split_id -> per-record consume queue position (-1: none)
    index_names: dict[int, str]                       # index file number -> name
    run_id: str
    cq_file_size: int
    index_cap: int
    max_hash_slot_num: int
    index_enabled: bool
    key_buckets: int = MAX_KEY_BUCKETS
    lmq_plan: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)
    #                                                 split_id -> consume queue position of each light queue unit
    #                                                 (-1: none), in the order of the records' lmq_topics


def np_col(col) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return col.to_numpy(zero_copy_only=False)


def ts_array(ms: np.ndarray) -> pa.Array:
    ms = np.asarray(ms, dtype=np.int64)
    bad = (ms < MIN_TS_MS) | (ms > MAX_TS_MS)
    return pa.array(np.where(bad, 0, ms) * 1000, type=TS, mask=bad if bad.any() else None)


def indexed_records(part: pa.Table, carry: int) -> tuple[np.ndarray, np.ndarray]:
    """Records whose keys go into the index (``IndexService.buildIndex``), and key counts."""
    status = np_col(part["status"])
    flags = np_col(part["flags"])
    nkeys = np_col(pc.list_value_length(part["key_hashes"]).fill_null(0)).astype(np.int64)
    keyed = np.nonzero((status == cl.Status.DISPATCHED) & ((flags & cl.F_INDEX) != 0) & (nkeys > 0))[0]
    acc, _ = accepted_by_index(np_col(part["commitlog_offset"])[keyed], carry)
    out = np.zeros(part.num_rows, dtype=bool)
    out[keyed[acc]] = True
    return out, nkeys


# the ``dispatch`` text of a record the reput does not dispatch starts with NOT_DISPATCHED; the one
# record it skips is the one whose totalSize disagrees with its fields (checkMessageAndReturnSize)
NOT_DISPATCHED = "not dispatched"
SIZE_MISMATCH_DISPATCH = f"{NOT_DISPATCHED}: totalSize differs from the record's length"
# a rebuild into an empty RocksDB consume queue starts after commitlog offset 0 (store_format.rocksdb_cq)
ROCKSDB_START_DISPATCH = (f"{NOT_DISPATCHED}: at commitlog offset 0, the empty RocksDB consume queue's "
                          "dispatched position")


def _dispatch_texts(index_enabled: bool) -> list[str]:
    cq = ["consume queue", "consume queue unit skipped (its offsets go backwards)",
          "no consume queue (prepared transaction)"]
    ix = ["indexed", "no index keys", "not indexed (commitlog offset below the index's end offset)",
          "index disabled"]
    texts = [f"{a}; {b}" for a in cq for b in ix]
    # a rolled-back transaction is dispatched (the reput's DispatchRequest succeeds; the queue and index
    # dispatchers skip it), as the broker counts it; a size mismatch is not
    return texts + ["no consume queue; not indexed (rolled-back transaction)", SIZE_MISMATCH_DISPATCH,
                    ROCKSDB_START_DISPATCH]


def ext_put_dispatch_texts() -> list[str]:
    """The ``dispatch`` texts of the records whose own queue the reput put a unit into, kept or skipped
    (``putMessagePositionInfoWrapper`` ran: with ``enableConsumeQueueExt`` each took an ext unit)."""
    return sorted({t for ix in (True, False) for t in _dispatch_texts(ix)[:8]})


def message_rows(part: pa.Table, split_id: int, ctx: SplitContext, with_body: bool) -> pa.Table:
    """The ``messages`` rows of one split's records."""
    n = part.num_rows
    status = np_col(part["status"])
    flags = np_col(part["flags"])
    sysflag = np_col(part["sys_flag"]).astype(np.int64)
    tx = sysflag & SYSFLAG_TRANSACTION_MASK
    ok = status == cl.Status.DISPATCHED
    pos = ctx.queue_plan.get(split_id)
    if pos is None:
        pos = np.full(n, -1, dtype=np.int64)
    carry, _ = ctx.index_in.get(split_id, (0, 0))
    indexed, nkeys = indexed_records(part, carry)
    # what the reput did
    cq_code = np.where((flags & cl.F_CQ) != 0, np.where(pos >= 0, 0, 1), 2)
    if ctx.index_enabled:
        ix_code = np.where(indexed, 0, np.where(nkeys == 0, 1, 2))
    else:
        ix_code = np.full(n, 3)
    code = cq_code * 4 + ix_code
    code = np.where(tx == TRANSACTION_ROLLBACK, 12, code)
    code = np.where(~ok, np.where(status == cl.Status.BELOW_ROCKSDB_START, 14, 13), code)
    dispatch = pa.array(_dispatch_texts(ctx.index_enabled)).take(pa.array(code))
    props = properties_map(part["properties"].combine_chunks() if isinstance(part["properties"], pa.ChunkedArray)
                           else part["properties"])
    keys_text = pc.map_lookup(props, "KEYS", "last")
    tokens = pc.split_pattern(keys_text, " ")
    flat = pc.list_flatten(tokens)
    parents = np_col(pc.list_parent_indices(tokens)) if len(flat) else np.zeros(0, np.int64)
    keep = np_col(pc.not_equal(flat, "")) if len(flat) else np.zeros(0, bool)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(parents[keep], minlength=n), out=offsets[1:])
    values = flat.filter(pa.array(keep)) if len(flat) else pa.array([], pa.string())
    keys = pa.ListArray.from_arrays(pa.array(offsets), values)
    cq_offset = pa.array(pos // CQ_UNIT_SIZE, mask=pos < 0)
    seg = ctx.segment_names[split_id]
    cols = {
        "segment": pa.array([seg] * n, pa.string()),
        "commitlog_offset": part["commitlog_offset"],
        "position": part["position"],
        "size": part["size"],
        "structural_size": part["structural_size"],
        "topic": part["topic"],
        "queue_id": part["queue_id"],
        "queue_offset": part["queue_offset"],
        "consume_queue_offset": cq_offset,
        "sys_flag": part["sys_flag"],
        "transaction_type": pa.array([TX_NAMES.get(int(t), str(int(t))) for t in (0, 4, 8, 12)]).take(
            pa.array(tx // 4)),
        "born_timestamp": ts_array(np_col(part["born_timestamp"])),
        "born_host": part["born_host"],
        "store_timestamp": ts_array(np_col(part["store_timestamp"])),
        "store_host": part["store_host"],
        "flag": part["flag"],
        "tags": part["tags"],
        "tags_code": part["tags_code"],
        "keys": keys,
        "uniq_key": part["uniq_key"],
        "msg_id": part["msg_id"],
        "reconsume_times": part["reconsume_times"],
        "prepared_transaction_offset": part["prepared_transaction_offset"],
        "body_size": part["body_size"],
        "body_crc": part["body_crc"],
        "body_crc_ok": part["body_crc_ok"],
        "properties": props,
        "real_topic": part["real_topic"],
        "real_queue_id": _int_text(part["real_queue_id"]),
        "retry_topic": part["retry_topic"],
        "delay_level": _int_text(part["delay_level"]),
        "lmq_queues": part["lmq_topics"],
        "lmq_queue_ids": part["lmq_queue_ids"],
        "lmq_consume_queue_offsets": _lmq_unit_numbers(part["lmq_topics"], ctx.lmq_plan.get(split_id)),
        "consume_queue": pa.array(pos >= 0),
        "indexed": pa.array(indexed),
        "dispatch": dispatch,
        "body": part["body"] if with_body and "body" in part.column_names else pa.nulls(n, pa.binary()),
        "run_id": pa.array([ctx.run_id] * n, pa.string()),
    }
    return pa.table({f.name: _col(cols[f.name], f.type) for f in MESSAGES_SCHEMA}, schema=MESSAGES_SCHEMA)


def _lmq_unit_numbers(lmq_topics, positions: np.ndarray | None) -> pa.Array:
    """Per record, the unit number of each of its light queue units (list aligned with its light
    queues; null where the consume queue skipped it)."""
    arr = lmq_topics.combine_chunks() if isinstance(lmq_topics, pa.ChunkedArray) else lmq_topics
    offsets = np_col(arr.offsets).astype(np.int32)
    offsets -= offsets[0]
    n = int(offsets[-1])
    pos = np.full(n, -1, np.int64) if positions is None or len(positions) != n else np.asarray(positions, np.int64)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(pos // CQ_UNIT_SIZE, mask=pos < 0))


def _col(arr, typ: pa.DataType) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr if arr.type == typ else arr.cast(typ)


def _int_text(arr) -> pa.Array:
    """An integer property value as Java's ``Integer.parseInt`` reads it; null otherwise."""
    s = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    valid = pc.match_substring_regex(s, r"^[+-]?[0-9]{1,9}$")
    return pc.if_else(valid, s, pa.scalar(None, pa.string())).cast(pa.int32())


_DICT = pa.dictionary(pa.int32(), pa.string())
# the rows of message_keys as the tables tasks build them: columns with few distinct values as
# dictionaries, which the sort moves as small integers and Parquet writes as they are
ENCODED_KEYS_SCHEMA = pa.schema([f.with_type(_DICT) if f.name in ("segment", "topic", "kind", "index_file", "run_id")
                                 else f for f in MESSAGE_KEYS_SCHEMA])
# by store_format.walkresult.KEY_KIND_UNIQ, KEY_KIND_KEY, KEY_KIND_TAG (5.4+: topic#T#tags)
_KINDS = pa.array(["uniq_key", "key", "tag"])


def _repeated(value: str, n: int) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value], pa.string()))


def encoded_key_rows(part: pa.Table, split_id: int, ctx: SplitContext) -> pa.Table:
    """The ``message_keys`` rows (index entries) of one split's records, in put order, the few-valued
    columns as dictionaries (:data:`ENCODED_KEYS_SCHEMA`)."""
    if not ctx.index_enabled:
        return ENCODED_KEYS_SCHEMA.empty_table()
    carry, base = ctx.index_in.get(split_id, (0, 0))
    indexed, nkeys = indexed_records(part, carry)
    chosen = np.nonzero(indexed)[0]
    lists = _col(part["key_hashes"], part.schema.field("key_hashes").type)
    sel = pa.array(chosen)
    hashes = np_col(pc.list_flatten(lists.take(sel))).astype(np.int64)
    keys = pc.list_flatten(_col(part["keys"], part.schema.field("keys").type).take(sel))
    kinds = np_col(pc.list_flatten(_col(part["key_kinds"], part.schema.field("key_kinds").type).take(sel)))
    parent = np.repeat(chosen, nkeys[chosen])
    m = len(hashes)
    ordinal = base + np.arange(m, dtype=np.int64)
    file_no = ordinal // ctx.index_cap
    uniq_files, inverse = np.unique(file_no, return_inverse=True)
    names = pa.DictionaryArray.from_arrays(pa.array(inverse.astype(np.int32)),
                                           pa.array([ctx.index_names.get(int(f)) for f in uniq_files], pa.string()))
    topics = _col(part["topic"], pa.string()).dictionary_encode()
    topic = pa.DictionaryArray.from_arrays(pa.array(np_col(topics.indices)[parent].astype(np.int32)),
                                           topics.dictionary)
    seg = ctx.segment_names[split_id]
    return pa.table({
        "segment": _repeated(seg, m),
        "key_bucket": pa.array((hashes % ctx.key_buckets).astype(np.int32)),
        "topic": topic,
        "key": keys.cast(pa.string()),
        "kind": pa.DictionaryArray.from_arrays(pa.array(kinds.astype(np.int32)), _KINDS),
        "key_hash": pa.array(hashes.astype(np.int32)),
        "slot": pa.array((hashes % ctx.max_hash_slot_num).astype(np.int32)),
        "commitlog_offset": pa.array(np_col(part["commitlog_offset"])[parent]),
        "store_timestamp": ts_array(np_col(part["store_timestamp"])[parent]),
        "index_file": names,
        "index_file_no": pa.array(file_no),
        "index_entry": pa.array((ordinal % ctx.index_cap + 1).astype(np.int32)),
        "run_id": _repeated(ctx.run_id, m),
    }, schema=ENCODED_KEYS_SCHEMA)
