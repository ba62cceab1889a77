"""Publish what the scan decoded as Delta tables, and refresh them incrementally.

Tables under one root (schemas below, one line per column in the README):

* ``messages``       one row per commitlog record on the reput's path, partitioned by ``segment``;
                     each split's rows land in one file, ordered by commitlog offset (file statistics
                     on ``commitlog_offset`` and ``store_timestamp`` prune offset and time lookups).
* ``message_keys``   one row per index entry, partitioned by ``segment`` and ``key_bucket`` (=
                     ``key_hash % B``, B in the column's metadata ``rocketmq.keyBuckets``, 1 per 32 MiB
                     of segment up to 32): a lookup of ``topic#key`` reads one bucket of each segment.
* ``segments``       one row per commitlog segment seen, live or deleted (rewritten each run).
* ``expiry_audit``   the next cleanups as of the run (or of ``audit --as-of``), plus the inventory of
                     consume queue and index files the audit needs (rewritten each run).
* ``anomalies``      what the scan found wrong (rewritten each run: earlier rows of unscanned
                     segments are kept).
* ``runs``           one row per run (appended): inputs, versions, counts, timings, watermark.

Every run is one commit per table (:mod:`pipelines.delta`), and its ``runs`` row, written last,
records the version of each: readers see the tables of the latest complete run, and a run interrupted
half-way is completed by the next (:mod:`.runs`).  Rows of a rescanned segment replace the
segment's earlier rows (so merging by commitlog offset never duplicates), and rows of segments the
broker deleted since the last run go (the ``segments`` row stays, marked ``deleted``).

``python -m pipelines tables --store STORE --tables PATH`` refreshes the tables alone: it rescans
from the start of the segment where the previous run's walk ended (the watermark in ``runs``): an
earlier complete segment ends in a blank record, so the reput enters the next segment at its start.
The refresh is the rebuild's own job on those segments, seeded with the state the previous run's
tables give as the first of them begins (:class:`ResumeState`):

1. the rebuild's scan and chain (:func:`pipelines.stages.scan_and_chain`: scan tasks writing the
   work files, the chain), the index state (``IndexService.buildIndex``'s endPhyOffset and the key
   ordinals, :class:`pipelines.chain.IndexSeed`) carried from the last entry before the rescanned
   segments;
2. the rebuild's consume queue tasks (:func:`pipelines.build.build_queue_bucket`, one per queue
   bucket) carry each queue's append state (``ConsumeQueue.putMessagePositionInfo``) from the resume
   state through the rescanned splits and keep it as each split begins, writing no consume queue file
   (a RocksDB consume queue needs none of this: each unit is put under its queue offset);
3. the index files that start in the rescanned segments get their names from their first entry's
   store time (after the previous file's);
4. the rebuild's tables tasks and commit (:func:`pipelines.tables.publish.stage_tables`), replacing the
   partitions of the rescanned and deleted segments; the file inventories are those of the segments
   before (from the previous run's rows) merged with what steps 2 and 3 found: nothing is read back.

The run's work files go to ``TABLES/_refresh/.rebuild-staging-<run>``, claimed like a rebuild's
staging folder (:class:`pipelines.commit.StagedOutput`: an owner record, on a local file system
under a ``flock`` held for the run's life) and removed when the run ends.  A driver killed half-way
leaves its folder behind; the next refresh removes the folders of runs that are dead (their lock
can be taken, or elsewhere their owner record's process is gone or its heartbeat is older than 10
minutes) and of folders without an owner record untouched for 10 minutes, and leaves those of
refreshes still running alone.
"""
from __future__ import annotations

import bisect
import dataclasses
import datetime as _dt
import logging
import os
import time
import uuid
from typing import TYPE_CHECKING

import numpy as np
import pyarrow.fs as pafs

from store_format import commitlog as cl
from store_format.anomalies import AnomalyKind
from store_format.batchconsumequeue import BCQ_UNIT_SIZE
from store_format.config import BrokerConfig
from store_format.indexfile import accepted_by_index, index_file_names_checked
from store_format.layout import CQ_UNIT_SIZE
from store_format.reput import resolve_broker_version
from store_format.store import StoreLocation, open_store
from store_format.timeutil import datetime_to_ms

from ..anomalies import at_offset
from ..build import build_queue_bucket
from ..chain import IndexSeed
from ..commit import StagedOutput
from ..delta import file_uris, live_files, read_spark
from ..delta_jars import WRITER_CONF
from ..outlock import OutputLock
from ..plan import DEFAULT_SPLIT_SIZE, plan_splits
from ..preflight import check_writable_folder
from ..session import build_spark_session
from ..stages import Progress, ReputWalk, TaskRunner, scan_and_chain
from ..workfiles import queue_bucket, read_keys
from .publish import RebuildResults, Resumed, discard_staged_tables, stage_tables
from .runs import Snapshot, interrupted_note, snapshot
from .schema import MESSAGE_KEYS_SCHEMA, MESSAGES_SCHEMA

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["run_tables", "render_tables_summary", "ResumeState"]

log = logging.getLogger(__name__)

WORK_FOLDER = "_refresh"   # under the tables root: the run's scan work files, removed when it ends


def run_tables(store: str, tables: str, config: BrokerConfig, *, spark=None, master: str | None = None,
               split_size: int | None = None, with_body: bool = False, full: bool = False,
               key_buckets: int | None = None, log_level: str | None = None, table_writer: str = "auto") -> dict:
    """Refresh the tables of ``store`` under ``tables`` without rebuilding its files.

    Rescans from the start of the segment holding the watermark of the newest ``runs`` row (all of
    the store without one, or with ``full``), replaces the rows of the rescanned segments, and drops
    the rows of segments the broker deleted since.  ``key_buckets`` sets the buckets per segment of a
    new ``message_keys`` table (default :func:`default_key_buckets`; an existing table keeps its own).
    One run per ``tables`` at a time (:class:`pipelines.outlock.OutputLock`, taken first).
    ``table_writer``: see :mod:`pipelines.delta_jars` (for a session started here).
    """
    with OutputLock(_absolute(tables), "--tables", f"tables refresh of {store}"):
        check_writable_folder(_absolute(tables), "--tables", "it receives the Delta tables")
        for left in discard_staged_tables(_absolute(tables)):   # the lock is ours: any staging is a dead run's
            log.info("removed %s, left by an interrupted run", left)
        try:
            return _run_tables_locked(store, tables, config, spark=spark, master=master, split_size=split_size,
                                      with_body=with_body, full=full, key_buckets=key_buckets, log_level=log_level,
                                      table_writer=table_writer)
        except BaseException:
            discard_staged_tables(_absolute(tables))   # this run's staged rows
            raise


def _run_tables_locked(store: str, tables: str, config: BrokerConfig, *, spark, master: str | None,
                       split_size: int | None, with_body: bool, full: bool, key_buckets: int | None,
                       log_level: str | None, table_writer: str) -> dict:
    started = time.time()
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d%H%M%S") + "-" + uuid.uuid4().hex[:6]
    # executors resolve paths in their own working folders: give them absolute ones
    store, tables = _absolute(store), _absolute(tables)
    st = open_store(store, config)
    config = resolve_broker_version(st, config)
    spark = spark or build_spark_session(master, log_level=log_level, extra_conf={WRITER_CONF: table_writer})
    progress = Progress(lambda line: log.info(line.removeprefix("[rebuild] ")))
    snap = snapshot(tables)   # the latest complete run: its state is where this run starts from
    prev = None if full else snap.run
    sub = _rescanned(st, prev)
    progress.stage("resume state", sub.segments[0].name)
    resume = _resume_state(spark, snap, sub.segments[0].name, {s.name for s in st.segments}, config) \
        if prev is not None else ResumeState()
    splits = plan_splits(sub, split_size or DEFAULT_SPLIT_SIZE)
    work = _claim_work_folder(tables, run_id)   # and removes those of dead runs
    runner = TaskRunner(spark, 1, progress)
    try:
        walk = scan_and_chain(sub, config, splits, f"{work.staging_uri}/_work", runner,
                              index_seed=IndexSeed(resume.index_end_phy_offset, resume.index_base))
        progress.stage("tables: queue states")
        # a RocksDB consume queue has no files, and its units need no state: each is put under its queue offset
        cq_files = [] if config.rocksdb_cq else _carry_queues(runner, walk, resume, config)
        index_files, named = _index_files(walk, resume, config)
        anomalies = walk.anomalies(named, last_queue_offsets=resume.last_queue_offsets)
        results = RebuildResults(st, config, walk.chain, walk.index_in, cq_files, index_files, walk.work_uri,
                                 walk.buckets, run_id, started, progress.timings, anomalies, scanned_store=sub,
                                 command="tables",
                                 resumed=Resumed(snap, "incremental" if prev is not None else "full",
                                                 resume.last_queue_offsets))
        progress.stage("tables", tables)
        pending = stage_tables(spark, tables, results, with_body=with_body, key_buckets=key_buckets)
        progress.stage("tables: commit", tables)
        published = pending.finish()
        progress.done()
    finally:
        _drop_work(work)
    out = {k: v for k, v in published.items() if k != "anomaly_rows"}
    out["index_totals"] = walk.index_totals
    return out


def render_tables_summary(summary: dict) -> str:
    """The text ``python -m pipelines tables`` prints."""
    lines = [
        f"tables        {summary['tables']} ({summary['writer']})",
        f"run           {summary['run_id']}, rescanned from segment {summary['resume_segment']}",
    ]
    lines += [f"interrupted   {interrupted_note(r)}" for r in summary.get("recovered", [])]
    lines += [
        f"messages      {summary['messages']:,} rows written, {summary['keys']:,} index keys",
        f"deleted       {len(summary['segments_deleted'])} segment(s) gone since the last run",
        f"anomalies     {summary['anomalies']}",
    ]
    return "\n".join(lines)


def _absolute(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def _rescanned(st: StoreLocation, prev: dict | None) -> StoreLocation:
    """The segments from the one holding the previous run's watermark on (all without one), numbered from 0."""
    first = 0
    if prev is not None and prev.get("watermark_segment"):
        names = [s.name for s in st.segments]
        wm = prev["watermark_segment"]
        first = names.index(wm) if wm in names else next((i for i, n in enumerate(names) if n > wm), len(names) - 1)
    return StoreLocation(st.uri, st.fs, st.root,
                         [dataclasses.replace(s, index=i) for i, s in enumerate(st.segments[first:])],
                         batch_topics=st.batch_topics)


def _claim_work_folder(tables: str, run_id: str) -> StagedOutput:
    """The run's work folder under ``TABLES/_refresh``, claimed for the run (see the module docstring);
    first the folders of dead runs there are removed (:meth:`pipelines.commit.StagedOutput.recover`).
    ``abort()`` removes it again, and ``TABLES/_refresh`` with it when no other run uses it."""
    work = StagedOutput(f"{tables}/{WORK_FOLDER}", run_id)
    work.prepare()
    return work


def _drop_work(work: StagedOutput) -> None:
    """Remove the run's work folder and give up its claim, then the folder of work folders once empty."""
    work.abort()
    try:
        if not work.fs.get_file_info(pafs.FileSelector(work.root, allow_not_found=True)):
            work.fs.delete_dir(work.root)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# the state entering the first rescanned segment


@dataclasses.dataclass
class ResumeState:
    """What the previous complete run's tables say about the reput as the first rescanned segment
    begins, and the file inventories of the segments before it."""
    queues: dict[tuple[str, int], tuple[int, int]] = dataclasses.field(default_factory=dict)
    #        (topic, queueId) -> (maxPhysicOffset, write position) after the queue's last unit before it
    #        (a BatchCQ topic's queue: maxMsgPhyOffsetInCommitLog, the last unit's start, and its write position)
    last_queue_offsets: dict[tuple[str, int], int] = dataclasses.field(default_factory=dict)
    #        queue offset of each queue's last record before it (gaps at the border)
    index_base: int = 0                 # ordinal of its first index entry
    index_end_phy_offset: int = 0       # endPhyOffset as it begins: commitlog offset of the last indexed record
    index_names: dict[int, str] = dataclasses.field(default_factory=dict)   # index file number -> name
    index_seed_ms: int | None = None    # the time in the name of the file holding the entry before it
    cq_files: list[dict] = dataclasses.field(default_factory=list)           # build-result rows (kind cq)
    index_files: dict[int, dict] = dataclasses.field(default_factory=dict)   # build-result rows (kind index)


def _rows_before(spark, snap: Snapshot, name: str, schema, resume: str, *,
                 inclusive: bool = False) -> DataFrame | None:
    """The rows of table ``name`` (as readers see it) in the segments before ``resume`` (and in it)."""
    version = snap.version(name)
    if version is None:
        return None
    files = live_files(snap.tables, name, version)
    if not files.num_rows:
        return None
    chosen = [p for p, s in zip(files["path"].to_pylist(), files["partition.segment"].to_pylist())
              if s < resume or (inclusive and s == resume)]
    if not chosen:
        return None
    return read_spark(spark, snap.tables, name, schema, files=file_uris(snap.tables, name, chosen))


def _resume_state(spark, snap: Snapshot, resume: str, live: set[str], config: BrokerConfig) -> ResumeState:
    """Derive the state entering segment ``resume`` from the rows of the segments before it, as the
    latest complete run left them.  Rows of segments deleted since still give the queue and index
    state; only live segments count in the inventories."""
    from pyspark.sql import functions as F
    out = ResumeState()
    cap = config.index_entries_per_file
    live_before = sorted(n for n in live if n < resume)
    msgs = _rows_before(spark, snap, "messages", MESSAGES_SCHEMA, resume)
    if msgs is not None:
        # each queue's append state after its last unit, and its last record's queue offset; light
        # queues (lmq_* columns: a record's unit in each) like any other queue
        own_units = msgs.filter(F.col("consume_queue")).select(
            "topic", "queue_id", "commitlog_offset", "size", "consume_queue_offset", "segment")
        light = (msgs.filter(F.size("lmq_queues") > 0)
                 .select("commitlog_offset", "size", "segment",
                         F.explode(F.arrays_zip("lmq_queues", "lmq_queue_ids", "lmq_consume_queue_offsets")).alias("u"))
                 .select(F.col("u.lmq_queues").alias("topic"), F.col("u.lmq_queue_ids").alias("queue_id"),
                         "commitlog_offset", "size", F.col("u.lmq_consume_queue_offsets").alias("consume_queue_offset"),
                         "segment")
                 .filter(F.col("consume_queue_offset").isNotNull()))
        written = own_units.unionByName(light)
        batch_topics = sorted(config.batch_topics)
        for r in (written.groupBy("topic", "queue_id")
                  .agg(F.max_by(F.struct((F.col("commitlog_offset") + F.col("size")).alias("end"),
                                         F.col("commitlog_offset").alias("start"),
                                         F.col("consume_queue_offset").alias("cq")),
                                F.col("consume_queue_offset")).alias("s"))
                  .collect()):
            s = r["s"]
            if r["topic"] in config.batch_topics:   # BatchConsumeQueue: its last unit's start, 46-byte units
                out.queues[(r["topic"], r["queue_id"])] = (int(s["start"]), (int(s["cq"]) + 1) * BCQ_UNIT_SIZE)
            else:
                out.queues[(r["topic"], r["queue_id"])] = (int(s["end"]), (int(s["cq"]) + 1) * CQ_UNIT_SIZE)
        own = msgs.filter(F.col("dispatch").startswith("consume queue"))   # records with their own unit
        # the last queue offset a record takes: an inner batch of a BatchCQ topic takes INNER_NUM of them
        taken = F.col("queue_offset")
        if batch_topics:
            inner = F.col("properties").getItem("INNER_NUM").cast("long")
            taken = F.when(F.col("topic").isin(batch_topics) & (inner > 0), taken + inner - 1).otherwise(taken)
        for r in (own.groupBy("topic", "queue_id").agg(F.max_by(taken, "commitlog_offset").alias("q"))
                  .collect()):
            out.last_queue_offsets[(r["topic"], r["queue_id"])] = int(r["q"])
        units_per_file = config.cq_file_size // CQ_UNIT_SIZE
        if batch_topics:   # batch consume queue files are not in the inventory (as the rebuild's)
            written = written.filter(~F.col("topic").isin(batch_topics))
        files = (written.filter(F.col("segment").isin(live_before))
                 .withColumn("file", F.floor(F.col("consume_queue_offset") / units_per_file).cast("long"))
                 .groupBy("topic", "queue_id", "file")
                 .agg(F.count(F.lit(1)).alias("units"),
                      F.min_by("commitlog_offset", "consume_queue_offset").alias("lo"),
                      F.max_by("commitlog_offset", "consume_queue_offset").alias("hi"))
                 .collect())
        out.cq_files = [{"topic": r["topic"], "queue_id": r["queue_id"], "file_start": int(r["file"]) *
                         config.cq_file_size, "entries": int(r["units"]), "begin_offset": int(r["lo"]),
                         "end_offset": int(r["hi"])} for r in files]
    keys = _rows_before(spark, snap, "message_keys", MESSAGE_KEYS_SCHEMA, resume, inclusive=True)
    if keys is None:
        return out
    is_live = F.col("segment").isin(live_before)
    per_file = (keys.filter(F.col("segment") < resume).groupBy("index_file_no")
                .agg(F.first("index_file", ignorenulls=True).alias("name"), F.max("index_entry").alias("top"),
                     F.sum(F.when(is_live, 1).otherwise(0)).alias("entries"),
                     F.min(F.when(is_live, F.col("commitlog_offset"))).alias("lo"),
                     F.max(F.when(is_live, F.col("commitlog_offset"))).alias("hi"),
                     F.max("commitlog_offset").alias("end_phy"))
                .collect())
    if per_file:
        out.index_base = max(int(r["index_file_no"]) * cap + int(r["top"]) for r in per_file)
        # buildIndex puts keys only of records at or above endPhyOffset, which each put moves to its
        # record: the newest entry's record, which is the one with the largest offset
        out.index_end_phy_offset = max(int(r["end_phy"]) for r in per_file)
    else:   # nothing before: the entries of the segment itself keep their ordinals (and the carry starts at 0,
        #     as the run that wrote them started)
        first = (keys.filter(F.col("segment") == resume)
                 .agg(F.min(F.col("index_file_no") * cap + F.col("index_entry") - 1).alias("o")).collect())
        out.index_base = int(first[0]["o"]) if first and first[0]["o"] is not None else 0
    for r in per_file:
        f = int(r["index_file_no"])
        out.index_files[f] = {"task_id": f, "name": r["name"], "entries": int(r["entries"]), "begin_offset": r["lo"],
                              "end_offset": r["hi"]}
        if r["name"]:
            out.index_names[f] = r["name"]
    if out.index_base > 0:
        # the file holding the entry before the base keeps its name; later files' names follow it
        name = out.index_names.get((out.index_base - 1) // cap)
        out.index_seed_ms = _name_ms(name) if name else None
    return out


def _name_ms(name: str) -> int:
    t = _dt.datetime.strptime(name[:14], "%Y%m%d%H%M%S").replace(tzinfo=_dt.timezone.utc)
    return int(datetime_to_ms(t)) + int(name[14:17] or 0)


# ---------------------------------------------------------------------------------------------
# queue states through the rescanned splits


class _QueueStates:
    """One task per queue bucket: the rebuild's consume queue task (:func:`build_queue_bucket`) seeded
    with the bucket's queues' append states as the first rescanned split begins, recording each
    queue's state as each split begins (what the tables tasks replay) and writing no file."""

    def __init__(self, work_uri: str, split_ids: list[int], seeds: list[dict[tuple[str, int], list[int]]],
                 config: BrokerConfig) -> None:
        self.work_uri = work_uri
        self.split_ids = split_ids
        self.seeds = seeds
        self.config = config

    def rows(self, bucket: int) -> list[dict]:
        cl.use_system_allocator()
        return build_queue_bucket(self.work_uri, None, bucket, self.split_ids, self.config, record_states=True,
                                  seeds=self.seeds[bucket], write_files=False)


def _carry_queues(runner: TaskRunner, walk: ReputWalk, resume: ResumeState, config: BrokerConfig) -> list[dict]:
    """Queue states as each rescanned split begins (in the work folder), and the consume queue files:
    those of the segments before merged with what the rescanned splits add."""
    file_size = config.cq_file_size
    seeds: list[dict[tuple[str, int], list[int]]] = [{} for _ in range(walk.buckets)]
    for (topic, qid), (end, write_pos) in resume.queues.items():
        if topic in config.batch_topics:   # B_* columns: the last unit's start, the write position
            seeds[queue_bucket(topic, qid, walk.buckets)][(topic, qid)] = [end, write_pos]
            continue
        last_unit = write_pos - CQ_UNIT_SIZE
        # Q_* columns: maxPhysicOffset, write position, first file and blank prefix (not known: only
        # the files' bytes need them), the newest file (the last unit's)
        seeds[queue_bucket(topic, qid, walk.buckets)][(topic, qid)] = [end, write_pos, -1, -1,
                                                                       last_unit - last_unit % file_size]
    task = _QueueStates(walk.work_uri, [e.split.split_id for e in walk.chain.entries], seeds, config)
    rows = runner.run(task, walk.buckets, "tables: queue states")
    merged = {(r["topic"], r["queue_id"], r["file_start"]): dict(r) for r in resume.cq_files}
    for r in rows:
        if r["kind"] != "cq":   # batch consume queue files: not in the inventory (as the rebuild's)
            continue
        known = merged.get((r["topic"], r["queue_id"], r["file_start"]))
        if known is None:
            merged[(r["topic"], r["queue_id"], r["file_start"])] = r
        elif r["entries"]:   # the file the segments before left open
            known["entries"] += r["entries"]
            known["end_offset"] = r["end_offset"]
    return list(merged.values())


# ---------------------------------------------------------------------------------------------
# index ordinals and file names


def _index_files(walk: ReputWalk, resume: ResumeState, config: BrokerConfig) -> tuple[list[dict], list[dict]]:
    """The index files (build-result rows with their names) once the rescanned splits' keys are
    added after the resume state's, and the anomalies of names whose store time was out of range.

    The entries at the borders of the files are found in the scan's key work files, with
    ``IndexService.buildIndex``'s offset check (:func:`accepted_by_index`) from the split's carry."""
    base0 = resume.index_base
    files = {f: dict(r) for f, r in resume.index_files.items()}
    end = int(walk.index_totals["keys"])   # the chain's ordinals continue the resume state's
    if not config.writes_index_files or end == base0:
        return list(files.values()), []
    cap = config.index_entries_per_file
    ranges = sorted((before, n, sid, carry) for sid, (carry, before, n) in walk.index_in.items() if n)
    starts = [r[0] for r in ranges]
    accepted: dict[int, tuple] = {}

    def entry(ordinal: int) -> tuple[int, int]:
        """Commitlog offset and store time of the entry with this ordinal."""
        before, _n, sid, carry = ranges[bisect.bisect_right(starts, ordinal) - 1]
        if sid not in accepted:
            keys = read_keys(walk.work_uri, sid)
            assert keys is not None  # the chain counted keys in it
            acc, _ = accepted_by_index(keys.offset, carry)
            record = np.repeat(np.arange(len(keys.counts)), keys.counts)
            accepted[sid] = (keys, record[acc[record]])
        keys, record = accepted[sid]
        r = record[ordinal - before]
        return int(keys.offset[r]), int(keys.store_ts[r])

    starting: list[tuple[int, int]] = []   # files that start in the rescanned range: (number, first store time)
    for f in range(base0 // cap, (end - 1) // cap + 1):
        a, z = max(f * cap, base0), min((f + 1) * cap, end) - 1
        lo, first_ts = entry(a)
        hi, _ = entry(z)
        row = files.setdefault(f, {"task_id": f, "name": resume.index_names.get(f), "entries": 0,
                                   "begin_offset": None, "end_offset": None})
        row["entries"] += z - a + 1
        row["begin_offset"] = lo if row["begin_offset"] is None else row["begin_offset"]
        row["end_offset"] = hi
        if a == f * cap and f not in resume.index_names:
            starting.append((f, first_ts))
    seed = [resume.index_seed_ms] if resume.index_seed_ms is not None else []
    names, clamped = index_file_names_checked(seed + [ts for _, ts in starting])
    for (f, _), name in zip(starting, names[len(seed):]):
        files[f]["name"] = name
    anomalies = []
    for pos in clamped:
        if pos < len(seed):
            continue
        f, ts = starting[pos - len(seed)]
        anomalies.append(at_offset(
            walk.store, files[f]["begin_offset"], AnomalyKind.STORE_TIMESTAMP_OUT_OF_RANGE,
            f"index file {names[pos]} starts with store timestamp {ts}, outside the years 1970..9999; "
            "its name was clamped (the bytes are as the broker writes them)", found=ts))
    return list(files.values()), anomalies
