"""``verify_store``: rebuild a store's ``consumequeue/`` and ``index/`` (and ``consumequeue_ext/``,
``batchconsumequeue/`` where the store has those layouts) from its commitlog into a reference
folder, compare every file with the store's (a RocksDB ``consumequeue/`` entry by entry:
:mod:`.rocksdb_compare`), and predict the broker's next start (on the ``consumequeue/``,
``consumequeue_ext/``, ``batchconsumequeue/`` and ``index/`` files, a RocksDB consume queue's entries
(:mod:`.rocksdb_restart`, over a DLedger commitlog after a clean shutdown :mod:`.rocksdb_dledger_restart`, and on
a store converted in place before its first start with DLedger after a crash too); not for a 5.x DLedger store after
an unclean shutdown whose recovery is refused, nor for a RocksDB consume queue over a DLedger commitlog's data files
after a crash)."""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import shutil
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow.fs as pafs

from store_format.batchconsumequeue import BCQ_DIR, BCQ_UNIT_DTYPE
from store_format.config import BrokerConfig
from store_format.consumequeue_ext import EXT_UNIT_DTYPE
from store_format.dledger_recovery import recover_dledger
from store_format.empty_topic_restart import (
    held_topic_empty_files,
    is_topic_empty_file,
    table_max_beside_own,
)
from store_format.errors import RestartFailsError, StoreLayoutError, UnsupportedConfigError
from store_format.indexfile import read_header
from store_format.layout import INDEX_HEADER_SIZE, SEGMENT_NAME_RE
from store_format.store import StoreLocation, open_store, resolve

from ..index_rocksdb import ROCKSDB_DIR
from ..restart import led_dledger_store
from .compare import KeyNamer, align_index, compare_cq_file, compare_index_file, compare_queue_file, extra_note
from .crash_queues import dledger_crash_on_disk
from .files_restart import explain_recovery, predict_files_restart
from .report import ConsumeQueueFileResult, IndexFileResult, QueueFileResult, VerifyReport
from .restart_queue import recover_queue
from .storefiles import (
    CQ_DIR,
    CQ_EXT_DIR,
    INDEX_DIR,
    REPAIR_TMP_RE,
    checkpoint_index_ts,
    end_of_data,
    list_index,
    list_tree,
    queue_files,
    read_all,
)
from .topic_empty import predict_topic_empty

log = logging.getLogger(__name__)


def verify_store(store: str, config: BrokerConfig, *, work: str | None = None, engine: str = "spark",
                 master: str | None = None, split_size: int | None = None, processes: int | None = None,
                 spark: Any = None, examples: int = 3) -> VerifyReport:
    """Compare ``store``'s ``consumequeue/`` and ``index/`` with a rebuild from its commitlog, and
    its ``consumequeue_ext/`` (``enableConsumeQueueExt=true``) and ``batchconsumequeue/`` (BatchCQ
    topics) too; the next start is predicted on all of them (a RocksDB consume queue's entries too), but
    not for a 5.x DLedger store after an unclean shutdown whose recovery is refused, nor for a RocksDB
    consume queue over a DLedger commitlog but after a clean shutdown (:mod:`.rocksdb_dledger_restart`)
    (``VerifyReport.no_prediction`` says why).

    Only reads the store.  The rebuild goes to ``work`` (kept; it must not hold ``consumequeue/``
    or ``index/`` yet) or to a temporary folder deleted before returning.

    Args:
        store: store root (local path or URI).
        config: the broker settings the store was written with.
        work: folder for the reference rebuild (default: a temporary folder).
        engine, master, split_size, processes, spark: as :func:`pipelines.rebuild.run_rebuild`.
        examples: how many unreachable index keys to name per differing index file.
    Returns:
        A :class:`VerifyReport`.
    Raises:
        StoreError: bad store layout or settings (see ``run_rebuild``).

    Example:
        >>> report = verify_store("/data/store", load_config_for("broker.conf"), engine="local")
        >>> report.identical, report.restart.units_lost
    """
    from store_format.reput import resolve_broker_version

    from ..rebuild import run_rebuild
    t0 = time.monotonic()
    st = open_store(store, config)
    if config.rocksdb_cq and not isinstance(st.fs, pafs.LocalFileSystem):
        raise StoreLayoutError(f"{st.uri}: verify reads a RocksDB consume queue (storeType=defaultRocksDB) on a "
                               "local file system only")
    config = resolve_broker_version(st, config)
    temporary = work is None
    ref_root = work if work is not None else tempfile.mkdtemp(prefix="rocketmq-verify-")
    try:
        summary = run_rebuild(store, ref_root, config, engine=engine, master=master, split_size=split_size,
                              processes=processes or 1, spark=spark, tables=None,
                              strict=None,   # verify_store's callers check for a live broker
                              dledger_led=True)
        report = _compare(st, config, ref_root, summary, examples)
        report.rocksdb_index = _rocksdb_index(st, ref_root, summary, examples)
        if report.rocksdb_index is not None:
            report.not_checked = [_ROCKSDB_FAMILIES_NOTE if n.startswith(f"{ROCKSDB_DIR}/") else n
                                  for n in report.not_checked]
    finally:
        if temporary:
            shutil.rmtree(ref_root, ignore_errors=True)
    report.reference = None if temporary else ref_root
    report.seconds = round(time.monotonic() - t0, 3)
    return report


@dataclasses.dataclass
class _Compared:
    """What the comparison of the store's queue and index files with the rebuild found, and what the
    restart prediction reads from them."""
    ref_fs: pafs.FileSystem
    ref: str
    cq_results: list[ConsumeQueueFileResult]
    states: list                      # every queue as the start recovers it (restart_queue.recover_queue)
    store_cq: dict[str, int]          # consumequeue/'s files (relative path: size); {} for a RocksDB one
    ext_results: list[QueueFileResult] | None
    bcq_results: list[QueueFileResult] | None
    rocksdb_results: list[QueueFileResult] | None
    rocks_store: Any
    rocks_ref: Any
    ix_results: list[IndexFileResult]
    s_names: list[str]                # the store's index files, in name order
    r_names: list[str]                # the rebuild's
    store_ix: dict[str, int]

    def ref_data(self, n: str) -> bytes:
        return read_all(self.ref_fs, f"{self.ref}/{INDEX_DIR}/{n}")

    def expected_index(self) -> Any:
        return (self.ref_data(n) for n in reversed(self.r_names))

    def read_expected(self, layout: str, queue: str, name: str) -> bytes:
        return read_all(self.ref_fs, f"{self.ref}/{layout}/{queue}/{name}")

    def report(self, st: StoreLocation, config: BrokerConfig, ref_root: str, summary: Any, restart: Any,
               **more: Any) -> VerifyReport:
        return VerifyReport(st.uri, ref_root, config.brokerVersion, self.cq_results, self.ix_results,
                            len(self.s_names), len(self.r_names), restart, _rebuild_figures(summary),
                            **{"consume_queue_ext": self.ext_results, "batch_consume_queue": self.bcq_results,
                               "rocksdb_consume_queue": self.rocksdb_results, **more},
                            not_checked=_not_checked(st))


def _compare(st: StoreLocation, config: BrokerConfig, ref_root: str, summary: Any, examples: int) -> VerifyReport:
    """The story of verify: compare the store's queue and index files with the rebuild, recover the queues
    as the start would, plan a 5.x DLedger crash, and predict the broker's next start."""
    ref_fs, ref = resolve(ref_root)
    ref = ref.rstrip("/")
    log.info("comparing %s with the rebuild in %s", st.root, ref)
    c = _compare_files(st, config, ref_fs, ref, examples)
    clean = not st.broker_may_be_running()
    dledger = recover_dledger(st.fs, st.dledger, config.mappedFileSizeCommitLog) if st.dledger is not None else None
    crash, crash_refused = None, None
    if dledger is not None and config.is_5x and not clean and not config.rocksdb_cq:
        crash, crash_refused = dledger_crash_on_disk(st, config, dledger, c.states)
    if crash_refused:
        return c.report(st, config, ref_root, summary, None, no_prediction=f"not predicted: {crash_refused}")
    store_index = _store_index(st, c)
    if config.rocksdb_cq:   # the database's recovery (store_format.rocksdb_recovery); ext and bcq not reported
        restart, why = _predict_rocksdb_restart(st, config, c, clean, store_index)
        return c.report(st, config, ref_root, summary, restart, consume_queue_ext=None, batch_consume_queue=None,
                        no_prediction=why)
    recovery = None
    # 4.9.8 DLedgerCommitLog.recover: a converted store's old files get the normal recovery, after a crash too
    abnormal = not clean and not (st.dledger_pending and not config.is_5x)
    if dledger is None:   # the commitlog recovery (as rebuild --as-restart): where the commitlog ends
        from store_format.recovery import plan_recovery
        try:
            recovery = plan_recovery(st, config, abnormal=abnormal, max_phy_offset_of_consume_queue=max(
                (s.restart.max_physic_offset for s in c.states), default=-1))
        except RestartFailsError as e:
            return c.report(st, config, ref_root, summary, None, no_prediction=f"not predicted: {e}")
    # a clean restart with entries past the committed one: the node leads, a group of one commits them and the reput
    # goes on to the log's end (the reference rebuild read them: pipelines.restart.led_dledger_store)
    led = dledger is not None and crash is None and led_dledger_store(st, config) is not None
    # the recovery's truncateDirtyLogicFiles over every queue, topic "" ones its dispatch reopened too: the loaded
    # queues' max at or past the commitlog's end
    truncated = recovery is not None and max((s.restart.max_physic_offset for s in c.states),
                                             default=-1) >= recovery.process_offset
    # topic ""'s files (consumequeue/<queueId>/<name>): read once, where the queue table's max needs them, for it and
    # their own prediction (which reads them itself otherwise, where it predicts)
    table_max, held = _table_max_beside_own(st, config, c, recovery, abnormal, truncated)
    restart = predict_files_restart(st, config, c, summary, clean=clean, dledger=dledger, crash=crash,
                                    recovery=recovery, abnormal=abnormal, led=led, store_index=store_index,
                                    table_max=table_max)
    explain_recovery(restart, st, config, dledger=dledger, crash=crash, recovery=recovery, abnormal=abnormal,
                     led=led)
    # what the start does with topic ""'s files, or that it is not predicted
    predict_topic_empty(st, config, c.store_cq, restart, recovery=recovery, abnormal=abnormal, held_files=held,
                        truncated=truncated, rebuilt=any(len(r.path.split("/")) == 2 for r in c.cq_results),
                        anomalies=summary.anomalies, data_end=summary.data_end)
    return c.report(st, config, ref_root, summary, restart)


def _table_max_beside_own(st: StoreLocation, config: BrokerConfig, c: _Compared, recovery: Any, abnormal: bool,
                          truncated: bool) -> tuple[int, dict[str, bytes] | None]:
    """The queue table's max physical offset over its queues beside the own ones after the commitlog's recovery
    (:func:`store_format.empty_topic_restart.table_max_beside_own`: topic "" queues the recovery's dispatch opened,
    queues made of topic ""'s file names, whatever ``enableMultiDispatch``), which the reput set from the whole table
    takes too (4.9.x ``start``, 5.x ``doRecheckReputOffsetFromCq`` with ``recheckReputOffsetFromCq=true``); -1: none,
    or no such reput after a commitlog recovery (``truncated``: the recovery's ``truncateDirtyLogicFiles`` runs).
    With it topic ""'s files the store holds (:func:`store_format.empty_topic_restart.held_topic_empty_files`), None
    where not read."""
    if recovery is None or config.rocksdb_cq or config.is_5x and not config.recheckReputOffsetFromCq:
        return -1, None
    # no topic "" file on disk nor in the rebuild (which holds one wherever the commitlog has an empty-name record)
    if not any(len(r.split("/")) == 2 for r in c.store_cq) and not any(len(r.path.split("/")) == 2
                                                                      for r in c.cq_results):
        return -1, None
    held = held_topic_empty_files(st) if any(map(is_topic_empty_file, c.store_cq)) else {}
    # the recovery's dispatch: recoverAbnormally's walk; 5.x recoverNormally's past the loaded max; 4.9.x's none
    walk_from = recovery.dispatch_from if abnormal or config.is_5x else recovery.process_offset
    return table_max_beside_own(st, config, walk_from=walk_from, end=recovery.process_offset,
                                truncated=truncated,
                                above=recovery.dispatch_above if config.is_5x and not abnormal else -1,
                                held=held), held


def _compare_files(st: StoreLocation, config: BrokerConfig, ref_fs: pafs.FileSystem, ref: str,
                   examples: int) -> _Compared:
    """Every queue file (``consumequeue/``, ``consumequeue_ext/``, ``batchconsumequeue/``; a RocksDB
    ``consumequeue/`` entry by entry) and index file of the store against the rebuild's, each queue
    recovered as ``DefaultMessageStore.loadConsumeQueue`` and ``ConsumeQueue.recover`` would."""
    fs, root = st.fs, st.root
    rocksdb_results = rocks_store = rocks_ref = None
    if config.rocksdb_cq:   # consumequeue/ is a database: compared entry by entry, queue by queue
        from .rocksdb_compare import compare_entries, read_store_database
        rocks_store, rocks_ref = read_store_database(f"{root}/{CQ_DIR}"), read_store_database(f"{ref}/{CQ_DIR}")
        rocksdb_results, _mins = compare_entries(rocks_store, rocks_ref)
    store_cq = {} if config.rocksdb_cq else list_tree(fs, f"{root}/{CQ_DIR}")
    ref_cq = {} if config.rocksdb_cq else list_tree(ref_fs, f"{ref}/{CQ_DIR}")
    by_queue: dict[str, tuple[list[str], list[str]]] = {}
    cq_results: list[ConsumeQueueFileResult] = []
    for rel in store_cq:
        parts = rel.split("/")
        if len(parts) == 3 and not REPAIR_TMP_RE.match(parts[2]):
            by_queue.setdefault(f"{parts[0]}/{parts[1]}", ([], []))[0].append(parts[2])
        elif rel not in ref_cq:
            cq_results.append(ConsumeQueueFileResult(rel, "extra", found_size=store_cq[rel], note=extra_note(rel)))
    for rel in ref_cq:
        parts = rel.split("/")
        if len(parts) == 3:
            by_queue.setdefault(f"{parts[0]}/{parts[1]}", ([], []))[1].append(parts[2])
        else:   # topic "" queue 0 (consumequeue//0: blanks' empty requests, concurrent_reput.empty_request_files)
            cq_results.append(compare_cq_file(rel, read_all(ref_fs, f"{ref}/{CQ_DIR}/{rel}"),
                                              read_all(fs, f"{root}/{CQ_DIR}/{rel}") if rel in store_cq else None))
    states = []
    for queue in sorted(by_queue):
        q_store_names, q_ref_names = by_queue[queue]
        q_store = [(n, read_all(fs, f"{root}/{CQ_DIR}/{queue}/{n}")) for n in sorted(q_store_names)]
        q_ref = [(n, read_all(ref_fs, f"{ref}/{CQ_DIR}/{queue}/{n}")) for n in sorted(q_ref_names)]
        s_map, r_map = dict(q_store), dict(q_ref)
        for n in sorted(set(s_map) | set(r_map)):
            cq_results.append(compare_cq_file(f"{queue}/{n}", r_map.get(n), s_map.get(n)))
        if queue.rsplit("/", 1)[1].lstrip("-").isdigit():  # loadConsumeQueue skips other folders
            loadable = [(n, d) for n, d in q_store if SEGMENT_NAME_RE.match(n)]
            ext = queue_files(fs, f"{root}/{CQ_EXT_DIR}/{queue}") if config.enableConsumeQueueExt else None
            states.append(_type_checked(recover_queue(queue, loadable, q_ref, config, ext_files=ext), st, config,
                                        in_store=bool(q_store)))
    if st.batch_topics and not config.rocksdb_cq:   # ConsumeQueueStore.load: batchconsumequeue/ too
        states.extend(_batch_states(st, ref_fs, ref, config))
    cq_results.sort(key=lambda r: r.path)
    ext_results = (_compare_folder(st, ref_fs, ref, CQ_EXT_DIR, EXT_UNIT_DTYPE) if config.enableConsumeQueueExt
                   else None)
    bcq_results = _compare_folder(st, ref_fs, ref, BCQ_DIR, BCQ_UNIT_DTYPE) if st.batch_topics else None
    c = _Compared(ref_fs, ref, cq_results, states, store_cq, ext_results, bcq_results, rocksdb_results, rocks_store,
                  rocks_ref, [], [], [], {})
    _compare_index(st, config, c, examples)
    return c


def _compare_index(st: StoreLocation, config: BrokerConfig, c: _Compared, examples: int) -> None:
    """The store's ``index/`` files against the rebuild's, in name order (as ``IndexService.load`` lists them),
    into ``c``."""
    fs, root = st.fs, st.root
    s_names, s_other = list_index(fs, f"{root}/{INDEX_DIR}")
    r_names, _ = list_index(c.ref_fs, f"{c.ref}/{INDEX_DIR}")
    store_ix = list_tree(fs, f"{root}/{INDEX_DIR}")

    def s_data(n: str) -> bytes:
        return read_all(fs, f"{root}/{INDEX_DIR}/{n}")

    ref_data = c.ref_data
    if len(s_names) != len(r_names):  # one file in memory at a time
        s_digest = [hashlib.sha256(s_data(n)).hexdigest() for n in s_names]
        r_digest = [hashlib.sha256(ref_data(n)).hexdigest() for n in r_names]
    else:
        s_digest = r_digest = []
    namer = KeyNamer(st, config)
    ix_results = []
    for i, (sn, rn) in enumerate(align_index(s_names, r_names, s_digest, r_digest)):
        ix_results.append(compare_index_file(i, sn, rn, None if rn is None else ref_data(rn),
                                             None if sn is None else s_data(sn), config, name_key=namer,
                                             examples=examples))
    for n in s_other:
        note = ("left by an interrupted repair" if REPAIR_TMP_RE.match(n.rsplit("/", 1)[-1])
                else "ignored by the broker (IndexService.load skips names that are not numbers)")
        ix_results.append(IndexFileResult(len(ix_results), "extra", n, None, None, store_ix.get(n), note=note))
    c.ix_results, c.s_names, c.r_names, c.store_ix = ix_results, s_names, r_names, store_ix


def _store_index(st: StoreLocation, c: _Compared) -> list:
    """Each store index file's name, size and header (``IndexHeader.load``), as the start loads them."""
    store_index = []
    for n in c.s_names:
        with st.fs.open_input_file(f"{st.root}/{INDEX_DIR}/{n}") as f:
            head = f.read(INDEX_HEADER_SIZE)
        header = dataclasses.asdict(read_header(head + bytes(INDEX_HEADER_SIZE - len(head))))
        store_index.append((n, c.store_ix[n], header))
    return store_index


def _predict_rocksdb_restart(st: StoreLocation, config: BrokerConfig, c: _Compared, clean: bool,
                             store_index: list) -> tuple[Any, str]:
    """A RocksDB consume queue's next start (``RocksDBConsumeQueueStore.recover``; over a DLedger commitlog
    ``DLedgerCommitLog``'s recovery into the database kept): the prediction, or None and why not."""
    assert c.rocks_store is not None and c.rocks_ref is not None
    if config.enableDLegerCommitLog:
        from .rocksdb_dledger_restart import predict_rocksdb_dledger_first_start, predict_rocksdb_dledger_store_restart
        # a store converted in place with no data file yet: its first start with DLedger
        predict = (predict_rocksdb_dledger_first_start if st.dledger_pending
                   else predict_rocksdb_dledger_store_restart)
    else:   # refused: a 5.5.1 accelerated walk from the database's checkpoint inside a record that accepts records
        from .rocksdb_restart import predict_rocksdb_store_restart as predict
    try:
        return predict(st, config, c.rocks_store, c.rocks_ref, clean=clean, store_index=store_index,
                       expected_index=c.expected_index,
                       checkpoint_index_ts=None if clean else checkpoint_index_ts(st.fs, st.root)), ""
    except UnsupportedConfigError as e:
        return None, f"not predicted: {e}"


def _batch_states(st: StoreLocation, ref_fs: pafs.FileSystem, ref: str, config: BrokerConfig) -> list:
    """Every ``batchconsumequeue/<topic>/<queueId>`` of the store or the rebuild through
    :func:`~.restart_queue.recover_queue` (``BatchConsumeQueue.recover``; folders that are not queue numbers are
    skipped, as ``ConsumeQueueStore.loadConsumeQueues`` does)."""
    queues = {rel.rsplit("/", 1)[0] for fs, r in ((st.fs, st.root), (ref_fs, ref))
              for rel in list_tree(fs, f"{r}/{BCQ_DIR}") if rel.count("/") == 2}
    out = []
    for q in sorted(queues):
        if q.rsplit("/", 1)[1].lstrip("-").isdigit():
            found = queue_files(st.fs, f"{st.root}/{BCQ_DIR}/{q}")
            state = recover_queue(q, found, queue_files(ref_fs, f"{ref}/{BCQ_DIR}/{q}"), config, layout=BCQ_DIR)
            out.append(_type_checked(state, st, config, in_store=bool(found)))
    return out


def _type_checked(state: Any, st: StoreLocation, config: BrokerConfig, *, in_store: bool) -> Any:
    """5.x ``ConsumeQueueStore.loadConsumeQueues`` → ``queueTypeShouldBe``: a queue folder in
    ``consumequeue/`` of a BatchCQ topic (``config/topics.json``), or in ``batchconsumequeue/`` of any
    other, throws, and ``DefaultMessageStore.load`` fails."""
    q = state.restart
    batch = q.queue.split("/", 1)[0] in st.batch_topics
    if config.is_5x and in_store and batch != (q.layout == BCQ_DIR):
        why = (f"{q.layout}/ holds a queue of a topic whose queue.type is {'BatchCQ' if batch else 'SimpleCQ'} "
               "(ConsumeQueueStore.queueTypeShouldBe throws)")
        q.load_failure = f"{q.load_failure}; {why}" if q.load_failure else why
    return state


# the 5.x timer's own files (TimerMessageStore.getTimerWheelPath/getTimerLogPath): the wheel's slots and the
# timer log hold what the timer thread did with scheduled messages, not what the commitlog holds
TIMER_FOLDERS = ("timerwheel", "timerlog")


def _not_checked(st: StoreLocation) -> list[str]:
    """Store folders verify leaves alone because they cannot be derived from the commitlog (or not all of
    them), each with why."""
    def present(name: str) -> bool:
        return st.fs.get_file_info(f"{st.root}/{name}").type != pafs.FileType.NotFound

    out = [f"{name}/: the timer wheel and timer log of 5.x scheduled messages (TimerMessageStore) record what the "
           "timer thread did, which the commitlog does not hold; the consume queues of its topics "
           "(rmq_sys_wheel_timer and the others) are checked like any other"
           for name in TIMER_FOLDERS if present(name)]
    if present(ROCKSDB_DIR):
        out.append(f"{ROCKSDB_DIR}/: the 5.5 message RocksDB database (MessageRocksDBStorage) is not compared: its "
                   "trans and timer families hold live transaction-check and timer state, and its index family is "
                   "checked only with indexRocksDBEnable=true and messageIndexEnable=true (brokerVersion 5.5)")
    return out


_ROCKSDB_FAMILIES_NOTE = (f"{ROCKSDB_DIR}/: the trans and timer families of the 5.5 message RocksDB database "
                          "(MessageRocksDBStorage) are not compared: they hold live transaction-check and timer state "
                          "(its index family is checked above)")


def _rocksdb_index(st: StoreLocation, ref_root: str, summary: Any, examples: int) -> Any:
    """The store's RocksDB message index against the rebuild's (:mod:`.rocksdb_index`), when the rebuild wrote
    one (``indexRocksDBEnable=true`` on 5.5); None otherwise."""
    ref_fs, ref = resolve(ref_root)
    rebuilt = f"{ref.rstrip('/')}/{ROCKSDB_DIR}"
    if not summary.rocksdb_index_keys and ref_fs.get_file_info(rebuilt).type != pafs.FileType.Directory:
        return None
    if not isinstance(st.fs, pafs.LocalFileSystem):
        raise StoreLayoutError(f"{st.uri}: verify reads {ROCKSDB_DIR}/ (a RocksDB database) on a local file system "
                               "only")
    from .rocksdb_index import compare_index_databases
    first = st.segments[0] if st.segments and st.segments[0].base > 0 and st.dledger is None else None
    return compare_index_databases(f"{st.root}/{ROCKSDB_DIR}", rebuilt, commitlog_min=st.segments[0].base,
                                   commitlog_end=end_of_data(st, summary.data_end),
                                   first_segment=first.path if first is not None else None, examples=examples)


def _compare_folder(st: StoreLocation, ref_fs: pafs.FileSystem, ref: str, folder: str,
                    dtype: np.dtype) -> list[QueueFileResult]:
    """Every file of ``folder`` (``consumequeue_ext/`` or ``batchconsumequeue/``) in the store or the
    rebuild, by relative path, one pair in memory at a time."""
    store_files = list_tree(st.fs, f"{st.root}/{folder}")
    ref_files = list_tree(ref_fs, f"{ref}/{folder}")
    out = []
    for rel in sorted(set(store_files) | set(ref_files)):
        found = read_all(st.fs, f"{st.root}/{folder}/{rel}") if rel in store_files else None
        expected = read_all(ref_fs, f"{ref}/{folder}/{rel}") if rel in ref_files else None
        out.append(compare_queue_file(rel, expected, found, dtype, folder))
    return out


def _rebuild_figures(summary) -> dict:
    return {"segments": summary.segments, "bytes": summary.bytes, "records": summary.records,
            "dispatched": summary.dispatched, "consume_queue_files": summary.consume_queue_files,
            "index_files": summary.index_files, "anomalies": summary.anomaly_count, "seconds": summary.seconds}
