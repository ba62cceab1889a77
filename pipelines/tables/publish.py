"""Publish the Delta tables from a rebuild's own results.

After the files are committed, one Spark job writes ``messages`` and ``message_keys``: each task
takes whole segments of the reput's path (the chain), walks their splits again in its own process
(the walk costs little next to writing Parquet) and places every record with what the rebuild
decided:

* its consume queue unit: the build tasks kept each queue's append state as each split began
  (:func:`pipelines.workfiles.read_queue_states`); the task replays
  :func:`store_format.consumequeue.assign_positions` from that state, so the tables and the files
  agree by construction;
* its index keys: the chain's endPhyOffset carry and key ordinal per split, and the index file
  names the rebuild gave (in the run's time zone).

Tasks write their Parquet files themselves (no rows cross into the JVM); a segment's keys go to
one file per key bucket, sorted by ``key_hash``.  Tasks also return small figures per segment
(records, times, topics).  The driver commits both tables with delta-rs, then writes ``segments``,
``anomalies`` (the run's findings as every mode reports them, :mod:`pipelines.anomalies`),
``expiry_audit`` and, last, the ``runs`` row from those figures and the build's file inventory:
nothing is read back.

The incremental refresh (:mod:`.refresh`) runs the same tasks on the segments it rescans, with the
queue states and index ordinals carried from the previous run (``RebuildResults.resumed``): its
commits replace the partitions of those segments and of the deleted ones, and the other segments
keep their rows, figures and anomalies.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.consumequeue import QueueTable, assign_positions
from store_format.dispatch import queue_units
from store_format.layout import CQ_UNIT_SIZE
from store_format.store import Reader, StoreLocation, resolve
from store_format.timeutil import ms_to_datetime

from ..build_batch import place_batch_units
from ..chain import Chain, ChainEntry
from ..delta import STAGING, Where, commit_parquet_files, open_writer, writer_choice
from ..oserrors import naming
from ..scan import WORKER_SCRATCH, records_batch, walk_split
from ..session import run_tasks
from ..workfiles import read_queue_states
from .rows import NOT_DISPATCHED, SplitContext, encoded_key_rows, message_rows, np_col
from .schema import (
    ANOMALIES_SCHEMA,
    DESCRIPTIONS,
    EXPIRY_AUDIT_SCHEMA,
    FILE_ORDER,
    MESSAGES_SCHEMA,
    RUNS_SCHEMA,
    SEGMENTS_SCHEMA,
    default_key_buckets,
    key_buckets_of,
    message_keys_schema,
)

__all__ = ["stage_tables", "RebuildResults", "Resumed", "PendingTables", "discard_staged_tables"]

_log = logging.getLogger("pipelines.tables")   # its stage line: [tables] writer ...


# dictionary encoding only for columns with few distinct values (the others cost time and gain nothing)
_MESSAGES_DICTIONARY = ["topic", "transaction_type", "born_host", "store_host", "tags", "real_topic", "retry_topic",
                        "dispatch", "run_id"]
_KEYS_DICTIONARY = ["topic", "kind", "index_file", "run_id"]


@dataclasses.dataclass
class RebuildResults:
    """What a rebuild knows when its files are committed, for the tables."""
    store: StoreLocation
    config: BrokerConfig
    chain: Chain
    index_in: dict[int, tuple[int, int, int]]   # split -> (endPhyOffset carry, keys before, keys in it)
    cq_files: list[dict]                         # build results of the consume queue files
    index_files: list[dict]                      # build results of the index files (with their names)
    work_uri: str                                # the run's work folder (queue states)
    buckets: int                                 # queue buckets of the build
    run_id: str
    started: float                               # epoch seconds
    timings: dict[str, float]
    anomalies: list[dict] = dataclasses.field(default_factory=list)   # the run's findings
    #                                            (:func:`pipelines.anomalies.walk_anomalies` rows)
    scanned_store: StoreLocation | None = None   # the segments the chain walked, numbered from 0 (None: ``store``)
    command: str = "rebuild"                     # the runs row's command
    resumed: Resumed | None = None               # an incremental refresh: the run it continues

    @property
    def walked(self) -> StoreLocation:
        """The store as the chain numbers its segments."""
        return self.scanned_store or self.store


@dataclasses.dataclass
class Resumed:
    """What ``python -m pipelines tables`` (:mod:`.refresh`) continues: the rows of the segments
    before the first walked one stay, those from it on and those of deleted segments are replaced."""
    snap: Any                                   # runs.Snapshot: the latest complete run (the previous state)
    mode: str                                   # "incremental", or "full" (no previous run, or --full)
    last_queue_offsets: dict[tuple[str, int], int] = dataclasses.field(default_factory=dict)
    #                                           each queue's last queue offset before the first walked segment


class _TablesTask:
    """The tables tasks: one task = a run of chain entries (whole segments where possible)."""

    def __init__(self, groups: list[list[ChainEntry]], res: RebuildResults, tables: str, ctx: SplitContext,
                 with_body: bool) -> None:
        self.groups = groups
        self.store_uri = res.store.uri
        self.config = res.config
        self.work_uri = res.work_uri
        self.buckets = res.buckets
        self.tables = tables
        self.ctx = ctx
        self.with_body = with_body

    def rows(self, task: int) -> list[dict]:
        """Write the task's rows; its files and figures."""
        cl.use_system_allocator()
        return self.run(self.groups[task])

    def run(self, entries: list[ChainEntry]) -> list[dict]:
        fs, _ = resolve(self.store_uri)
        states_by_split = read_queue_states(self.work_uri, self.buckets, {e.split.split_id for e in entries})
        out = _TaskOutput(self.tables, self.ctx)
        queues = QueueTable()
        for entry in entries:
            split = entry.split
            with Reader(fs, split.path) as read:
                _sync, res = walk_split(split, read, self.config, entering=entry.entering if entry.replaced else None,
                                        limit_rel=entry.limit_rel, scratch=WORKER_SCRATCH)
            if res is None or not len(res.rec):
                continue
            # where its units went: the builder's queue states as this split began, replayed
            units = queue_units(res, self.config.batch_topics)
            global_q = queues.numbers(units.queues)
            for key, q in zip(units.queues, global_q):
                entry_state = states_by_split.get(split.split_id, {}).get(key)
                if entry_state is not None:
                    queues.states[q] = entry_state
            qidx = global_q[units.queue] if len(units) else np.zeros(0, dtype=np.int64)
            if self.config.rocksdb_cq:   # every unit is put under its queue offset (store_format.rocksdb_cq)
                pos = np.asarray(units.queue_offset, dtype=np.int64) * CQ_UNIT_SIZE
            else:
                pos = assign_positions(qidx, units.offset, units.size, units.queue_offset,
                                       self.config.cq_file_size, queues.states)
            if self.config.batch_topics:   # BatchCQ topics' units: their number in batchconsumequeue/
                pos = place_batch_units(units, states_by_split.get(split.split_id, {}), self.config.batch_topics,
                                        pos)
            record_pos = np.full(len(res.rec), -1, dtype=np.int64)
            own = units.first_of_each_record()
            record_pos[units.record[own]] = pos[own]   # a record's own unit comes before its light queues'
            # the scan walked these records from the same place: its CRC findings stand (not a re-walk)
            batch = records_batch(split, res, {}, True, self.with_body,
                                  scan_summary=None if entry.replaced else entry.summary)
            part = pa.Table.from_batches([batch]).slice(0, batch.num_rows - 1)   # the records; the trailer row last
            light = np.ones(len(units), dtype=bool)
            light[own] = False   # the light queue units, in record order: as the records' lmq_topics list them
            ctx = dataclasses.replace(self.ctx, queue_plan={split.split_id: record_pos},
                                      lmq_plan={split.split_id: pos[light]})
            out.add_split(split.split_id, part, message_rows(part, split.split_id, ctx, self.with_body),
                          encoded_key_rows(part, split.split_id, ctx))
        return out.finish()


def _bucket_hash_order(bucket: np.ndarray, key_hash: np.ndarray) -> np.ndarray:
    """Rows by (bucket, key_hash), rows of equal values in their order (put order): three stable
    passes over 16-bit digits, which numpy sorts by radix (a quarter of the time of one 64-bit sort)."""
    h = key_hash.astype(np.uint32)
    order = np.argsort((h & 0xFFFF).astype(np.uint16), kind="stable")
    order = order[np.argsort((h[order] >> 16).astype(np.uint16), kind="stable")]
    return order[np.argsort(bucket[order].astype(np.uint16), kind="stable")]


class _TaskOutput:
    """A task's Parquet writers (one messages file per segment, keys per segment and bucket) and figures."""

    def __init__(self, tables: str, ctx: SplitContext) -> None:
        self.fs, self.root = resolve(tables)
        self.ctx = ctx
        self.tag = uuid.uuid4().hex[:12]
        self.rows: list[dict] = []
        self.segment: str | None = None
        self.writer: pq.ParquetWriter | None = None
        self.messages_path: str | None = None
        self.stream: Any = None
        self.keys: list[pa.Table] = []
        self.figures: dict[str, dict] = {}

    def _staged(self, table: str, rel_dir: str, name: str) -> str:
        d = f"{self.root}/{table}/{STAGING}/{self.ctx.run_id}/{rel_dir}"
        self.fs.create_dir(d, recursive=True)
        return f"{d}/{name}"

    def _close_segment(self) -> None:
        if self.writer is not None:
            with naming(self.messages_path):
                self.writer.close()
                self.stream.close()
            self.writer = None
        if self.keys:
            keys = pa.concat_tables(self.keys).unify_dictionaries().combine_chunks()
            keys = keys.take(pa.array(_bucket_hash_order(np_col(keys["key_bucket"]), np_col(keys["key_hash"]))))
            buckets = np_col(keys["key_bucket"])
            cuts = np.r_[0, np.flatnonzero(np.diff(buckets)) + 1, len(buckets)]
            for a, b in zip(cuts[:-1], cuts[1:]):
                part = keys.slice(int(a), int(b - a)).drop_columns(["segment", "key_bucket"])
                rel = f"segment={self.segment}/key_bucket={int(buckets[a])}"
                path = self._staged("message_keys", rel, f"part-{self.tag}.parquet")
                with naming(path), self.fs.open_output_stream(path) as stream:
                    pq.write_table(part, stream, compression="snappy", coerce_timestamps="us",
                                   use_dictionary=_KEYS_DICTIONARY, store_schema=False)
                self.rows.append({"table": "message_keys", "path": path, "info": None})
            self.keys = []

    def add_split(self, split_id: int, part: pa.Table, messages: pa.Table, keys: pa.Table) -> None:
        seg = self.ctx.segment_names[split_id]
        if seg != self.segment:
            self._close_segment()
            self.segment = seg
            path = self._staged("messages", f"segment={seg}", f"part-{self.tag}.parquet")
            self.messages_path = path
            with naming(path):
                self.stream = self.fs.open_output_stream(path)
                schema = MESSAGES_SCHEMA.remove(MESSAGES_SCHEMA.get_field_index("segment"))
                self.writer = pq.ParquetWriter(self.stream, schema, compression="snappy", coerce_timestamps="us",
                                               use_dictionary=_MESSAGES_DICTIONARY)
            self.rows.append({"table": "messages", "path": path, "info": None})
        with naming(self.messages_path):
            self.writer.write_table(messages.drop_columns(["segment"]))  # type: ignore[union-attr]
        if keys.num_rows:
            self.keys.append(keys)
        self._figures(seg, part, messages, keys)

    def _figures(self, seg: str, part: pa.Table, messages: pa.Table, keys: pa.Table) -> None:
        f = self.figures.setdefault(seg, {"records": 0, "dispatched": 0, "first": None, "last": None, "topics": set(),
                                          "keys": 0})
        f["records"] += part.num_rows
        dispatch = messages["dispatch"]
        f["dispatched"] += int(pc.sum(pc.invert(pc.starts_with(dispatch, NOT_DISPATCHED))).as_py() or 0)
        ts = np_col(part["store_timestamp"])
        if len(ts):
            f["first"] = int(ts.min()) if f["first"] is None else min(f["first"], int(ts.min()))
            f["last"] = int(ts.max()) if f["last"] is None else max(f["last"], int(ts.max()))
        f["topics"].update(pc.unique(part["topic"]).drop_null().to_pylist())
        f["keys"] += keys.num_rows

    def finish(self) -> list[dict]:
        self._close_segment()
        info = {"figures": {s: dict(f, topics=sorted(f["topics"])) for s, f in self.figures.items()}}
        return self.rows + [{"table": None, "path": None, "info": json.dumps(info)}]


def _task_groups(chain: Chain, parallelism: int) -> list[list[ChainEntry]]:
    """Runs of chain entries: whole segments per task when there are enough segments for the cores,
    so that each (segment, key bucket) gets one sorted file; else runs of splits."""
    by_segment: list[list[ChainEntry]] = []
    for e in chain.entries:
        if by_segment and by_segment[-1][0].split.segment == e.split.segment:
            by_segment[-1].append(e)
        else:
            by_segment.append([e])
    if len(by_segment) >= parallelism:
        return [[e for seg in block for e in seg] for block in np.array_split(np.array(by_segment, dtype=object),
                                                                               parallelism) if len(block)]
    n = min(len(chain.entries), parallelism)
    return [list(block) for block in np.array_split(np.array(chain.entries, dtype=object), n) if len(block)]


def stage_tables(spark, tables: str, res: RebuildResults, *, with_body: bool = False,
                 key_buckets: int | None = None) -> PendingTables:
    """Write the rows of ``messages`` and ``message_keys`` of a rebuild (or of the segments a refresh
    walked) as staged Parquet files (see the module docstring); :meth:`PendingTables.finish` commits
    them and the other tables.  ``key_buckets``: for a new ``message_keys`` table (an existing one
    keeps its own; default :func:`default_key_buckets`)."""
    t0 = time.perf_counter()
    config, chain = res.config, res.chain
    seg_names = {s.index: s.name for s in res.walked.segments}
    split_seg = {e.split.split_id: seg_names[e.split.segment] for e in chain.entries}
    buckets = key_buckets_of(tables) or key_buckets or default_key_buckets(config)
    index_names = {r["task_id"]: r["name"] for r in res.index_files}
    ctx = SplitContext(split_seg, {sid: (int(v[0]), int(v[1])) for sid, v in res.index_in.items()}, {},
                       index_names, res.run_id, config.cq_file_size, config.index_entries_per_file,
                       config.maxHashSlotNum, bool(config.writes_index_files), buckets)
    parallelism = max(spark.sparkContext.defaultParallelism, 1)
    groups = _task_groups(chain, parallelism)
    task = _TablesTask(groups, res, tables, ctx, with_body)
    rows = run_tasks(spark, task, len(groups), "tables: messages and message_keys") if groups else []
    res.timings["tables: rows"] = round(time.perf_counter() - t0, 3)
    return PendingTables(spark, tables, res, rows, with_body, buckets, split_seg)


# tables written only by runs that hold the lock of TABLES (rebuild, tables: pipelines.outlock);
# expiry_audit is written by ``audit --write``, which does not take it
_LOCKED_TABLES = ("messages", "message_keys", "segments", "anomalies", "runs")


def discard_staged_tables(tables: str, run_id: str | None = None) -> list[str]:
    """Remove the staged files of run ``run_id`` under ``TABLES/<table>/_staging/`` (a failed
    publish), or with ``run_id`` None those of every run (called holding the lock of ``TABLES``: any
    staging there is a dead run's), then the ``_staging`` folders left empty, and ``TABLES`` itself
    if nothing else is in it.  Returns what was removed."""
    fs, root = resolve(tables)
    root = root.rstrip("/")
    removed = []
    for table in _LOCKED_TABLES:
        staging = f"{root}/{table}/{STAGING}"
        try:
            runs = [i for i in fs.get_file_info(pafs.FileSelector(staging, allow_not_found=True))
                    if i.type == pafs.FileType.Directory and (run_id is None or i.base_name == run_id)]
            for info in runs:
                fs.delete_dir(info.path)
                removed.append(info.path)
            for folder in (staging, f"{root}/{table}"):
                if (fs.get_file_info(folder).type == pafs.FileType.Directory
                        and not fs.get_file_info(pafs.FileSelector(folder))):
                    fs.delete_dir(folder)
        except OSError:
            continue
    try:
        if fs.get_file_info(root).type == pafs.FileType.Directory and not fs.get_file_info(pafs.FileSelector(root)):
            fs.delete_dir(root)
    except OSError:
        pass
    return removed


@dataclasses.dataclass
class PendingTables:
    """Rows written, not yet committed."""
    spark: Any
    tables: str
    res: RebuildResults
    rows: list
    with_body: bool
    buckets: int
    split_seg: dict[int, str]

    def finish(self) -> dict:
        return _finish(self)


def _finish(p: PendingTables) -> dict:
    """Commit the rows written (``messages``, ``message_keys``), then the small tables (``segments``,
    ``anomalies``, ``expiry_audit``) and the ``runs`` row last: its row marks a complete publication."""
    from .runs import report_interrupted, snapshot
    from .small_tables import segment_ends, segment_rows
    t0 = time.perf_counter()
    tables, res = p.tables, p.res
    chain, st, walked, resumed = res.chain, res.store, res.walked, res.resumed
    resume_name = walked.segments[0].name
    figures = _task_figures(p.rows)

    lap = time.perf_counter()
    # the latest complete run: the previous state, whatever an interrupted publication left after it
    # (this run overwrites every table, or, resumed, the partitions the interrupted one replaced: it
    # completes that publication)
    snap = resumed.snap if resumed else snapshot(tables)
    recovered = report_interrupted(snap, res.run_id)
    prev_segments = snap.read_arrow("segments")
    store_names = {s.name for s in st.segments}
    deleted_now: list[str] = []
    where = None
    if resumed:   # rows of the walked segments and of those the broker deleted are replaced
        if prev_segments is not None:
            deleted_now = sorted(n for n, s in zip(prev_segments["segment"].to_pylist(),
                                                   prev_segments["status"].to_pylist())
                                 if s == "live" and n not in store_names)
        where = Where((("segment", ">=", resume_name), ("segment", "in", tuple(deleted_now)),
                       ("segment", "<", st.segments[0].name)))
    kind, why = writer_choice(p.spark)
    _log.info("writer %s%s", kind, f" ({why})" if why else "")
    writer = open_writer(p.spark, tables, res.run_id, prefer=kind)
    versions = _commit_message_tables(writer, p.rows, p.buckets, where)
    res.timings["tables: commit"] = round(time.perf_counter() - lap, 3)

    # segments, anomalies, expiry audit, and the run last: its row marks a complete publication
    lap = time.perf_counter()
    back = {"segments": {s: {"records": f["records"], "dispatched": f["dispatched"],
                             "first": None if f["first"] is None else f["first"] * 1000,
                             "last": None if f["last"] is None else f["last"] * 1000, "topics": f["topics"]}
                         for s, f in figures.items()},
            "keys": {s: f["keys"] for s, f in figures.items()}}
    seg_table = segment_rows(st, segment_ends(chain, walked), back, prev_segments, res.run_id,
                             kept_before=resume_name if resumed else None)
    versions["segments"] = writer.write("segments", seg_table, SEGMENTS_SCHEMA, description=DESCRIPTIONS["segments"])
    # the run's findings (:func:`pipelines.anomalies.walk_anomalies`): the same in every mode
    anomalies = [{"run_id": res.run_id, **a} for a in res.anomalies]
    prev_anomalies = snap.read_arrow("anomalies") if resumed else None
    if prev_anomalies is not None:   # earlier rows of the live segments not walked again
        anomalies = [r for r in prev_anomalies.to_pylist() if r["segment"] is not None and r["segment"] < resume_name
                     and r["segment"] in store_names] + anomalies
    versions["anomalies"] = writer.write("anomalies", pa.Table.from_pylist(anomalies, schema=ANOMALIES_SCHEMA),
                                         ANOMALIES_SCHEMA, description=DESCRIPTIONS["anomalies"])
    audit_rows, audit_summary = _expiry_audit(tables, res, seg_table)
    versions["expiry_audit"] = writer.write("expiry_audit", audit_rows, EXPIRY_AUDIT_SCHEMA,
                                            description=DESCRIPTIONS["expiry_audit"])
    res.timings["tables: small tables"] = round(time.perf_counter() - lap, 3)
    n_msgs = sum(f["records"] for f in figures.values())
    n_keys = sum(f["keys"] for f in figures.values())
    res.timings["tables"] = round(time.perf_counter() - t0, 3)
    run_row = _run_row(p, writer, versions, messages=n_msgs, keys=n_keys, anomalies=len(anomalies),
                       deleted=len(deleted_now), resume_name=resume_name)
    writer.write("runs", pa.Table.from_pylist([run_row], schema=RUNS_SCHEMA), RUNS_SCHEMA, mode="append",
                 description=DESCRIPTIONS["runs"])
    return {"tables": tables, "run_id": res.run_id, "writer": writer.kind, "messages": n_msgs, "keys": n_keys,
            "anomalies": len(anomalies), "anomaly_rows": anomalies, "next_cleanup": audit_summary.get("next_cleanup"),
            "recovered": [r.as_dict() for r in recovered], "segments_deleted": deleted_now,
            "resume_segment": resume_name}


def _task_figures(rows: list) -> dict[str, dict]:
    """Each segment's figures (records, dispatched, keys, first and last store time, topics) summed over the tasks'
    ``info``, in chain order."""
    infos = [json.loads(r["info"]) for r in rows if r["info"]]
    infos.sort(key=lambda i: min(i["figures"]) if i["figures"] else "")
    figures: dict[str, dict] = {}
    for info in infos:
        for seg, f in info["figures"].items():
            g = figures.get(seg)
            if g is None:
                figures[seg] = f
                continue
            for k in ("records", "dispatched", "keys"):
                g[k] += f[k]
            g["first"] = min((v for v in (g["first"], f["first"]) if v is not None), default=None)
            g["last"] = max((v for v in (g["last"], f["last"]) if v is not None), default=None)
            g["topics"] = sorted(set(g["topics"]) | set(f["topics"]))
    return figures


def _commit_message_tables(writer: Any, rows: list, buckets: int, where: Where | None) -> dict[str, Any]:
    """Commit the tasks' parquet files of ``messages`` and ``message_keys`` (``where``: the partitions a resumed
    run replaces; None: the whole table); their versions."""
    paths = {"messages": [r["path"] for r in rows if r["table"] == "messages"],
             "message_keys": [r["path"] for r in rows if r["table"] == "message_keys"]}
    return {
        "messages": commit_parquet_files(writer, "messages", MESSAGES_SCHEMA, paths["messages"],
                                         partition_by=["segment"], where=where, description=DESCRIPTIONS["messages"],
                                         sort_by=FILE_ORDER["messages"]),
        "message_keys": commit_parquet_files(writer, "message_keys", message_keys_schema(buckets),
                                             paths["message_keys"], partition_by=["segment", "key_bucket"],
                                             where=where, description=DESCRIPTIONS["message_keys"],
                                             sort_by=FILE_ORDER["message_keys"])}


def _expiry_audit(tables: str, res: RebuildResults, seg_table: pa.Table) -> tuple[pa.Table, dict]:
    """The ``expiry_audit`` rows as of the run's start (:func:`pipelines.tables.expiry_audit.build_expiry_audit`)
    from the live segments, the consume queue files holding units and the index files holding keys."""
    from .expiry_audit import build_expiry_audit, cq_inventory_table, index_inventory_table, load_offsets
    config, st = res.config, res.store
    consumer, delay = load_offsets(st.uri, None, None)
    units_per_file = config.cq_file_size // CQ_UNIT_SIZE
    cq_rows = [{"topic": r["topic"], "queue_id": r["queue_id"], "file": r["file_start"] // config.cq_file_size,
                "units": r["entries"], "lo": r["begin_offset"], "hi": r["end_offset"],
                "segment": _segment_of(st, r["end_offset"])} for r in res.cq_files if r["entries"]]
    idx_rows = [{"index_file_no": r["task_id"], "index_file": r["name"], "entries": r["entries"],
                 "lo": r["begin_offset"], "hi": r["end_offset"] if r["entries"] else None,
                 "segment": _segment_of(st, r["end_offset"]) if r["entries"] else None}
                for r in res.index_files if r["entries"]]
    return build_expiry_audit(
        tables, config, seg_table.filter(pc.equal(seg_table["status"], "live")),
        cq_inventory_table(cq_rows, units_per_file), index_inventory_table(idx_rows),
        as_of_ms=int(res.started * 1000), consumer_offsets=consumer, delay_offsets=delay, run_id=res.run_id,
        # a converted store not yet started with DLedger: its first data file comes after the last old file
        dledger_from=st.dledger.first_offset if st.dledger is not None else
        st.segments[-1].end if st.dledger_pending and st.segments else None)


def _run_row(p: PendingTables, writer: Any, versions: dict[str, Any], *, messages: int, keys: int, anomalies: int,
             deleted: int, resume_name: str) -> dict:
    """The ``runs`` row of this publication (its tables' versions, what it walked, its timings)."""
    from .small_tables import table_versions
    res = p.res
    st, chain, split_seg = res.store, res.chain, p.split_seg
    last_entry = chain.entries[-1] if chain.entries else None
    return {
        "run_id": res.run_id, "command": res.command, "mode": res.resumed.mode if res.resumed else "full",
        "started_at": ms_to_datetime(int(res.started * 1000)),
        "finished_at": ms_to_datetime(int(time.time() * 1000)), "store": st.uri if "://" in st.uri else st.root,
        "tables": p.tables, "config": json.dumps(res.config.as_properties(), sort_keys=True),
        "versions": json.dumps(table_versions(writer, versions)), "with_body": p.with_body,
        "segments_in_store": len(st.segments), "segments_scanned": len(set(split_seg.values())),
        "segments_deleted": deleted, "resume_segment": resume_name,
        "watermark_segment": split_seg[last_entry.split.split_id] if last_entry else resume_name,
        "watermark_offset": (last_entry.split.seg_base + int(last_entry.summary.get("bufpos", 0))
                             if last_entry else None),
        "records_scanned": sum(e.summary.get("records", 0) for e in chain.entries),
        "messages_written": messages, "keys_written": keys, "anomalies": anomalies,
        "timings": json.dumps(res.timings)}


def _segment_of(st: StoreLocation, offset: int | None) -> str | None:
    if offset is None:
        return None
    seg = st.segment_at(int(offset))
    return seg.name if seg is not None else None
