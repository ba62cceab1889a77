"""Topic ""'s consume queue files (``consumequeue/<queueId>/<file>``: the units of multi-dispatch requests naming an
empty queue, ``ConsumeQueue.multiDispatchLmqQueue``) across a broker start: what the start leaves of the files it
finds there, and what its dispatch writes over them.

Mirrors rocketmq-store 5.5.1 (rocketmq-all-5.3.3 the same; rocketmq-all-4.9.8: ``DefaultMessageStore.loadConsumeQueue``,
the same rules) ``ConsumeQueueStore.loadConsumeQueues``, ``DefaultMessageStore.findConsumeQueue``
(``ConsumeQueueStore.findOrCreateConsumeQueue``), ``ConsumeQueue.putMessagePositionInfo`` / ``fillPreBlank``,
``ConsumeQueue.truncateDirtyLogicFiles``, ``MappedFileQueue.getLastMappedFile`` (``isFirstCreateInQueue``) and
``DefaultMappedFile.init``.

* The start's ``loadConsumeQueues`` reads ``consumequeue/<queueId>/`` as topic "<queueId>" and each file name there
  as one of its queue ids (a folder ``consumequeue/<queueId>/<id>/`` that does not exist: an empty queue): topic ""
  is not loaded, so neither ``ConsumeQueue.recover`` nor the recovery's ``truncateDirtyLogicFiles`` touches its files.
* When the recovery's dispatch (``recoverNormally`` past the queues' max physical offset, ``recoverAbnormally``'s
  walk) hands it an empty-name record, ``findOrCreateConsumeQueue`` creates topic "" queue ``<queueId>`` afresh: no
  file in its list, max physical offset -1.  Its first put opens the file ``getLastMappedFile`` names for the unit's
  queue offset (``DefaultMappedFile.init``: ``RandomAccessFile`` "rw" mapped over the queue's file size, so the file
  on disk is neither truncated nor zeroed, a shorter one grows to that size with zeros) at write position 0, and
  ``putMessagePositionInfo`` applies the put rule of a new queue (:mod:`store_format.consumequeue`): a first unit of
  queue offset > 0 first fills the file from its start with blank units (``fillPreBlank``), whatever units the file
  held there.  The bytes each put writes replace the file's; every byte past them and every file of the folder not
  opened stays as it was.  So topic ""'s files after the start are a fresh queue's writes of the records dispatched
  again (:func:`written_prefix` of the file such a queue builds) over the store's files (:func:`over_held`).
* The recovery's ``truncateDirtyLogicFiles`` then walks the reopened queue's last file from its start: its first unit
  is one the dispatch wrote (below the cut), so no file is deleted and no byte changes, unless the dispatch opened
  that file after a full one and put nothing there (a unit the queue offset check dropped) and the held unit at its
  start lies at or past the cut: that file is deleted from disk and the max comes from the full file before it, the
  dispatch's alone (:func:`truncate_reopened`; 5.3.3's start then does not fail); on 5.x nothing is put to it
  afterwards (the start's reput begins at the commitlog's end: ``CommitLog.getConfirmOffset``, its max offset).  A
  second reput (``recheckReputOffsetFromCq``, ``DefaultMessageStore.doRecheckReputOffsetFromCq``) starts at the
  queue table's largest max after the recovery (:func:`reput_start_over_table`): the own queues' (after the
  truncate, which may lower them below an empty-name record the recovery found queued) and the others'
  (:func:`table_max_beside_own`): the topic "" queues the recovery's dispatch opened and, on 5.3.3 only, the queues
  the load made of the held files' names, whose max a truncate sets to the commitlog's end (5.5.1's
  ``correctMinOffset`` sets a queue with no file back to -1 before that reput).  So on 5.5.1 a clean start whose
  truncate lowered the own queues' max below a queued empty-name record the recovery did not dispatch has its second
  reput dispatch it again (the 5.5.1 broker: topic "" queue 0 opened afresh over its held file; 5.3.3 and 4.9.8
  start past it).  ``verify`` takes that start from the own queues it predicts; ``--as-restart`` (the queues deleted:
  no truncate, the recovery's own queues and its topic "" ones all there is) has it as
  ``RecoveryPlan.restart_reput_from``.  One that does dispatch such a record again is not modelled
  (:func:`restart_refusal`; ``--as-restart`` over held files: :func:`reput_again_queues`).
* 5.3.3: the same start (``loadConsumeQueues`` walks the folders as 5.5.1's; ``recoverNormally`` dispatches the
  records past ``getMaxPhyOffsetInConsumeQueue``, ``recoverAbnormally``'s walk every record from its first data file;
  the same ``putMessagePositionInfo`` and ``truncateDirtyLogicFiles``).  Its ``correctMinOffset`` (5.5.1 guards it)
  reads before the start of a queue's last file when nothing was written there: a dispatch leaving a reopened queue
  so fails the start (:func:`start_fails`), unless the recovery's truncate runs (it keeps a first unit of the last
  file it keeps, or deletes that file).
* 4.9.8: ``recoverNormally`` dispatches nothing, the start's reput from the queues' max physical offset on (that
  record included) reopens the queue the same way; after ``recoverAbnormally``'s walk that reput dispatches again
  the records from the queues' max on.  That max is over the whole queue table (:func:`reput_start_over_table`,
  :func:`table_max_beside_own`): besides the
  own queues, the topic "" queues the walk opened (the end of the last unit each put, or, where the recovery's
  ``truncateDirtyLogicFiles`` ran, of the run it reads from the last file's start over the held bytes) and the
  queues ``loadConsumeQueue`` made of the held files' names (topic "<queueId>", no file: that truncate leaves their
  max at the commitlog's end).  So the reput starts past every empty-name record the walk dispatched: where no
  truncate runs, its topic "" queue's max is past it; where one does, a held file makes such a queue; with none
  held, the queue's file is the walk's own.  What is left (:func:`reput_again_queues`, for ``verify`` and
  ``--as-restart`` both, refused): every held file name past ``Integer.MAX_VALUE`` (queue offsets from 107374183
  on), no broker run reaches it.

* Over a DLedger commitlog (``DLedgerCommitLog.recover``, ``multiDispatchLmqQueue`` the same): predicted only for
  the clean 5.x starts the brokers checked (:func:`dledger_start_checked`): ``--as-restart`` with
  ``recheckReputOffsetFromCq=true`` over no topic "" file or over held ones (every record dispatched from
  the log's min offset into queues created afresh, over the held bytes: :func:`as_restart_over_dledger_checked`),
  without it where nothing is dispatched (the reput at the committed position, the log's end), and ``verify`` where
  the reput starts at the log's end (nothing dispatched: the files stay; without the setting too); any other (a
  crash walk, a reput from before the end, 4.9.8) refused in one line (:func:`refusal_reason`).

Checked against the 5.5.1, 5.3.3 and 4.9.8 brokers: tests/test_light_empty_restart_broker.py (5.5.1: kept files, a
cut, a crash walk that dispatches every such record again), tests/test_light_empty_reopen_broker.py (a start
dispatching only the later ones: ``fillPreBlank`` over the earlier units; files planted before a start over deleted
queue folders; 4.9.8 with ``PIPELINES_FULL_SUITE=1``, a crash walk too) and tests/test_light_empty_restart_533_broker.py
(the same shapes on 5.3.3: planted files by default, a cut, a crash walk and the later ones with
``PIPELINES_FULL_SUITE=1``); tests/test_light_empty_recheck_broker.py (a cut, a crash walk and the later ones with
``recheckReputOffsetFromCq=true``, 5.5.1 and 5.3.3: the files and figures as without it) and
tests/test_light_empty_recheck_restart_broker.py (``--as-restart`` with it over planted files, clean and after a
crash, 5.5.1 and 5.3.3: byte for byte); tests/test_light_empty_reput_again_498_broker.py (4.9.8: the own queues' max
before a walked empty-name record, the table's past it, clean and after a crash);
tests/test_light_empty_reput_again_5x_broker.py (the same stores on 5.5.1 and 5.3.3 with the second reput: its start
the table's max, 5.5.1's file-name queues at -1, its clean start dispatching R again);
tests/test_light_empty_multi_dispatch_off_broker.py (those stores restarted with ``enableMultiDispatch=false``: the
file-name queues set the start all the same); tests/test_light_empty_truncate_deletes_broker.py (a truncate
deleting a reopened queue's last file: 5.5.1 with the second reput, without it and 5.3.3 with
``PIPELINES_FULL_SUITE=1``: the queue's max, the second reput's start and topic ""'s files the broker's);
tests/test_light_empty_dledger_broker.py (5.5.1, 5.3.3 with ``PIPELINES_FULL_SUITE=1``, over a DLedger commitlog,
clean: queues deleted, ``--as-restart``
byte for byte; queues kept, ``verify``: topic "" as held); tests/test_light_empty_dledger_held_broker.py (5.5.1,
5.3.3 with ``PIPELINES_FULL_SUITE=1``: planted topic "" files under ``--as-restart`` with the setting and without it,
queues kept without it).
"""
from __future__ import annotations

import numpy as np
import pyarrow.fs as pafs

from . import commitlog as cl
from .config import JAVA_INT_MAX, BrokerConfig
from .consumequeue import Q_BLANK_UNTIL, Q_FIRST_FILE, Q_LAST_FILE, assign_positions, build_cq_file, new_states
from .consumequeue_recovery import (
    CORRECT_MIN_OFFSET_533,
    CQ_RULES,
    Truncation,
    correct_min_offset_fails,
    no_file_max,
    no_file_resets_max,
    truncate_dirty_logic_files,
)
from .layout import CQ_BLANK_SIZE, CQ_UNIT_DTYPE, CQ_UNIT_SIZE
from .store import StoreLocation
from .walkresult import L_QID, L_QOFF, L_REC, L_STATUS, LMQ_EMPTY_NAME, WalkResult

__all__ = ["empty_light_names_on_restart", "is_topic_empty_file", "held_topic_empty_files",
           "written_prefix", "over_held", "refusal_reason", "restart_refusal", "reput_again_queues",
           "reput_start_over_table", "opened_afresh", "start_fails", "empty_name_units", "reopened_files",
           "table_max_beside_own", "truncate_reopened", "dledger_start_checked", "as_restart_over_dledger_checked"]


def is_topic_empty_file(rel: str) -> bool:
    """``rel`` (below ``consumequeue/``) is a file of topic "": ``<queueId>/<name>``, the folder an int."""
    parts = rel.split("/")
    return len(parts) == 2 and parts[0].lstrip("-").isdigit()


def held_topic_empty_files(store: StoreLocation) -> dict[str, bytes]:
    """The files directly in ``consumequeue/<queueId>/`` of ``store`` (relative to the store root:
    ``consumequeue/<queueId>/<name>``) and their bytes; topic "<queueId>"'s queue folders there are no such files."""
    out: dict[str, bytes] = {}
    infos = store.fs.get_file_info(pafs.FileSelector(f"{store.root}/consumequeue", allow_not_found=True))
    for folder in sorted((i for i in infos if i.type == pafs.FileType.Directory), key=lambda i: i.base_name):
        if not is_topic_empty_file(f"{folder.base_name}/x"):
            continue
        for info in sorted(store.fs.get_file_info(pafs.FileSelector(folder.path)), key=lambda i: i.base_name):
            if info.type == pafs.FileType.File:
                with store.fs.open_input_file(info.path) as f:
                    out[f"consumequeue/{folder.base_name}/{info.base_name}"] = f.read()
    return out


def written_prefix(data: bytes | np.ndarray) -> int:
    """How many bytes from a consume queue file's start a fresh queue's puts wrote: through its last unit of non-zero
    size (blank units are ``(0, Integer.MAX_VALUE, 0)``, a message unit has its record's size; the zeros after them
    were never written)."""
    raw = np.frombuffer(bytes(data[:len(data) - len(data) % CQ_UNIT_SIZE]), dtype=CQ_UNIT_DTYPE)
    used = np.flatnonzero(raw["size"] != 0)
    return (int(used[-1]) + 1) * CQ_UNIT_SIZE if len(used) else 0


def over_held(held: bytes | None, written: bytes, size: int) -> bytes:
    """A file as a queue opened over it leaves it (``DefaultMappedFile.init``: mapped over ``size`` bytes, neither
    truncated nor zeroed): ``held`` (None: no such file) grown to ``size`` with zeros, ``written`` over its start."""
    base = bytearray(held or b"")
    merged = base + bytes(max(0, size - len(base)))
    merged[:len(written)] = written
    return bytes(merged)


def refusal_reason(config: BrokerConfig, again: int | None = None, *, dledger_checked: bool = False) -> str:
    """Why a restart over empty-name records on file consume queues is not predicted, the reason alone (empty: it
    is): only file stores of a known broker line (the brokers checked: 5.5.1, 5.3.3 and 4.9.8) not over a DLedger
    commitlog are, or over one the starts the broker checked (``dledger_checked``: :func:`dledger_start_checked`);
    on 5.x with a second reput (``recheckReputOffsetFromCq``) only where it dispatches no such record:
    ``again`` is how many units of empty-name records lie at or past where it starts (:func:`reput_start_over_table`),
    None where it starts before the recovery's dispatch (``verify`` predicts one case of it apart:
    :func:`store_format.topic_empty_mix.second_reput_queue_zero`)."""
    if config.brokerVersion not in ("5.5", "5", "4"):
        return "with the broker line not known (brokerVersion auto: give --broker-version)"
    if config.enableDLegerCommitLog and not dledger_checked:
        return ("over a DLedger commitlog (modelled: a clean 5.x start with recheckReputOffsetFromCq=true over "
                "deleted queues, or one whose reput starts at the log's end)")
    if config.is_5x and config.recheckReputOffsetFromCq and again is None:
        return ("with recheckReputOffsetFromCq=true whose second reput starts before the recovery's dispatch and "
                "dispatches such records again (predicted only where that reput opens topic \"\" queue 0 afresh and "
                "puts blanks' empty requests beside them, as the 5.5.1 broker showed)")
    if config.is_5x and config.recheckReputOffsetFromCq and again:
        return (f"with recheckReputOffsetFromCq=true whose second reput dispatches {again} such unit(s) again, "
                "putting after what the recovery's truncateDirtyLogicFiles read past the written bytes")
    return ""


def dledger_start_checked(config: BrokerConfig, *, clean: bool,
                          reput_from: int | None = None, end: int | None = None, queues_deleted: bool = False) -> bool:
    """Whether a start over a DLedger commitlog (``DLedgerCommitLog.recover``, its reput) is one whose topic "" files
    the 5.5.1 and 5.3.3 brokers checked (tests/test_light_empty_dledger_broker.py,
    tests/test_light_empty_dledger_held_broker.py): a
    clean start (``clean``: no ``abort`` file, so no crash walk; ``dledgerRecoverNormally`` dispatches nothing) and

    * reputs starting at the log's end (``reput_from`` at or past ``end``): nothing dispatched, and topic "", not
      loaded, not cut, stays as held; with ``recheckReputOffsetFromCq=true`` (the queues' max there) or without it
      (``DefaultMessageStore.start`` sets the reput at ``getConfirmOffset``, DLedger's committed position, the log's
      end on a clean start);
    * ``queues_deleted`` (``--as-restart``: no own queue loaded, and topic "<queueId>"'s queues of the held file
      names have no file, max -1) with the setting: ``doRecheckReputOffsetFromCq`` dispatches every record from the
      log's min offset, each empty-name record to a topic "" queue ``findOrCreateConsumeQueue`` creates afresh, by a
      new queue's put rule (the plain rebuild's files), over no topic "" file or over the held ones (each written
      file's bytes over the held one, :func:`over_held`).  Without the
      setting such a start dispatches nothing where its committed position is the log's end (the walk then finds
      no record to refuse); one from before it is not checked."""
    if not clean or config.brokerVersion not in ("5.5", "5"):
        return False
    if reput_from is not None and end is not None and reput_from >= end:
        return True
    return config.recheckReputOffsetFromCq and queues_deleted


def restart_refusal(config: BrokerConfig, again: int | None = None) -> str:
    """The refusal's line for :func:`refusal_reason` (empty: the restart is predicted)."""
    why = refusal_reason(config, again)
    if not why:
        return ""
    return ("a multi-dispatch request names an empty queue, whose files (consumequeue/<queueId>/, topic \"\" of "
            "ConsumeQueue.multiDispatchLmqQueue) a broker start loads as topic \"<queueId>\" and reopens when it "
            f"dispatches such a record again: a restart over them is not modelled {why}")


def reput_again_queues(store: StoreLocation, config: BrokerConfig, *, walk_from: int, reput_first: int,
                       end: int) -> list[int]:
    """The topic "" queues whose empty-name records the start's reput dispatches again after ``recoverAbnormally``'s
    walk (from ``walk_from`` to ``end``): 4.9.x ``DefaultMessageStore.start`` reputs from the queue table's max
    physical offset (``verify``: :func:`reput_start_over_table`; ``--as-restart``, the queues deleted:
    the plan's, past the last queued record), ``reput_first`` the first record it dispatches (``end`` or past: none);
    each such record lands on a queue whose write position ``truncateDirtyLogicFiles`` set from the bytes on disk
    past the walk's, which is not modelled (empty: no such record, the walk's writes stand).  With the table's max
    that leaves held files whose names ``Integer.parseInt`` reads none of (:func:`table_max_beside_own`).  5.x's
    second reput: :func:`reput_start_over_table` for ``verify``; ``--as-restart`` calls this with the plan's start of it
    (``RecoveryPlan.restart_reput_from``)."""
    if reput_first >= end:
        return []
    again, _ = empty_name_units(store, config, walk_from, end, reput_first - 1)
    return sorted({q for _, q, _ in again})


def table_max_beside_own(store: StoreLocation, config: BrokerConfig, *, walk_from: int, end: int, truncated: bool,
                         above: int = -1, held: dict[str, bytes] | None = None) -> int:
    """The largest ``getMaxPhysicOffset`` over the queues a load and recovery add to the queue table beside the own
    ones, as the reput's start reads the table (:func:`reput_start_over_table`: 4.9.x ``DefaultMessageStore.start``,
    5.x ``doRecheckReputOffsetFromCq``) (-1: none such): the
    recovery's dispatch from ``walk_from`` to ``end`` (``recoverAbnormally``'s walk; 5.x ``recoverNormally``'s, the
    records past ``above``, the loaded queues' max; ``walk_from`` = ``end``: none, 4.9.x ``recoverNormally``) and,
    where ``truncated`` (the loaded queues' max at or past ``end``), ``truncateDirtyLogicFiles(end)`` over every
    queue of the table.  ``held``: :func:`held_topic_empty_files` of ``store`` (None: read here).

    * ``loadConsumeQueue`` (5.x ``ConsumeQueueStore.loadConsumeQueues``) makes topic "<queueId>" queue
      ``Integer.parseInt(name)`` of each held file ``consumequeue/<queueId>/<name>`` (a name past
      ``Integer.MAX_VALUE`` is skipped), whatever ``enableMultiDispatch`` (a store written with it, restarted
      without it, keeps those files); with no file in ``consumequeue/<queueId>/<id>/`` it has none, and
      ``ConsumeQueue.truncateDirtyLogicFiles`` leaves its max at ``end`` (not truncated: -1, never set), which
      ``recoverTopicQueueTable`` keeps on 4.9.8 and 5.3.3 and sets back to -1 on 5.5.1
      (:func:`store_format.consumequeue_recovery.no_file_max`): on 5.5.1 they count for nothing.
    * Each topic "" queue the dispatch opened (:func:`reopened_files`; the walk hands it empty-name records only
      with ``enableMultiDispatch``, :func:`empty_name_units`): ``putMessagePositionInfo`` sets its max to
      the end of each unit it puts; truncated, ``truncateDirtyLogicFiles`` reads its last file from the start (the
      dispatch's bytes over the held ones, :func:`over_held`): the first unit whatever it holds, then on while a unit
      has offset >= 0, size > 0 and offset < ``end``, the max the end of the last one read (a blank:
      ``Integer.MAX_VALUE``); a first unit at or past ``end`` (held: the dispatch put nothing there) deletes that
      file and the max comes from the full file before it (:func:`truncate_reopened`)."""
    held = held_topic_empty_files(store) if held is None else held
    top = -1
    for rel in held:
        folder, name = rel.split("/")[1:]
        if truncated and name.isdigit() and int(name) <= JAVA_INT_MAX and not store.fs.get_file_info(
                pafs.FileSelector(f"{store.root}/consumequeue/{folder}/{int(name)}", allow_not_found=True)):
            top = max(top, no_file_max(end, resets=no_file_resets_max(config.brokerVersion)))
    units, sizes = empty_name_units(store, config, walk_from, end, above) if walk_from < end else ([], {})
    at_all = np.array([at for at, _, _ in units], dtype=np.int64)
    qid_all = np.array([q for _, q, _ in units], dtype=np.int64)
    end_all = np.array([at + sizes[at][0] for at, _, _ in units], dtype=np.int64)
    for qid, (files, put) in reopened_files(units, sizes, config.cq_file_size).items():
        if not put:
            continue
        if not truncated:   # the last unit put: the largest end, the puts going in commitlog order
            mine = (qid_all == qid) & np.isin(at_all, _put_offsets(files))
            top = max(top, int(end_all[mine].max()))
            continue
        top = max(top, truncate_reopened(qid, files, held, end, config).max_physic_offset)
    return top


def truncate_reopened(qid: int, files: dict[int, bytes], held: dict[str, bytes], end: int,
                      config: BrokerConfig) -> Truncation:
    """The recovery's ``ConsumeQueue.truncateDirtyLogicFiles(end)`` (5.x through ``ConsumeQueueStore.truncateDirty``)
    on topic "" queue ``qid`` as its dispatch reopened it: the queue's files are those the dispatch opened
    (:func:`reopened_files`' ``files``), each the dispatch's bytes over the held ones (``held``,
    :func:`held_topic_empty_files`; :func:`over_held`), and the walk is every queue's
    (:func:`store_format.consumequeue_recovery.truncate_dirty_logic_files`).  The last file's first unit is kept
    whatever it holds, unless it lies at or past ``end``: the dispatch put nothing there (its units lie before
    ``end``), so that unit is a held one, and ``MappedFileQueue.deleteLastMappedFile`` removes the file from the
    queue and from disk; the walk goes on to the file before, which ``getLastMappedFile`` had found full (a fresh
    queue opens a file after its first only past a full one, and its first put always puts): wholly the
    dispatch's, its last unit gives the max.  A queue left with no file (not reached that way) keeps the max
    :func:`store_format.consumequeue_recovery.no_file_max` gives."""
    tail = []
    for start in sorted(files):
        data = over_held(held.get(f"consumequeue/{qid}/{start:020d}"), files[start], config.cq_file_size)
        u = np.frombuffer(data[:len(data) - len(data) % CQ_UNIT_SIZE], dtype=CQ_UNIT_DTYPE)
        tail.append((f"{start:020d}", u["commitlogOffset"].astype(np.int64), CQ_RULES.max_physic(u),
                     CQ_RULES.accepted(u), u["tagsCode"].astype(np.int64)))
    t = truncate_dirty_logic_files(tail, end)
    if not tail:
        t.max_physic_offset = no_file_max(end, resets=no_file_resets_max(config.brokerVersion))
    return t


def _put_offsets(files: dict[int, bytes]) -> np.ndarray:
    """The commitlog offsets of the message units a reopened queue wrote (:func:`reopened_files`: its bytes per
    file; blank and zeroed units left out)."""
    u = np.frombuffer(b"".join(d[:len(d) - len(d) % CQ_UNIT_SIZE] for d in files.values()), dtype=CQ_UNIT_DTYPE)
    return u["commitlogOffset"][(u["size"] != 0) & (u["size"] != CQ_BLANK_SIZE)].astype(np.int64)


def reput_start_over_table(own_max: int, beside_max: int, commitlog_min: int) -> int:
    """Where a reput set from the whole queue table starts (4.9.x ``DefaultMessageStore.start``; 5.3.3 and 5.5.1
    ``DefaultMessageStore.doRecheckReputOffsetFromCq``, with ``recheckReputOffsetFromCq=true``): the largest
    ``getMaxPhysicOffset`` over the table after the recovery, the own queues' (``own_max``) and the others'
    (``beside_max``, :func:`table_max_beside_own`), at least the commitlog's min offset and 0."""
    return max(own_max, beside_max, commitlog_min, 0)


def opened_afresh(recovered: list[tuple[int, int, int]], again: list[tuple[int, int, int]]) -> bool:
    """Whether a second reput's empty-name units ``again`` (:func:`empty_name_units` from its start) go only to topic
    "" queues the recovery's dispatch (``recovered``) did not open: the second reput then creates each afresh
    (``findOrCreateConsumeQueue``: no file, write position 0) and puts to it over the held files as the recovery's
    dispatch would (:func:`reopened_files`, :func:`over_held`; the 5.5.1 broker after a clean start whose truncate
    left the own queues' max at a queued request).  A queue the recovery opened has the write position its
    ``truncateDirtyLogicFiles`` read past the written bytes: not modelled."""
    return not {q for _, q, _ in recovered} & {q for _, q, _ in again}


def start_fails(written: dict[int, dict[int, bytes]], config: BrokerConfig) -> str:
    """Why a 5.3.3 start whose recovery reopens topic "" queues fails (empty: it does not): ``written`` per queue id,
    the bytes its dispatch writes from the start of each file it opens (:func:`reopened_files`).  A queue whose last
    file got no unit (``getLastMappedFile`` created it after a full file for a unit the queue offset check then
    dropped) makes ``recoverTopicQueueTable``'s ``ConsumeQueue.correctMinOffset`` (5.3.3: no guard on the last
    file's read position, which 5.5.1 added) select the 20 bytes before that file's start: the load fails.  Not where
    the recovery's ``truncateDirtyLogicFiles`` runs before it (the caller's to say: the last file it keeps has a
    first unit, :func:`truncate_reopened`)."""
    if config.brokerVersion != "5":
        return ""
    empty = sorted(q for q, files in written.items()
                   if files and correct_min_offset_fails(max(files), not written_prefix(files[max(files)])))
    if not empty:
        return ""
    return (f'topic "" queue(s) {", ".join(map(str, empty))} (a multi-dispatch request names an empty queue): the '
            "start's dispatch reopens them and leaves the last consume queue file it opens empty (a unit the queue "
            f"offset check drops after a full file), so {CORRECT_MIN_OFFSET_533}: no restart to predict")


def empty_light_names_on_restart(res: WalkResult, config: BrokerConfig) -> str:
    """Why a restart's walk (``--as-restart``) over records putting units under an empty light queue name
    (``LMQ_EMPTY_NAME``) is not predicted (empty: it is, or there is none): :func:`restart_refusal`.  A 5.x second
    reput (``recheckReputOffsetFromCq``) is judged once its start is known, over the store's topic "" files
    (``pipelines.restart_topic_empty.topic_empty_over_held``: :func:`reput_again_queues` from
    ``RecoveryPlan.restart_reput_from``), so not here; nor is a DLedger start the broker checked, which the driver
    knows from the store (:func:`as_restart_over_dledger_checked`)."""
    return restart_refusal(config, again=0) if (res.lmq[:, L_STATUS] == LMQ_EMPTY_NAME).any() else ""


def as_restart_over_dledger_checked(store: StoreLocation, config: BrokerConfig) -> bool:
    """Whether ``--as-restart`` over ``store``, a DLedger one (every segment a DLedger data file: no converted store),
    is a start :func:`dledger_start_checked` accepts with nothing else refused (:func:`refusal_reason`), from its
    ``abort`` file (none: clean) and the topic "" files it holds (:func:`held_topic_empty_files`); then the
    empty-name records its walk finds (:func:`empty_light_names_on_restart`, which names the DLedger commitlog) are
    predicted."""
    if not config.enableDLegerCommitLog or store.dledger_pending or not all(s.dledger for s in store.segments) \
            or refusal_reason(config, again=0, dledger_checked=True):
        return False
    return dledger_start_checked(config, clean=not store.broker_may_be_running(), queues_deleted=True)


def empty_name_units(store: StoreLocation, config: BrokerConfig, start: int, end: int, above: int = -1
                     ) -> tuple[list[tuple[int, int, int]], dict[int, tuple[int, int]]]:
    """The topic "" units of the records a walk from ``start`` (a record's offset) dispatches before ``end``, those
    at or below ``above`` left out (``recoverNormally`` dispatches only records past the queues' max physical
    offset): :func:`store_format.dispatch.multi_dispatch_units`' ``LMQ_EMPTY_NAME`` rows (each empty name whose
    offset parses), in dispatch order, as (commitlog offset, queue id, the queue offset the request names), and each
    such record's size and tags code.  ``config`` with its broker line resolved."""
    units, sizes = [], {}
    for seg in store.segments:
        if seg.end <= start or seg.base >= end:
            continue
        with store.reader(seg) as read:
            res = cl.walk_range(read, seg.base, seg.size, cl.WalkState.at_slice_start(max(start - seg.base, 0),
                                                                                      seg.size),
                                min(end - seg.base, seg.size), config, keep_text=False)
        for row in res.lmq[res.lmq[:, L_STATUS] == LMQ_EMPTY_NAME]:
            rec = res.rec[row[L_REC]]
            at = int(rec[cl.R_PHYS])
            if above < at < end and rec[cl.R_STATUS] == cl.STATUS_DISPATCHED:
                units.append((at, int(row[L_QID]), int(row[L_QOFF])))
                sizes[at] = (int(rec[cl.R_TOTAL]), int(rec[cl.R_TAGS_CODE]))
    return units, sizes


def reopened_files(units: list[tuple[int, int, int]], sizes: dict[int, tuple[int, int]],
                   file_size: int) -> dict[int, tuple[dict[int, bytes], int]]:
    """What topic "" queues created afresh write when ``units`` (:func:`empty_name_units`, in dispatch order) are put
    to them (:func:`store_format.consumequeue.assign_positions`, a new queue's rule): per queue id, the bytes written
    from each file's start (file start -> bytes; a file ``getLastMappedFile`` opened and nothing was put to: b"") and
    how many units were put.  ``sizes``: each record's size and tags code."""
    out: dict[int, tuple[dict[int, bytes], int]] = {}
    for qid in sorted({q for _, q, _ in units}):
        mine = [(at, qoff) for at, q, qoff in units if q == qid]
        offset = np.array([at for at, _ in mine], dtype=np.int64)
        size = np.array([sizes[at][0] for at, _ in mine], dtype=np.int64)
        tags = np.array([sizes[at][1] for at, _ in mine], dtype=np.int64)
        states = new_states(1)
        pos = assign_positions(np.zeros(len(mine), dtype=np.int64), offset, size,
                               np.array([q for _, q in mine], dtype=np.int64), file_size, states)
        put = pos >= 0
        first, last = int(states[0, Q_FIRST_FILE]), int(states[0, Q_LAST_FILE])
        if put.any():
            last = max(last, int(pos[put].max()) - int(pos[put].max()) % file_size)
        files = {}
        for start in range(first, last + 1, file_size):
            here = put & (pos >= start) & (pos < start + file_size)
            data = build_cq_file(start, file_size, pos[here], offset[here], size[here], tags[here],
                                 int(states[0, Q_BLANK_UNTIL]), trim=True)
            files[start] = bytes(data[:written_prefix(data)])
        out[qid] = (files, int(put.sum()))
    return out
