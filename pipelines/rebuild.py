"""The rebuild job: plan splits → scan → chain → queue positions → consume queue files →
index ordinals → index files → commit → (tables).

Every stage reports progress; the summary says what was read, what was written, what looked wrong,
and how long each stage took.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import time
import uuid
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.indexfile import index_file_names_checked, index_file_pieces
from store_format.reput import resolve_broker_version
from store_format.store import StoreLocation, load_config_for, open_store
from store_format.timeutil import zone

from .build import RESULT_SCHEMA, BuildTask, index_part_name, write_file
from .chain import carry_index_state, chain_splits, index_file_parts
from .commit import StagedOutput
from .plan import DEFAULT_SPLIT_SIZE, Split, plan_splits
from .preflight import preflight
from .scan import ROW_RECORD, ROW_TRAILER, ScanTask, record_schema, records_batch, split_summary, walk_split
from .session import build_spark_session, spark_schema
from .workfiles import drop_split_work, write_split_work

__all__ = ["RebuildSummary", "run_rebuild", "Progress"]


class Progress:
    """Stage timer that prints one line per stage (to stderr by default)."""

    def __init__(self, emit: Callable[[str], None] | None = None) -> None:
        import sys
        self.emit = emit or (lambda line: print(line, file=sys.stderr, flush=True))
        self.timings: dict[str, float] = {}
        self._t0 = time.perf_counter()
        self._stage: str | None = None
        self._start = 0.0

    def stage(self, name: str, detail: str = "") -> None:
        self.done()
        self._stage, self._start = name, time.perf_counter()
        self.emit(f"[rebuild] {name}{': ' + detail if detail else ''} ...")

    def done(self, detail: str = "") -> None:
        if self._stage is not None:
            dt = time.perf_counter() - self._start
            self.timings[self._stage] = round(dt, 3)
            self.emit(f"[rebuild] {self._stage} done in {dt:.2f}s{' (' + detail + ')' if detail else ''}")
            self._stage = None

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def watch(self, spark: SparkSession | None, what: str, unit_bytes: float = 0.0, every: float = 10.0):
        """While a Spark job runs, print how many of its tasks are done every ``every`` seconds."""
        import threading

        stop = threading.Event()
        if spark is None:
            return stop
        tracker = spark.sparkContext.statusTracker()

        def loop() -> None:
            started = time.perf_counter()
            while not stop.wait(every):
                done = total = 0
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info:
                        done += info.numCompletedTasks
                        total += info.numTasks
                if total:
                    extra = f", {done * unit_bytes / 1e6:,.0f} MB" if unit_bytes else ""
                    self.emit(f"[rebuild]   {what}: {done}/{total} tasks done{extra}, "
                              f"{time.perf_counter() - started:.0f}s")

        threading.Thread(target=loop, daemon=True).start()
        return stop


@dataclasses.dataclass
class RebuildSummary:
    store: str
    out: str
    run_id: str
    segments: int
    bytes: int
    splits: int
    records: int
    dispatched: int
    consume_queue_units: int
    queues: int
    consume_queue_files: int
    index_files: int
    index_keys: int
    anomalies: list[dict]
    rewalked_splits: int
    timings: dict[str, float]
    seconds: float
    tables: str | None = None
    tables_error: str | None = None

    @property
    def anomaly_count(self) -> int:
        return len([a for a in self.anomalies if a["kind"] != "end_of_data"])

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def render(self) -> str:
        mb = self.bytes / 1e6
        lines = [
            f"store              {self.store}",
            f"output             {self.out}",
            f"segments           {self.segments} ({mb:,.1f} MB in {self.splits} splits)",
            f"records            {self.records:,} read, {self.dispatched:,} dispatched",
            f"consume queues     {self.queues:,} queues, {self.consume_queue_files:,} files, "
            f"{self.consume_queue_units:,} units",
            f"index              {self.index_files:,} files, {self.index_keys:,} keys",
            f"anomalies          {len([a for a in self.anomalies if a['kind'] != 'end_of_data'])}",
        ]
        for a in self.anomalies:
            if a["kind"] != "end_of_data":
                lines.append(f"  - {a['kind']}: {a.get('detail', '')}")
        lines.append(f"time               {self.seconds:.2f}s (" +
                     ", ".join(f"{k} {v:.2f}s" for k, v in self.timings.items()) + ")")
        working = (self.seconds - self.timings.get("spark session", 0.0) - self.timings.get("plan", 0.0)
                   - self.timings.get("tables", 0.0))
        lines.append(f"throughput         {mb / max(self.seconds, 1e-9):,.0f} MB/s, "
                     f"{self.records / max(self.seconds, 1e-9):,.0f} records/s end to end; "
                     f"{mb / max(working, 1e-9):,.0f} MB/s for the rebuild once the session is up")
        if self.tables:
            lines.append(f"tables             {self.tables}")
        if self.tables_error:
            lines.append(f"tables             NOT published ({self.tables_error}); rerun "
                         "'python -m pipelines tables' to publish them")
        return "\n".join(lines)


def _driver_rewalk(store: StoreLocation, config: BrokerConfig, work_uri: str, buckets: int):
    """Walk a split in the driver from a known loop state; its work files replace the task's."""
    def rewalk(split: Split, entering: cl.WalkState | None, limit_rel: int | None):
        with store.reader(store.segments[split.segment]) as read:
            sync, res = walk_split(split, read, config, entering=entering, limit_rel=limit_rel)
        drop_split_work(work_uri, split.split_id)
        write_split_work(work_uri, split.split_id, res, buckets)
        return split_summary(split, sync, entering, res), res
    return rewalk


def run_rebuild(store: str, out: str, config: BrokerConfig | None = None, *, config_path: str | None = None,
                spark: SparkSession | None = None, master: str | None = None, split_size: int | None = None,
                tables: str | None = None, with_body: bool = False, tz: str = "UTC", overwrite: bool = False,
                progress: Progress | None = None, engine: str = "spark", processes: int = 1,
                log_level: str | None = None, as_restart: bool = False) -> RebuildSummary:
    """Rebuild ``consumequeue/`` and ``index/`` of ``store`` into ``out``.

    Args:
        store: broker store root (the folder holding ``commitlog/``), local path or URI.
        out: where ``consumequeue/`` and ``index/`` are written (laid out like a store root).
        config: broker settings; default: ``config_path`` or the broker's defaults.
        spark: a session to use (default: local, or ``master``).
        split_size: bytes per scan task (default 128 MiB).
        tables: publish the Delta tables under this path (None: no tables).
        tz: time zone of index file names (``yyyyMMddHHmmssSSS``).
        overwrite: replace existing outputs in ``out`` once the new ones are complete.
        engine: ``spark``, or ``local`` to run the very same tasks without a JVM: in this process,
            or in ``processes`` forked processes (single machines, tests of the orchestration; no
            tables).
    Raises:
        StoreError: bad store layout, unsupported settings, existing outputs without ``overwrite``.
    """
    progress = progress or Progress()
    config = config or load_config_for(config_path)
    if as_restart:
        from store_format.errors import StoreError
        raise StoreError("--as-restart is not available yet")
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d%H%M%S") + "-" + uuid.uuid4().hex[:6]
    progress.stage("plan", store)
    st = open_store(store, config)
    config = resolve_broker_version(st, config)
    if st.broker_may_be_running():
        progress.emit(f"[rebuild] warning: {store}/abort exists: a broker may be running on this store (or it "
                      "crashed); segments still being written can change under the scan")
    splits = plan_splits(st, split_size or DEFAULT_SPLIT_SIZE)
    staged = StagedOutput(out, run_id, overwrite=overwrite)
    staged.check_target()  # finishes or rolls back an interrupted commit, removes stale staging folders
    preflight(st, config, out)
    if engine not in ("spark", "local"):
        raise ValueError(f"engine must be 'spark' or 'local', not {engine!r}")
    if engine == "local" and tables is not None:
        raise ValueError("the Delta tables need the Spark engine")
    if engine == "spark" and spark is None:
        progress.stage("spark session", master or "local[*]")
        spark = build_spark_session(master, log_level=log_level)
    details = tables is not None
    parallelism = max(spark.sparkContext.defaultParallelism, 1) if spark is not None else max(processes, 1)
    buckets = max(1, min(4 * parallelism, 512))
    work_uri = f"{staged.staging_uri}/_work"
    scanned: DataFrame | None = None
    index_anomalies: list[dict] = []
    try:
        staged.prepare()
        progress.stage("scan", f"{len(st.segments)} segments, {st.total_bytes() / 1e6:,.1f} MB, {len(splits)} splits")
        # contiguous runs of splits per task: a few tasks per core keep the per-task overhead low
        n_tasks = min(len(splits), 4 * parallelism)
        task_splits = [list(block) for block in np.array_split(np.arange(len(splits)), n_tasks)]
        task_splits = [[int(x) for x in block] for block in task_splits if len(block)]
        with_body = with_body and details
        scan_task = ScanTask(splits, store, config, details, work_uri, buckets, task_splits, with_body=with_body)
        if spark is None:
            local_rows = _run_local(scan_task, len(task_splits), processes)
            trailers = local_rows.filter(pc.equal(local_rows["row_kind"], ROW_TRAILER)).select(
                ["split_id", "summary"]).to_pylist()
        else:
            scanned = spark.range(0, len(task_splits), 1, numPartitions=len(task_splits)).mapInArrow(
                scan_task, spark_schema(record_schema(details, with_body)))
            if details:
                scanned = scanned.persist(StorageLevel.MEMORY_AND_DISK)
            watcher = progress.watch(spark, "scan", st.total_bytes() / max(len(task_splits), 1))
            try:
                trailers = scanned.filter(F.col("row_kind") == ROW_TRAILER).select("split_id", "summary").collect()
            finally:
                watcher.set()
        summaries = {int(r["split_id"]): json.loads(r["summary"]) for r in trailers}
        n_records = sum(s.get("records", 0) for s in summaries.values())
        progress.stage("chain")
        rewalk = _driver_rewalk(st, config, work_uri, buckets)
        chain = chain_splits(st, config, splits, summaries, rewalk)
        index_in, index_totals = carry_index_state(chain, config, rewalk)
        local_tables: dict[int, pa.Table] = {}
        for e in chain.entries:
            if e.replaced and details:
                t = pa.Table.from_batches([records_batch(e.split, e.local, e.summary, details, with_body)])
                local_tables[e.split.split_id] = t.filter(pc.equal(t["row_kind"], ROW_RECORD))
        dispatched = sum(e.summary.get("dispatched", 0) for e in chain.entries)
        progress.done(f"{len(chain.entries)} splits on the reput's path, {chain.rewalked} walked again by the driver, "
                      f"{len(chain.dropped)} unreachable")

        progress.stage("build", "consume queue and index files")
        order = [e.split.split_id for e in chain.entries]
        total_keys = index_totals["keys"]
        cap = config.index_entries_per_file
        index_enabled = config.messageIndexEnable and dispatched > 0
        file_parts = index_file_parts(chain, index_in, total_keys, cap) if index_enabled else []
        # index files first: they are the largest tasks
        tasks = [{"kind": "index", "task_id": f, "parts": parts} for f, parts in enumerate(file_parts)]
        tasks += [{"kind": "cq", "task_id": b, "splits": order} for b in range(buckets)]
        build_task = BuildTask(tasks, config, work_uri, staged.staging_uri)
        if spark is None:
            results = _run_local(build_task, len(tasks), processes).to_pylist()
        else:
            watcher = progress.watch(spark, "build")
            try:
                results = (spark.range(0, len(tasks), 1, numPartitions=len(tasks))
                           .mapInArrow(build_task, spark_schema(RESULT_SCHEMA)).collect())
            finally:
                watcher.set()
        cq_files = [r for r in results if r["kind"] == "cq"]
        built = sorted((r for r in results if r["kind"] == "index"), key=lambda r: r["task_id"])
        n_units = sum(r["entries"] for r in cq_files)
        n_queues = len({(r["topic"], r["queue_id"]) for r in cq_files})
        index_files: list[tuple[int, int]] = [(r["task_id"], r["first_store_timestamp"]) for r in built]
        if index_enabled:
            trailing_empty = total_keys == 0 or (total_keys % cap == 0 and index_totals["dispatched_after_last_key"])
            if trailing_empty:
                n_files = len(built)
                prev_off = built[-1]["end_offset"] if built else 0
                prev_ts = built[-1]["end_timestamp"] if built else 0
                data = index_file_pieces([], [], [], max_hash_slot_num=config.maxHashSlotNum,
                                         max_index_num=config.maxIndexNum, prev_end_offset=prev_off,
                                         prev_end_ts=prev_ts, empty_index_count=config.empty_index_count)
                write_file(staged.staging_uri, index_part_name(n_files), data)
                index_files.append((n_files, prev_ts if prev_ts > 0 else (index_totals["first_store_ts"] or 0)))
            names, clamped = index_file_names_checked([ts for _, ts in index_files], zone(tz))
            for pos in clamped:
                index_anomalies.append({
                    "kind": "store_timestamp_out_of_range", "segment": None, "position": None,
                    "detail": f"index file {names[pos]} starts with store timestamp {index_files[pos][1]}, outside "
                              "the years 1970..9999; its name was clamped (the bytes are as the broker writes them)"})
            for (file_no, _), name in zip(index_files, names):
                staged.rename_staged(index_part_name(file_no), f"index/{name}")
        staged.drop_work()
        progress.done(f"{n_queues} queues, {len(cq_files)} consume queue files, {n_units:,} units; "
                      f"{len(index_files)} index files, {total_keys:,} keys")

        progress.stage("commit", out)
        staged.commit()
        progress.done()
    except BaseException:
        staged.abort()
        if scanned is not None and details:
            scanned.unpersist()
        raise
    # the tables come after the commit: the rebuilt files never wait on (or fail with) them
    table_path = tables_error = None
    try:
        if tables is not None:
            progress.stage("tables", tables)
            from .tables import publish_tables
            publish_tables(spark, tables, st, config, scanned, local_tables, chain, run_id=run_id)
            table_path = tables
            progress.done()
    except Exception as e:  # reported in the summary; consumequeue/ and index/ are already in place
        tables_error = f"{type(e).__name__}: {e}"
        progress.emit(f"[rebuild] tables not published: {tables_error}")
    finally:
        if scanned is not None and details:
            scanned.unpersist()
    anomalies = list(chain.anomalies) + index_anomalies
    for e in chain.entries:
        if e.summary.get("mismatched"):
            anomalies.append({"kind": "size_mismatch", "segment": e.split.segment, "position": e.split.start,
                              "detail": f"{e.summary['mismatched']} record(s) in split {e.split.split_id} whose "
                                        "totalSize disagrees with their fields: not dispatched"})
    return RebuildSummary(store=store, out=out, run_id=run_id, segments=len(st.segments), bytes=st.total_bytes(),
                          splits=len(splits), records=n_records, dispatched=dispatched, consume_queue_units=n_units,
                          queues=n_queues, consume_queue_files=len(cq_files), index_files=len(index_files),
                          index_keys=total_keys, anomalies=anomalies, rewalked_splits=chain.rewalked,
                          timings=progress.timings, seconds=round(progress.elapsed, 3), tables=table_path,
                          tables_error=tables_error)


_LOCAL_TASK = None


def _one_local_task(i: int) -> list[pa.RecordBatch]:
    return list(_LOCAL_TASK([pa.record_batch([pa.array([i], type=pa.int64())], names=["id"])]))


def _run_local(task, n: int, processes: int = 1) -> pa.Table:
    """Run a task object over ids 0..n-1 as Spark would, one per partition: in this process, or
    in a pool of forked processes (each keeps its own scratch memory, like a Spark Python worker)."""
    global _LOCAL_TASK
    _LOCAL_TASK = task
    try:
        if processes <= 1 or n <= 1:
            parts = [_one_local_task(i) for i in range(n)]
        else:
            import multiprocessing
            with multiprocessing.get_context("fork").Pool(min(processes, n)) as pool:
                parts = pool.map(_one_local_task, range(n), chunksize=1)
    finally:
        _LOCAL_TASK = None
    batches = [b for part in parts for b in part]
    return pa.Table.from_batches(batches) if batches else pa.table({})
