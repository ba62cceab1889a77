"""The first stages of a rebuild over a :class:`~store_format.store.StoreLocation`: scan the splits in
parallel into a work folder, chain their walks into the reput's one walk, and carry the index state
through it.  ``python -m pipelines rebuild`` (:mod:`pipelines.rebuild`) builds its files from what
they leave; the tables refresh (:mod:`pipelines.tables.refresh`) runs them on the segments it rescans.

* :class:`Progress`: one line per stage, and the Spark job's task counts while it runs.
* :class:`TaskRunner`: runs a task object (``rows(task_id) -> list of dicts``) as Spark tasks, or
  locally without a JVM.
* :func:`scan_and_chain` → :class:`ReputWalk`: the scan tasks write each split's work files
  (:mod:`pipelines.workfiles`) and summary; the driver follows ``ReputMessageService.doReput``
  through them (:func:`pipelines.chain.chain_splits`, walking again the splits whose walk must start
  elsewhere) and carries ``IndexService.buildIndex``'s endPhyOffset and key ordinals
  (:func:`pipelines.chain.carry_index_state`).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable

import numpy as np

from store_format.config import BrokerConfig
from store_format.empty_topic_restart import as_restart_over_dledger_checked
from store_format.errors import UnsupportedConfigError
from store_format.store import StoreLocation

from .anomalies import walk_anomalies
from .chain import Chain, IndexSeed, carry_index_state, chain_splits
from .plan import Split
from .scan import ScanTask, driver_rewalk
from .session import Spark, context_of, run_tasks

__all__ = ["Progress", "TaskRunner", "ReputWalk", "scan_and_chain"]

_log = logging.getLogger("pipelines.rebuild")   # the progress lines keep the logger they always had

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

    def watch(self, spark: Spark | None, what: str, unit_bytes: float = 0.0, every: float = 10.0) -> threading.Event:
        """While a Spark job runs, print how many of its tasks are done every ``every`` seconds."""
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


class TaskRunner:
    """Where a run's tasks go: one Spark task per task id (``spark``), or, without a session, this
    process or ``processes`` forked ones (the very same task objects, no JVM)."""

    def __init__(self, spark: Spark | None, processes: int, progress: Progress) -> None:
        self.spark, self.processes, self.progress = spark, processes, progress
        self.parallelism = max(context_of(spark).defaultParallelism, 1) if spark is not None else max(processes, 1)

    def run(self, task, n: int, what: str, unit_bytes: float = 0.0) -> list[dict]:
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


@dataclasses.dataclass
class ReputWalk:
    """The reput's one walk over ``store``, as the scan and the chain leave it: each split's work files
    (units per queue bucket, index keys) under ``work_uri``, the splits on the reput's path in its
    order with their entering loop states (``chain``), and each split's index state (``index_in``:
    endPhyOffset carry, keys before it, keys in it)."""
    store: StoreLocation
    splits: list[Split]
    work_uri: str
    buckets: int                                 # queue buckets of the work files
    summaries: dict[int, dict]                   # split -> its scan summary
    chain: Chain
    index_in: dict[int, tuple[int, int, int]]
    index_totals: dict                           # see :func:`pipelines.chain.carry_index_state`

    @property
    def records(self) -> int:
        """Records on the reput's path: each split's walk the chain kept (its own, or the driver's
        walk from the right state), not what a split found from a resync point the reput never
        takes (those are reported as ``unreachable_records``)."""
        return sum(e.summary.get("records", 0) for e in self.chain.entries)

    def anomalies(self, extra: list[dict] | None = None, recovery=None,
                  last_queue_offsets: dict[tuple[str, int], int] | None = None) -> list[dict]:
        """What the run found wrong (:func:`pipelines.anomalies.walk_anomalies`): the walk's findings,
        then ``extra`` (the build's) and the commitlog recovery's (``--as-restart``)."""
        extra = list(extra or []) + (recovery.anomalies(self.store) if recovery else [])
        return walk_anomalies(self.store, self.chain, extra, last_queue_offsets)


def _refuse_unmodelled_light_units(st: StoreLocation, config: BrokerConfig, chain: Chain, restart: bool) -> None:
    """A light unit on the reput's path that is not rebuilt: on a RocksDB consume queue one whose fate
    ``RocksDBConsumeQueueStore.dispatchLMQ`` leaves to the broker's thread timing
    (:func:`store_format.rocksdb_cq.light_units_unmodelled`), on file queues, for a restart's walk (``restart``),
    one of an empty queue name where its restart is not modelled
    (:func:`store_format.empty_topic_restart.empty_light_names_on_restart`; over a DLedger commitlog but for the
    starts :func:`store_format.empty_topic_restart.as_restart_over_dledger_checked` accepts): refused."""
    on_restart = restart and not as_restart_over_dledger_checked(st, config)
    for e in chain.entries:
        why = e.summary.get("light_unmodelled") or (e.summary.get("light_unmodelled_on_restart") if on_restart
                                                    else None)
        if why:
            seg = st.segments[e.split.segment]
            raise UnsupportedConfigError(
                f"segment {seg.name} from position {e.split.start}: {why}; not rebuilt"
                + ("" if e.summary.get("light_unmodelled") else "; rebuild without --as-restart"))


def scan_and_chain(st: StoreLocation, config: BrokerConfig, splits: list[Split], work_uri: str, runner: TaskRunner,
                   *, index_seed: IndexSeed | None = None, restart: bool = False) -> ReputWalk:
    """Scan every split of ``st`` in parallel into ``work_uri``, then follow the reput from split to
    split (walking here the splits whose walk must start elsewhere) and carry the index state from
    ``index_seed`` (default: no index entry before the first split).  ``restart``: the walk of ``--as-restart``."""
    progress = runner.progress
    buckets = max(1, min(runner.parallelism, 512))
    scanned = sum(sp.seg_size - sp.start if sp.end > sp.seg_size else sp.end - sp.start for sp in splits)
    progress.stage("scan", f"{len({sp.segment for sp in splits})} segments, {scanned / 1e6:,.1f} MB, "
                           f"{len(splits)} splits")
    # contiguous runs of splits per task: two per core keep the fixed cost per task low
    n_tasks = min(len(splits), 2 * runner.parallelism)
    blocks = [[int(x) for x in block] for block in np.array_split(np.arange(len(splits)), n_tasks) if len(block)]
    task = ScanTask(splits, st.uri, config, work_uri, buckets, blocks)
    rows = runner.run(task, len(blocks), "scan", scanned / max(len(blocks), 1))
    summaries = {int(r["split_id"]): json.loads(r["summary"]) for r in rows}
    progress.stage("chain")
    rewalk = driver_rewalk(st, config, work_uri, buckets)
    chain = chain_splits(st, config, splits, summaries, rewalk)
    _refuse_unmodelled_light_units(st, config, chain, restart)
    index_in, index_totals = carry_index_state(chain, config, rewalk, index_seed)
    progress.done(f"{len(chain.entries)} splits on the reput's path, {chain.rewalked} walked again by the "
                  f"driver, {len(chain.dropped)} unreachable")
    return ReputWalk(st, splits, work_uri, buckets, summaries, chain, index_in, index_totals)


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
