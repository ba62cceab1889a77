"""The rebuild job: plan splits → scan → chain (:mod:`pipelines.stages`) → queue positions →
consume queue files → index ordinals → index files → commit → (tables).

Every stage reports progress; the summary says what was read, what was written, what looked wrong,
and how long each stage took.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
import os
import time
import uuid
from typing import Any

import pyarrow.fs as pafs

from store_format.concurrent_reput import (
    ConcurrentStop,
    concurrent_reput_applies,
    empty_request_units,
    index_after_last_key,
    past_the_stop,
    settle,
    stop_detail,
)
from store_format.config import BrokerConfig
from store_format.errors import StoreLayoutError, UnsupportedConfigError
from store_format.recovery import dispatch_config
from store_format.reput import resolve_broker_version
from store_format.store import StoreLocation, load_config_for, open_store, resolve
from store_format.timeutil import zone

from .brokerlock import REBUILD_MEANING, warn_if_broker_live
from .build_stage import Built, build_files
from .commit import StagedOutput
from .index_rocksdb import ROCKSDB_DIR, build_index_rocksdb, rocksdbstore_plan
from .oserrors import failure_line, os_error_line
from .outlock import OutputLock
from .plan import DEFAULT_SPLIT_SIZE, plan_splits
from .preflight import preflight
from .restart import DLedgerRestart, Restart, led_dledger_store
from .restart import as_restart as restart_view
from .restart_cut import apply_cut
from .restart_topic_empty import queue_zero_mix, queue_zero_seeds, write_topic_empty
from .session import PendingSession, Spark, session_of, start_session, stop_jobs
from .stages import Progress, ReputWalk, TaskRunner, scan_and_chain
from .workfiles import read_index_rocksdb

__all__ = ["RebuildSummary", "run_rebuild", "Progress"]

log = logging.getLogger("pipelines.rebuild")


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
    rocksdb_index_keys: int | None = None   # rocksdbstore/'s index keys, when written (indexRocksDBEnable)
    tables_error: str | None = None
    tables_error_code: int = 1     # exit code for it: 2 when the user can fix the cause (space, permissions)
    tables_recovered: list[dict] = dataclasses.field(default_factory=list)   # interrupted publishes completed
    data_end: int | None = None    # commitlog offset where the data of the last segment ends (zeros after it)
    dledger: dict | None = None    # a DLedger store: its log folder, committed index and offset
    batch_queues: dict | None = None   # BatchCQ topics: batchconsumequeue/ "queues", "files", "units"

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
            *([f"batch queues       {self.batch_queues['queues']:,} queues, {self.batch_queues['files']:,} files, "
               f"{self.batch_queues['units']:,} units (batchconsumequeue/)"] if self.batch_queues else []),
            f"index              {self.index_files:,} files, {self.index_keys:,} keys",
            *([f"rocksdb index      {self.rocksdb_index_keys:,} keys (rocksdbstore/)"]
              if self.rocksdb_index_keys is not None else []),
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
        if self.dledger:
            d = self.dledger
            if d.get("restart_dispatches_nothing"):
                lines.append(f"dledger            {d['log']}: committed index {d['committed_index']:,}, offset "
                             f"{d['committed_offset']:,}; a 5.x restart dispatches nothing (its reput starts there; "
                             "recheckReputOffsetFromCq=true moves it to the min offset); rebuild without "
                             "--as-restart for the files")
            else:
                lines.append(f"dledger            {d['log']}: committed index {d['committed_index']:,}, dispatched "
                             f"up to offset {d['committed_offset']:,}" + (
                                 "; entries written after it are not dispatched until the group commits them"
                                 if d["uncommitted"] else "")
                             + (f"; the restart assumes the node leads: a group of one commits the entries past the "
                                f"checkpoint's committed index {d['restart_assumes_leader']:,} (a multi-node group "
                                "may truncate them)" if "restart_assumes_leader" in d else ""))
        if self.tables:
            lines.append(f"tables             {self.tables}")
        for recovered in self.tables_recovered:
            from .tables.runs import interrupted_note
            lines.append(f"tables             {interrupted_note(recovered)}")
        if self.tables_error:
            lines.append(f"tables             NOT published ({self.tables_error}); rerun "
                         "'python -m pipelines tables' to publish them")
        return "\n".join(lines)


def run_rebuild(store: str, out: str, config: BrokerConfig | None = None, *, config_path: str | None = None,
                spark: Spark | PendingSession | None = None, master: str | None = None,
                split_size: int | None = None,
                tables: str | None = None, with_body: bool = False, tz: str = "UTC", overwrite: bool = False,
                progress: Progress | None = None, engine: str = "spark", processes: int = 1,
                log_level: str | None = None, as_restart: bool = False, strict: bool | None = False,
                dledger_led: bool = False) -> RebuildSummary:
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
        dledger_led: a DLedger store whose clean restart finds entries past the committed one read to the log's end
            (:func:`pipelines.restart.led_dledger_store`: verify's reference for that restart).
        strict: refuse a store a broker may be running on (else a warning):
            :func:`pipelines.brokerlock.warn_if_broker_live`; None: the caller has checked.
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
    if strict is not None:
        warn_if_broker_live(store, strict=strict, meaning=REBUILD_MEANING)
    # one run per output: a second one refuses before any work (pipelines.outlock)
    locks = [OutputLock(out, "--out", f"rebuild of {store}").acquire()]
    try:
        if tables is not None:
            locks.append(OutputLock(tables, "--tables", f"rebuild of {store}").acquire())
            from .tables.publish import discard_staged_tables
            for left in discard_staged_tables(tables):   # the lock is ours: any staging is a dead run's
                progress.emit(f"[rebuild] removed {left}, left by an interrupted run")
        return _rebuild_locked(store, out, config, spark=spark, master=master, split_size=split_size, tables=tables,
                               with_body=with_body, tz=tz, overwrite=overwrite, progress=progress, engine=engine,
                               processes=processes, log_level=log_level, as_restart=as_restart, run_id=run_id,
                               started=started, dledger_led=dledger_led)
    finally:   # after the staging is gone: the lock of default tables (OUT/tables) lives in OUT
        for lock in reversed(locks):
            lock.release()


def _dledger_figures(st: StoreLocation, recovery: object) -> dict | None:
    """A DLedger store's figures for the summary; ``--as-restart`` on 5.x without
    recheckReputOffsetFromCq: the restart dispatches nothing (its reput starts at the log's end); a clean restart with
    entries past the committed one: it assumes the node leads (``restart_assumes_leader``: the checkpoint's index)."""
    if st.dledger is None:
        return None
    figures = st.dledger.figures()
    if isinstance(recovery, DLedgerRestart) and recovery.nothing:
        figures["restart_dispatches_nothing"] = True
    if isinstance(recovery, DLedgerRestart) and recovery.leads:   # the checkpoint's committed index, before it leads
        figures["restart_assumes_leader"] = recovery.recovery.committed_index
    return figures


def _rebuild_locked(store: str, out: str, config: BrokerConfig, *, spark: Spark | PendingSession | None,
                    master: str | None, split_size: int | None, tables: str | None, with_body: bool, tz: str,
                    overwrite: bool, progress: Progress, engine: str, processes: int, log_level: str | None,
                    as_restart: bool, run_id: str, started: float, dledger_led: bool = False) -> RebuildSummary:
    """:func:`run_rebuild` once its outputs are locked: plan, scan and chain, build, commit, then the tables."""
    # options and settings are valid: the JVM starts (one core) while the store is planned (the other)
    session = spark if isinstance(spark, PendingSession) else None
    if engine == "spark" and spark is None:
        session = start_session(master, log_level, sql=tables is not None)
    progress.stage("plan", store)
    st, config, recovery = _store_view(store, config, progress, as_restart=as_restart, dledger_led=dledger_led,
                                       tables=tables)
    index_rocksdb, rocksdb_warnings = rocksdbstore_plan(config, as_restart=as_restart)
    if as_restart and index_rocksdb:
        config = _restart_index_from(st, config, progress, recovery)
    splits = plan_splits(st, split_size or DEFAULT_SPLIT_SIZE)
    staged = StagedOutput(out, run_id, overwrite=overwrite, optional=(ROCKSDB_DIR,) if index_rocksdb else ())
    staged.check_target()  # finishes or rolls back an interrupted commit, removes stale staging folders
    preflight(st, config, out, tables, with_body)
    if session is not None:
        progress.stage("spark session", f"{_master_label(master)} (started before the plan)")
        spark = session.context()   # the RDD jobs need no SQL session (see pipelines.session.Spark)
    assert not isinstance(spark, PendingSession)
    runner = TaskRunner(spark, processes, progress)
    outcome = _TablesOutcome(tables, run_id, progress)
    try:
        staged.prepare()
        walk = scan_and_chain(st, config, splits, f"{staged.staging_uri}/_work", runner, restart=as_restart)
        data_end = next((st.segments[a["segment"]].base + a["position"] for a in walk.chain.anomalies
                         if a["kind"] == "end_of_data"), None)
        walk, stops = _settled_walk(walk, config, data_end, staged, split_size, runner)
        built = _build(st, config, walk, stops, staged, runner, recovery, tables=tables, tz=tz,
                       as_restart=as_restart, index_rocksdb=index_rocksdb, rocksdb_warnings=rocksdb_warnings)
        anomalies = _run_anomalies(walk, built, stops, recovery)
        if tables is not None:
            progress.stage("tables", tables)
            try:
                outcome.pending = _stage_tables(runner, config, tables, walk, built, run_id, started, with_body,
                                                anomalies)
            except Exception as err:  # reported in the summary; the rebuilt files are committed all the same
                outcome.failed(err)
        staged.drop_work()
        progress.stage("commit", out)
        staged.commit()
        progress.done()
    except BaseException as err:
        if isinstance(err, KeyboardInterrupt) and spark is not None:
            stop_jobs(spark)
        staged.abort()
        if tables is not None:
            _discard_tables(tables, run_id, progress)
        raise
    outcome.finish()
    return RebuildSummary(store=store, out=out, run_id=run_id, segments=len(st.segments), bytes=st.total_bytes(),
                          splits=len(splits), records=walk.records,
                          dispatched=walk.index_totals["dispatched"], consume_queue_units=built.units,
                          queues=built.queues, consume_queue_files=built.cq_file_count,
                          index_files=len(built.index_files), index_keys=walk.index_totals["keys"],
                          anomalies=anomalies, rewalked_splits=walk.chain.rewalked, timings=progress.timings,
                          dledger=_dledger_figures(st, recovery),
                          batch_queues=built.batch_figures(config), rocksdb_index_keys=built.rocksdb_index,
                          seconds=round(progress.elapsed, 3),
                          tables=tables if outcome.published else None,
                          tables_error=outcome.error, tables_error_code=outcome.error_code,
                          tables_recovered=outcome.recovered,
                          data_end=data_end)


def _store_view(store: str, config: BrokerConfig, progress: Progress, *, as_restart: bool, dledger_led: bool,
                tables: str | None) -> tuple[StoreLocation, BrokerConfig, Restart | DLedgerRestart | None]:
    """The store as the rebuild reads it, its settings with the broker line resolved, and with ``as_restart`` the
    restart's recovery (:func:`pipelines.restart.as_restart`; None otherwise); ``dledger_led``: ``verify``'s
    reference for a clean DLedger restart, the log read to its end (:func:`pipelines.restart.led_dledger_store`).
    A DLedger crash restart whose reput dispatches records a second time is refused with tables (they would hold
    those records twice)."""
    st = open_store(store, config)
    config = resolve_broker_version(st, config)
    recovery: Restart | DLedgerRestart | None = None
    led = led_dledger_store(st, config) if dledger_led and not as_restart else None
    if led is not None:   # verify's reference for a clean DLedger restart: the log's entries past the committed one
        progress.emit(f"[rebuild] DLedger: read to the log's end {led.dledger.committed_pos if led.dledger else -1} "
                      "(a clean restart once the node leads: a group of one commits the entries past the committed "
                      "one)")
        st = led
    if as_restart:
        st, recovery = restart_view(st, config, progress)
        if isinstance(recovery, Restart):
            config = dispatch_config(config, recovery.plan)
        if isinstance(recovery, DLedgerRestart) and recovery.crash is not None \
                and (recovery.crash.again or recovery.crash.before) and tables is not None:
            crash = recovery.crash
            raise UnsupportedConfigError(
                f"{store}: the restart's reput dispatches the records from {crash.start_offset} to {crash.end} a "
                f"second time (it starts at {crash.reput_from}, before the data file DLedgerCommitLog."
                "dledgerRecoverAbnormally's walk started at), so the message tables would hold them twice; rebuild "
                "it with --no-tables" if crash.before else
                f"{store}: the restart's reput dispatches the records from {crash.reput_from} to {crash.walk_end} a "
                "second time (DLedgerCommitLog.dledgerRecoverAbnormally's walk ended at a damaged message, the reput "
                "starts before it), so the message tables would hold them twice; rebuild it with --no-tables")
    return st, config, recovery


def _settled_walk(walk: ReputWalk, config: BrokerConfig, data_end: int | None, staged: StagedOutput,
                  split_size: int | None, runner: TaskRunner) -> tuple[ReputWalk, list[ConcurrentStop]]:
    """The walk as the reput reads the store (:func:`_concurrent_stops`: the 5.x concurrent reput's stops, the
    walk again over the store cut there, its index figures after the stop) and those stops."""
    stops, rewalked = _concurrent_stops(walk, config, data_end, staged, split_size, runner)
    if rewalked is not None:
        walk = rewalked
        totals = walk.index_totals
        totals["dispatched_after_last_key"] = index_after_last_key(stops, totals["end_phy_offset"],
                                                                   totals["dispatched_after_last_key"])
        totals["empty_requests"] = sum(s.empty_requests for s in stops)
    return walk, stops


def _build(st: StoreLocation, config: BrokerConfig, walk: ReputWalk, stops: list[ConcurrentStop],
           staged: StagedOutput, runner: TaskRunner, recovery: object, *, tables: str | None, tz: str,
           as_restart: bool, index_rocksdb: bool, rocksdb_warnings: list[str]) -> Built:
    """The files into staging: consume queues and index files (:func:`pipelines.build_stage.build_files`), topic ""
    (blanks' empty requests; with ``as_restart`` the files the store holds there), the RocksDB message index, and a
    restart's cut (:func:`pipelines.restart_cut.apply_cut`)."""
    mix = queue_zero_mix(stops, walk)   # topic "" queue 0: blanks' empty requests beside LMQ units
    built = build_files(walk, config, staged, runner, record_states=tables is not None, tz=tz,
                        extra_units=empty_request_units(config, stops),
                        seeds=queue_zero_seeds(config, mix) if tables is not None else None)
    write_topic_empty(st, config, staged, built, recovery, stops, mix, as_restart=as_restart)
    for line in rocksdb_warnings:
        log.warning("%s", line)
    if index_rocksdb and staged.target.exists(f"{staged.root}/{ROCKSDB_DIR}"):
        log.warning("warning: %s/%s/ is replaced at the commit: its timer and trans families (a live broker's "
                    "timer and transaction state) are %s", staged.out_uri, ROCKSDB_DIR,
                    "the store's" if as_restart else "not rebuilt")
    if index_rocksdb:
        built.rocksdb_index = _rocksdb_index(walk, staged, runner.progress,
                                             base=f"{st.root}/{ROCKSDB_DIR}" if as_restart else None)
    apply_cut(recovery, staged, built, config)
    return built


def _run_anomalies(walk: ReputWalk, built: Built, stops: list[ConcurrentStop], recovery: object) -> list[dict]:
    """The run's findings (:meth:`ReputWalk.anomalies`), the concurrent reput's stops among them and none of the
    walk's past a stop."""
    details = [stop_detail(s) for s in stops]
    anomalies = walk.anomalies(built.anomalies + details, recovery)
    if stops:
        anomalies = [a for a in anomalies if any(a == d for d in details)
                     or not any(past_the_stop(s, a, a.get("commitlog_offset")) for s in stops)]
    return anomalies


class _TablesOutcome:
    """The tables of a rebuild with ``--tables``: staged with the files, committed after them (``finish``); a
    failure is reported in the summary (``error``, its exit code), the rebuilt files committed all the same."""

    def __init__(self, tables: str | None, run_id: str, progress: Progress) -> None:
        self.tables, self.run_id, self.progress = tables, run_id, progress
        self.pending: Any = None   # pipelines.tables.publish.PendingTables
        self.published = False
        self.recovered: list[dict] = []
        self.error: str | None = None
        self.error_code = 1

    def failed(self, err: Exception) -> None:
        self.error, self.error_code = _failure_line(err)
        self.progress.emit(f"[rebuild] tables not published: {self.error}")
        _discard_tables(self.tables or "", self.run_id, self.progress)

    def finish(self) -> None:
        """Commit the staged tables once the files are committed."""
        if self.pending is None:
            return
        self.progress.stage("tables: commit", self.tables or "")
        try:
            published = self.pending.finish()
            self.recovered = published.get("recovered", [])
            self.published = True
            self.progress.done()
        except Exception as err:
            self.failed(err)


def _rocksdb_index(walk: ReputWalk, staged: StagedOutput, progress: Progress, base: str | None = None) -> int:
    """``indexRocksDBEnable`` (5.5): ``rocksdbstore/`` with the RocksDB message index
    (:func:`pipelines.index_rocksdb.build_index_rocksdb`; ``base``: ``--as-restart``, the store's database the
    restart adds to); the number of index keys written (added, with ``base``)."""
    progress.stage("rocksdb index", f"{ROCKSDB_DIR}/" + (" (the store's, added to)" if base else ""))
    fs, path = resolve(staged.staging_uri)
    if not isinstance(fs, pafs.LocalFileSystem):   # preflight refuses this before any work
        raise StoreLayoutError(f"{staged.staging_uri}: {ROCKSDB_DIR}/ (a RocksDB database) is written on a local "
                               "file system only")
    parts = [read_index_rocksdb(walk.work_uri, e.split.split_id) for e in walk.chain.entries]
    got = build_index_rocksdb([p for p in parts if p is not None], f"{path}/{ROCKSDB_DIR}", base=base)
    progress.done(f"{got.entries:,} keys" + (" put" if base else "")
                  + (f", lastOffsetPy {got.last_offset}" if got.last_offset >= 0 else ""))
    return got.entries


def _restart_index_from(st: StoreLocation, config: BrokerConfig, progress: Progress,
                        recovery: Restart | DLedgerRestart | None) -> BrokerConfig:
    """``--as-restart`` with the 5.5 RocksDB message index: the restart keeps the store's ``rocksdbstore/``
    (nothing in the recovery deletes from it: ``truncateDirtyLogicFiles`` cuts the consume queues only,
    ``IndexRocksDBStore.destroy`` does nothing) and its ``IndexRocksDBStore.buildIndex`` skips the records
    below the database's ``lastOffsetPy``: the settings the split tasks write their entries with
    (:func:`store_format.index_rocksdb.entries_from`).  One outcome is thread timing, said in a warning line:
    with a RocksDB consume queue, the second reput of a normal restart (``recheckReputOffsetFromCq``) dispatches
    the record at offset 0 after the recovery indexed later records, and over an empty database it is indexed
    only if the index thread has not yet written the recovery's first batch; we leave it out."""
    from store_format.message_rocksdb import dispatch_store_offsets

    last = dispatch_store_offsets(st, dataclasses.replace(config, transRocksDBEnable=False)).last.get(
        "IndexRocksDBStore", 0)
    progress.emit(f"[rebuild] as a restart: the store's {ROCKSDB_DIR}/ is kept and added to; IndexRocksDBStore."
                  f"buildIndex puts the records from its lastOffsetPy {last} on"
                  + (" (none: an empty database)" if last <= 0 else ""))
    plan = recovery.plan if isinstance(recovery, Restart) else None
    if last <= 0 and plan is not None and plan.rocksdb_offset_zero and not plan.index_offset_zero:
        log.warning("warning: indexRocksDBEnable=true: the restart's second reput (recheckReputOffsetFromCq=true) "
                    "reaches the record at commitlog offset 0 while the index thread may not yet have written the "
                    "recovery's first batch to the empty database; if that record has a unique key, the broker's "
                    f"{ROCKSDB_DIR}/ may hold its entries, which ours leaves out (thread timing)")
    if plan is not None and last < plan.index_from:
        log.warning("warning: indexRocksDBEnable=true: the restart's second reput (recheckReputOffsetFromCq=true) "
                    f"walks the records below the recovery's start {plan.index_from} again while the index thread may "
                    f"not yet have written the recovery's batches (IndexRocksDBStore's lastOffsetPy {last} until "
                    f"then); the broker's {ROCKSDB_DIR}/ may hold entries of those records, which ours leaves out "
                    "(thread timing)")
    return dataclasses.replace(config, rocksdb_index_from=max(last, 0))


def _concurrent_stops(walk: ReputWalk, config: BrokerConfig, data_end: int | None, staged: StagedOutput,
                      split_size: int | None, runner: TaskRunner) -> tuple[list[ConcurrentStop], ReputWalk | None]:
    """5.x ``enableBuildConsumeQueueConcurrently=true``: where the walk met a record the concurrent reput
    stops at for good, or goes past to the next file (:func:`store_format.concurrent_reput.settle`), the walk
    again over the store cut there, like a recovery's end; no stop and None without the setting or such a
    record."""
    if not concurrent_reput_applies(config):
        return [], None
    rounds = 0

    def again(cut: StoreLocation, _stops: list[ConcurrentStop]) -> tuple[ReputWalk, list[dict]]:
        nonlocal rounds
        rounds += 1
        runner.progress.emit("[rebuild] the concurrent reput stops for good or goes past damaged bytes: walking "
                             "the commitlog again as it reads it")
        rewalked = scan_and_chain(cut, config, plan_splits(cut, split_size or DEFAULT_SPLIT_SIZE),
                                  f"{staged.staging_uri}/_work/cut{rounds}", runner)
        return rewalked, rewalked.anomalies()

    return settle(walk.store, config, walk.anomalies(), data_end, again,
                  lambda w: w.index_totals["last_dispatched"])


def _failure_line(err: BaseException) -> tuple[str, int]:
    """One line for a failed publish of the tables, and its exit code (:mod:`pipelines.oserrors`)."""
    found = os_error_line(err)
    if found is not None:
        return found.line, found.exit_code
    return failure_line(err), 1


def _discard_tables(tables: str, run_id: str, progress: Progress) -> None:
    """The staged rows of a publish that failed or was interrupted: removed."""
    from .tables.publish import discard_staged_tables
    try:
        discard_staged_tables(tables, run_id)
    except Exception as err:   # never hides the failure being reported
        progress.emit(f"[rebuild] could not remove the staged tables of run {run_id} under {tables}: {err}")


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


def _stage_tables(runner: TaskRunner, config: BrokerConfig, tables: str, walk: ReputWalk, built: Built, run_id: str,
                  started: float, with_body: bool, anomalies: list[dict]):
    """Write the tables' rows from this rebuild's results (:mod:`pipelines.tables.publish`); the
    commit of the tables comes after the files' commit (``finish``)."""
    from .tables.publish import RebuildResults, stage_tables
    if runner.spark is None:
        raise ValueError("the Delta tables need the Spark engine")
    results = RebuildResults(walk.store, config, walk.chain, walk.index_in, built.cq_files,
                             built.index_files, walk.work_uri, walk.buckets, run_id, started,
                             runner.progress.timings, anomalies)
    return stage_tables(session_of(runner.spark), tables, results, with_body=with_body)
