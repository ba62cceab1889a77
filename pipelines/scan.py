"""Scan splits in parallel: each task walks the records that start in its byte range.

A task that does not start at a segment's start resynchronizes: it takes the first position whose
bytes form a record (known magic code, stored PHYSICALOFFSET equal to the segment base plus that
position).  Each task emits its records as Arrow batches and one trailer row whose ``summary``
(JSON) says where its walk started and stopped and what its queues and index keys look like; the
driver chains splits with those summaries (:mod:`pipelines.chain`).
"""
from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from store_format import commitlog as cl
from store_format.anomalies import AnomalyKind
from store_format.batchconsumequeue import inner_batch_fields
from store_format.config import BrokerConfig
from store_format.crc import body_crc_spans
from store_format.dispatch import QueueUnits, fix_malformed_text, queue_units, stable_order
from store_format.empty_topic_restart import empty_light_names_on_restart
from store_format.records import BODY_FIELD, DETAIL_FIELDS, LEAN_FIELDS, detail_columns, lean_columns
from store_format.restart_reput import unindex_below
from store_format.rocksdb_cq import (
    light_rows,
    light_unit_config,
    light_units_unmodelled,
    undispatch_first_record,
    unindex_first_record,
)
from store_format.store import Reader, StoreLocation, resolve
from store_format.walkresult import L_NAME_LEN, L_NAME_START, L_REC, L_STATUS, LMQ_BAD_OFFSET, P_INNER_BASE, P_INNER_NUM

from .plan import Split
from .workfiles import drop_split_work, write_split_work

__all__ = ["record_schema", "walk_split", "walk_splits", "split_summary", "driver_rewalk", "records_batch",
           "crc_mismatches", "scan_split_work", "ScanTask",
           "WORKER_SCRATCH", "ROW_RECORD", "ROW_TRAILER"]

ROW_RECORD = 0
ROW_TRAILER = 1

def record_schema(details: bool, with_body: bool = False) -> pa.Schema:
    """One row per walked record, plus one trailer row per split (``row_kind`` 1, ``summary`` set);
    ``details`` adds the columns the tables publish, ``with_body`` (with details) the body bytes."""
    head = [pa.field("split_id", pa.int32(), False), pa.field("row_kind", pa.int8(), False),
            pa.field("seq", pa.int32(), False), pa.field("segment", pa.int32(), False)]
    fields = head + [pa.field(f.name, f.type, True) for f in LEAN_FIELDS]
    if details:
        fields += [pa.field(f.name, f.type, True) for f in DETAIL_FIELDS]
        if with_body:
            fields.append(BODY_FIELD)
    return pa.schema(fields + [pa.field("summary", pa.string(), True)])


# one per Python worker: a worker runs one task at a time, and a task its splits one after another
WORKER_SCRATCH = cl.Scratch()


def walk_split(split: Split, read: Reader, config: BrokerConfig,
               entering: cl.WalkState | None = None, limit_rel: int | None = None,
               scratch: cl.Scratch | None = None) -> tuple[int, cl.WalkResult | None]:
    """Walk one split.  Without ``entering`` the walk starts at the segment start or at the resync
    point, with the loop state of a fresh slice there.  Returns (start position or -1, result); with
    a ``scratch`` the result is valid until the scratch's next use."""
    window = min(split.end, split.seg_size) - split.start + (1 << 20)
    if entering is None:
        sync = 0 if split.is_segment_start else cl.resync(read, split.seg_base, split.start,
                                                          min(split.end, split.seg_size),
                                                          split.seg_size, dledger=split.dledger)
        if sync < 0:
            return -1, None
        entering = cl.WalkState(sync, sync, 0, 1 << 62)
    # a RocksDB consume queue's light units: store_format.rocksdb_cq.light_unit_config and light_rows
    res = cl.walk_range(read, split.seg_base, split.seg_size, entering, split.end,
                        light_unit_config(config) if config.rocksdb_cq else config, limit_rel=limit_rel,
                        window=window, scratch=scratch, dledger=split.dledger)
    fix_malformed_text(res, len(config.delay_levels_ms))
    if config.rocksdb_cq:
        res = light_rows(res)
    if config.rocksdb_cq and not split.dispatch_offset_zero:
        res = undispatch_first_record(res)
    elif config.rocksdb_cq and not split.index_offset_zero:
        res = unindex_first_record(res)
    if split.index_from > split.seg_base:
        res = unindex_below(res, split.index_from)
    return entering.bufpos, res


def walk_splits(splits: list[Split], split_ids: list[int], store_uri: str,
                config: BrokerConfig) -> Iterator[tuple[Split, int, cl.WalkResult | None]]:
    """A task's walk of its splits, one after the other, in a task process (the worker's scratch,
    ``malloc`` for Arrow): ``(split, start position or -1, result)``; a result is valid until the next."""
    cl.use_system_allocator()
    fs, _ = resolve(store_uri)
    for split_id in split_ids:
        split = splits[split_id]
        with Reader(fs, split.path) as read:
            sync, res = walk_split(split, read, config, scratch=WORKER_SCRATCH)
        yield split, sync, res


def split_summary(split: Split, sync: int, entering: cl.WalkState | None, res: cl.WalkResult | None,
                  units: QueueUnits | None) -> dict:
    """What the driver needs to chain this split and to carry queue and index state through it
    (``units``: the walk's :func:`~store_format.dispatch.queue_units`, None without a walk)."""
    if res is None:
        return {"split_id": split.split_id, "sync": -1, "stop": cl.Stop.SPLIT_END, "records": 0}
    e = entering or cl.WalkState(sync, sync, 0, 1 << 62)
    rec = res.rec
    ok = rec[:, cl.R_STATUS] == cl.Status.DISPATCHED
    mismatched = rec[:, cl.R_STATUS] == cl.Status.SIZE_MISMATCH
    out: dict = {
        "split_id": split.split_id, "sync": sync, "stop": res.stop, "bufpos": res.state.bufpos,
        "reput_delta": res.state.reput - e.reput, "read_delta": res.state.read_size - e.read_size,
        "records": int(len(rec)), "dispatched": int(ok.sum()), "mismatched": int(mismatched.sum()),
        "first_store_ts": int(rec[np.argmax(ok), cl.R_STORE_TS]) if ok.any() else None,
        "last_dispatched": int(rec[ok, cl.R_PHYS].max()) if ok.any() else None,   # its commitlog offset
    }
    # index: records that put keys, and the offsets that decide whether they are indexed
    has_keys = ok & ((rec[:, cl.R_FLAGS] & cl.F_INDEX) != 0) & (rec[:, cl.R_KEY_COUNT] > 0)
    keyed = np.nonzero(has_keys)[0]
    if len(keyed):
        offs = rec[keyed, cl.R_PHYS]
        out["index"] = {"keyed": int(len(keyed)), "keys": int(rec[keyed, cl.R_KEY_COUNT].sum()),
                        "first_offset": int(offs[0]), "max_offset": int(offs.max()),
                        "monotone": bool((np.diff(offs) >= 0).all()),
                        "dispatched_after_last_key": bool(ok[keyed[-1] + 1:].any())}
    else:
        out["index"] = {"keyed": 0, "keys": 0, "dispatched_after_last_key": bool(ok.any())}
    bad_lmq = _unparsable_light_queue_offsets(res, ok)
    if bad_lmq:
        out["lmq_bad_offsets"] = bad_lmq
    bad = _bad_records(res, mismatched)
    if bad:
        out["bad_records"] = bad
    steps = _queue_offset_steps(res, units) if units is not None else None
    if steps:
        out["queue_offsets"] = steps
    return out


def _topic(res: cl.WalkResult, i: int) -> str | None:
    a, n = int(res.rec[i, cl.R_TOPIC_START]) - res.text_origin, int(res.rec[i, cl.R_TOPIC_LEN])
    text = np.asarray(res.text, dtype=np.uint8)
    if a < 0 or n < 0 or a + n > len(text):
        return None
    return bytes(text[a:a + n]).decode("utf-8", "replace")


def _bad_records(res: cl.WalkResult, mismatched: np.ndarray) -> list[list]:
    """``[kind, position, length, topic, queue id, expected, found]`` of the walked records whose
    totalSize disagrees with their fields (``checkMessageAndReturnSize``: not dispatched; expected
    the fields' length, found totalSize) and of those whose bodyCRC differs from ``UtilAll.crc32`` of
    a non-empty body (what ``checkCRCOnRecover`` refuses, bodies of length 0 are not checked; expected
    the computed CRC, found the stored one)."""
    rec = res.rec
    out: list[list] = []
    body_len = rec[:, cl.R_BODY_LEN]
    crc = body_crc_spans(np.asarray(res.text, dtype=np.uint8), res.text_origin, rec[:, cl.R_BODY_START], body_len)
    crc_bad = (body_len > 0) & (crc != rec[:, cl.R_CRC].astype(np.int32))
    for i in map(int, np.nonzero(mismatched | crc_bad)[0]):
        pos, topic, qid = int(rec[i, cl.R_POS]), _topic(res, i), int(rec[i, cl.R_QID])
        if mismatched[i]:
            out.append([AnomalyKind.SIZE_MISMATCH.value, pos, int(rec[i, cl.R_STRUCT]), topic, qid,
                        int(rec[i, cl.R_STRUCT]), int(rec[i, cl.R_TOTAL])])
        if crc_bad[i]:
            out.append([AnomalyKind.CRC_MISMATCH.value, pos, int(rec[i, cl.R_TOTAL]), topic, qid, int(crc[i]),
                        int(np.int32(rec[i, cl.R_CRC]))])
    return out


def crc_mismatches(summary: dict) -> np.ndarray:
    """Segment positions of the records :func:`split_summary` found with a bodyCRC mismatch."""
    return np.array([r[1] for r in summary.get("bad_records", []) if r[0] == AnomalyKind.CRC_MISMATCH.value],
                    dtype=np.int64)


def _queue_offset_steps(res: cl.WalkResult, units: QueueUnits) -> dict | None:
    """Queue offsets of the records' own consume queue units (``queue_units``, light queues left
    out), per queue in walk order: the first ``[topic, queue id, queue offset, commitlog offset]``,
    the last ``[topic, queue id, queue offset]``, and the steps that are not +1 inside the split
    ``[topic, queue id, expected, found, commitlog offset]``; the driver checks the borders.  (Each
    record's first unit is its own queue's, with or without the BatchCQ topics' columns.)"""
    if not len(units):
        return None
    own = units.first_of_each_record()
    q, qoff, off = units.queue[own], units.queue_offset[own], units.offset[own]
    # an inner batch (5.x BatchCQ topics) takes INNER_NUM queue offsets, any other record one
    step = np.ones(len(qoff), dtype=np.int64)
    if (res.prop_span[:, P_INNER_NUM, 0] >= 0).any():
        recs = units.record[own]
        _base, count = inner_batch_fields(np.asarray(res.text, dtype=np.uint8), res.text_origin,
                                          res.prop_span[recs, P_INNER_BASE], res.prop_span[recs, P_INNER_NUM], qoff)
        step = np.maximum(count.astype(np.int64), 1)
    order = stable_order(q, len(units.queues))
    q, qoff, off, step = q[order], qoff[order], off[order], step[order]
    starts = np.r_[0, np.flatnonzero(np.diff(q)) + 1]
    ends = np.r_[starts[1:], len(q)]
    first, last, gaps = [], [], []
    for a, b in zip(starts, ends):
        topic, qid = units.queues[int(q[a])]
        first.append([topic, int(qid), int(qoff[a]), int(off[a])])
        last.append([topic, int(qid), int(qoff[b - 1] + step[b - 1] - 1)])   # the driver expects last + 1
        for i in np.flatnonzero(np.diff(qoff[a:b]) != step[a:b - 1]):
            gaps.append([topic, int(qid), int(qoff[a + i] + step[a + i]), int(qoff[a + i + 1]), int(off[a + i + 1])])
    return {"first": first, "last": last, "gaps": gaps}


def _unparsable_light_queue_offsets(res: cl.WalkResult, ok: np.ndarray, keep: int = 5) -> dict | None:
    """Dispatched records with a light queue offset ``Long.parseLong`` refuses: their count, and
    ``[position, queue name]`` of the first few (see :func:`store_format.dispatch.multi_dispatch_units`)."""
    lmq = res.lmq
    rows = np.nonzero(lmq[:, L_STATUS] == LMQ_BAD_OFFSET)[0] if len(lmq) else np.zeros(0, np.int64)
    rows = rows[ok[lmq[rows, L_REC]]]
    if not len(rows):
        return None
    text = np.asarray(res.text, dtype=np.uint8)
    first = []
    for r in rows[:keep]:
        a = int(lmq[r, L_NAME_START]) - res.text_origin
        name = bytes(text[a:a + int(lmq[r, L_NAME_LEN])]).decode("utf-8", "replace")
        first.append([int(res.rec[lmq[r, L_REC], cl.R_POS]), name])
    return {"count": int(len(rows)), "first": first}


def records_batch(split: Split, res: cl.WalkResult | None, summary: dict, details: bool,
                  with_body: bool = False, scan_summary: dict | None = None) -> pa.RecordBatch:
    """Record rows of a walk plus the split's trailer row, in :func:`record_schema` layout.
    ``scan_summary``: the summary of a scan walk over the same records (:func:`split_summary`), whose
    CRC findings then stand for the bodies' CRCs."""
    schema = record_schema(details, with_body)
    n = 0 if res is None else len(res.rec)
    cols: dict[str, pa.Array] = {}
    if n and res is not None:
        cols.update(lean_columns(res))
        if details:
            cols.update(detail_columns(res, with_body=with_body,
                                       crc_mismatches=None if scan_summary is None else crc_mismatches(scan_summary)))
    arrays = []
    for field in schema:
        if field.name == "split_id":
            arr = pa.array(np.full(n + 1, split.split_id, dtype=np.int32))
        elif field.name == "row_kind":
            arr = pa.array(np.r_[np.full(n, ROW_RECORD, dtype=np.int8), np.int8(ROW_TRAILER)])
        elif field.name == "seq":
            arr = pa.array(np.arange(n + 1, dtype=np.int32))
        elif field.name == "segment":
            arr = pa.array(np.full(n + 1, split.segment, dtype=np.int32))
        elif field.name == "summary":
            arr = pa.array([None] * n + [json.dumps(summary)], type=pa.string())
        elif field.name in cols:
            arr = pa.concat_arrays([cols[field.name].cast(field.type), pa.nulls(1, field.type)])
        else:
            arr = pa.nulls(n + 1, field.type)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def driver_rewalk(store: StoreLocation, config: BrokerConfig, work_uri: str, buckets: int):
    """A split walked again in the driver from a known loop state (the chain's, where the reput enters
    it): its work files replace those of its scan task."""
    def rewalk(split: Split, entering: cl.WalkState | None, limit_rel: int | None):
        with store.reader(store.segments[split.segment]) as read:
            sync, res = walk_split(split, read, config, entering=entering, limit_rel=limit_rel)
        drop_split_work(work_uri, split.split_id)
        return scan_split_work(work_uri, split, sync, entering, res, buckets, config), res
    return rewalk


def scan_split_work(work_uri: str, split: Split, sync: int, entering: cl.WalkState | None,
                    res: cl.WalkResult | None, buckets: int, config: BrokerConfig) -> dict:
    """Write a walked split's work files and return its summary, numbering its queue units once for both."""
    units = None if res is None else queue_units(res, config.batch_topics)
    write_split_work(work_uri, split.split_id, res, buckets, config, units=units)
    summary = split_summary(split, sync, entering, res, units)
    why = "" if res is None or not config.rocksdb_cq else light_units_unmodelled(res)
    if why:   # refused by the driver when the split lies on the reput's path (pipelines.stages.scan_and_chain)
        summary["light_unmodelled"] = why
    why = "" if res is None or config.rocksdb_cq else empty_light_names_on_restart(res, config)
    if why:   # refused by the driver for a restart's walk (pipelines.stages.scan_and_chain, restart=True)
        summary["light_unmodelled_on_restart"] = why
    return summary


class ScanTask:
    """A scan task: walk each of its splits, write the split's work files (queue units by bucket,
    index keys) and return its summary: a row per split, never a row per record."""

    def __init__(self, splits: list[Split], store_uri: str, config: BrokerConfig, work_uri: str, buckets: int,
                 tasks: list[list[int]]) -> None:
        self.splits = splits
        self.tasks = tasks
        self.store_uri = store_uri
        self.config = config
        self.work_uri = work_uri
        self.buckets = buckets

    def rows(self, task: int) -> list[dict]:
        """Walk the task's splits one after the other: a summary row per split."""
        out = []
        for split, sync, res in walk_splits(self.splits, self.tasks[task], self.store_uri, self.config):
            summary = scan_split_work(self.work_uri, split, sync, None, res, self.buckets, self.config)
            out.append({"split_id": split.split_id, "summary": json.dumps(summary)})
        return out
