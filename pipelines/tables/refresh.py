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

Long module: the incremental refresh still places units and keys itself (its own scan, queue
stitching and read-back); it should move to the rebuild's machinery seeded with the resume state, as
publish.py does for a full rebuild.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.consumequeue import NOT_STARTED, assign_positions
from store_format.indexfile import index_file_names
from store_format.layout import (
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
)
from store_format.reput import resolve_broker_version
from store_format.store import Segment, StoreLocation, open_store

from ..chain import Chain, carry_index_state, chain_splits
from ..delta import TableWriter, TaskRows, Where, file_uris, live_files, open_writer, read_spark
from ..plan import DEFAULT_SPLIT_SIZE, Split, plan_splits
from ..scan import ROW_RECORD, ROW_TRAILER, record_schema, records_batch, split_summary, walk_split
from ..session import build_spark_session, spark_schema
from .rows import SplitContext, indexed_records, key_rows, message_rows, np_col, own_units
from .runs import Interrupted, Snapshot, interrupted_note, report_interrupted, snapshot
from .schema import (
    ANOMALIES_SCHEMA,
    DESCRIPTIONS,
    EXPIRY_AUDIT_SCHEMA,
    MESSAGE_KEYS_SCHEMA,
    MESSAGES_SCHEMA,
    RUNS_SCHEMA,
    SEGMENTS_SCHEMA,
    default_key_buckets,
    key_buckets_of,
    message_keys_schema,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["run_tables", "render_tables_summary"]

SIDE_SCHEMA = pa.schema([
    ("kind", pa.string()),          # queue | gap | index_file
    ("split_id", pa.int32()),
    ("group", pa.int32()),          # queue number within the split (the order of _own_units)
    ("topic", pa.string()),
    ("queue_id", pa.int32()),
    ("n", pa.int64()),
    ("q_first", pa.int64()),
    ("q_last", pa.int64()),
    ("off_first", pa.int64()),
    ("end_first", pa.int64()),
    ("end_last", pa.int64()),
    ("clean", pa.bool_()),
    ("expected", pa.int64()),
    ("found", pa.int64()),
    ("file_no", pa.int64()),
    ("store_ts", pa.int64()),
])



# ---------------------------------------------------------------------------------------------
# per-split rows (Arrow only: they run in Spark tasks and, for splits the driver walked, in the driver)


def side_rows(part: pa.Table, split_id: int, ctx: SplitContext) -> pa.Table:
    """Per queue of the split: unit count, first/last queue offset and commitlog end, whether they
    follow each other (then positions follow in closed form); queue offset gaps inside the split;
    and the first entry of each index file that starts in the split (its store time names it)."""
    units = own_units(part)
    rows: dict[str, list] = {f.name: [] for f in SIDE_SCHEMA}

    def add(**kw):
        for f in SIDE_SCHEMA:
            rows[f.name].append(kw.get(f.name))

    if len(units.record):
        rec = units.record[units.order]
        qoff = np_col(part["queue_offset"])[rec]
        off = np_col(part["commitlog_offset"])[rec]
        end = off + np_col(part["size"])[rec].astype(np.int64)
        g = units.group[units.order]
        same = g[1:] == g[:-1]
        dq = np.diff(qoff)
        de = np.diff(end)
        bad_step = same & ((dq <= 0) | (de <= 0))
        unclean = np.zeros(len(units.topics), dtype=bool)
        unclean[g[1:][bad_step]] = True
        ends = np.r_[units.starts[1:], len(rec)]
        for gi, (a, b) in enumerate(zip(units.starts, ends)):
            add(kind="queue", split_id=split_id, group=gi, topic=units.topics[gi], queue_id=units.qids[gi],
                n=int(b - a),
                q_first=int(qoff[a]), q_last=int(qoff[b - 1]), off_first=int(off[a]), end_first=int(end[a]),
                end_last=int(end[b - 1]), clean=bool(not unclean[gi] and qoff[a] >= 0))
        for i in np.nonzero(same & (dq != 1))[0]:
            gi = int(g[i + 1])
            add(kind="gap", split_id=split_id, topic=units.topics[gi], queue_id=units.qids[gi],
                off_first=int(off[i + 1]), expected=int(qoff[i] + 1), found=int(qoff[i + 1]))
    if ctx.index_enabled:
        carry, base = ctx.index_in.get(split_id, (0, 0))
        indexed, nkeys = indexed_records(part, carry)
        chosen = np.nonzero(indexed)[0]
        total = int(nkeys[chosen].sum())
        cap = ctx.index_cap
        first = -(-base // cap) * cap
        js = np.arange(first - base, total, cap, dtype=np.int64)
        if len(js):
            parent = np.repeat(chosen, nkeys[chosen])[js]
            ts = np_col(part["store_timestamp"])[parent]
            for j, t in zip(js.tolist(), ts.tolist()):
                add(kind="index_file", split_id=split_id, file_no=(base + j) // cap, store_ts=int(t))
    return pa.table(rows, schema=SIDE_SCHEMA)


def _by_split(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[int, pa.Table]]:
    """Rows of a partition split by split, each in walk order, one split in memory at a time.

    A partition is the scan's partitions coalesced: each split's rows come together, in order.
    """
    done: set[int] = set()
    current: int | None = None
    pending: list[pa.RecordBatch] = []

    def finish() -> tuple[int, pa.Table]:
        part = pa.Table.from_batches(pending).combine_chunks()
        seq = np_col(part["seq"])
        if len(seq) > 1 and (np.diff(seq) < 0).any():
            part = part.take(pa.array(np.argsort(seq, kind="stable")))
        done.add(current)  # type: ignore[arg-type]
        return int(current), part  # type: ignore[arg-type]

    for batch in batches:
        if not batch.num_rows:
            continue
        ids = np_col(batch.column(batch.schema.get_field_index("split_id")))
        cuts = np.r_[0, np.nonzero(ids[1:] != ids[:-1])[0] + 1, len(ids)]
        for a, b in zip(cuts[:-1], cuts[1:]):
            sid = int(ids[a])
            if sid != current:
                if pending:
                    yield finish()
                if sid in done:
                    raise RuntimeError(f"rows of split {sid} are not contiguous in their partition")
                current, pending = sid, []
            pending.append(batch.slice(a, b - a))
    if pending:
        yield finish()


class _PerSplit:
    """``mapInArrow`` function applying one row builder to each split of a partition."""

    def __init__(self, kind: str, ctx, with_body: bool = False) -> None:
        self.kind = kind
        self.ctx = ctx  # a broadcast of SplitContext
        self.with_body = with_body

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for table in self.tables(batches):
            yield from table.to_batches()

    def tables(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.Table]:
        ctx = self.ctx.value
        for sid, part in _by_split(batches):
            yield _build(self.kind, part, sid, ctx, self.with_body)


_BASE_COLUMNS = ("split_id", "seq", "status", "flags", "topic", "queue_id", "commitlog_offset", "key_hashes",
                 "store_timestamp")
_PASS_COLUMNS = {
    "side": _BASE_COLUMNS + ("queue_offset", "size"),
    "keys": _BASE_COLUMNS + ("keys", "key_kinds"),
}


def _as_tables(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.Table]:
    for batch in batches:
        yield pa.Table.from_batches([batch])


def _build(kind: str, part: pa.Table, split_id: int, ctx: SplitContext, with_body: bool) -> pa.Table:
    if kind == "side":
        return side_rows(part, split_id, ctx)
    if kind == "messages":
        return message_rows(part, split_id, ctx, with_body)
    return key_rows(part, split_id, ctx)


# ---------------------------------------------------------------------------------------------
# driver: carrying queue state, index names, inventories


def _stitch_queues(chain: Chain, side: pa.Table, states: dict[tuple[str, int], list[int]], cq_file_size: int,
                   records_of: Callable[[int], pa.Table], segment_of: Callable[[int], str]
                   ) -> tuple[dict[int, tuple[str, np.ndarray]], list[dict]]:
    """Each split's consume queue positions, carrying every queue's append state through the
    chain (``ConsumeQueue.putMessagePositionInfo``).  Where a split's units of a queue follow each
    other and the queue's state allows it, positions follow in closed form from the queue's write
    position; otherwise the broker's rules run on the split's units here.

    ``states``: ``(topic, qid) -> [maxPhysicOffset, writePosition, last queue offset]`` entering the
    chain (updated).  Returns the per-split plans and the queue offset gaps found at split borders.
    """
    queue_rows = side.filter(pc.equal(side["kind"], "queue")).sort_by([("split_id", "ascending"),
                                                                        ("group", "ascending")]).to_pylist()
    by_split: dict[int, list[dict]] = {}
    for r in queue_rows:
        by_split.setdefault(r["split_id"], []).append(r)
    plans: dict[int, tuple[str, np.ndarray]] = {}
    gaps: list[dict] = []
    for entry in chain.entries:
        sid = entry.split.split_id
        rows = by_split.get(sid, [])
        if not rows:
            continue
        closed = all(r["clean"] for r in rows)
        for r in rows:
            st = states.get((r["topic"], r["queue_id"]))
            if closed and st is not None and not (r["end_first"] > st[0] and r["q_first"] * 20 >= st[1]):
                closed = False
            if st is not None and r["q_first"] != st[2] + 1:
                gaps.append({"segment": segment_of(sid), "commitlog_offset": r["off_first"], "topic": r["topic"],
                             "queue_id": r["queue_id"], "expected": st[2] + 1, "found": r["q_first"]})
        if closed:
            bases = np.empty(len(rows), dtype=np.int64)
            for r in rows:
                key = (r["topic"], r["queue_id"])
                st = states.get(key)
                base = st[1] if st is not None else r["q_first"] * 20
                bases[r["group"]] = base
                states[key] = [r["end_last"], base + 20 * r["n"], r["q_last"]]
            plans[sid] = ("ranges", bases)
            continue
        part = records_of(sid)
        units = own_units(part)
        rows_in = []
        for t, q in zip(units.topics, units.qids):
            st = states.get((t, q))
            rows_in.append([-1, int(NOT_STARTED), -1, -1] if st is None else [st[0], st[1], -1, -1])
        matrix = np.array(rows_in, dtype=np.int64).reshape(len(rows_in), 4)
        rec = units.record
        off = np_col(part["commitlog_offset"])[rec]
        size = np_col(part["size"])[rec].astype(np.int64)
        qoff = np_col(part["queue_offset"])[rec]
        positions = assign_positions(units.group, off, size, qoff, cq_file_size, matrix)
        per_record = np.full(part.num_rows, -1, dtype=np.int64)
        per_record[rec] = positions
        for gi, key in enumerate(zip(units.topics, units.qids)):
            kept = np.nonzero((units.group == gi) & (positions >= 0))[0]
            last_q = int(qoff[kept[-1]]) if len(kept) else states.get(key, [0, 0, -1])[2]
            if matrix[gi, 1] != NOT_STARTED:
                states[key] = [int(matrix[gi, 0]), int(matrix[gi, 1]), last_q]
        plans[sid] = ("positions", per_record)
    return plans, gaps


def _index_names(side: pa.Table, known: dict[int, str], seed_ms: int | None) -> dict[int, str]:
    """Names of the index files that start in the scanned range (``yyyyMMddHHmmssSSS`` of their first
    entry's store time, strictly increasing after ``seed_ms``), plus the ones already known."""
    starts = side.filter(pc.equal(side["kind"], "index_file")).select(["file_no", "store_ts"]).to_pylist()
    starts = sorted((r["file_no"], r["store_ts"]) for r in starts if r["file_no"] not in known)
    names = dict(known)
    if starts:
        firsts = [ts for _, ts in starts]
        made = index_file_names(([seed_ms] if seed_ms is not None else []) + firsts)
        made = made[1:] if seed_ms is not None else made
        names.update({f: n for (f, _), n in zip(starts, made)})
    return names


def _name_ms(name: str) -> int:
    t = _dt.datetime.strptime(name[:14], "%Y%m%d%H%M%S").replace(tzinfo=_dt.timezone.utc)
    return int(t.timestamp() * 1000) + int(name[14:17] or 0)


@dataclasses.dataclass
class ResumeState:
    """Queue and index state entering the first rescanned segment (from the tables)."""
    queues: dict[tuple[str, int], list[int]]
    index_base: int
    index_names: dict[int, str]
    index_seed_ms: int | None


def _resume_state(spark, snap: Snapshot, resume: str, cap: int) -> ResumeState:
    """Derive the state entering segment ``resume`` from the rows of the segments before it, as the
    latest complete run left them."""
    from pyspark.sql import functions as F
    tables = snap.tables
    queues: dict[tuple[str, int], list[int]] = {}
    version = snap.version("messages")
    files = live_files(tables, "messages", version) if version is not None else None
    if files is not None and files.num_rows:
        before = [p for p, s in zip(files["path"].to_pylist(), files["partition.segment"].to_pylist()) if s < resume]
        if before:
            df = read_spark(spark, tables, "messages", MESSAGES_SCHEMA, files=file_uris(tables, "messages", before))
            rows = (df.filter(F.col("consume_queue"))
                    .groupBy("topic", "queue_id")
                    .agg(F.max_by(F.struct((F.col("commitlog_offset") + F.col("size")).alias("end"),
                                           F.col("consume_queue_offset").alias("cq"),
                                           F.col("queue_offset").alias("q")), F.col("consume_queue_offset")).alias("s"))
                    .collect())
            for r in rows:
                last = r["s"]
                queues[(r["topic"], r["queue_id"])] = [int(last["end"]), (int(last["cq"]) + 1) * 20, int(last["q"])]
    base, names, seed = 0, {}, None
    keys = snap.read_arrow("message_keys", ["segment", "index_file", "index_file_no", "index_entry"])
    if keys is not None and keys.num_rows:
        ordinal = pc.add(pc.multiply(keys["index_file_no"], cap), pc.subtract(keys["index_entry"].cast(pa.int64()), 1))
        seg = keys["segment"]
        before = pc.less(seg, resume)
        at = pc.equal(seg, resume)
        if pc.any(before).as_py():
            base = int(pc.max(ordinal.filter(before)).as_py()) + 1
        elif pc.any(at).as_py():
            base = int(pc.min(ordinal.filter(at)).as_py())
        if base > 0:
            # the file holding the entry before ``base`` keeps its name; later files' names follow it
            last_file = (base - 1) // cap
            named = keys["index_file"].filter(pc.and_(before, pc.equal(keys["index_file_no"], last_file)))
            if len(named) and named[0].as_py():
                names[last_file] = named[0].as_py()
                seed = _name_ms(names[last_file])
    return ResumeState(queues, base, names, seed)


# ---------------------------------------------------------------------------------------------
# publishing


@dataclasses.dataclass
class _Publish:
    store: StoreLocation            # the whole store (its segments now)
    scanned_store: StoreLocation    # the segments scanned (a suffix of the store)
    chain: Chain
    scanned: DataFrame              # scanned rows (records and trailers)
    local_tables: dict[int, pa.Table]
    run_id: str
    command: str
    mode: str
    resume: ResumeState | None
    started: float
    timings: dict[str, float]
    snap: Snapshot                  # the tables of the latest complete run (the previous state)
    recovered: list[Interrupted]    # interrupted publications this run completes
    key_buckets: int | None = None  # for a new message_keys table (default: from the segment size)


def _publish(spark, tables: str, config: BrokerConfig, job: _Publish) -> dict:
    from pyspark.sql import functions as F
    t0 = time.perf_counter()
    timings = job.timings
    writer = open_writer(spark, tables, job.run_id)
    chain, st, sub = job.chain, job.store, job.scanned_store
    with_body = "body" in job.scanned.columns
    cap = config.index_entries_per_file
    index_enabled = bool(config.messageIndexEnable)
    seg_names = {s.index: s.name for s in sub.segments}
    split_seg = {e.split.split_id: seg_names[e.split.segment] for e in chain.entries}
    local_ids = set(job.local_tables)
    kept_ids = [e.split.split_id for e in chain.entries if e.split.split_id not in local_ids]
    rewalk = _rewalk_fn(sub, config)

    # index state through the chain (closed form from the scan summaries; driver walks otherwise)
    index_in_raw, index_totals = carry_index_state(chain, config, rewalk)
    base0 = job.resume.index_base if job.resume else 0
    index_in = {sid: (int(v[0]), int(v[1]) + base0) for sid, v in index_in_raw.items()}
    buckets = key_buckets_of(tables) or job.key_buckets or default_key_buckets(config)
    ctx = SplitContext(split_seg, index_in, {}, {}, job.run_id, config.cq_file_size, cap, config.maxHashSlotNum,
                       index_enabled, buckets)

    records = job.scanned.filter((F.col("row_kind") == ROW_RECORD) & F.col("split_id").isin(kept_ids))
    # fewer, larger tasks than splits: Python tasks have a fixed cost; each task streams its splits
    parallelism = max(spark.sparkContext.defaultParallelism, 1)
    scanned_bytes = sum(e.split.end - e.split.start for e in chain.entries)
    n_tasks = max(1, min(len(kept_ids), max(2 * parallelism, -(-scanned_bytes // (512 << 20)))))
    records = records.coalesce(n_tasks)
    local = {sid: t for sid, t in job.local_tables.items() if sid in split_seg}

    def run_pass(kind: str, schema: pa.Schema, context: SplitContext):
        bc = spark.sparkContext.broadcast(context)
        needed = _PASS_COLUMNS.get(kind)  # only what the pass reads crosses from the JVM to Python
        source = records.select(*needed) if needed else records
        df = source.mapInArrow(_PerSplit(kind, bc, with_body), spark_schema(schema))
        extra = [_build(kind, t, sid, context, with_body) for sid, t in local.items()]
        extra = [t for t in extra if t.num_rows]
        if extra:
            df = df.unionByName(spark.createDataFrame(pa.concat_tables(extra), spark_schema(schema)))
        return df

    # 1. side facts: queue runs, queue offset gaps, index file starts
    lap = time.perf_counter()
    side_df = run_pass("side", SIDE_SCHEMA, ctx)
    side = side_df.toArrow().cast(SIDE_SCHEMA)

    def records_of(sid: int) -> pa.Table:
        if sid in local:
            return local[sid]
        entry = next(e for e in chain.entries if e.split.split_id == sid)
        summary, res = rewalk(entry.split, entry.entering, None)
        t = pa.Table.from_batches([records_batch(entry.split, res, summary, True)])
        return t.filter(pc.equal(t["row_kind"], ROW_RECORD))

    states = dict(job.resume.queues) if job.resume else {}
    plans, border_gaps = _stitch_queues(chain, side, states, config.cq_file_size, records_of, split_seg.__getitem__)
    names = _index_names(side, job.resume.index_names if job.resume else {},
                         job.resume.index_seed_ms if job.resume else None)
    ctx = dataclasses.replace(ctx, queue_plan=plans, index_names=names)
    timings["tables: plan"] = round(time.perf_counter() - lap, 3)

    # 2. messages and message_keys: replace the rescanned segments, drop the deleted ones
    lap = time.perf_counter()
    prev_segments = job.snap.read_arrow("segments")
    store_names = {s.name for s in st.segments}
    deleted_now: list[str] = []
    if prev_segments is not None:
        deleted_now = sorted(n for n, s in zip(prev_segments["segment"].to_pylist(),
                                               prev_segments["status"].to_pylist())
                             if s == "live" and n not in store_names)
    resume_name = sub.segments[0].name
    where = Where((("segment", ">=", resume_name), ("segment", "in", tuple(deleted_now)),
                   ("segment", "<", st.segments[0].name)))
    # the messages rows go from the Python tasks straight to Parquet (delta-rs writer), one file per
    # task and segment, in commitlog offset order
    bc = spark.sparkContext.broadcast(ctx)
    messages = TaskRows(records, _PerSplit("messages", bc, with_body).tables,
                        [_build("messages", t, sid, ctx, with_body) for sid, t in local.items()])
    versions = {"messages": writer.write("messages", messages, MESSAGES_SCHEMA, partition_by=["segment"],
                                         where=where, description=DESCRIPTIONS["messages"])}
    timings["tables: messages"] = round(time.perf_counter() - lap, 3)
    lap = time.perf_counter()
    keys_df = run_pass("keys", MESSAGE_KEYS_SCHEMA, ctx)
    n_parts = max(1, min(4 * spark.sparkContext.defaultParallelism, len(sub.segments) * ctx.key_buckets))
    keys_df = keys_df.repartition(n_parts, "segment", "key_bucket").sortWithinPartitions("segment", "key_bucket",
                                                                                         "key_hash")
    # one file per segment and bucket, sorted by key_hash; Python tasks write the shuffled rows
    versions["message_keys"] = writer.write("message_keys", TaskRows(keys_df, _as_tables, []),
                                            message_keys_schema(buckets), partition_by=["segment", "key_bucket"],
                                            where=where, description=DESCRIPTIONS["message_keys"])
    timings["tables: message_keys"] = round(time.perf_counter() - lap, 3)

    # 3. what the tables hold now: per-segment figures, record anomalies, file inventories
    lap = time.perf_counter()
    back = _read_back(spark, tables, config, resume_name)
    timings["tables: read back"] = round(time.perf_counter() - lap, 3)

    # 4. segments, 5. anomalies
    lap = time.perf_counter()
    seg_table = _segment_rows(st, _segment_ends(chain, sub), back, prev_segments, job.run_id)
    versions["segments"] = writer.write("segments", seg_table, SEGMENTS_SCHEMA, description=DESCRIPTIONS["segments"])
    anomalies = _chain_anomalies(chain, sub, job.run_id) + _record_anomalies(back["bad"], job.run_id)
    gap_rows = side.filter(pc.equal(side["kind"], "gap")).to_pylist()
    inner_gaps = [dict(r, segment=split_seg[r["split_id"]], commitlog_offset=r["off_first"]) for r in gap_rows]
    anomalies += _gap_anomalies(inner_gaps + border_gaps, job.run_id)
    prev_anoms = job.snap.read_arrow("anomalies")
    if prev_anoms is not None:  # earlier rows of live segments this run did not rescan
        keep = [r for r in prev_anoms.to_pylist() if r["segment"] is not None and r["segment"] < resume_name
                and r["segment"] in store_names]
        anomalies = keep + anomalies
    versions["anomalies"] = writer.write("anomalies", pa.Table.from_pylist(anomalies, schema=ANOMALIES_SCHEMA),
                                         ANOMALIES_SCHEMA, description=DESCRIPTIONS["anomalies"])
    timings["tables: segments, anomalies"] = round(time.perf_counter() - lap, 3)

    # 6. expiry audit as of now, with the inventory the audit command reuses
    lap = time.perf_counter()
    from ..audit import build_expiry_audit, cq_inventory_table, index_inventory_table, load_offsets
    consumer, delay = load_offsets(st.uri, None, None)
    audit_rows, audit_summary = build_expiry_audit(
        tables, config, seg_table.filter(pc.equal(seg_table["status"], "live")),
        cq_inventory_table(back["cq_files"], config.cq_file_size // 20), index_inventory_table(back["index_files"]),
        as_of_ms=int(job.started * 1000), consumer_offsets=consumer, delay_offsets=delay, run_id=job.run_id)
    versions["expiry_audit"] = writer.write("expiry_audit", audit_rows, EXPIRY_AUDIT_SCHEMA,
                                            description=DESCRIPTIONS["expiry_audit"])
    timings["tables: expiry_audit"] = round(time.perf_counter() - lap, 3)

    # 7. the run, last: its row (with the versions just committed) publishes them
    scanned_names = {s.name for s in sub.segments}
    n_msgs = sum(back["segments"].get(n, {}).get("records", 0) for n in scanned_names)
    n_keys = sum(back["keys"].get(n, 0) for n in scanned_names)
    timings["tables"] = round(time.perf_counter() - t0, 3)
    run_row = _run_row(job, tables, config, writer, versions, split_seg, deleted_now, n_msgs, n_keys, len(anomalies))
    writer.write("runs", pa.Table.from_pylist([run_row], schema=RUNS_SCHEMA), RUNS_SCHEMA, mode="append",
                 description=DESCRIPTIONS["runs"])
    return {"tables": tables, "run_id": job.run_id, "writer": writer.kind, "messages": n_msgs, "keys": n_keys,
            "segments_deleted": deleted_now, "anomalies": len(anomalies), "resume_segment": resume_name,
            "next_cleanup": audit_summary.get("next_cleanup"), "index_totals": index_totals,
            "recovered": [r.as_dict() for r in job.recovered]}


def _read_back(spark, tables: str, config: BrokerConfig, resume_name: str) -> dict:
    """Figures of the tables as committed: per segment (records, times, topics, keys), the records
    of the rescanned segments with a wrong CRC or size, and the consume queue and index files."""
    from pyspark.sql import functions as F
    msgs = read_spark(spark, tables, "messages", MESSAGES_SCHEMA).select(
        "segment", "commitlog_offset", "position", "size", "structural_size", "topic", "queue_id",
        "consume_queue_offset", "consume_queue", "store_timestamp", "body_crc", "body_crc_ok", "dispatch")
    segments = {r["segment"]: r.asDict() for r in msgs.groupBy("segment").agg(
        F.count(F.lit(1)).alias("records"),
        F.sum(F.when(F.col("dispatch").startswith("not dispatched"), 0).otherwise(1)).alias("dispatched"),
        F.unix_micros(F.min("store_timestamp")).alias("first"), F.unix_micros(F.max("store_timestamp")).alias("last"),
        F.sort_array(F.collect_set("topic")).alias("topics")).collect()}
    bad = msgs.filter((F.col("segment") >= resume_name) & (
        (~F.col("body_crc_ok")) | F.col("dispatch").startswith("not dispatched: totalSize"))).collect()
    units_per_file = config.cq_file_size // 20
    cq_files = (msgs.filter(F.col("consume_queue"))
                .withColumn("file", F.floor(F.col("consume_queue_offset") / units_per_file).cast("long"))
                .groupBy("topic", "queue_id", "file")
                .agg(F.count(F.lit(1)).alias("units"),
                     F.min_by("commitlog_offset", "consume_queue_offset").alias("lo"),
                     F.max_by("commitlog_offset", "consume_queue_offset").alias("hi"),
                     F.max_by("segment", "consume_queue_offset").alias("segment"))
                .collect())
    keys = read_spark(spark, tables, "message_keys", MESSAGE_KEYS_SCHEMA)
    key_counts = {r["segment"]: r["n"] for r in keys.groupBy("segment").agg(F.count(F.lit(1)).alias("n")).collect()}
    index_files = (keys.groupBy("index_file_no", "index_file")
                   .agg(F.count(F.lit(1)).alias("entries"), F.min("commitlog_offset").alias("lo"),
                        F.max("commitlog_offset").alias("hi"),
                        F.max_by("segment", "commitlog_offset").alias("segment"))
                   .collect())
    return {"segments": segments, "bad": bad, "cq_files": cq_files, "keys": key_counts, "index_files": index_files}


def _segment_rows(st: StoreLocation, ends: dict[str, int], back: dict, prev_segments: pa.Table | None,
                  run_id: str) -> pa.Table:
    """The ``segments`` table: the store's segments now, and earlier ones marked deleted."""
    prev_by_name = {r["segment"]: r for r in prev_segments.to_pylist()} if prev_segments is not None else {}
    store_names = {s.name for s in st.segments}
    rows = []
    for s in st.segments:
        prev = prev_by_name.get(s.name, {})
        stats = back["segments"].get(s.name, {})
        rows.append({
            "segment": s.name, "base_offset": s.base, "file_size": s.size,
            "bytes_written": ends.get(s.name, prev.get("bytes_written")),
            "first_store_time": _us_dt(stats.get("first")), "last_store_time": _us_dt(stats.get("last")),
            "records": stats.get("records", 0), "dispatched": stats.get("dispatched", 0),
            "index_keys": back["keys"].get(s.name, 0), "topics": stats.get("topics", []),
            "file_mtime": _ms_dt(s.mtime_ms), "status": "live", "first_run": prev.get("first_run") or run_id,
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


def _run_row(job: _Publish, tables: str, config: BrokerConfig, writer: TableWriter, versions: dict[str, int],
             split_seg: dict[int, str], deleted_now: list[str], n_msgs: int, n_keys: int, n_anomalies: int) -> dict:
    chain, st = job.chain, job.store
    resume_name = job.scanned_store.segments[0].name
    last = chain.entries[-1] if chain.entries else None
    return {
        "run_id": job.run_id, "command": job.command, "mode": job.mode, "started_at": _ms_dt(int(job.started * 1000)),
        "finished_at": _ms_dt(int(time.time() * 1000)), "store": st.uri if "://" in st.uri else st.root,
        "tables": tables, "config": json.dumps(config.as_properties(), sort_keys=True),
        "versions": json.dumps(_versions(writer, versions)), "with_body": "body" in job.scanned.columns,
        "segments_in_store": len(st.segments), "segments_scanned": len({split_seg[e.split.split_id]
                                                                         for e in chain.entries}),
        "segments_deleted": len(deleted_now), "resume_segment": resume_name,
        "watermark_segment": split_seg[last.split.split_id] if last else resume_name,
        "watermark_offset": last.split.seg_base + int(last.summary.get("bufpos", 0)) if last else None,
        "records_scanned": sum(e.summary.get("records", 0) for e in chain.entries),
        "messages_written": n_msgs, "keys_written": n_keys, "anomalies": n_anomalies,
        "timings": json.dumps(job.timings)}


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


def _ms_dt(ms: int | None) -> _dt.datetime | None:
    if ms is None:
        return None
    return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=int(ms))


def _us_dt(us: int | None) -> _dt.datetime | None:
    if us is None:
        return None
    return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=int(us))


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


def _rewalk_fn(store: StoreLocation, config: BrokerConfig):
    def rewalk(split: Split, entering: cl.WalkState | None, limit_rel: int | None):
        with store.reader(store.segments[split.segment]) as read:
            sync, res = walk_split(split, read, config, entering=entering, limit_rel=limit_rel)
        return split_summary(split, sync, entering, res), res
    return rewalk


# ---------------------------------------------------------------------------------------------
# refreshing the tables alone


class _TablesScan:
    """``mapInArrow`` over split ids (``spark.range``): walk each split, emit its record rows and trailer."""

    def __init__(self, splits: list[Split], store: StoreLocation, config: BrokerConfig, with_body: bool) -> None:
        self.splits = splits
        self.uri = store.uri
        self.config = config
        self.with_body = with_body

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from store_format.store import Reader, resolve
        fs, _ = resolve(self.uri)
        for batch in batches:
            for split_id in batch.column(0).to_pylist():
                split = self.splits[split_id]
                with Reader(fs, split.path) as read:
                    sync, res = walk_split(split, read, self.config)
                summary = split_summary(split, sync, None, res)
                yield records_batch(split, res, summary, True, self.with_body)


def run_tables(store: str, tables: str, config: BrokerConfig, *, spark=None, master: str | None = None,
               split_size: int | None = None, with_body: bool = False, full: bool = False,
               key_buckets: int | None = None, log_level: str | None = None) -> dict:
    """Refresh the tables of ``store`` under ``tables`` without rebuilding its files.

    Rescans from the start of the segment holding the watermark of the newest ``runs`` row (all of
    the store without one, or with ``full``), replaces the rows of the rescanned segments, and drops
    the rows of segments the broker deleted since.  ``key_buckets`` sets the buckets per segment of a
    new ``message_keys`` table (default :func:`default_key_buckets`; an existing table keeps its own).
    """
    started = time.time()
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d%H%M%S") + "-" + uuid.uuid4().hex[:6]
    st = open_store(store, config)
    config = resolve_broker_version(st, config)
    spark = spark or build_spark_session(master, log_level=log_level)
    timings: dict[str, float] = {}
    snap = snapshot(tables)   # the latest complete run: its state is where this run starts from
    recovered = report_interrupted(snap, run_id)
    prev = None if full else snap.run
    first = 0
    if prev is not None and prev.get("watermark_segment"):
        names = [s.name for s in st.segments]
        wm = prev["watermark_segment"]
        first = names.index(wm) if wm in names else next((i for i, n in enumerate(names) if n > wm), len(names) - 1)
    sub = StoreLocation(st.uri, st.fs, st.root,
                        [dataclasses.replace(s, index=i) for i, s in enumerate(st.segments[first:])])
    resume = None
    if prev is not None:
        resume = _resume_state(spark, snap, sub.segments[0].name, config.index_entries_per_file)
    lap = time.perf_counter()
    splits = plan_splits(sub, split_size or DEFAULT_SPLIT_SIZE)
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    split_ids = spark.range(0, len(splits), 1, numPartitions=len(splits))
    scanned = split_ids.mapInArrow(_TablesScan(splits, sub, config, with_body),
                                   spark_schema(record_schema(True, with_body))).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        trailers = scanned.filter(F.col("row_kind") == ROW_TRAILER).select("split_id", "summary").collect()
        summaries = {int(r["split_id"]): json.loads(r["summary"]) for r in trailers}
        rewalk = _rewalk_fn(sub, config)
        chain = chain_splits(sub, config, splits, summaries, rewalk)
        carry_index_state(chain, config, rewalk)  # walks, here, the splits whose index state needs it
        local_tables = {}
        for e in chain.entries:
            if e.replaced:
                t = pa.Table.from_batches([records_batch(e.split, e.local, e.summary, True, with_body)])
                local_tables[e.split.split_id] = t.filter(pc.equal(t["row_kind"], ROW_RECORD))
        timings["scan"] = round(time.perf_counter() - lap, 3)
        job = _Publish(st, sub, chain, scanned, local_tables, run_id, "tables",
                       "incremental" if prev is not None else "full", resume, started, timings, snap, recovered,
                       key_buckets)
        return _publish(spark, tables, config, job)
    finally:
        scanned.unpersist()


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
