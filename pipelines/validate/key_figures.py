"""The ``message_keys`` table reduced to figures: one row per index file, and key rows per segment.

Each ``message_keys`` row is one entry of a rebuilt index file (``IndexFile.putKey``).  One pass over
the table in batches joins each row to its ``messages`` row by commitlog offset (through the sorted
offsets of :func:`pipelines.validate.message_figures.message_figures`) and gathers, per index file
number: its names, entry numbers (as a bitset: duplicates, range ``1 .. maxIndexNum - 1``,
contiguity), keys of missing or unindexed messages, store times that differ from the message's, and
bucket and hash slot (``IndexFile.indexKeyHashMethod % maxHashSlotNum``) mismatches.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from store_format.config import BrokerConfig

from ..tables.schema import table_key_buckets
from .table_reading import NO_TS, Ids, TableReader, bincount, grow, to_numpy, unknown_run_rows

__all__ = ["key_figures", "index_file_frame", "entry_capacity", "INDEX_FILE_COLUMNS", "KEY_COLUMNS",
           "KEY_REQUIRED"]

_ENTRY_BITSET_MAX = 1 << 27         # entry numbers above this (or above the configured capacity) are not tracked
KEY_COLUMNS = ["segment", "key_bucket", "key_hash", "slot", "commitlog_offset", "store_timestamp", "index_file",
               "index_file_no", "index_entry", "run_id"]
KEY_REQUIRED = ["key_hash", "slot", "commitlog_offset", "store_timestamp", "index_file", "index_file_no",
                "index_entry", "run_id"]


def entry_capacity(config: BrokerConfig) -> int:
    """The highest entry number an index file holds (``maxIndexNum - 1``: ``IndexFile.putKey`` starts at 1),
    capped where the entry bitset stops tracking."""
    return min(int(config.index_entries_per_file), _ENTRY_BITSET_MAX)


class _IndexFileAcc:
    """Running figures of one index file number; entry numbers seen are kept as a bitset."""

    COUNTERS = ("orphans", "unindexed", "time_mismatch", "bucket_mismatch", "slot_mismatch", "nulls")

    def __init__(self, capacity: int) -> None:
        self.rows = 0
        self.first = np.iinfo(np.int64).max
        self.last = np.iinfo(np.int64).min
        self.names: set[str | None] = set()
        self.bits = np.zeros(capacity // 8 + 1, np.uint8)
        self.duplicates = 0
        self.out_of_range = 0
        self.capacity = capacity
        self.counts = dict.fromkeys(self.COUNTERS, 0)

    def add_entries(self, entries: np.ndarray) -> None:
        self.rows += len(entries)
        if not len(entries):
            return
        self.first = min(self.first, int(entries.min()))
        self.last = max(self.last, int(entries.max()))
        ok = (entries >= 1) & (entries <= self.capacity)
        self.out_of_range += int((~ok).sum())
        e = entries[ok]
        u = np.unique(e)
        byte, mask = u >> 3, (1 << (u & 7)).astype(np.uint8)
        self.duplicates += int(len(e) - len(u) + np.count_nonzero(self.bits[byte] & mask))
        np.bitwise_or.at(self.bits, byte, mask)


def key_figures(reader: TableReader, seg_ids: Ids, known_runs: set, msg: dict, config: BrokerConfig) -> dict:
    """Per-segment key counts and per-index-file figures of ``message_keys``, joined to ``messages``
    by (segment, commitlog_offset) through the sorted offsets."""
    # the bucket count lookups use (no key_bucket column: the schema check reports it)
    dt = reader.open("message_keys")
    buckets = table_key_buckets(dt) if "key_bucket" in reader.present.get("message_keys", set()) else None
    capacity = entry_capacity(config)
    files: dict[int, _IndexFileAcc] = {}
    per_seg = np.zeros(0, np.int64)
    n = 0
    unknown_runs = 0
    off_sorted, by_off = msg["off_sorted"], msg["by_off"]
    m_seg, m_ts, m_indexed = msg["seg"], msg["ts"], msg["indexed"]
    for b in reader.batches("message_keys", KEY_COLUMNS):
        if not b.num_rows:
            continue
        n += b.num_rows
        col = dict(zip(b.schema.names, b.columns))
        seg = seg_ids(col["segment"])
        k = len(seg_ids)
        per_seg = grow(per_seg, k)
        per_seg[:k] += bincount(seg, k)
        off = to_numpy(col["commitlog_offset"], -1, np.int64)
        ts = to_numpy(col["store_timestamp"], NO_TS, np.int64)
        if len(off_sorted):
            i = np.minimum(np.searchsorted(off_sorted, off), len(off_sorted) - 1)
            j = by_off[i]
            hit = (off_sorted[i] == off) & (m_seg[j] == seg)
            unindexed = hit & ~m_indexed[j]
            time_mismatch = hit & (m_ts[j] != ts)
        else:
            hit = unindexed = time_mismatch = np.zeros(len(off), bool)
        orphan = ~hit
        h = to_numpy(col["key_hash"], -1, np.int64)
        bucket = to_numpy(col["key_bucket"], -1, np.int64)
        slot = to_numpy(col["slot"], -1, np.int64)
        bucket_bad = (bucket != h % buckets) if buckets else np.zeros(len(h), bool)
        slot_bad = slot != h % int(config.maxHashSlotNum)
        nulls = np.zeros(b.num_rows, np.int64)
        for c in KEY_REQUIRED:
            if col[c].null_count:
                nulls += to_numpy(pc.is_null(col[c]), False, bool)
        unknown_runs += unknown_run_rows(col["run_id"], known_runs)
        file_no = to_numpy(col["index_file_no"], -1, np.int64)
        entry = to_numpy(col["index_entry"], -1, np.int64)
        # one group per index file number in the batch: sums with reduceat, entries and names per group
        order = np.argsort(file_no, kind="stable")
        fs = file_no[order]
        starts = np.flatnonzero(np.r_[True, fs[1:] != fs[:-1]]) if len(fs) else np.zeros(0, np.int64)
        stops = np.r_[starts[1:], len(fs)]
        sums = {counter: np.add.reduceat(arr[order].astype(np.int64), starts) if len(starts) else arr[:0]
                for counter, arr in zip(_IndexFileAcc.COUNTERS,
                                     (orphan, unindexed, time_mismatch, bucket_bad, slot_bad, nulls))}
        enc = pc.dictionary_encode(col["index_file"], null_encoding="encode")
        values = enc.dictionary.to_pylist()
        codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)[order]
        changes = np.r_[False, codes[1:] != codes[:-1]] if len(codes) else np.zeros(0, bool)
        es = entry[order]
        for g, (lo, hi) in enumerate(zip(starts.tolist(), stops.tolist())):
            f = int(fs[lo])
            acc = files.get(f)
            if acc is None:
                acc = files[f] = _IndexFileAcc(capacity)
            acc.add_entries(es[lo:hi])
            if changes[lo + 1:hi].any():
                acc.names.update(values[c] for c in np.unique(codes[lo:hi]).tolist())
            else:
                acc.names.add(values[int(codes[lo])])
            for counter in _IndexFileAcc.COUNTERS:
                acc.counts[counter] += int(sums[counter][g])
    return {"n": n, "per_segment": per_seg, "unknown_run_rows": unknown_runs,
            **index_file_frame([{"index_file_no": f, "index_file": min((x for x in a.names if x is not None),
                                                                       default=None),
                                 "names": len(a.names), "key_rows": a.rows, "first_entry": a.first,
                                 "last_entry": a.last, "duplicate_entries": a.duplicates,
                                 "entries_out_of_range": a.out_of_range, "orphan_keys": a.counts["orphans"],
                                 "keys_of_unindexed_messages": a.counts["unindexed"],
                                 "time_mismatches": a.counts["time_mismatch"],
                                 "bucket_mismatches": a.counts["bucket_mismatch"],
                                 "slot_mismatches": a.counts["slot_mismatch"], "null_fields": a.counts["nulls"]}
                                for f, a in files.items()])}


INDEX_FILE_COLUMNS = ["index_file_no", "index_file", "names", "key_rows", "first_entry", "last_entry", "span",
                      "duplicate_entries", "entries_out_of_range", "orphan_keys", "keys_of_unindexed_messages",
                      "time_mismatches", "bucket_mismatches", "slot_mismatches", "null_fields", "name_increasing"]


def index_file_frame(files: list[dict]) -> dict:
    """The ``message_keys`` suite's frame from one dict of counts per index file number (whichever
    engine counted them): in file number order, with the entry span and whether the names increase
    with the number (``IndexService.load`` sorts the files by name); and the key rows per file name
    for the expiry audit (``frame``, ``per_file_rows``)."""
    rows = []
    prev_name: str | None = None
    for r in sorted(files, key=lambda r: r["index_file_no"]):
        name = r["index_file"]
        rows.append({**r, "span": r["last_entry"] - r["first_entry"] + 1,
                     "name_increasing": prev_name is None or (name is not None and name > prev_name)})
        prev_name = name if name is not None else prev_name
    frame = pd.DataFrame(rows, columns=INDEX_FILE_COLUMNS)
    return {"frame": frame, "per_file_rows": {r["index_file"]: r["key_rows"] for r in rows}}
