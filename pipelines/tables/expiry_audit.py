"""The ``expiry_audit`` rows every publish writes: what the broker's next cleanup deletes as of a
time, and which consumer groups lose messages with it.

The rules are :mod:`store_format.expiry`'s (``CleanCommitLogService`` and friends); the facts are the
live segments and their times, the consume queue and index file inventory, the consume queue ext file
inventory (``enableConsumeQueueExt``: :func:`ext_inventory_table`), and the messages of the segments
that go (``messages``, read by partition).  A message "would be lost" for a group when its
segment goes while the group's committed offset in ``config/consumerOffset.json``
(``ConsumerOffsetManager``: ``topic@group -> {queueId: offset}``) is at or before its consume queue
offset; delayed messages count against ``config/delayOffset.json`` (``ScheduleMessageService``:
``level -> offset`` for queue ``level - 1`` of ``SCHEDULE_TOPIC_XXXX``).  :mod:`pipelines.audit`
runs the same over published tables as of any time.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from store_format.config import BrokerConfig
from store_format.consumequeue_ext import ext_units_per_file
from store_format.errors import StoreLayoutError
from store_format.expiry import (
    EXT_GOES,
    EXT_LAST,
    EXT_NO_UNIT_LEFT,
    MAX_MANUAL_DELETE_FILE_TIMES,
    CleanupPlan,
    SegmentFacts,
    ext_files_deleted_with,
    files_deleted_with,
    plan_cleanup,
)
from store_format.expiry_dledger import describe_dledger_rule, dledger_data_dir, plan_dledger_cleanup
from store_format.layout import CQ_UNIT_SIZE, SCHEDULE_TOPIC, consume_queue_file_path, index_file_size, segment_name
from store_format.timeutil import datetime_to_ms, iso_ms, ms_to_datetime

from .expiry_rocksdb import ROCKSDB_CQ_NOTE, ROCKSDB_DLEDGER_NOTE, rocksdb_queue_rows

__all__ = ["parse_offset_table", "load_offsets", "cq_inventory_table", "index_inventory_table", "ext_inventory_table",
           "build_expiry_audit", "CQ_INVENTORY_SCHEMA", "INDEX_INVENTORY_SCHEMA", "EXT_INVENTORY_SCHEMA", "EXT_KIND",
           "SCHEDULE_GROUP", "ROCKSDB_CQ_NOTE"]

SCHEDULE_GROUP = "(schedule service: delayOffset.json)"

CQ_INVENTORY_SCHEMA = pa.schema([
    ("topic", pa.string()), ("queue_id", pa.int32()), ("file_start", pa.int64()), ("units", pa.int64()),
    ("min_offset", pa.int64()), ("max_offset", pa.int64()), ("segment", pa.string()), ("is_last", pa.bool_()),
])
INDEX_INVENTORY_SCHEMA = pa.schema([
    ("index_file_no", pa.int64()), ("index_file", pa.string()), ("entries", pa.int64()), ("min_offset", pa.int64()),
    ("max_offset", pa.int64()), ("segment", pa.string()), ("is_last", pa.bool_()),
])

EXT_INVENTORY_SCHEMA = pa.schema([
    ("topic", pa.string()), ("queue_id", pa.int32()), ("file_start", pa.int64()), ("units", pa.int64()),
    ("min_offset", pa.int64()), ("max_offset", pa.int64()),
])
EXT_KIND = "consume_queue_ext_file"
EXT_RULE = ("ConsumeQueue.deleteExpiredFile -> correctMinOffset -> ConsumeQueueExt.truncateByMinAddress: each queue's "
            "ext files that end below the ext unit of its first unit at or above the new minimum commitlog offset")

_BARE_INT_KEY = re.compile(r'([{,]\s*)(-?\d+)(\s*:)')


def parse_offset_table(text: str) -> dict:
    """The ``offsetTable`` of a broker config JSON (fastjson writes integer map keys unquoted)."""
    data = json.loads(_BARE_INT_KEY.sub(r'\1"\2"\3', text))
    return data.get("offsetTable", {}) if isinstance(data, dict) else {}


def load_offsets(store_uri: str | None, consumer_file: str | None, delay_file: str | None
                 ) -> tuple[dict[str, dict[int, int]] | None, dict[int, int] | None]:
    """Consumer offsets (``topic@group -> {queueId: offset}``) and delay offsets (``level -> offset``),
    from the given files or else the store's ``config/`` folder; None where there is none."""
    from store_format.store import read_text

    def read(path: str | None, default_name: str, required: bool) -> str | None:
        candidates = [path] if path else ([f"{store_uri.rstrip('/')}/config/{default_name}"] if store_uri else [])
        for c in candidates:
            try:
                return read_text(c)
            except StoreLayoutError:
                if required:
                    raise
        return None

    consumer = delay = None
    text = read(consumer_file, "consumerOffset.json", consumer_file is not None)
    if text is not None:
        consumer = {str(k): {int(q): int(o) for q, o in v.items()} for k, v in parse_offset_table(text).items()}
    text = read(delay_file, "delayOffset.json", delay_file is not None)
    if text is not None:
        delay = {int(k): int(v) for k, v in parse_offset_table(text).items()}
    return consumer, delay


def cq_inventory_table(rows: Sequence, units_per_file: int) -> pa.Table:
    """Consume queue files from per-file aggregates of the ``messages`` table (topic, queue_id, file,
    units, lo, hi, segment): each queue's files in order, its last file marked."""
    recs = [r.asDict() if hasattr(r, "asDict") else dict(r) for r in rows]
    last: dict[tuple[str, int], int] = {}
    for r in recs:
        k = (r["topic"], r["queue_id"])
        last[k] = max(last.get(k, -1), int(r["file"]))
    file_size = units_per_file * CQ_UNIT_SIZE
    out = [{"topic": r["topic"], "queue_id": r["queue_id"], "file_start": int(r["file"]) * file_size,
            "units": r["units"], "min_offset": r["lo"], "max_offset": r["hi"], "segment": r["segment"],
            "is_last": int(r["file"]) == last[(r["topic"], r["queue_id"])]} for r in recs]
    out.sort(key=lambda r: (r["topic"], r["queue_id"], r["file_start"]))
    return pa.Table.from_pylist(out, schema=CQ_INVENTORY_SCHEMA)


def index_inventory_table(rows: Sequence) -> pa.Table:
    """Index files from per-file aggregates of ``message_keys`` (index_file_no, index_file, entries, lo, hi)."""
    recs = sorted((r.asDict() if hasattr(r, "asDict") else dict(r) for r in rows), key=lambda r: r["index_file_no"])
    out = [{"index_file_no": r["index_file_no"], "index_file": r["index_file"], "entries": r["entries"],
            "min_offset": r["lo"], "max_offset": r["hi"], "segment": r["segment"], "is_last": i == len(recs) - 1}
           for i, r in enumerate(recs)]
    return pa.Table.from_pylist(out, schema=INDEX_INVENTORY_SCHEMA)


def ext_inventory_table(tables: str, config: BrokerConfig, version: int | None = None) -> pa.Table:
    """Consume queue ext files (``enableConsumeQueueExt``) from the ``messages`` table at ``version``:
    per queue, the records that put an ext unit (those ``putMessagePositionInfoWrapper`` ran for in their
    own queue, unit kept or skipped: :func:`pipelines.tables.rows.ext_put_dispatch_texts`) in commitlog
    order, the first taking the queue's ext offset 0 (as the rebuild writes them,
    :mod:`store_format.consumequeue_ext`), ``(mappedFileSizeConsumeQueueExt - 4) // 20`` a file; per file
    its units and the commitlog offsets of its first and last record.  BatchCQ topics have none."""
    import pyarrow.dataset as ds

    from ..delta import read_arrow
    from .rows import ext_put_dispatch_texts
    msgs = read_arrow(tables, "messages", ["topic", "queue_id", "commitlog_offset"],
                      filter=ds.field("dispatch").isin(ext_put_dispatch_texts()), version=version)
    if msgs is None or not msgs.num_rows:
        return pa.Table.from_pylist([], schema=EXT_INVENTORY_SCHEMA)
    if config.batch_topics:
        msgs = msgs.filter(pc.invert(pc.is_in(msgs["topic"], pa.array(sorted(config.batch_topics)))))
    msgs = msgs.sort_by([("topic", "ascending"), ("queue_id", "ascending"), ("commitlog_offset", "ascending")])
    n = msgs.num_rows
    if not n:
        return pa.Table.from_pylist([], schema=EXT_INVENTORY_SCHEMA)
    topic, qid = msgs["topic"].combine_chunks(), msgs["queue_id"].combine_chunks()
    new = np.ones(n, dtype=bool)
    if n > 1:
        new[1:] = (pc.not_equal(topic[1:], topic[:-1]).to_numpy(zero_copy_only=False)
                   | pc.not_equal(qid[1:], qid[:-1]).to_numpy(zero_copy_only=False))
    starts = np.flatnonzero(new)
    ordinal = np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.r_[starts, n]))
    per_file = ext_units_per_file(int(config.mappedFileSizeConsumeQueueExt))
    msgs = msgs.append_column("file", pa.array(ordinal // per_file))
    agg = msgs.group_by(["topic", "queue_id", "file"]).aggregate(
        [("commitlog_offset", "count"), ("commitlog_offset", "min"), ("commitlog_offset", "max")])
    size = int(config.mappedFileSizeConsumeQueueExt)
    out = [{"topic": r["topic"], "queue_id": r["queue_id"], "file_start": int(r["file"]) * size,
            "units": r["commitlog_offset_count"], "min_offset": r["commitlog_offset_min"],
            "max_offset": r["commitlog_offset_max"]} for r in agg.to_pylist()]
    out.sort(key=lambda r: (r["topic"], r["queue_id"], r["file_start"]))
    return pa.Table.from_pylist(out, schema=EXT_INVENTORY_SCHEMA)


def _dt_ms(ms: int | None) -> _dt.datetime | None:
    """A time of the plan as a datetime; unknown (negative) times are null."""
    return ms_to_datetime(ms) if ms is not None and ms >= 0 else None


def build_expiry_audit(tables: str, config: BrokerConfig, segments: pa.Table, cq_inventory: pa.Table,
                       index_inventory: pa.Table, *, as_of_ms: int, consumer_offsets: dict | None,
                       delay_offsets: dict | None, run_id: str, disk_used_ratio: float | None = None,
                       tz: str | None = None, time_source: str = "auto",
                       messages_version: int | None = None, disk_size_bytes: int | None = None,
                       manual_delete: bool = False, system_properties: dict[str, str] | None = None,
                       consumer_offsets_from: str | None = None, dledger_from: int | None = None,
                       ext_inventory: pa.Table | None = None) -> tuple[pa.Table, dict]:
    """The ``expiry_audit`` rows as of ``as_of_ms``, and a summary.

    Args:
        tables: root of the tables (the messages of the segments that go are read from it).
        config: cleanup settings.
        segments: live rows of the ``segments`` table.
        cq_inventory / index_inventory: see :func:`cq_inventory_table` / :func:`index_inventory_table`.
        consumer_offsets / delay_offsets: see :func:`load_offsets` (None: not known).
        disk_used_ratio: used share of the commitlog's disk (0..1), None: below every threshold.
        tz: the broker JVM's time zone for ``deleteWhen`` (default UTC).
        messages_version: the version of ``messages`` to read (None: the newest, i.e. what the run
            publishing the audit has just committed).
        disk_size_bytes / manual_delete / system_properties: see :func:`store_format.expiry.plan_cleanup`.
        consumer_offsets_from: where consumerOffset.json was looked for (for the "unknown" wording).
        dledger_from: with ``enableDLegerCommitLog``, the offset where DLedger's data files begin
            (segments below it are the old ``commitlog/`` of a store converted in place; None: every
            segment is a data file).  Those segments follow DLedger's rule
            (:func:`store_format.expiry_dledger.plan_dledger_cleanup`) and their rows are named
            ``dledger-<selfId>/data/<file>``.
        ext_inventory: with ``enableConsumeQueueExt``, the ext files (:data:`EXT_INVENTORY_SCHEMA`);
            None: from the ``messages`` table at ``messages_version`` (:func:`ext_inventory_table`).
            Their rows (kind ``consume_queue_ext_file``) are named ``consumequeue_ext/<topic>/<queueId>/<file>``.
    """
    from .schema import EXPIRY_AUDIT_SCHEMA
    segs = sorted(segments.to_pylist(), key=lambda r: r["base_offset"])
    facts = [SegmentFacts(s["segment"], s["base_offset"], s["file_size"], datetime_to_ms(s["file_mtime"]),
                          datetime_to_ms(s["first_store_time"]), datetime_to_ms(s["last_store_time"])) for s in segs]
    summary: dict = {"as_of": iso_ms(as_of_ms), "segments": [], "consume_queue_files": 0, "index_files": 0,
                     "unconsumed": [], "next_cleanup": None, "total_lost_messages": 0, "total_lost_bytes": 0,
                     "rounds": [], "notes": []}
    if not facts:
        summary["lost_status"] = "nothing goes"
        return pa.Table.from_pylist([], schema=EXPIRY_AUDIT_SCHEMA), summary
    opts = dict(disk_used_ratio=disk_used_ratio, disk_size_bytes=disk_size_bytes, tz=tz, time_source=time_source,
                manual_delete=manual_delete, system_properties=system_properties)
    dledger = bool(config.enableDLegerCommitLog)
    n_old = sum(f.base < dledger_from for f in facts) if dledger and dledger_from is not None else 0
    names = [s["segment"] if not dledger or i < n_old else f"{dledger_data_dir(config)}/{s['segment']}"
             for i, s in enumerate(segs)]

    def plan_for(**more: object) -> CleanupPlan:
        if dledger:
            return plan_dledger_cleanup(facts[:n_old], facts[n_old:], config, as_of_ms, **opts, **more)  # type: ignore
        return plan_cleanup(facts, config, as_of_ms, **opts, **more)  # type: ignore[arg-type]
    plan = plan_for()
    at_next = plan.at_next_cleanup()
    summary.update(_plan_summary(plan, config, names, disk_used_ratio, disk_size_bytes, manual_delete))
    summary["notes"] += _rule_notes(config, summary, plan, n_old, len(facts),
                                    None if config.brokerVersion != "auto" else plan_for(line="4"))
    if plan.next_cleanup:
        summary["next_cleanup"] = {"from": iso_ms(plan.next_cleanup[0]), "until": iso_ms(plan.next_cleanup[1])}
    audit = _Audit(as_of_ms, run_id, plan, [f.base for f in facts])
    rows, summary["segments"] = _segment_rows(audit, segs, names, at_next)
    cq_rows = _queue_file_rows(audit, cq_inventory, config)
    summary["consume_queue_files"] = audit.going(cq_rows)
    rows += cq_rows
    if config.enableConsumeQueueExt and not config.rocksdb_cq:
        if ext_inventory is None:
            ext_inventory = ext_inventory_table(tables, config, messages_version)
        ext_rows = [audit.row(**{**r, "deleted_at": _dt_ms(t), "at_next_cleanup": audit.in_next(t)})
                    for r, t in _ext_file_rows(ext_inventory, config, [s["segment"] for s in segs], audit.bases, plan,
                                               as_of_ms)]
        summary["consume_queue_ext_files"] = audit.going(ext_rows)
        summary["consume_queue_ext_rule"] = EXT_RULE
        rows += ext_rows
    index_rows = _index_file_rows(audit, index_inventory, config)
    summary["index_files"] = audit.going(index_rows)
    rows += index_rows
    # what consumers lose with the segments that go next
    going = [s["segment"] for s, nx in zip(segs, at_next) if nx]
    if config.rocksdb_cq and going:   # the database's compaction (pipelines.tables.expiry_rocksdb)
        stay = [f.base for f, nx in zip(facts, at_next) if not nx]
        last_going = max(int(plan.deleted_at[i]) for i, nx in enumerate(at_next) if nx)
        q_rows, q_summary = rocksdb_queue_rows(_going_messages(tables, going, messages_version),
                                               stay[0] if stay else facts[-1].base, as_of=audit.as_of, run_id=run_id,
                                               deleted_at=_dt_ms(last_going))
        rows.extend(q_rows)
        summary["rocksdb_queues"] = q_summary
        summary["rocksdb_new_min_offset"] = stay[0] if stay else None
    lost, uncovered = _lost_messages(tables, going, consumer_offsets, delay_offsets, messages_version)
    summary["consumer_offsets"] = {"file": consumer_offsets_from, "found": consumer_offsets is not None,
                                   "queues_without_offsets": [f"{t}/{q}" for t, q in uncovered]}
    summary["lost_status"] = ("nothing goes" if not going else "lost" if lost else
                              "unknown" if consumer_offsets is None and delay_offsets is None else
                              "partly unknown" if uncovered else "none")
    summary["unconsumed"] = lost
    summary["total_lost_messages"] = sum(r["messages"] for r in lost)
    summary["total_lost_bytes"] = sum(r["bytes"] for r in lost)
    rows += _unconsumed_rows(audit, lost)
    return pa.Table.from_pylist(rows, schema=EXPIRY_AUDIT_SCHEMA), summary


class _Audit:
    """What every ``expiry_audit`` row of one run shares: the time it is as of, the run, the cleanup plan and the
    segments' base offsets (a file goes with the segment its last unit or key points into)."""

    def __init__(self, as_of_ms: int, run_id: str, plan: CleanupPlan, bases: list[int]) -> None:
        self.as_of_ms, self.run_id, self.plan, self.bases = as_of_ms, run_id, plan, bases
        self.as_of = _dt_ms(as_of_ms)

    def row(self, **values: object) -> dict:
        return {"as_of": self.as_of, "run_id": self.run_id, **values}

    def in_next(self, t: int) -> bool:
        """Deleted at ``t`` (ms; -1: never) falls in the next cleanup's window."""
        lo_hi = self.plan.next_cleanup
        return lo_hi is not None and t >= 0 and lo_hi[0] <= t < lo_hi[1]

    def deleted_at(self, max_offsets: list[int]) -> list[int]:
        """When files whose last unit or key points at these offsets go
        (:func:`store_format.expiry.files_deleted_with`; -1: not with these segments)."""
        return files_deleted_with(max_offsets, self.bases, self.plan.deleted_at, self.as_of_ms).tolist()

    @staticmethod
    def going(rows: list[dict]) -> int:
        return sum(int(r["at_next_cleanup"]) for r in rows)


def _rule_notes(config: BrokerConfig, summary: dict, plan: CleanupPlan, n_old: int, n_segments: int,
                line_4: CleanupPlan | None) -> list[str]:
    """The summary's cleanup rule of a DLedger store and its notes: RocksDB consume queues, and with the broker line
    not known what a 4.9 broker (``line_4``, its plan) would do differently."""
    notes = []
    if config.enableDLegerCommitLog:
        summary["cleanup_rule"] = describe_dledger_rule(config, plan.thresholds, plan.line)
        summary["dledger"] = {"old_commitlog_files": n_old, "data_files": n_segments - n_old,
                              "data_dir": dledger_data_dir(config)}
    if config.rocksdb_cq:
        notes.append(ROCKSDB_CQ_NOTE)
        if config.enableDLegerCommitLog:
            notes.append(ROCKSDB_DLEDGER_NOTE)
    if line_4 is not None:
        diff = int((line_4.at_next_cleanup() != plan.at_next_cleanup()).sum())
        notes.append(
            "broker line not known (brokerVersion=auto): 5.x rules used" +
            (f"; a 4.9 broker would treat {diff} segment(s) differently at the next cleanup" if diff else
             "; a 4.9 broker deletes the same segments at the next cleanup"))
    return notes


def _segment_rows(audit: _Audit, segs: list[dict], names: list[str], at_next: np.ndarray
                  ) -> tuple[list[dict], list[dict]]:
    """A row per segment, and the summary's entries of those the next cleanup deletes."""
    plan = audit.plan
    rows, going = [], []
    for i, s in enumerate(segs):
        rows.append(audit.row(kind="segment", name=names[i], segment=s["segment"], min_offset=s["base_offset"],
                              max_offset=s["base_offset"] + (s["bytes_written"] or 0), is_last=i == len(segs) - 1,
                              reference_time=_dt_ms(int(plan.reference_ms[i])), time_source=plan.time_source[i],
                              expires_at=_dt_ms(int(plan.expires_at[i])), deleted_at=_dt_ms(int(plan.deleted_at[i])),
                              at_next_cleanup=bool(at_next[i]), reason=plan.reason[i], messages=s["records"],
                              bytes=s["file_size"]))
        if at_next[i]:
            going.append({"segment": s["segment"], "file": names[i],
                          "reference_time": iso_ms(int(plan.reference_ms[i])), "time_source": plan.time_source[i],
                          "expires_at": iso_ms(int(plan.expires_at[i])), "deleted_at": iso_ms(int(plan.deleted_at[i])),
                          "records": s["records"], "reason_kind": plan.reason_kind[i], "reason": plan.reason[i]})
    return rows, going


def _queue_file_rows(audit: _Audit, cq_inventory: pa.Table, config: BrokerConfig) -> list[dict]:
    """A row per consume queue file, queue by queue in file order (``ConsumeQueue.deleteExpiredFile``: a file goes
    once its last unit points below the new minimum commitlog offset; a queue's last file stays)."""
    by_queue: dict[tuple[str, int], list[dict]] = {}
    for r in cq_inventory.to_pylist():
        by_queue.setdefault((r["topic"], r["queue_id"]), []).append(r)
    rows = []
    for (topic, qid), files in sorted(by_queue.items()):
        files.sort(key=lambda r: r["file_start"])
        for f, t in zip(files, audit.deleted_at([f["max_offset"] for f in files])):
            rows.append(audit.row(kind="consume_queue_file", name=consume_queue_file_path(topic, qid, f["file_start"]),
                                  segment=f["segment"], topic=topic, queue_id=qid, min_offset=f["min_offset"],
                                  max_offset=f["max_offset"], is_last=f["is_last"], deleted_at=_dt_ms(t),
                                  at_next_cleanup=audit.in_next(t),
                                  reason=("last file of its queue: never deleted" if f["is_last"] else
                                          "its last unit points below the new minimum commitlog offset" if t >= 0 else
                                          "its last unit points into a segment that stays"),
                                  messages=f["units"], bytes=config.cq_file_size))
    return rows


def _index_file_rows(audit: _Audit, index_inventory: pa.Table, config: BrokerConfig) -> list[dict]:
    """A row per index file in creation order (``IndexService.deleteExpiredFile``: a file goes once its
    endPhyOffset is below the new minimum commitlog offset; the last one stays)."""
    idx = sorted(index_inventory.to_pylist(), key=lambda r: r["index_file_no"])
    return [audit.row(kind="index_file", name=f["index_file"], segment=f["segment"], min_offset=f["min_offset"],
                      max_offset=f["max_offset"], is_last=f["is_last"], deleted_at=_dt_ms(t),
                      at_next_cleanup=audit.in_next(t),
                      reason=("last index file: never deleted" if f["is_last"] else
                              "its endPhyOffset is below the new minimum commitlog offset" if t >= 0 else
                              "its endPhyOffset points into a segment that stays"),
                      messages=f["entries"], bytes=index_file_size(config.maxHashSlotNum, config.maxIndexNum))
            for f, t in zip(idx, audit.deleted_at([f["max_offset"] for f in idx]))]


def _unconsumed_rows(audit: _Audit, lost: list[dict]) -> list[dict]:
    """A row per topic, queue and group behind on messages of the segments that go (:func:`_lost_messages`)."""
    lo_hi = audit.plan.next_cleanup
    return [audit.row(kind="unconsumed", name=f"{r['topic']}@{r['group']}", segment=r["first_segment"],
                      topic=r["topic"], queue_id=r["queue_id"], consumer_group=r["group"], min_offset=r["min_offset"],
                      max_offset=r["max_offset"], deleted_at=_dt_ms(lo_hi[0]) if lo_hi else None,
                      at_next_cleanup=True,
                      reason=f"committed offset {r['committed']} is behind {r['messages']} message(s) in segments "
                             "that go", messages=r["messages"], bytes=r["bytes"])
            for r in lost]


def _ext_file_rows(ext: pa.Table, config: BrokerConfig, seg_names: list[str], bases: list[int], plan: CleanupPlan,
                   as_of_ms: int) -> list[tuple[dict, int]]:
    """The ext files' rows (without the time columns) and the round that deletes each (-1: none),
    queue by queue (:func:`store_format.expiry.ext_files_deleted_with`)."""
    by_queue: dict[tuple[str, int], list[dict]] = {}
    for r in ext.to_pylist():
        by_queue.setdefault((r["topic"], r["queue_id"]), []).append(r)
    size = int(config.mappedFileSizeConsumeQueueExt)
    out = []
    for (topic, qid), files in sorted(by_queue.items()):
        files.sort(key=lambda r: r["file_start"])
        keys = [f["min_offset"] for f in files[1:]] + [None]
        when, why = ext_files_deleted_with(keys, files[-1]["max_offset"], bases, plan.deleted_at, as_of_ms)
        for i, (f, t, w) in enumerate(zip(files, when.tolist(), why.tolist())):
            k = int(np.searchsorted(bases, f["max_offset"], side="right")) - 1
            reason = (
                "last ext file of its queue: never deleted (truncateByMinAddress keeps the file of the queue's first "
                "unit)" if w == EXT_LAST else
                "truncateByMinAddress: the queue's first unit at or above the new minimum commitlog offset has its "
                "ext unit past this file's end" if w == EXT_GOES else
                "kept: when the minimum passes the next ext file's first record, every unit of the queue lies below "
                "it, so correctMinOffset finds no unit and no ext address (cut only after new messages)"
                if w == EXT_NO_UNIT_LEFT else
                "the record opening the next ext file lies in a segment that stays: the queue's first unit left keeps "
                "its ext unit in this file or at the next one's start")
            out.append(({"kind": EXT_KIND, "name": f"consumequeue_ext/{topic}/{qid}/{segment_name(f['file_start'])}",
                         "segment": seg_names[max(k, 0)], "topic": topic, "queue_id": qid,
                         "min_offset": f["min_offset"], "max_offset": f["max_offset"], "is_last": i == len(files) - 1,
                         "reason": reason, "messages": f["units"], "bytes": size}, int(t)))
    return out


def _plan_summary(plan: CleanupPlan, config: BrokerConfig, names: list[str], disk_used_ratio: float | None,
                  disk_size_bytes: int | None, manual_delete: bool) -> dict:
    """The plan's rules in words: broker line, time source, disk state and the next cleanup's rounds."""
    out: dict = {"broker_line": "4.9" if plan.line == "4" else "5.x",
                 "time_source": {"used": plan.time_source[0] if plan.time_source else None,
                                 "why": plan.time_source_why},
                 "disk": None, "rounds": [], "notes": []}
    lo_hi = plan.next_cleanup
    window = [r for r in plan.rounds if lo_hi and lo_hi[0] <= r.at_ms < lo_hi[1]]
    for r in window:
        out["rounds"].append({"at": iso_ms(r.at_ms), "segments": r.count, "first": names[r.first],
                              "trigger": r.trigger, "forced": r.forced,
                              "disk_before_percent": None if r.ratio_before is None else round(r.ratio_before * 100),
                              "disk_after_percent": None if r.ratio_after is None else round(r.ratio_after * 100)})
    th = plan.thresholds
    if disk_used_ratio is not None and plan.ratio_read is not None:
        after = window[-1].ratio_after if window and disk_size_bytes else None
        if not disk_size_bytes:
            model = ("disk size not given (--disk-size): the audit holds the ratio at "
                     f"{plan.ratio_read * 100:.0f} % through every round, so disk-driven rounds go on until only the "
                     "last segment is left: the most the broker can delete (it stops once the ratio falls below "
                     "the thresholds)")
        else:
            model = (f"each deleted segment frees its file size on a disk of {disk_size_bytes:,} bytes; freed "
                     "consume queue and index files are not counted (more rounds than the broker, at most) and "
                     "neither are new writes (refused above the warning ratio, counted nowhere below it)")
        out["disk"] = {"used_percent": disk_used_ratio * 100, "read_as_percent": round(plan.ratio_read * 100),
                       "size_bytes": disk_size_bytes, "max_used_percent": round(th.max_used * 100),
                       "clean_forcibly_percent": round(th.clean_forcibly * 100),
                       "warning_percent": round(th.warning * 100), "threshold_sources": list(th.sources),
                       "round_due": plan.space.round_due, "clean_immediately": plan.space.clean_immediately,
                       "clean_file_forcibly_enable": bool(config.cleanFileForciblyEnable),
                       "writes_refused": plan.space.writes_refused,
                       "after_next_cleanup_percent": None if after is None else round(after * 100),
                       "writes_refused_after": None if after is None else after > th.warning, "model": model}
        if plan.space.clean_immediately and not config.cleanFileForciblyEnable:
            out["notes"].append(f"the disk is above the clean-forcibly ratio ({th.clean_forcibly * 100:.0f} %) but "
                                "cleanFileForciblyEnable=false: only expired segments go")
    if plan.cleanup_error:
        out["notes"].append(f"nothing is ever deleted: {plan.cleanup_error}")
    if manual_delete:
        out["notes"].append(f"manual delete (deleteExpiredCommitLog): the next {MAX_MANUAL_DELETE_FILE_TIMES} rounds "
                            "run whatever the hour; they delete expired segments only (unless the disk forces more)")
    return out


def _going_messages(tables: str, segments: list[str], version: int | None) -> pa.Table | None:
    """The ``messages`` rows (units and light queue units) of the segments that go."""
    import pyarrow.dataset as ds

    from ..delta import read_arrow
    return read_arrow(tables, "messages", ["segment", "topic", "queue_id", "consume_queue_offset", "commitlog_offset",
                                           "consume_queue", "lmq_queues", "lmq_queue_ids", "lmq_consume_queue_offsets"],
                      filter=ds.field("segment").isin(segments), version=version)


def _lost_messages(tables: str, segments: list[str], consumer: dict | None, delay: dict | None,
                   version: int | None = None) -> tuple[list[dict], list[tuple[str, int]]]:
    """Per topic, queue and group: messages of ``segments`` at or after the committed offset; and the
    queues with messages in ``segments`` that no group (nor the schedule service) has an offset for."""
    offsets = []
    for key, queues in (consumer or {}).items():
        if "@" not in key:
            continue
        topic, group = key.split("@", 1)
        for qid, off in queues.items():
            offsets.append({"topic": topic, "queue_id": int(qid), "group": group, "committed": int(off)})
    for level, off in (delay or {}).items():
        offsets.append({"topic": SCHEDULE_TOPIC, "queue_id": int(level) - 1, "group": SCHEDULE_GROUP,
                        "committed": int(off)})
    if not segments or (consumer is None and delay is None):
        return [], []  # nothing goes, or nothing is known about any queue: no need to read the messages
    import pyarrow.dataset as ds

    from ..delta import read_arrow
    msgs = read_arrow(tables, "messages", ["segment", "topic", "queue_id", "consume_queue_offset", "commitlog_offset",
                                           "size"],
                      filter=ds.field("segment").isin(segments) & ds.field("consume_queue"), version=version)
    if msgs is None or not msgs.num_rows:
        return [], []
    queues = msgs.group_by(["topic", "queue_id"]).aggregate([]).to_pylist()
    covered = {(o["topic"], o["queue_id"]) for o in offsets}
    uncovered = sorted((q["topic"], int(q["queue_id"])) for q in queues if (q["topic"], q["queue_id"]) not in covered)
    if not offsets:
        return [], uncovered
    table = pa.Table.from_pylist(offsets, schema=pa.schema([("topic", pa.string()), ("queue_id", pa.int32()),
                                                            ("group", pa.string()), ("committed", pa.int64())]))
    joined = msgs.join(table, ["topic", "queue_id"], join_type="inner")
    behind = joined.filter(pc.greater_equal(joined["consume_queue_offset"], joined["committed"]))
    if not behind.num_rows:
        return [], uncovered
    agg = behind.group_by(["topic", "queue_id", "group", "committed"]).aggregate([
        ("size", "count"), ("size", "sum"), ("commitlog_offset", "min"), ("commitlog_offset", "max"),
        ("segment", "min")])
    out = [{"topic": r["topic"], "queue_id": r["queue_id"], "group": r["group"], "committed": r["committed"],
            "messages": r["size_count"], "bytes": int(r["size_sum"]), "min_offset": r["commitlog_offset_min"],
            "max_offset": r["commitlog_offset_max"], "first_segment": r["segment_min"]} for r in agg.to_pylist()]
    return sorted(out, key=lambda r: (r["group"], r["topic"], r["queue_id"])), uncovered
