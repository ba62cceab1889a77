"""The ``messages`` table reduced to figures: per segment, per consume queue, per consume queue file.

One pass over the table in batches (:meth:`TableReader.batches`) counts, per segment, rows, null
fields, impossible sizes, CRC and totalSize failures (``CommitLog.checkMessageAndReturnSize``), and
keeps only the few int64 columns the later checks need: offsets are then checked for duplicates, for
``base offset + position`` and for a gap-free layout; each queue's consume queue offsets
(``ConsumeQueue.putMessagePositionInfo``) for duplicates and contiguity; and the units of every
consume queue file, light queues' too (``CommitLogDispatcherBuildConsumeQueue`` multi-dispatch), are
counted for the expiry audit.  :func:`message_frame` is the ``messages`` suite's frame.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from store_format.anomalies import AnomalyKind
from store_format.layout import CQ_UNIT_SIZE, consume_queue_file_path, signed32

from ..tables.rows import NOT_DISPATCHED, SIZE_MISMATCH_DISPATCH
from .table_reading import NO_TS, Ids, TableReader, bincount, grow, to_numpy, unknown_run_rows

__all__ = ["message_figures", "message_frame", "consume_queue_frame", "cq_file_counts", "QUEUE_COLUMNS",
           "MESSAGE_COLUMNS", "MESSAGE_REQUIRED"]

QUEUE_COLUMNS = ["topic", "queue_id", "units", "first_offset", "last_offset", "span", "duplicate_units"]

MESSAGE_COLUMNS = ["segment", "commitlog_offset", "position", "size", "structural_size", "body_size",
                   "store_timestamp", "topic", "queue_id", "consume_queue", "consume_queue_offset", "indexed",
                   "body_crc_ok", "dispatch", "run_id", "lmq_queues", "lmq_queue_ids", "lmq_consume_queue_offsets"]
MESSAGE_REQUIRED = ["commitlog_offset", "position", "size", "structural_size", "topic", "queue_id", "store_timestamp",
                 "consume_queue", "indexed", "body_crc_ok", "dispatch", "run_id"]


def message_figures(reader: TableReader, seg_ids: Ids, known_runs: set, entry_header: int = 0) -> dict:
    """Per-segment counts over ``messages`` and the arrays the key checks join against.

    ``entry_header``: a DLedger store's entry header size (``store_format.dledger``); a segment whose
    first record lies at that position is a DLedger data file, where each record follows its
    entry's header rather than the previous record."""
    batches = _Batches(seg_ids, known_runs)
    for b in reader.batches("messages", MESSAGE_COLUMNS):
        if b.num_rows:
            batches.add(b)
    cat = batches.take
    seg, pos, off = cat("seg", np.int32), cat("pos", np.int64), cat("off", np.int64)
    ssize, ts, indexed = cat("ssize", np.int64), cat("ts", np.int64), cat("indexed", bool)
    k = len(seg_ids)
    per_seg = {key: grow(v, k) for key, v in batches.per_seg.items()}
    bases = np.array([_base_of(s) for s in seg_ids.names], dtype=np.int64)
    # offsets: duplicates anywhere in the table, then each segment in position order
    by_off = np.argsort(off, kind="stable")
    off_sorted = off[by_off]
    dup = np.zeros(len(off), bool)
    dup[1:] = off_sorted[1:] == off_sorted[:-1]
    duplicates = bincount(seg[by_off][dup], k)
    not_base = bincount(seg, k, off != bases[seg] + pos)
    layout = _segment_layout(seg, pos, off, ssize, ts, k, entry_header)
    del pos, ssize
    # consume queues: each queue's unit numbers unique and contiguous; units per consume queue file
    qkey, cqoff = cat("qkey", np.int64), cat("cqoff", np.int64)
    queue_frame = consume_queue_frame(_queue_rows(qkey, cqoff, batches.topic_ids))
    # units per consume queue file: the records' own units and their light queue units
    # (``CommitLogDispatcherBuildConsumeQueue`` multi-dispatch writes light queue files like any other)
    fk, fo = np.r_[qkey, cat("lmq_qkey", np.int64)], np.r_[cqoff, cat("lmq_cqoff", np.int64)]
    fs = np.lexsort((fo, fk))
    files = {"qkey": fk[fs], "cqoff": fo[fs]}
    return {"n": batches.n, **per_seg, "duplicates": duplicates, "not_base": not_base, **layout,
            "off_sorted": off_sorted, "by_off": by_off, "seg": seg, "ts": ts, "indexed": indexed,
            "queues": queue_frame, "cq_files": files, "topics": batches.topic_ids,
            "unknown_run_rows": batches.unknown_runs}


class _Batches:
    """One pass over ``messages``' batches: per-segment counts (rows, dispatched, CRC and totalSize failures, nulls,
    impossible sizes, consume queue flag against offset) and the few int64 columns the later checks need."""

    def __init__(self, seg_ids: Ids, known_runs: set) -> None:
        self.seg_ids, self.known_runs = seg_ids, known_runs
        self.topic_ids = Ids()
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in (
            "seg", "pos", "off", "ssize", "ts", "indexed", "qkey", "cqoff", "lmq_qkey", "lmq_cqoff")}
        self.per_seg: dict[str, np.ndarray] = {k: np.zeros(0, np.int64) for k in (
            "rows", "dispatched", "crc_bad", "size_bad", "nulls", "bad_sizes", "cq_flag")}
        self.n = 0
        self.unknown_runs = 0

    def add(self, b: pa.RecordBatch) -> None:
        self.n += b.num_rows
        col = dict(zip(b.schema.names, b.columns))
        seg = self.seg_ids(col["segment"])
        k = len(self.seg_ids)
        size = to_numpy(col["size"], 0, np.int64)
        ssize = to_numpy(col["structural_size"], 0, np.int64)
        body = to_numpy(col["body_size"], 0, np.int64)
        nulls = np.zeros(b.num_rows, np.int64)
        for c in MESSAGE_REQUIRED:
            if col[c].null_count:
                nulls += to_numpy(pc.is_null(col[c]), False, bool)
        dispatch = col["dispatch"]
        not_dispatched = to_numpy(pc.starts_with(dispatch, NOT_DISPATCHED), False, bool)
        size_bad = to_numpy(pc.starts_with(dispatch, SIZE_MISMATCH_DISPATCH), False, bool)
        crc_bad = ~to_numpy(col["body_crc_ok"], True, bool) & (body > 0)   # recovery checks non-empty bodies only
        in_cq = to_numpy(col["consume_queue"], False, bool)
        has_cq_off = to_numpy(pc.is_valid(col["consume_queue_offset"]), False, bool)
        bad_sizes = (size <= 0) | (ssize <= 0) | (body < 0) | (body > ssize)
        for key, values in (("rows", None), ("dispatched", ~not_dispatched), ("crc_bad", crc_bad),
                            ("size_bad", size_bad), ("nulls", nulls), ("bad_sizes", bad_sizes),
                            ("cq_flag", in_cq != has_cq_off)):
            self.per_seg[key] = grow(self.per_seg[key], k)
            self.per_seg[key][:k] += bincount(seg, k, values)
        self.unknown_runs += unknown_run_rows(col["run_id"], self.known_runs)
        parts = self.parts
        parts["seg"].append(seg)
        parts["pos"].append(to_numpy(col["position"], -1, np.int64))
        parts["off"].append(to_numpy(col["commitlog_offset"], -1, np.int64))
        parts["ssize"].append(ssize)
        parts["ts"].append(to_numpy(col["store_timestamp"], NO_TS, np.int64))
        parts["indexed"].append(to_numpy(col["indexed"], False, bool))
        q = in_cq & has_cq_off
        if q.any():
            topics = self.topic_ids(col["topic"].filter(pa.array(q)))
            qid = to_numpy(col["queue_id"].filter(pa.array(q)), -1, np.int64)
            parts["qkey"].append((topics.astype(np.int64) << 32) | (qid & 0xFFFFFFFF))
            parts["cqoff"].append(to_numpy(col["consume_queue_offset"].filter(pa.array(q)), -1, np.int64))
        lmq_names = pc.list_flatten(col["lmq_queues"]) if col["lmq_queues"].null_count < b.num_rows else None
        if lmq_names is not None and len(lmq_names):
            # the light queue units (multi-dispatch): they fill the light queues' consume queue files
            lmq_units = pc.list_flatten(col["lmq_consume_queue_offsets"])
            lmq_qids = pc.list_flatten(col["lmq_queue_ids"])
            if len(lmq_units) == len(lmq_names) == len(lmq_qids):
                w = pa.array(to_numpy(pc.is_valid(lmq_units), False, bool))
                topics = self.topic_ids(lmq_names.filter(w))
                qid = to_numpy(lmq_qids.filter(w), -1, np.int64)
                parts["lmq_qkey"].append((topics.astype(np.int64) << 32) | (qid & 0xFFFFFFFF))
                parts["lmq_cqoff"].append(to_numpy(lmq_units.filter(w), -1, np.int64))

    def take(self, k: str, dtype: Any) -> np.ndarray:
        """A column's pieces joined, and dropped from memory."""
        pieces = self.parts.pop(k)
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype)


def _segment_layout(seg: np.ndarray, pos: np.ndarray, off: np.ndarray, ssize: np.ndarray, ts: np.ndarray, k: int,
                    entry_header: int) -> dict[str, np.ndarray]:
    """Each segment's records in position order: offsets not increasing, gaps (each record right after the one
    before, or after its DLedger entry's header), the end of its last record and its store time range."""
    order = np.lexsort((pos, seg))
    s_o, p_o, o_o, z_o, t_o = seg[order], pos[order], off[order], ssize[order], ts[order]
    del order
    same = s_o[1:] == s_o[:-1]
    not_increasing = bincount(s_o[1:], k, same & (o_o[1:] <= o_o[:-1]))
    header = np.zeros(k, np.int64)
    if entry_header and len(s_o):
        firsts = np.flatnonzero(np.r_[True, ~same])
        header[s_o[firsts]] = np.where(p_o[firsts] == entry_header, entry_header, 0)
    gaps = bincount(s_o[1:], k, same & (p_o[1:] != p_o[:-1] + z_o[:-1] + header[s_o[1:]]))
    ends = np.zeros(k, np.int64)
    ts_min = np.full(k, NO_TS, np.int64)
    ts_max = np.full(k, NO_TS, np.int64)
    if len(s_o):
        starts = np.flatnonzero(np.r_[True, ~same])
        present_segs = s_o[starts]
        ends[present_segs] = np.maximum.reduceat(p_o + z_o, starts)
        valid = t_o != NO_TS
        lo = np.minimum.reduceat(np.where(valid, t_o, np.iinfo(np.int64).max), starts)
        hi = np.maximum.reduceat(np.where(valid, t_o, NO_TS), starts)
        ts_min[present_segs] = np.where(lo == np.iinfo(np.int64).max, NO_TS, lo)
        ts_max[present_segs] = hi
    return {"not_increasing": not_increasing, "gaps": gaps, "ends": ends, "ts_min": ts_min, "ts_max": ts_max}


def _queue_rows(qkey: np.ndarray, cqoff: np.ndarray, topic_ids: Ids) -> list[dict]:
    """One row per consume queue (``ConsumeQueue.putMessagePositionInfo``): its units, first and last consume queue
    offset, span and duplicate unit numbers."""
    if not len(qkey):
        return []
    qo = np.lexsort((cqoff, qkey))
    qk, co = qkey[qo], cqoff[qo]
    qsame = qk[1:] == qk[:-1]
    qstarts = np.flatnonzero(np.r_[True, ~qsame])
    qdup = np.r_[False, qsame & (co[1:] == co[:-1])]
    units = np.diff(np.r_[qstarts, len(qk)])
    dups = np.add.reduceat(qdup.astype(np.int64), qstarts)
    firsts, lasts = co[qstarts], co[np.r_[qstarts[1:], len(qk)] - 1]
    rows = []
    for i, s in enumerate(qstarts.tolist()):
        queue = int(qk[s])
        rows.append({"topic": topic_ids.names[queue >> 32], "queue_id": signed32(queue),
                     "units": int(units[i]), "first_offset": int(firsts[i]), "last_offset": int(lasts[i]),
                     "span": int(lasts[i] - firsts[i] + 1), "duplicate_units": int(dups[i])})
    return rows


def consume_queue_frame(rows: list[dict]) -> pd.DataFrame:
    """The ``consume_queues`` suite's frame from one dict per queue (whichever engine counted them),
    in (topic, queue_id) order."""
    frame = pd.DataFrame(rows, columns=QUEUE_COLUMNS)
    return frame.sort_values(["topic", "queue_id"], na_position="first", ignore_index=True)


def cq_file_counts(msg: dict, cq_file_size: int) -> dict[str, int]:
    """Units per consume queue file (``topic/queueId/<start>``, :func:`consume_queue_file_path`) from
    the sorted (queue, unit number) arrays of :func:`message_figures`: a file is a run of equal
    (queue, unit // units per file) [``ConsumeQueue`` files hold ``mappedFileSizeConsumeQueue / 20`` units]."""
    qk, co = msg["cq_files"]["qkey"], msg["cq_files"]["cqoff"]
    out: dict[str, int] = {}
    if not len(qk):
        return out
    units_per_file = max(int(cq_file_size) // CQ_UNIT_SIZE, 1)
    fno = co // units_per_file
    starts = np.flatnonzero(np.r_[True, (qk[1:] != qk[:-1]) | (fno[1:] != fno[:-1])])
    counts = np.diff(np.r_[starts, len(qk)])
    topics = msg["topics"].names
    for q, f, c in zip(qk[starts].tolist(), fno[starts].tolist(), counts.tolist()):
        out[consume_queue_file_path(topics[q >> 32], signed32(q), f * int(cq_file_size))] = int(c)
    return out


def _base_of(name: str | None) -> int:
    return int(name) if name is not None and name.isdigit() else -1


def message_frame(seg_ids: Ids, msg: dict, per_seg_anom: dict[tuple[str | None, str], int]) -> pd.DataFrame:
    """One row per segment with messages rows or record anomalies: the offset and layout counts, and
    the CRC and totalSize failures of its rows against its anomalies of those kinds."""
    crc, size = AnomalyKind.CRC_MISMATCH.value, AnomalyKind.SIZE_MISMATCH.value
    rows = []
    for i, name in enumerate(seg_ids.names):
        if not msg["rows"][i] and not per_seg_anom.get((name, crc)) and not per_seg_anom.get((name, size)):
            continue
        rows.append({"segment": name, "rows": int(msg["rows"][i]), "duplicate_offsets": int(msg["duplicates"][i]),
                     "offsets_not_base_plus_position": int(msg["not_base"][i]),
                     "offsets_not_increasing": int(msg["not_increasing"][i]), "layout_gaps": int(msg["gaps"][i]),
                     "bad_sizes": int(msg["bad_sizes"][i]), "null_fields": int(msg["nulls"][i]),
                     "consume_queue_flag_mismatches": int(msg["cq_flag"][i]),
                     "crc_mismatch_rows": int(msg["crc_bad"][i]),
                     "crc_mismatch_anomalies": per_seg_anom.get((name, crc), 0),
                     "size_mismatch_rows": int(msg["size_bad"][i]),
                     "size_mismatch_anomalies": per_seg_anom.get((name, size), 0)})
    cols = ["segment", "rows", "duplicate_offsets", "offsets_not_base_plus_position", "offsets_not_increasing",
            "layout_gaps", "bad_sizes", "null_fields", "consume_queue_flag_mismatches", "crc_mismatch_rows",
            "crc_mismatch_anomalies", "size_mismatch_rows", "size_mismatch_anomalies"]
    return pd.DataFrame(rows, columns=cols).sort_values("segment", na_position="first", ignore_index=True)

