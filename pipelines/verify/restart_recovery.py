"""The commitlog's recovery at the broker's next start, for :func:`pipelines.verify.restart.predict_restart`, once
every queue went through :func:`~.restart_queue.recover_queue`: ``DefaultMessageStore.load`` (:func:`store_loaded`),
``CommitLog.recoverAbnormally``'s dispatch after a crash (:func:`recover_abnormally`), then
``CommitLog.recoverNormally``/``recoverAbnormally``'s ``truncateDirtyLogicFiles`` on every queue (5.5.1
``ConsumeQueueStore.truncateDirty``: :func:`truncate_dirty`), and the queues whose emptied last file makes a 5.3.3
load fail (``recoverTopicQueueTable``'s ``correctMinOffset``: :func:`empty_last_files`)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from store_format.batchconsumequeue import BCQ_DIR
from store_format.config import BrokerConfig
from store_format.consumequeue_recovery import correct_min_offset_fails, no_file_resets_max

from .report import RestartPrediction
from .restart_queue import QueueState, abnormal_dispatch, queue_rules, truncate_queue

__all__ = ["empty_last_files", "recover_abnormally", "store_loaded", "truncate_dirty"]


def store_loaded(states: list[QueueState], config: BrokerConfig, clean_shutdown: bool, commitlog_min: int,
                 commitlog_end: int) -> RestartPrediction:
    """``DefaultMessageStore.load`` once every queue went through :func:`~.restart_queue.recover_queue`: whether it
    fails (``MappedFileQueue.doLoad``'s size check on a queue's files) and the queues' max physical offset
    (``ConsumeQueueStore.getMaxPhyOffsetInConsumeQueue``).  Batch queues take part in every step: their
    ``getMaxPhysicOffset`` (the start of their last unit) counts in the queues' max physical offset."""
    p = RestartPrediction("5" if config.is_5x else "4", clean_shutdown, commitlog_min, commitlog_end)
    p.start_fails = any(s.restart.load_failure for s in states)
    p.max_physic_offset_in_queues = max((s.restart.max_physic_offset for s in states), default=-1)
    return p


def recover_abnormally(p: RestartPrediction, states: list[QueueState], abnormal_from: int, commitlog_end: int,
                       read_expected: Callable[[str, str, str], bytes],
                       walked_units: Callable[[int, int, set[str]], dict[str, np.ndarray]] | None) -> None:
    """``CommitLog.recoverAbnormally``'s dispatch (an ``abort`` file; the commitlog's recovery, not DLedger's):
    ``abnormal_from`` is where its walk starts (its start segment, :func:`store_format.recovery.plan_recovery`'s
    ``dispatch_from``: inside it with 5.5.1 ``enableAcceleratedRecovery``).  It dispatches every record from
    there to ``commitlog_end`` against the queues as their recovery left them (:func:`abnormal_dispatch`: units
    appended, ext units put), before :func:`truncate_dirty`.  ``walked_units`` (given with multi-dispatch): every
    unit the walk hands each consume queue, own and light ones from their two counters
    (:func:`store_format.restart_reput.walked_file_queue_units`), instead of the expected files' units."""
    p.abnormal_dispatch_from = abnormal_from
    walked = walked_units(abnormal_from, commitlog_end, {s.restart.queue for s in states if s.loaded
                                                         and s.restart.layout != BCQ_DIR}) \
        if walked_units is not None else None
    for s in states:
        abnormal_dispatch(s, abnormal_from, commitlog_end, read_expected,
                          None if walked is None else walked.get(s.restart.queue))
        p.units_appended_by_recovery += s.restart.units_appended_by_recovery


def empty_last_files(states: list[QueueState], config: BrokerConfig, *, dispatch_from: int | None) -> set[int]:
    """The queues (``id`` of their state) whose last consume queue file ``ConsumeQueue.recover`` left empty, which
    make a 5.3.3 store's load fail (``correctMinOffset`` in ``recoverTopicQueueTable`` reads before that file:
    :func:`store_format.consumequeue_recovery.correct_min_offset_fails`) unless the truncation (which keeps a last
    file's first unit, zeros too) or the recovery's dispatch writes there: :func:`truncate_dirty` takes out those it
    truncates, the report those the dispatch appends to."""
    return {id(s) for s in states if config.brokerVersion == "5" and dispatch_from is None and s.loaded
            and s.restart.layout != BCQ_DIR and s.tail_files and not s.restart.load_failure
            and correct_min_offset_fails(int(s.tail_files[-1][0]),
                                         s.restart.write_position == int(s.tail_files[-1][0]))}


def truncate_dirty(p: RestartPrediction, states: list[QueueState], config: BrokerConfig, cut: int, *,
                   truncate_at: int | None, dispatch_from: int | None, reput_from_queues: bool | None,
                   abnormal_from: int | None, read_expected: Callable[[str, str, str], bytes],
                   empty_last: set[int]) -> None:
    """``CommitLog.recoverNormally``/``recoverAbnormally``'s ``truncateDirtyLogicFiles(cut)`` on every queue the
    store loaded (:func:`truncate_queue`): when the queues' max physical offset (before the abnormal dispatch) is at
    or past ``cut``, on the queues the abnormal dispatch (from ``abnormal_from``) appended nothing to (what it
    appended lies before the end).  rocketmq-store 5.5.1 calls it always (since ``CombineConsumeQueue``), and its
    ``ConsumeQueueStore.truncateDirty`` cuts when the max after the recovery's dispatch reaches ``cut``
    (:func:`_dispatch_reaches`), after that dispatch: it leaves a queue ``recoverNormally``'s dispatch appends to
    alone (every unit then lies before ``cut``, its last file starts with one; cut before, a first unit of zeros would
    stay); a cut keeps a last file's first unit, zeros too (taken out of ``empty_last``); a queue it leaves with no
    file: :func:`truncate_queue`'s ``no_file_max_reset``.  A DLedger store (``DLedgerCommitLog.recover``) passes
    ``truncate_at``, the end of the log DLedger's recovery keeps (``getMaxWrotePosition``), which the queues are
    truncated against instead of the commitlog's end; after a 5.x DLedger crash (``dispatch_from``) no queue is
    truncated against the log's end."""
    always = config.brokerVersion == "5.5" and truncate_at is None
    p.truncate_dirty_logic_files = dispatch_from is None and (always or p.max_physic_offset_in_queues >= cut)
    cuts = p.truncate_dirty_logic_files
    first = -1   # 5.5.1 recoverNormally: its dispatch, of the records from here on, comes before the cut
    if always and (abnormal_from is not None or reput_from_queues is None):   # truncateDirty: the max now
        start = abnormal_from if abnormal_from is not None else p.max_physic_offset_in_queues + 1
        first = start if abnormal_from is None else -1
        cuts = max((s.restart.max_physic_offset for s in states), default=-1) >= cut \
            or _dispatch_reaches(states, start, cut, read_expected)
    if cuts:
        for s in states:
            # a queue that dispatch appends to (it lacks a record from first on): cut after it, nothing
            appended = first >= 0 and bool(((s.missing_offsets >= first) & (s.missing_offsets < cut)).any())
            if not s.restart.units_appended_by_recovery and s.loaded and not appended:
                truncate_queue(s, cut, no_file_max_reset=no_file_resets_max(config.brokerVersion))
                empty_last.discard(id(s))


def _dispatch_reaches(states: list[QueueState], start: int, end: int,
                      read_expected: Callable[[str, str, str], bytes]) -> bool:
    """Whether the recovery's dispatch of the records from ``start`` leaves some queue's max physical offset at
    ``end`` (the commitlog's end): a rebuilt unit of such a record whose ``getMaxPhysicOffset`` reaches it (a unit the
    dispatch skips: its queue's max already does).  5.5.1 ``ConsumeQueueStore.truncateDirty``, which
    ``truncateDirtyLogicFiles`` calls after that dispatch, cuts the queues only then.  Only the last dispatched
    record's units can end there (the records lie end to end), so only the files holding a unit of it are read."""
    last = max((hi for s in states for _name, _lo, hi, _n in s.expected_files), default=-1)
    if last < start:
        return False
    for s in states:
        rules = queue_rules(s.restart.layout)
        for name, _lo, hi, _n in s.expected_files:
            if hi < last:
                continue
            data = read_expected(s.restart.layout, s.restart.queue, name)
            u = np.frombuffer(data, dtype=rules.dtype, count=len(data) // rules.unit_size)
            u = u[rules.is_message(u)]
            if ((u["commitlogOffset"].astype(np.int64) >= start) & (rules.max_physic(u) >= end)).any():
                return True
    return False
