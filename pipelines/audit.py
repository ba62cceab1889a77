"""Expiry audit: what the broker's next cleanup deletes, and which consumer groups lose messages with it.

``python -m pipelines audit --tables PATH --as-of TIME [--config broker.conf] [--consumer-offsets FILE]
[--delay-offsets FILE] [--disk-used PCT] [--tz ZONE] [--time-source auto|mtime|last_store_time] [--json]
[--write]``

The rules are :mod:`store_format.expiry`'s (``CleanCommitLogService`` and friends); the facts come from
the tables: live segments and their times (``segments``), the consume queue and index file inventory
(``expiry_audit`` rows of kind ``consume_queue_file`` / ``index_file``, and ``consume_queue_ext_file`` with
``enableConsumeQueueExt``, written by every publish), and
the messages of the segments that go (``messages``, read by partition), all as the latest complete run
published them (:mod:`pipelines.tables.runs`); the rows are built as every publish builds them
(:mod:`pipelines.tables.expiry_audit`).  A message "would be lost"
for a group when its segment goes while the group's committed offset in ``config/consumerOffset.json``
(``ConsumerOffsetManager``: ``topic@group -> {queueId: offset}``) is at or before its consume queue
offset; delayed messages count against ``config/delayOffset.json`` (``ScheduleMessageService``:
``level -> offset`` for queue ``level - 1`` of ``SCHEDULE_TOPIC_XXXX``).

A DLedger store (``enableDLegerCommitLog=true``) follows :mod:`store_format.expiry_dledger`: the old
``commitlog/`` of a store converted in place first, by the broker's rounds, then DLedger's data files by
DLedger's own ``CleanSpaceService`` (``fileReservedTime + 1`` hours, DLedger's disk ratios); the rows
name the data files ``dledger-<selfId>/data/<file>``.  With a RocksDB consume queue
(``storeType=defaultRocksDB``) over it, the compaction's units below the first file that stays
(:mod:`pipelines.tables.expiry_rocksdb`, ``ROCKSDB_DLEDGER_NOTE``).
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from store_format.config import BrokerConfig
from store_format.errors import StoreLayoutError
from store_format.layout import SEGMENT_NAME_RE

from .tables.expiry_audit import (
    CQ_INVENTORY_SCHEMA,
    EXT_INVENTORY_SCHEMA,
    EXT_KIND,
    INDEX_INVENTORY_SCHEMA,
    build_expiry_audit,
    load_offsets,
)
from .tables.runs import run_config, snapshot

__all__ = ["run_audit", "render"]


def run_audit(tables: str, as_of_ms: int, *, config: BrokerConfig | None = None, consumer_file: str | None = None,
              delay_file: str | None = None, disk_used_ratio: float | None = None, tz: str | None = None,
              time_source: str = "auto", store: str | None = None, disk_size_bytes: int | None = None,
              manual_delete: bool = False, system_properties: dict[str, str] | None = None
              ) -> tuple[pa.Table, dict]:
    """Audit the tables as of a time (see the module docstring); returns the rows and a summary."""
    snap = snapshot(tables)
    last = snap.run
    if last is None:
        raise StoreLayoutError(f"{tables}: no runs table; publish the tables first (rebuild, or tables --store ...)")
    if config is None:
        config = run_config(last)
    segments = snap.read_arrow("segments")
    inv = snap.read_arrow("expiry_audit")
    if segments is None or inv is None:
        raise StoreLayoutError(f"{tables}: the segments or expiry_audit table is missing; publish the tables again")
    live = segments.filter(pc.equal(segments["status"], "live"))
    cq = inv.filter(pc.equal(inv["kind"], "consume_queue_file"))
    idx = inv.filter(pc.equal(inv["kind"], "index_file"))
    dledger_from = _dledger_from(inv) if config.enableDLegerCommitLog else None
    cq_rows = [{"topic": r["topic"], "queue_id": r["queue_id"], "file_start": int(r["name"].rsplit("/", 1)[1]),
                "units": r["messages"], "min_offset": r["min_offset"], "max_offset": r["max_offset"],
                "segment": r["segment"], "is_last": r["is_last"]} for r in cq.to_pylist()]
    idx_rows = sorted(idx.to_pylist(), key=lambda r: (r["min_offset"] or 0, r["name"] or ""))
    idx_rows = [{"index_file_no": i, "index_file": r["name"], "entries": r["messages"], "min_offset": r["min_offset"],
                 "max_offset": r["max_offset"], "segment": r["segment"], "is_last": r["is_last"]}
                for i, r in enumerate(idx_rows)]
    ext = inv.filter(pc.equal(inv["kind"], EXT_KIND)).to_pylist()
    # tables published before the audit listed ext files: the inventory from their messages instead
    ext_inv = pa.Table.from_pylist(
        [{"topic": r["topic"], "queue_id": r["queue_id"], "file_start": int(r["name"].rsplit("/", 1)[1]),
          "units": r["messages"], "min_offset": r["min_offset"], "max_offset": r["max_offset"]} for r in ext],
        schema=EXT_INVENTORY_SCHEMA) if ext else None
    store_uri = store or last["store"]
    if config.enableDLegerCommitLog and dledger_from is None and store_uri and _dledger_pending(store_uri, config):
        ends = pc.add(live["base_offset"], live["file_size"])   # old files only: DLedger's first comes after them
        dledger_from = int(pc.max(ends).as_py() or 0) if len(live) else None
    consumer, delay = load_offsets(store_uri, consumer_file, delay_file)
    looked_at = consumer_file or (f"{store_uri.rstrip('/')}/config/consumerOffset.json" if store_uri else None)
    return build_expiry_audit(tables, config, live, pa.Table.from_pylist(cq_rows, schema=CQ_INVENTORY_SCHEMA),
                              pa.Table.from_pylist(idx_rows, schema=INDEX_INVENTORY_SCHEMA), as_of_ms=as_of_ms,
                              consumer_offsets=consumer, delay_offsets=delay, run_id=last["run_id"],
                              disk_used_ratio=disk_used_ratio, tz=tz, time_source=time_source,
                              messages_version=snap.version("messages"), disk_size_bytes=disk_size_bytes,
                              manual_delete=manual_delete, system_properties=system_properties,
                              consumer_offsets_from=looked_at, dledger_from=dledger_from, ext_inventory=ext_inv)


def _dledger_pending(store_uri: str, config: BrokerConfig) -> bool:
    """A store converted in place that never started with DLedger: old ``commitlog/`` files and no DLedger data
    file (``StoreLocation.dledger_pending``); False when the store cannot be read."""
    from store_format.dledger import dledger_has_data
    from store_format.store import resolve
    try:
        fs, root = resolve(store_uri)
        root = root.rstrip("/")
        return not dledger_has_data(fs, root, self_id=config.dLegerSelfId,
                                    data_path=config.storePathDLedgerCommitLog) \
            and any(SEGMENT_NAME_RE.match(i.base_name) for i in fs.get_file_info(
                pafs.FileSelector(f"{root}/commitlog", allow_not_found=True)))
    except (OSError, ValueError):
        return False


def _dledger_from(inv: pa.Table) -> int | None:
    """Where a DLedger store's data files begin, from the segment rows the publish wrote (it names a
    data file ``<data dir>/<file>``, an old commitlog file by its bare name); None: every segment is
    taken for a data file (tables published before the audit knew DLedger)."""
    seg = inv.filter(pc.equal(inv["kind"], "segment")).to_pylist()
    data = [r["min_offset"] for r in seg if r["name"] and r["name"] != r["segment"]]
    return min(data) if data else None


def render(summary: dict) -> str:
    """The audit as text: the rules it applied (line, time source, disk), then what goes and why."""
    lines = [f"as of            {summary['as_of']}"]
    if summary.get("broker_line"):
        lines.append(f"broker rules     {summary['broker_line']}")
    if summary.get("cleanup_rule"):
        lines.append(f"cleanup rule     {summary['cleanup_rule']}")
    ts = summary.get("time_source")
    if ts:
        lines.append(f"time source      {ts['why']}")
    disk = summary.get("disk")
    if disk:
        lines.append(f"disk             {disk['used_percent']:g} % used (the broker reads "
                     f"{disk['read_as_percent']} %); " + (
                         f"DLedger's thresholds: check expired {disk['max_used_percent']} %, force clean "
                         f"{disk['clean_forcibly_percent']} %, appends refused {disk['warning_percent']} %"
                         if summary.get("dledger") else
                         f"thresholds: diskMaxUsedSpaceRatio {disk['max_used_percent']} %, clean forcibly "
                         f"{disk['clean_forcibly_percent']} %, write reject {disk['warning_percent']} %"))
        if disk["writes_refused"]:
            after = disk.get("after_next_cleanup_percent")
            until = ("; the next cleanup brings it to " + f"{after} %" +
                     (" (still refusing)" if disk.get("writes_refused_after") else " (writes accepted again)")
                     if after is not None else "")
            lines.append(f"WARNING          disk {disk['read_as_percent']} % is above the write-reject ratio "
                         f"{disk['warning_percent']} % " + (
                             "(DLedger's getDiskFullRatio): DLedger refuses appends (DISK_FULL)"
                             if summary.get("dledger") else
                             "(diskSpaceWarningLevelRatio): the broker marks the disk full and refuses new "
                             "messages (SERVICE_NOT_AVAILABLE)") + f" until the ratio drops{until}")
        lines.append(f"disk model       {disk['model']}")
    for note in summary.get("notes", []):
        lines.append(f"note             {note}")
    nc = summary.get("next_cleanup")
    if not nc:
        lines.append("next cleanup     nothing to delete within the horizon")
        return "\n".join(lines)
    lines.append(f"next cleanup     {nc['from']} (cleanup period until {nc['until']})")
    rounds = summary.get("rounds") or []
    if rounds:
        forced = sum(r["segments"] for r in rounds if r["forced"])
        lines.append(f"rounds           {len(rounds)} round(s) from {rounds[0]['at']} to {rounds[-1]['at']}, "
                     f"{sum(r['segments'] for r in rounds)} segment(s)" +
                     (f", in rounds that may force unexpired ones: {forced}" if forced else ""))
        for r in rounds:
            disk_part = "" if r["disk_before_percent"] is None else (
                f"  disk {r['disk_before_percent']} % -> " +
                ("unknown (no --disk-size)" if r["disk_after_percent"] is None else f"{r['disk_after_percent']} %"))
            lines.append(f"  {r['at']}  {r['segments']:>3} segment(s) from {r['first']}  trigger {r['trigger']}"
                         f"{' (forced)' if r['forced'] else ''}{disk_part}")
    lines.append(f"segments         {len(summary['segments'])}")
    for s in summary["segments"]:
        lines.append(f"  {s.get('file') or s['segment']}  {s['records']:>10,} records  last modified "
                     f"{s['reference_time']} "
                     f"({s['time_source']})  deleted at {s['deleted_at']}  {s.get('reason', '')}")
    if "rocksdb_queues" in summary:   # storeType=defaultRocksDB: the compaction instead of files
        qs = summary["rocksdb_queues"]
        lines.append(f"consume queues   RocksDB: the compaction removes {sum(q['units_removed'] for q in qs):,} "
                     f"unit(s) below offset {summary.get('rocksdb_new_min_offset')} in {len(qs)} queue(s)")
        for q in qs[:20]:
            lines.append(f"  {q['queue']}  {q['units_removed']:>8,} unit(s)  getMinOffsetInQueue then "
                         f"{q['min_offset_in_queue_after']}")
        if len(qs) > 20:
            lines.append(f"  ... {len(qs) - 20} more (see --json)")
    else:
        lines.append(f"consume queues   {summary['consume_queue_files']} file(s) go with them")
    if "consume_queue_ext_files" in summary:
        lines.append(f"ext files        {summary['consume_queue_ext_files']} consumequeue_ext/ file(s) go with them "
                     f"({summary['consume_queue_ext_rule']})")
    lines.append(f"index files      {summary['index_files']} file(s) go with them")
    lines.extend(_render_lost(summary))
    return "\n".join(lines)


def _render_lost(summary: dict) -> list[str]:
    lines = []
    offsets = summary.get("consumer_offsets") or {}
    status = summary.get("lost_status")
    if summary["unconsumed"]:
        lines.append("unconsumed messages lost:")
        lines.append(f"  {'group':<32} {'topic':<28} {'queue':>5} {'committed':>10} {'messages':>10} {'bytes':>12}")
        for r in summary["unconsumed"]:
            lines.append(f"  {r['group']:<32} {r['topic']:<28} {r['queue_id']:>5} {r['committed']:>10} "
                         f"{r['messages']:>10,} {r['bytes']:>12,}")
    elif status == "unknown":
        where = offsets.get("file")
        lines.append("unconsumed messages lost: unknown: no consumer offsets known (" +
                     (f"no consumerOffset.json at {where}" if where else "no store to read consumerOffset.json from") +
                     "; pass --consumer-offsets)")
    elif status == "none":
        lines.append("unconsumed messages lost: none (every consumer group with offsets for these queues has "
                     "consumed past them)")
    elif status == "nothing goes":
        lines.append("unconsumed messages lost: none (no segment goes)")
    without = offsets.get("queues_without_offsets") or []
    if without and status != "unknown":
        shown = ", ".join(without[:8]) + (f", ... ({len(without)} in all)" if len(without) > 8 else "")
        lines.append(f"no consumer offsets known for {len(without)} queue(s) with messages in the segments that go "
                     f"(no group in consumerOffset.json for them; not counted as lost or as consumed): {shown}")
    lines.append(f"total lost       {summary['total_lost_messages']:,} messages, {summary['total_lost_bytes']:,} bytes"
                 + (" (of the queues with known offsets)" if without else ""))
    return lines
