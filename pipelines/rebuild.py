"""The rebuild job: plan splits → scan → chain → queue positions → consume queue files →
index ordinals → index files → commit → (tables).

Every stage reports progress; the summary says what was read, what was written, what looked wrong,
and how long each stage took.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import logging
import os
import time
import uuid
from collections.abc import Callable

import numpy as np

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.indexfile import index_file_names_checked, index_file_pieces, trailing_empty_file, trailing_file_time
from store_format.reput import resolve_broker_version
from store_format.store import StoreLocation, load_config_for, open_store
from store_format.timeutil import zone

from .build import BuildTask, index_part_name, index_tasks, merge_index_rows, write_file
from .chain import carry_index_state, chain_splits, index_file_parts
from .commit import StagedOutput
from .plan import DEFAULT_SPLIT_SIZE, Split, plan_splits
from .preflight import preflight
from .restart import as_restart as restart_view
from .scan import ScanTask, split_summary, walk_split
from .session import PendingSession, Spark, context_of, run_tasks, session_of, start_session, stop_jobs
from .workfiles import drop_split_work, write_split_work

__all__ = ["RebuildSummary", "run_rebuild", "Progress"]


_log = logging.getLogger("pipelines.rebuild")


class Progress:
    """Stage timer: one line per stage, through the ``pipelines.rebuild`` logger by default (the
    command line shows it on stderr; ``--log-level`` turns it up or down)."""

    def __init__(self, emit: Callable[[str], None] | None = None) -> None:
        self.emit = emit or (lambda line: _log.info(line.removeprefix("[rebuild] ")))
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

    def watch(self, spark: Spark | None, what: str, unit_bytes: float = 0.0, every: float = 10.0):
        """While a Spark job runs, print how many of its tasks are done every ``every`` seconds."""
        import threading

        stop = threading.Event()
        if spark is None:
            return stop
        tracker = context_of(spark).statusTracker()

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
    tables_recovered: list[dict] = dataclasses.field(default_factory=list)   # interrupted publishes completed
    data_end: int | None = None    # commitlog offset where the data of the last segment ends (zeros after it)

    @property
    def anomaly_count(self) -> int:
        return len(self.anomalies)

    @property
    def anomaly_kinds(self) -> dict[str, int]:
        kinds: dict[str, int] = {}
        for a in self.anomalies:
            kinds[a["kind"]] = kinds.get(a["kind"], 0) + 1
        return dict(sorted(kinds.items()))

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "anomaly_count": self.anomaly_count, "anomaly_kinds": self.anomaly_kinds}

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
            f"anomalies          {self.anomaly_count}"
            + (f" ({', '.join(f'{k} {n}' for k, n in self.anomaly_kinds.items())})" if self.anomalies else ""),
        ]
        shown = 20
        for a in self.anomalies[:shown]:
            lines.append(f"  - {a['kind']}: {a.get('detail', '')}")
        if len(self.anomalies) > shown:
            lines.append(f"  ... and {len(self.anomalies) - shown} more"
                         + (" (all in the anomalies table)" if self.tables else ""))
        lines.append(f"time               {self.seconds:.2f}s (" +
                     ", ".join(f"{k} {v:.2f}s" for k, v in self.timings.items()) + ")")
        working = (self.seconds - self.timings.get("spark session", 0.0) - self.timings.get("plan", 0.0)
                   - self.timings.get("tables", 0.0))
        lines.append(f"throughput         {mb / max(self.seconds, 1e-9):,.0f} MB/s, "
                     f"{self.records / max(self.seconds, 1e-9):,.0f} records/s end to end; "
                     f"{mb / max(working, 1e-9):,.0f} MB/s for the rebuild once the session is up")
        if self.tables:
            lines.append(f"tables             {self.tables}")
        for recovered in self.tables_recovered:
            from .tables.runs import interrupted_note
            lines.append(f"tables             {interrupted_note(recovered)}")
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
                spark: Spark | PendingSession | None = None, master: str | None = None,
                split_size: int | None = None,
                tables: str | None = None, with_body: bool = False, tz: str = "UTC", overwrite: bool = False,
                progress: Progress | None = None, engine: str = "spark", processes: int = 1,
                log_level: str | None = None, as_restart: bool = False) -> RebuildSummary:
    """Rebuild ``consumequeue/`` and ``index/`` of ``store`` into ``out``.

    The story: plan the splits, scan them in parallel, chain their walks into the reput's one walk,
    build the consume queue and index files, commit them, publish the tables.

    Args:
        store: broker store root (the folder holding ``commitlog/``), local path or URI.
        out: where ``consumequeue/`` and ``index/`` are written (laid out like a store root).
        config: broker settings; default: ``config_path`` or the broker's defaults.
        spark: a session to use, or one being started (:func:`pipelines.session.start_session`); default:
            a new one (local, or ``master``), started in the background once the options are checked.
        split_size: bytes per scan task (default 128 MiB).
        tables: publish the Delta tables under this path (None: no tables).
        tz: time zone of index file names (``yyyyMMddHHmmssSSS``).
        overwrite: replace existing outputs in ``out`` once the new ones are complete.
        engine: ``spark``, or ``local`` to run the very same tasks without a JVM: in this process,
            or in ``processes`` forked processes (single machines, tests of the orchestration; no
            tables).
        as_restart: apply the broker's commitlog recovery first (:mod:`store_format.recovery`): the
            files a broker restart would write.
    Raises:
        StoreError: bad store layout, unsupported settings, existing outputs without ``overwrite``.
    """
    progress = progress or Progress()
    config = config or load_config_for(config_path)
    # executors resolve paths in their own working folders: give them absolute ones
    store, out = _absolute(store), _absolute(out)
    tables = _absolute(tables) if tables is not None else None
    if engine not in ("spark", "local"):
        raise ValueError(f"engine must be 'spark' or 'local', not {engine!r}")
    if engine == "local" and tables is not None:
        raise ValueError("the Delta tables need the Spark engine")
    started = time.time()
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d%H%M%S") + "-" + uuid.uuid4().hex[:6]
    zone(tz)  # an unknown time zone fails now, before anything starts
    # options and settings are valid: the JVM starts (one core) while the store is planned (the other)
    session = spark if isinstance(spark, PendingSession) else None
    if engine == "spark" and spark is None:
        session = start_session(master, log_level, sql=tables is not None)
    progress.stage("plan", store)
    st = open_store(store, config)
    config = resolve_broker_version(st, config)
    recovery = None
    if as_restart:
        st, recovery = restart_view(st, config, progress)
    if st.broker_may_be_running():
        progress.emit(f"[rebuild] warning: {store}/abort exists: a broker may be running on this store (or it "
                      "crashed); segments still being written can change under the scan")
    splits = plan_splits(st, split_size or DEFAULT_SPLIT_SIZE)
    staged = StagedOutput(out, run_id, overwrite=overwrite)
    staged.check_target()  # finishes or rolls back an interrupted commit, removes stale staging folders
    preflight(st, config, out)
    if session is not None:
        progress.stage("spark session", f"{_master_label(master)} (started before the plan)")
        spark = session.context()   # the RDD jobs need no SQL session (see pipelines.session.Spark)
    assert not isinstance(spark, PendingSession)
    job = _Job(st, config, splits, staged, spark, processes, progress)
    pending_tables = None
    tables_published = False
    tables_recovered: list[dict] = []
    tables_error: str | None = None
    try:
        staged.prepare()
        summaries = job.scan()
        chain, index_in, index_totals = job.chain(summaries)
        built = job.build(chain, index_in, index_totals, record_states=tables is not None, tz=tz)
        anomalies = _rebuild_anomalies(st, chain, built, recovery)
        if tables is not None:
            progress.stage("tables", tables)
            try:
                pending_tables = job.tables_rows(tables, chain, index_in, built, run_id, started, with_body,
                                                 anomalies)
            except Exception as err:  # reported in the summary; the rebuilt files are committed all the same
                tables_error = f"{type(err).__name__}: {err}"
                progress.emit(f"[rebuild] tables not published: {tables_error}")
        staged.drop_work()
        progress.stage("commit", out)
        staged.commit()
        progress.done()
    except BaseException as err:
        if isinstance(err, KeyboardInterrupt) and spark is not None:
            stop_jobs(spark)
        staged.abort()
        raise
    if pending_tables is not None:
        progress.stage("tables: commit", tables or "")
        try:
            published = pending_tables.finish()
            tables_recovered = published.get("recovered", [])
            tables_published = True
            progress.done()
        except Exception as err:
            tables_error = f"{type(err).__name__}: {err}"
            progress.emit(f"[rebuild] tables not published: {tables_error}")
    if tables_published:   # the anomalies table's rows: the rebuild's own and what the tables found per record
        anomalies = [{"kind": r["kind"], "segment": r["segment"], "position": r["position"], "detail": r["detail"]}
                     for r in published["anomaly_rows"]]
    return RebuildSummary(store=store, out=out, run_id=run_id, segments=len(st.segments), bytes=st.total_bytes(),
                          splits=len(splits), records=sum(s.get("records", 0) for s in summaries.values()),
                          dispatched=index_totals["dispatched"], consume_queue_units=built.units,
                          queues=built.queues, consume_queue_files=built.cq_file_count,
                          index_files=len(built.index_files), index_keys=index_totals["keys"], anomalies=anomalies,
                          rewalked_splits=chain.rewalked, timings=progress.timings,
                          seconds=round(progress.elapsed, 3),
                          tables=tables if tables_published else None,
                          tables_error=tables_error, tables_recovered=tables_recovered,
                          data_end=next((st.segments[a["segment"]].base + a["position"] for a in chain.anomalies
                                         if a["kind"] == "end_of_data"), None))


# kinds the tables derive from the chain themselves (classifying an unreadable record by its magic code)
_CHAIN_KINDS = ("unreadable_record", "unreachable_records", "size_mismatch")


def _rebuild_anomalies(st: StoreLocation, chain, built: _Built, recovery) -> list[dict]:
    """What the rebuild itself found wrong, in the summary's form (kind, segment number, position,
    detail).  The end of the data in the last segment is no anomaly."""
    anomalies = [a for a in chain.anomalies if a["kind"] != "end_of_data"] + built.anomalies
    anomalies += recovery.anomalies() if recovery else []
    for e in chain.entries:
        bad_lmq = e.summary.get("lmq_bad_offsets")
        if bad_lmq:
            seg_name = st.segments[e.split.segment].name
            where = ", ".join(f"{pos} (light queue {name!r})" for pos, name in bad_lmq["first"])
            anomalies.append({
                "kind": "lmq_offset_unparsable", "segment": e.split.segment, "position": bad_lmq["first"][0][0],
                "detail": f"{bad_lmq['count']} record(s) in segment {seg_name} (at {where}"
                          f"{', ...' if bad_lmq['count'] > len(bad_lmq['first']) else ''}) carry an "
                          "INNER_MULTI_QUEUE_OFFSET that Long.parseLong refuses: the broker's dispatcher throws on "
                          "such a record and its reput retries it forever, dispatching nothing after it; this "
                          "rebuild leaves that light queue unit out and goes on"})
        if e.summary.get("mismatched"):
            anomalies.append({"kind": "size_mismatch", "segment": e.split.segment, "position": e.split.start,
                              "detail": f"{e.summary['mismatched']} record(s) in segment "
                                        f"{st.segments[e.split.segment].name} "
                                        f"from position {e.split.start} whose totalSize disagrees with their fields: "
                                        "not dispatched"})
    return anomalies


def _master_label(master: str | None) -> str:
    """The master a new session will get, for the progress line."""
    if master:
        return master
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # launched by spark-submit, which set the master
        return os.environ.get("SPARK_MASTER") or "the master of spark-submit"
    return "local[*]"


def _absolute(path: str) -> str:
    """A local path made absolute (URIs as they are)."""
    return path if "://" in path else os.path.abspath(path)


@dataclasses.dataclass
class _Built:
    """What the build stage wrote."""
    cq_files: list[dict]
    index_files: list[dict]        # in file order, with their names
    units: int
    queues: int
    anomalies: list[dict]

    @property
    def cq_file_count(self) -> int:
        return len(self.cq_files)


class _Job:
    """The stages of one rebuild, each a short function over plain values."""

    def __init__(self, st: StoreLocation, config: BrokerConfig, splits: list[Split], staged: StagedOutput,
                 spark: Spark | None, processes: int, progress: Progress) -> None:
        self.st, self.config, self.splits, self.staged = st, config, splits, staged
        self.spark, self.processes, self.progress = spark, processes, progress
        parallelism = max(context_of(spark).defaultParallelism, 1) if spark is not None else max(processes, 1)
        self.parallelism = parallelism
        self.buckets = max(1, min(parallelism, 512))
        self.work_uri = f"{staged.staging_uri}/_work"

    def _run(self, task, n: int, what: str, unit_bytes: float = 0.0) -> list[dict]:
        """Run a task object (``rows(task_id) -> list of dicts``) over ids 0..n-1, one Spark task each (or
        locally), and collect the rows.  Plain RDD tasks: the rows are a few per task (summaries, file
        lists), and the first job starts a second sooner than through DataFrames and Arrow."""
        if self.spark is None:
            return _run_local(task, n, self.processes)
        watcher = self.progress.watch(self.spark, what, unit_bytes)
        try:
            return run_tasks(self.spark, task, n, what)
        finally:
            watcher.set()

    def scan(self) -> dict[int, dict]:
        """Walk every split in parallel; each writes its work files and returns its summary."""
        st, splits = self.st, self.splits
        self.progress.stage("scan", f"{len(st.segments)} segments, {st.total_bytes() / 1e6:,.1f} MB, "
                                    f"{len(splits)} splits")
        # contiguous runs of splits per task: two per core keep the fixed cost per task low
        n_tasks = min(len(splits), 2 * self.parallelism)
        blocks = [[int(x) for x in block] for block in np.array_split(np.arange(len(splits)), n_tasks) if len(block)]
        task = ScanTask(splits, st.uri, self.config, self.work_uri, self.buckets, blocks)
        rows = self._run(task, len(blocks), "scan", st.total_bytes() / max(len(blocks), 1))
        return {int(r["split_id"]): json.loads(r["summary"]) for r in rows}

    def chain(self, summaries: dict[int, dict]):
        """Follow the reput from split to split; walk here the splits whose walk must start elsewhere."""
        self.progress.stage("chain")
        rewalk = _driver_rewalk(self.st, self.config, self.work_uri, self.buckets)
        chain = chain_splits(self.st, self.config, self.splits, summaries, rewalk)
        index_in, index_totals = carry_index_state(chain, self.config, rewalk)
        self.progress.done(f"{len(chain.entries)} splits on the reput's path, {chain.rewalked} walked again by the "
                           f"driver, {len(chain.dropped)} unreachable")
        return chain, index_in, index_totals

    def build(self, chain, index_in, index_totals, *, record_states: bool, tz: str) -> _Built:
        """Consume queue files per queue bucket, index files one per task; then the index file names."""
        config = self.config
        self.progress.stage("build", "consume queue and index files")
        order = [e.split.split_id for e in chain.entries]
        total_keys = index_totals["keys"]
        index_enabled = config.messageIndexEnable and index_totals["dispatched"] > 0
        file_parts = index_file_parts(chain, index_in, total_keys, config.index_entries_per_file) \
            if index_enabled else []
        tasks = index_tasks(file_parts, total_keys, config, self.parallelism, self.staged.staging_uri)
        tasks += [{"kind": "cq", "task_id": b, "splits": order, "record_states": record_states}
                  for b in range(self.buckets)]
        results = self._run(BuildTask(tasks, config, self.work_uri, self.staged.staging_uri), len(tasks), "build")
        cq_files = [r for r in results if r["kind"] == "cq"]
        index_files = merge_index_rows([r for r in results if r["kind"] == "index"])
        anomalies: list[dict] = []
        if index_enabled:
            index_files += self._trailing_index_file(index_files, index_totals)
            names, clamped = index_file_names_checked([r["first_store_timestamp"] for r in index_files], zone(tz))
            for r, name in zip(index_files, names):
                r["name"] = name
                self.staged.rename_staged(index_part_name(r["task_id"]), f"index/{name}")
            for pos in clamped:
                anomalies.append({
                    "kind": "store_timestamp_out_of_range", "segment": None, "position": None,
                    "detail": f"index file {names[pos]} starts with store timestamp "
                              f"{index_files[pos]['first_store_timestamp']}, outside the years 1970..9999; its name "
                              "was clamped (the bytes are as the broker writes them)"})
        built = _Built(cq_files, index_files, sum(r["entries"] for r in cq_files),
                       len({(r["topic"], r["queue_id"]) for r in cq_files}), anomalies)
        self.progress.done(f"{built.queues} queues, {len(cq_files)} consume queue files, {built.units:,} units; "
                           f"{len(index_files)} index files, {total_keys:,} keys")
        return built

    def _trailing_index_file(self, built: list[dict], index_totals: dict) -> list[dict]:
        """The empty index file the broker creates when a record is dispatched after a full file
        (or, with no key at all, the first one): :func:`store_format.indexfile.plan_trailing_file`."""
        config = self.config
        cap = config.index_entries_per_file
        total_keys = index_totals["keys"]
        if not trailing_empty_file(total_keys, cap, index_totals["dispatched_after_last_key"]):
            return []
        file_no = len(built)
        prev_off = built[-1]["end_offset"] if built else 0
        prev_ts = built[-1]["end_timestamp"] if built else 0
        none = np.zeros(0, dtype=np.int64)
        data = index_file_pieces(none.astype(np.int32), none, none, max_hash_slot_num=config.maxHashSlotNum,
                                 max_index_num=config.maxIndexNum,
                                 prev_end_offset=prev_off, prev_end_ts=prev_ts,
                                 empty_index_count=config.empty_index_count)
        size = write_file(self.staged.staging_uri, index_part_name(file_no), data)
        return [{"kind": "index", "task_id": file_no, "entries": 0, "bytes": size, "begin_offset": None,
                 "first_store_timestamp": trailing_file_time(prev_ts, index_totals["first_store_ts"]),
                 "end_offset": prev_off, "end_timestamp": prev_ts}]

    def tables_rows(self, tables: str, chain, index_in, built: _Built, run_id: str, started: float,
                    with_body: bool, anomalies: list[dict]):
        """Write the tables' rows from this rebuild's results (:mod:`pipelines.tables.publish`); the
        commit of the tables comes after the files' commit (``finish``)."""
        from .tables.publish import RebuildResults, stage_tables
        if self.spark is None:
            raise ValueError("the Delta tables need the Spark engine")
        results = RebuildResults(self.st, self.config, chain, index_in, built.cq_files, built.index_files,
                                 self.work_uri, self.buckets, run_id, started, self.progress.timings,
                                 [a for a in anomalies if a["kind"] not in _CHAIN_KINDS])
        return stage_tables(session_of(self.spark), tables, results, with_body=with_body)


_LOCAL_TASK = None


def _one_local_task(i: int) -> list[dict]:
    assert _LOCAL_TASK is not None
    return _LOCAL_TASK.rows(i)


def _run_local(task, n: int, processes: int = 1) -> list[dict]:
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
    return [row for part in parts for row in part]
