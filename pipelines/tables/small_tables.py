"""The small tables of a publication, from what its tasks reported: ``segments`` (per-segment
figures, deleted segments kept and marked) and the software versions of the ``runs`` row (the
``anomalies`` rows are the run's findings, :mod:`pipelines.anomalies`).  Used by
:func:`pipelines.tables.publish.PendingTables.finish` for a rebuild and for an incremental refresh alike."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from store_format import commitlog as cl
from store_format.store import StoreLocation
from store_format.timeutil import ms_to_datetime, us_to_datetime

from ..chain import Chain
from ..delta import TableWriter
from .schema import SEGMENTS_SCHEMA

__all__ = ["segment_rows", "table_versions", "segment_ends"]


def segment_rows(st: StoreLocation, ends: dict[str, int], back: dict, prev_segments: pa.Table | None,
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


def table_versions(writer: TableWriter, tables: dict[str, int]) -> dict:
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


def segment_ends(chain: Chain, sub: StoreLocation) -> dict[str, int]:
    """Where each walked segment's data ends: the file size after a blank record, else the walk's stop."""
    ends: dict[str, int] = {}
    for e in chain.entries:
        seg = sub.segments[e.split.segment]
        stop = e.summary.get("stop")
        ends[seg.name] = seg.size if stop == cl.Stop.BLANK else int(e.summary.get("bufpos", 0))
    return ends
