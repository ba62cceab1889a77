"""The small tables of a publication, from what its tasks reported: ``segments`` (per-segment
figures, deleted segments kept and marked), ``anomalies`` (unreadable and unreachable records from the
chain, records with a wrong CRC or size, queue offset gaps) and the software versions of the
``runs`` row.  Used by :func:`pipelines.tables.publish.PendingTables.finish` for a rebuild and for an
incremental refresh alike."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from store_format import commitlog as cl
from store_format.layout import MAGIC_BLANK, MAGIC_V1, MAGIC_V2
from store_format.store import Segment, StoreLocation
from store_format.timeutil import ms_to_datetime, us_to_datetime

from ..chain import Chain
from ..delta import TableWriter
from .schema import SEGMENTS_SCHEMA

__all__ = ["_segment_rows", "_record_anomalies", "_gap_anomalies", "_versions", "_segment_ends", "_chain_anomalies"]


def _segment_rows(st: StoreLocation, ends: dict[str, int], back: dict, prev_segments: pa.Table | None,
                  run_id: str, kept_before: str | None = None) -> pa.Table:
    """The ``segments`` table: the store's segments now, and earlier ones marked deleted.

    ``back``: figures of the scanned segments (``segments``: records, dispatched, first/last store
    time in microseconds, topics; ``keys``: index keys).  Segments named below ``kept_before`` (an
    incremental refresh does not rescan them) keep the figures of their previous row."""
    prev_by_name = {r["segment"]: r for r in prev_segments.to_pylist()} if prev_segments is not None else {}
    store_names = {s.name for s in st.segments}
    rows = []
    for s in st.segments:
        prev = prev_by_name.get(s.name, {})
        stats = back["segments"].get(s.name, {})
        keys = back["keys"].get(s.name, 0)
        first, last = us_to_datetime(stats.get("first")), us_to_datetime(stats.get("last"))
        if kept_before is not None and s.name < kept_before and prev:
            stats = {k: prev.get(k) for k in ("records", "dispatched", "topics")}
            first, last, keys = prev.get("first_store_time"), prev.get("last_store_time"), prev.get("index_keys")
        rows.append({
            "segment": s.name, "base_offset": s.base, "file_size": s.size,
            "bytes_written": ends.get(s.name, prev.get("bytes_written")),
            "first_store_time": first, "last_store_time": last,
            "records": stats.get("records") or 0, "dispatched": stats.get("dispatched") or 0,
            "index_keys": keys or 0, "topics": stats.get("topics") or [],
            "file_mtime": ms_to_datetime(s.mtime_ms), "status": "live", "first_run": prev.get("first_run") or run_id,
            "last_run": run_id, "deleted_run": None})
    for name, prev in sorted(prev_by_name.items()):
        if name not in store_names:
            row = dict(prev)
            if row.get("status") == "live":
                row.update(status="deleted", deleted_run=run_id)
            rows.append(row)
    return pa.Table.from_pylist(sorted(rows, key=lambda r: r["segment"]), schema=SEGMENTS_SCHEMA)


def _record_anomalies(bad: list, run_id: str) -> list[dict]:
    out = []
    for r in bad:
        if not r["body_crc_ok"]:
            out.append(_anomaly(run_id, r["segment"], r["commitlog_offset"], r["position"], r["size"],
                                "crc_mismatch", r["topic"], r["queue_id"], None, r["body_crc"],
                                "stored bodyCRC differs from UtilAll.crc32 of the body; the reput dispatches it "
                                "anyway (broker recovery would truncate here)"))
        if r["dispatch"].startswith("not dispatched: totalSize"):
            out.append(_anomaly(run_id, r["segment"], r["commitlog_offset"], r["position"], r["structural_size"],
                                "size_mismatch", r["topic"], r["queue_id"], r["structural_size"], r["size"],
                                "declared totalSize differs from the record's length: skipped by the reput"))
    return out


def _gap_anomalies(gaps: list[dict], run_id: str) -> list[dict]:
    out = []
    for g in gaps:
        kind = "queue_offset_gap" if g["found"] > g["expected"] else "queue_offset_backwards"
        out.append(_anomaly(run_id, g["segment"], g["commitlog_offset"], g["commitlog_offset"] - int(g["segment"]),
                            None, kind, g["topic"], g["queue_id"], g["expected"], g["found"],
                            f"queue offset {g['found']} where {g['expected']} follows; the consume queue appends it "
                            "at its write position"))
    return out


def _versions(writer: TableWriter, tables: dict[str, int]) -> dict:
    """Software versions, the writer, and ``tables``: the version of each table this run committed
    (what readers open once the run's row is written, :mod:`.runs`)."""
    import platform

    import deltalake
    import pyspark
    out = {"python": platform.python_version(), "pyspark": pyspark.__version__, "pyarrow": pa.__version__,
           "deltalake": deltalake.__version__, "numpy": np.__version__, "writer": writer.kind,
           "tables": dict(tables)}
    try:
        from importlib.metadata import version
        out["rocketmq-offline-index"] = version("rocketmq-offline-index")
    except Exception:
        pass
    return out


def _segment_ends(chain: Chain, sub: StoreLocation) -> dict[str, int]:
    """Where each walked segment's data ends: the file size after a blank record, else the walk's stop."""
    ends: dict[str, int] = {}
    for e in chain.entries:
        seg = sub.segments[e.split.segment]
        stop = e.summary.get("stop")
        ends[seg.name] = seg.size if stop == cl.Stop.BLANK else int(e.summary.get("bufpos", 0))
    return ends


def _anomaly(run_id, segment, offset, position, length, kind, topic, queue_id, expected, found, detail) -> dict:
    return {"run_id": run_id, "segment": segment, "commitlog_offset": offset, "position": position, "length": length,
            "kind": kind, "topic": topic, "queue_id": queue_id, "expected": expected, "found": found, "detail": detail}


def _chain_anomalies(chain: Chain, sub: StoreLocation, run_id: str) -> list[dict]:
    """Unreadable records (what their magic code says), and, per segment, records the reput never
    reaches outside a range already reported unreadable (so the rows do not depend on the split size)."""
    out = []
    skipped: dict[str, int] = {}   # segment -> start of its unreadable tail
    unreachable: list[tuple[Segment, int, int | None]] = []
    counts = [n for _, n in sorted(chain.dropped.items())]
    drops = [a for a in chain.anomalies if a["kind"] == "unreachable_records"]
    for a in chain.anomalies:
        if a["kind"] == "end_of_data":
            continue
        seg = sub.segments[a["segment"]]
        pos = int(a["position"])
        if a["kind"] == "unreachable_records":
            n = counts[drops.index(a)] if len(counts) == len(drops) else None
            unreachable.append((seg, pos, n))
            continue
        kind, expected, found = a["kind"], None, None
        with sub.reader(seg) as read:
            head = bytes(read(pos, 8)) if pos + 8 <= seg.size else b""
        if len(head) == 8:
            total = int.from_bytes(head[:4], "big", signed=True)
            magic = int.from_bytes(head[4:], "big", signed=True)
            if magic not in (MAGIC_V1, MAGIC_V2, MAGIC_BLANK):
                kind, expected, found = "bad_magic", MAGIC_V1 & 0xFFFFFFFF, magic & 0xFFFFFFFF
            else:
                found = total
        skipped[seg.name] = min(pos, skipped.get(seg.name, pos))
        out.append(_anomaly(run_id, seg.name, seg.base + pos, pos, seg.size - pos, kind, None, None, expected, found,
                            a.get("detail", "")))
    by_segment: dict[str, list[tuple[Segment, int, int | None]]] = {}
    for seg, pos, n in unreachable:
        if seg.name in skipped and pos >= skipped[seg.name]:
            continue  # inside the unreadable tail reported above
        by_segment.setdefault(seg.name, []).append((seg, pos, n))
    for name, items in sorted(by_segment.items()):
        seg, pos = items[0][0], min(p for _, p, _ in items)
        known = [n for _, _, n in items if n is not None]
        n_text = f"{sum(known)} records" if len(known) == len(items) else "records"
        out.append(_anomaly(run_id, name, seg.base + pos, pos, seg.size - pos, "unreachable_records", None, None,
                            None, sum(known) if len(known) == len(items) else None,
                            f"segment {name}: {n_text} from position {pos} on that the reput never reads (after a "
                            "blank or unreadable record, or in a segment its position skipped)"))
    return out
