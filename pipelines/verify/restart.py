"""The broker's next start on a store as it is (:class:`~pipelines.verify.report.RestartPrediction`):
``MappedFileQueue.doLoad``'s size check and ``ConsumeQueue.recover`` per queue (with
``ConsumeQueueExt.recover`` / ``truncateByMaxAddress`` on its ext files; ``BatchConsumeQueue.recover``
for a batch consume queue: :mod:`pipelines.verify.restart_queue`), then ``CommitLog.recoverNormally`` →
``truncateDirtyLogicFiles`` on every queue and where the reput (4.9.x ``DefaultMessageStore.start``) or the recovery's
own dispatch (5.x ``CommitLog.recoverNormally``) starts again; after a crash, ``CommitLog.recoverAbnormally``'s
dispatch from its start segment before ``truncateDirtyLogicFiles`` (:func:`~.restart_queue.abnormal_dispatch`);
``index/``: :mod:`pipelines.verify.restart_index`."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping

import numpy as np

from store_format.batchconsumequeue import BCQ_DIR
from store_format.config import BrokerConfig
from store_format.consumequeue_recovery import CORRECT_MIN_OFFSET_533, correct_min_offset_fails, no_file_resets_max
from store_format.empty_topic_restart import reput_start_over_table
from store_format.recovery_dispatch import recovery_dispatch

from .report import QueueRestart, RestartPrediction
from .restart_index import predict_index
from .restart_queue import QueueState, abnormal_dispatch, ext_orphans, holds_ext, put_ext, queue_rules, truncate_queue

__all__ = ["predict_restart"]


def predict_restart(states: list[QueueState], *, config: BrokerConfig, commitlog_min: int, commitlog_end: int,
                    clean_shutdown: bool, store_index: list[tuple[str, int, dict]],
                    expected_index: Callable[[], Iterator[bytes]], checkpoint_index_ts: int | None,
                    read_expected: Callable[[str, str, str], bytes], truncate_at: int | None = None,
                    reput_from_queues: bool | None = None, second_reput: bool = False,
                    dispatch_from: int | None = None, cut_lost: dict[str, np.ndarray] | None = None,
                    cut_at: int | None = None,
                    reindex_from: int | None = None, abnormal_from: int | None = None,
                    ext_again_from: int | None = None, skip: tuple[int, int] | None = None,
                    again_to: int | None = None, parsed_keys: tuple[int, ...] | None = None,
                    parsed_then: int | None = None, walk_end: int | None = None, walk_from: int | None = None,
                    old_runs: tuple[tuple[int, int, int], ...] = (), table_max: int = -1,
                    ext_parsed: dict[str, int] | None = None, ext_parsed_kept: dict[str, int] | None = None,
                    cut_emptied: frozenset[str] | None = None,
                    ext_puts: dict[str, int] | None = None, ext_put_back: dict[str, int] | None = None,
                    ext_not_predicted: dict[str, str] | None = None,
                    reput_at: int | None = None,
                    after_load: Mapping[str, tuple[int, int]] | None = None,
                    walked_units: Callable[[int, int, set[str]], dict[str, np.ndarray]] | None = None
                    ) -> RestartPrediction:
    """The store-wide steps of a start, after each queue's :func:`~.restart_queue.recover_queue`, in the broker's order:
    ``DefaultMessageStore.load`` (:func:`_loaded`), the commitlog's recovery (``CommitLog.recoverAbnormally``'s
    dispatch, :func:`_recover_abnormally`; ``truncateDirtyLogicFiles``, :func:`_truncate_dirty`), where the dispatch
    starts again (:func:`_reput_start`), what it writes into each queue (:func:`_dispatch_again`, its ext units
    :func:`_put_ext_again`; a queue only parsed messages go to, :func:`_parsed_only_queues`), the queues as the load
    left them (``after_load``), what ``doRecheckReputOffsetFromCq``'s second walk appends (:func:`_second_reput`) and
    the ext units orphaned (:func:`ext_orphans`), each queue into the report (:func:`_report_queue`), then ``index/``
    (:func:`_restart_index`) and the report's notes (:func:`_notes`).  Each step's docstring says what its parameters
    mean.  ``commitlog_end`` is where the commitlog ends after the broker's recovery (nothing at or after it is
    dispatched).  ``ext_not_predicted``: per queue, why its ext units orphaned are not predicted (0, and a note).

    ``after_load``: per queue, its max physical offset and write position once the store's load
    has run a 5.x DLedger crash restart's walk and cut (:attr:`store_format.dledger_crash_cut.QueueCut.loaded`), which
    the queue's report gives instead of ``ConsumeQueue.recover``'s (the queue before the start's reput, as for every
    other restart).  It is applied once the reput is counted, while :func:`~.crash_units.held_after_cut` (a queue on
    disk the reput appends to before the walk's data file) sets the cut's state before this prediction: at either
    moment alone a figure moves (both before: the walked-nothing stores' ``max_physic_offset_in_queues``; both after:
    the units the reput appends to such a held queue, decided against ``recover``'s max instead of the cut's; both
    after the load's max is taken, before the reput: a held queue's ``max_physic_offset_in_queues``).
    """
    p = _loaded(states, config, clean_shutdown, commitlog_min, commitlog_end)
    abnormal = abnormal_from is not None and dispatch_from is None and truncate_at is None
    if abnormal:
        assert abnormal_from is not None
        _recover_abnormally(p, states, abnormal_from, commitlog_end, read_expected,
                            walked_units if config.enableMultiDispatch else None)
    empty_last = _empty_last_files(states, config, dispatch_from=dispatch_from)
    _truncate_dirty(p, states, config, commitlog_end if truncate_at is None else truncate_at,
                    truncate_at=truncate_at, dispatch_from=dispatch_from, reput_from_queues=reput_from_queues,
                    abnormal_from=abnormal_from if abnormal else None, read_expected=read_expected,
                    empty_last=empty_last)
    recovery_dispatches = config.is_5x and reput_from_queues is None and dispatch_from is None and not abnormal
    first = _reput_start(p, states, config, commitlog_min, dispatch_from=dispatch_from, reput_at=reput_at,
                         reput_from_queues=reput_from_queues, recovery_dispatches=recovery_dispatches,
                         abnormal=abnormal, table_max=table_max)
    r = _Reput(first, commitlog_end, skip, cut_at, ext_again_from, again_to, second_reput)
    top = max((s.restart.max_physic_offset for s in states), default=-1)   # the queues' max after the dispatch
    for s in states:
        q = s.restart
        d = _dispatch_again(s, r, (cut_lost or {}).get(q.queue, _NONE), read_expected)
        q.units_dispatched_again, q.units_lost, top = d.units, d.lost, max(top, d.top)
        _put_ext_again(s, d, r, puts=(ext_puts or {}).get(q.queue), parsed=(ext_parsed or {}).get(q.queue, 0),
                       parsed_kept=(ext_parsed_kept or {}).get(q.queue), back=(ext_put_back or {}).get(q.queue),
                       dledger_crash=dispatch_from is not None, moves_write_position=recovery_dispatches,
                       emptied=cut_emptied is not None and q.queue in cut_emptied)
    _parsed_only_queues(p, states, ext_parsed or {})
    # doRecheckReputOffsetFromCq: from the whole queue table's max, the queues beside the own ones too
    again = reput_start_over_table(top, table_max, commitlog_min) if second_reput else commitlog_end
    p.second_reput_from = again if second_reput else p.second_reput_from
    for s in states:
        q = s.restart
        if after_load is not None and q.queue in after_load:   # reported as the load left it: after the walk and cut
            q.max_physic_offset, q.write_position = after_load[q.queue]
        if id(s) in empty_last and not q.units_appended_by_recovery \
                and not (recovery_dispatches and q.units_dispatched_again):
            q.load_failure = (f"its last consume queue file ({s.tail_files[-1][0]}) holds no unit after "
                              f"ConsumeQueue.recover: {CORRECT_MIN_OFFSET_533}")
            p.start_fails = True
    held_again = _held_put_again(states, r, again, walked_units) if second_reput else {}
    for s in states:
        _second_reput(s, r, again, held_again.get(id(s), 0))
        why = (ext_not_predicted or {}).get(s.restart.queue)
        s.restart.ext_units_orphaned = 0 if why else ext_orphans(s)
        if why:
            p.notes.append(f"ext units orphaned of {s.restart.queue} not predicted: {why}")
        _report_queue(p, s.restart)
    _restart_index(p, first, again, config=config, store_index=store_index, expected_index=expected_index,
                   checkpoint_index_ts=checkpoint_index_ts, clean_shutdown=clean_shutdown, end=commitlog_end,
                   abnormal_from=abnormal_from if abnormal else None, second_reput=second_reput,
                   reindex_from=reindex_from, skip=skip, again_to=again_to, parsed_keys=parsed_keys,
                   parsed_then=parsed_then, walk_end=walk_end, walk_from=walk_from, old_runs=old_runs)
    _notes(p, recovery_dispatches=recovery_dispatches, unclean=not clean_shutdown and dispatch_from is None
           and not abnormal, recovered_here=truncate_at is None)
    return p


_NONE = np.zeros(0, np.int64)


def _loaded(states: list[QueueState], config: BrokerConfig, clean_shutdown: bool, commitlog_min: int,
            commitlog_end: int) -> RestartPrediction:
    """``DefaultMessageStore.load`` once every queue went through :func:`recover_queue`: whether it fails
    (``MappedFileQueue.doLoad``'s size check on a queue's files) and the queues' max physical offset
    (``ConsumeQueueStore.getMaxPhyOffsetInConsumeQueue``).  Batch queues take part in every step: their
    ``getMaxPhysicOffset`` (the start of their last unit) counts in the queues' max physical offset."""
    p = RestartPrediction("5" if config.is_5x else "4", clean_shutdown, commitlog_min, commitlog_end)
    p.start_fails = any(s.restart.load_failure for s in states)
    p.max_physic_offset_in_queues = max((s.restart.max_physic_offset for s in states), default=-1)
    return p


def _recover_abnormally(p: RestartPrediction, states: list[QueueState], abnormal_from: int, commitlog_end: int,
                        read_expected: Callable[[str, str, str], bytes],
                        walked_units: Callable[[int, int, set[str]], dict[str, np.ndarray]] | None) -> None:
    """``CommitLog.recoverAbnormally``'s dispatch (an ``abort`` file; the commitlog's recovery, not DLedger's):
    ``abnormal_from`` is where its walk starts (its start segment, :func:`store_format.recovery.plan_recovery`'s
    ``dispatch_from``: inside it with 5.5.1 ``enableAcceleratedRecovery``).  It dispatches every record from
    there to ``commitlog_end`` against the queues as their recovery left them (:func:`abnormal_dispatch`: units
    appended, ext units put), before :func:`_truncate_dirty`.  ``walked_units`` (given with multi-dispatch): every
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


def _empty_last_files(states: list[QueueState], config: BrokerConfig, *, dispatch_from: int | None) -> set[int]:
    """The queues (``id`` of their state) whose last consume queue file ``ConsumeQueue.recover`` left empty, which
    make a 5.3.3 store's load fail (``correctMinOffset`` in ``recoverTopicQueueTable`` reads before that file:
    :func:`store_format.consumequeue_recovery.correct_min_offset_fails`) unless the truncation (which keeps a last
    file's first unit, zeros too) or the recovery's dispatch writes there: :func:`_truncate_dirty` takes out those it
    truncates, the report those the dispatch appends to."""
    return {id(s) for s in states if config.brokerVersion == "5" and dispatch_from is None and s.loaded
            and s.restart.layout != BCQ_DIR and s.tail_files and not s.restart.load_failure
            and correct_min_offset_fails(int(s.tail_files[-1][0]),
                                         s.restart.write_position == int(s.tail_files[-1][0]))}


def _truncate_dirty(p: RestartPrediction, states: list[QueueState], config: BrokerConfig, cut: int, *,
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


def _reput_start(p: RestartPrediction, states: list[QueueState], config: BrokerConfig, commitlog_min: int, *,
                 dispatch_from: int | None, reput_at: int | None, reput_from_queues: bool | None,
                 recovery_dispatches: bool, abnormal: bool, table_max: int = -1) -> int:
    """Where the dispatch after the load starts (``p.reput_from``, the first offset it dispatches, returned, and
    the bytes from there, ``p.tail_bytes``):

    * 4.9.x ``DefaultMessageStore.start``: the reput starts at max(commitlog min offset, max
      physical offset over the queues after truncation) and dispatches everything from there: the queue table's,
      ``table_max`` its queues beside the own ones (topic "" and those made of its files' names,
      :func:`store_format.empty_topic_restart.table_max_beside_own`; the start:
      :func:`store_format.empty_topic_restart.reput_start_over_table`, as 5.x's second reput's);
    * 5.x ``CommitLog.recoverNormally`` dispatches, while it recovers, the records whose offset is
      strictly greater than the queues' max physical offset (computed before the truncation); the
      reput then starts at the commitlog's end (``recheckReputOffsetFromCq`` defaults to false).
      A record starting exactly at that offset (the one after the last unit) is not dispatched;
    * after ``CommitLog.recoverAbnormally``'s dispatch the 4.9.x reput starts at the queues' max physical offset and
      the 5.x one at the commitlog's end.

    A DLedger store passes ``reput_from_queues``: True for 4.9.8's ``start()`` or 5.x with
    ``recheckReputOffsetFromCq`` (the reput from the queues' max physical offset), False for 5.x
    without it (no dispatch in the recovery, the reput at the committed position: nothing again; ``reput_at``, that
    position, where a clean restart finds entries past it, which the node commits once it leads: the reput goes on
    from there to the log's end).  A 5.x DLedger store after a crash passes ``dispatch_from``
    (:func:`store_format.dledger_crash.plan_dledger_crash`): ``dledgerRecoverAbnormally`` puts every
    message from there (inclusive)."""
    if dispatch_from is not None:
        p.reput_from, p.reput_from_inclusive = dispatch_from, True
    elif recovery_dispatches:
        p.reput_from, p.reput_from_inclusive = p.max_physic_offset_in_queues, False
    elif reput_at is not None:   # 5.x DLedger: getConfirmOffset, the committed position before the node leads
        p.reput_from, p.reput_from_inclusive = reput_at, True
    elif reput_from_queues is False or (abnormal and config.is_5x):   # 5.x: the reput at getConfirmOffset
        p.reput_from = p.commitlog_end
    else:
        after = max((s.restart.max_physic_offset for s in states), default=-1)
        p.reput_from = reput_start_over_table(after, table_max, commitlog_min)
    first = p.reput_from if p.reput_from_inclusive else p.reput_from + 1
    p.tail_bytes = max(0, p.commitlog_end - max(first, commitlog_min))
    return first


@dataclasses.dataclass(frozen=True)
class _Reput:
    """The records the dispatch after the load walks (``ReputMessageService.doReput``, or the 5.x recovery's own):
    from ``first`` to ``end``, the commitlog's end after the broker's recovery, but those in ``skip``.

    After a 5.x DLedger crash the start's reput adds nothing but, on 5.5.1, what ``truncateDirtyLogicFiles`` at the
    walk's short ``processOffset`` (``cut_at``) cut and it puts back: every unit at or past ``cut_at`` is written again
    (the cut took it, the reput puts it back) but the ones the cut leaves out for good (``cut_lost``,
    :func:`_dispatch_again`); ``ext_again_from``: where that reput starts, which puts an ext unit again for each
    record of an ext queue from there (:class:`store_format.dledger_crash_cut.ExtAgain`); ``skip``: the records no
    one dispatches (:attr:`store_format.dledger_crash.DLedgerCrash.gap`), whose units a queue lacks stay lost (and
    those it holds at or past ``cut_at`` too: the cut takes them) and whose keys are not put; ``again_to``: the reput
    walks the records from its start to there again, then goes on past the records the recovery's walk left
    (:attr:`store_format.dledger_crash.DLedgerCrash.again`): the ext units put again are those of the records
    below it.  ``second_reput``: :func:`_second_reput` follows."""
    first: int
    end: int
    skip: tuple[int, int] | None
    cut_at: int | None
    ext_again_from: int | None
    again_to: int | None
    second_reput: bool

    def in_tail(self, off: np.ndarray) -> np.ndarray:
        tail = (off >= self.first) & (off < self.end)
        return tail & ~((off >= self.skip[0]) & (off < self.skip[1])) if self.skip is not None else tail


@dataclasses.dataclass(frozen=True)
class _Dispatched:
    """What :func:`_dispatch_again` counts for one queue."""
    units: int       # units dispatched again (appended or put back)
    lost: int        # units the queue lacks or the cut took that nothing writes again
    records: int     # the records of its own the dispatch hands it (an ext queue: one ext unit each)
    again: int       # of those, the ones from ext_again_from walked again
    own_put: int     # own units appended or put back
    own_cut: int     # of those, the ones at or past cut_at
    top: int         # the largest max physical offset the appended units leave (-1: none)


def _dispatch_again(s: QueueState, r: _Reput, cut_away: np.ndarray,
                    read_expected: Callable[[str, str, str], bytes]) -> _Dispatched:
    """What the dispatch over ``r`` writes into one queue (``ReputMessageService.doReput``, the 5.x
    ``CommitLog.recoverNormally``'s own): a dispatched unit is appended unless ``offset + size <= maxPhysicOffset``
    of its queue (``ConsumeQueue.putMessagePositionInfo``), for a batch queue unless ``offset <=
    maxMsgPhyOffsetInCommitLog`` (``BatchConsumeQueue.putBatchMessagePositionInfo``).  Units a queue lacks (compared
    by commitlog offset with the rebuild) and that the dispatch skips are never written again: they are lost, as are
    ``cut_away``, the commitlog offsets of the units a 5.5.1 DLedger crash's cut leaves out for good
    (:class:`store_format.dledger_crash_cut.QueueCut`), a queue's own units among them too."""
    q = s.restart
    rules = queue_rules(q.layout)
    n_tail = n_cut = n_records = n_again = n_own_put = n_own_cut = 0
    top = -1
    upto = np.iinfo(np.int64).max if r.again_to is None else r.again_to
    first, commitlog_end, skip, cut_at, ext_again_from = r.first, r.end, r.skip, r.cut_at, r.ext_again_from
    for name, lo, hi, n in s.expected_files:
        if hi < first or lo >= commitlog_end:
            continue
        if _appended_whole(s, r, cut_away, lo, hi):
            n_tail += n
            n_records += s.expected_ext.get(name, 0)
            n_own_put += s.expected_ext.get(name, 0)
            n_own_cut += s.expected_ext.get(name, 0) if cut_at is not None and lo >= cut_at else 0
            n_again += s.expected_ext.get(name, 0) if ext_again_from is not None and lo >= ext_again_from \
                and hi < upto else 0
            continue
        data = read_expected(q.layout, q.queue, name)
        u = np.frombuffer(data, dtype=rules.dtype, count=len(data) // rules.unit_size)
        u = u[rules.is_message(u)]
        off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
        tail = r.in_tail(off)
        lost_here = tail & np.isin(off, cut_away)
        put = tail & rules.appended(off, size, q.max_physic_offset) & ~lost_here
        if cut_at is not None:   # the units the cut took and the reput put back, a queue's own ones too
            put |= tail & (off >= cut_at) & ~lost_here
        if skip is not None and cut_at is not None:   # held units of the records no one dispatches, cut
            n_cut += int(((off >= max(skip[0], cut_at, first)) & (off < min(skip[1], commitlog_end))
                          & ~np.isin(off, s.missing_offsets)).sum())
        n_cut += int(lost_here.sum())
        # units the queue lacks that the dispatch skips (at or below its max): never written
        n_cut += int((tail & ~put & ~lost_here & np.isin(off, s.missing_offsets)).sum())
        n_tail += int(put.sum())
        if s.ext_file_size:   # one ext unit per record of the queue's own: those whose units hold an ext address
            own = holds_ext(u)
            n_records += int((r.in_tail(off) & own).sum())
            n_own_put += int((put & own).sum())
            if cut_at is not None:   # the own units the reput puts back
                n_own_cut += int((put & own & (off >= cut_at)).sum())
            if ext_again_from is not None:
                n_again += int((r.in_tail(off) & own & (off >= ext_again_from) & (off < upto)).sum())
        if put.any():
            top = max(top, int(rules.max_physic(u[put]).max()))
    return _Dispatched(n_tail, n_cut, n_records, n_again, n_own_put, n_own_cut, top)


def _appended_whole(s: QueueState, r: _Reput, cut_away: np.ndarray, lo: int, hi: int) -> bool:
    """Whether the dispatch over ``r`` appends every unit of the rebuilt file whose records span ``[lo, hi]`` to the
    queue ``s`` (``ConsumeQueue.putMessagePositionInfo``: each lies past the queue's max) and nothing in it is cut,
    skipped or walked again: :func:`_dispatch_again` then counts it from its summary without reading it."""
    q = s.restart
    return lo >= r.first and hi < r.end and lo > q.max_physic_offset and not r.second_reput \
        and (r.skip is None or hi < r.skip[0] or lo >= r.skip[1]) \
        and not ((cut_away >= lo) & (cut_away <= hi)).any() \
        and (r.ext_again_from is None or not lo < r.ext_again_from <= hi) \
        and (r.again_to is None or not lo < r.again_to <= hi) \
        and not (s.ext_file_size and r.cut_at is not None and lo < r.cut_at <= hi)


def _put_ext_again(s: QueueState, d: _Dispatched, r: _Reput, *, puts: int | None, parsed: int,
                   parsed_kept: int | None, back: int | None, dledger_crash: bool, moves_write_position: bool,
                   emptied: bool) -> None:
    """The ext units the dispatch puts into one ext queue (``putMessagePositionInfoWrapper``'s ``ConsumeQueueExt.put``,
    one per record of its own: :func:`put_ext`; the units dispatched again get their ext units after the ext units on
    disk), and after a DLedger crash (``dledger_crash``) how many of them its
    units leave pointed at, for :func:`ext_orphans`: the walk's and the reput's puts but one per own unit they leave in
    the queue (an own unit of the rebuild they append or put back, a parsed message's), and the store's units the 5.5.1
    cut takes (at or past ``cut_at``: past the write position, which bounds what the broker reads) point at none.

    ``parsed``: the ext units ``putMessagePositionInfoWrapper`` puts for the messages the start's reput set inside an
    entry parses (:attr:`store_format.dledger_inside_state.Placed.ext_put`; no rebuilt queue holds their units),
    added to its ext units appended (a queue no file of the store or the rebuild holds, one those messages alone go
    to: :func:`_parsed_only_queues`); ``parsed_kept``: those parsed own units ``putMessagePositionInfo`` appends (the
    others' ext units no unit points at); ``emptied``: ``truncateDirtyLogicFiles`` at ``cut_at`` deletes the queue's
    files (every first unit at or past it): no kept unit points at an ext unit, so every one before the ext write
    position ``ConsumeQueue.recover`` left counts as orphaned (the cut's own ``truncateByMaxAddress`` then gets no
    address and leaves the ext files alone).  ``puts``: for an ext queue the DLedger cut's reput walks (5.5.1, 5.3.3)
    after a walk to the log's end (:attr:`store_format.dledger_crash.DLedgerCrash.walk_end` < 0), the ext units the
    walk and the reput put as the crash plan counts them from the commitlog
    (:class:`store_format.dledger_crash_cut.ExtAgain`'s ``before + count``: one per own record handed to
    ``putMessagePositionInfoWrapper``, its unit dropped or not, past the rebuild's end too), instead of the rebuilt
    units holding an ext address; ``back``: for such a queue whose put-backs the plan places by position, the own
    units that reput puts back (each points at the ext unit put for it), instead of the rebuilt units at or past
    ``cut_at`` (which lack the records past the rebuild's end: :mod:`pipelines.verify.ext_reput`)."""
    put_ext(s, d.records + d.again + parsed if puts is None else puts, moves_write_position=moves_write_position)
    if dledger_crash:   # a DLedger crash restart: the ext units its puts left pointed at
        # no cut: the plan's figure is every own unit the walk appended (the rebuild lacks those past its end)
        s.ext_pointed_new = (d.own_put if back is None else back if r.cut_at is None
                             else d.own_put - d.own_cut + back) \
            + (parsed if parsed_kept is None else parsed_kept)
        s.ext_kept_below = r.cut_at
    if emptied:
        s.last_ext_addr = 1   # no unit of it kept


def _parsed_only_queues(p: RestartPrediction, states: list[QueueState], ext_parsed: Mapping[str, int]) -> None:
    """A queue only the messages a DLedger crash restart's reput set inside an entry parses go to (no file of the
    store or the rebuild holds it): a queue of its own in the report, with the ext units
    ``putMessagePositionInfoWrapper`` puts for them."""
    held = {s.restart.queue for s in states}
    for queue, n in sorted(ext_parsed.items()):   # a queue only parsed messages go to: no state, its puts
        if queue not in held and n > 0:
            q = QueueRestart(queue, ext_units_appended=n)
            p.ext_units_appended += n
            p.queues.append(q)


def _held_put_again(states: list[QueueState], r: _Reput, again: int,
                    walked_units: Callable[[int, int, set[str]], dict[str, np.ndarray]] | None) -> dict[int, int]:
    """Per queue (``id`` of its state), the units it holds that ``doRecheckReputOffsetFromCq``'s second walk from
    ``again`` appends again: ``ConsumeQueue.putMessagePositionInfo`` (:func:`store_format.recovery_dispatch.
    recovery_dispatch`, the rule of :func:`store_format.consumequeue.assign_positions`) takes a unit whose end lies
    past the queue's max, which ``truncateDirtyLogicFiles`` sets from its last file's first unit even when that unit
    is zeros (max 0, below the units of the files before); a light unit whose request names queue offset 0
    (``INNER_MULTI_QUEUE_OFFSET``, ``multiDispatchLmqQueue``) skips the "repeatedly" check and is appended at the
    write position, an own one behind it is dropped.  Only the queues whose max lies below ``again`` while their
    rebuilt files reach it, and which the first dispatch put nothing to (the state the second walk finds is then the
    load's); ``walked_units`` (:func:`store_format.restart_reput.walked_file_queue_units`) gives each unit's queue
    offset as the request names it."""
    cands = [s for s in states if walked_units is not None and s.loaded and s.restart.layout != BCQ_DIR
             and s.restart.max_physic_offset < again and not s.restart.units_dispatched_again
             and any(hi >= again for _name, _lo, hi, _n in s.expected_files)]
    if not cands or again >= r.end:
        return {}
    assert walked_units is not None
    walked = walked_units(again, r.end, {s.restart.queue for s in cands})
    out = {}
    for s in cands:
        w, q = walked.get(s.restart.queue), s.restart
        if w is None or not len(w):
            continue
        rules = queue_rules(q.layout)
        d = recovery_dispatch(w[:, 0], w[:, 1], w[:, 2] * rules.unit_size, start=again, end=r.end,
                              max_physic=q.max_physic_offset, write_position=q.write_position,
                              unit_size=rules.unit_size, batch=False, loaded=s.loaded)
        out[id(s)] = int((d.appended & ~np.isin(w[:, 0], s.missing_offsets)).sum())
    return out


def _second_reput(s: QueueState, r: _Reput, again: int, held_again: int = 0) -> None:
    """The units one queue still lacks outside ``r``: those from ``again`` on to the commitlog's end the start's
    second walk appends, the others lost.  ``again`` (``second_reput``, 5.x with ``recheckReputOffsetFromCq=true``):
    ``DefaultMessageStore.start`` then (``doRecheckReputOffsetFromCq``, 5.3.3 and 5.5.1) walks again from the largest
    ``getMaxPhysicOffset`` over the queues as the recovery's dispatch left them (a batch queue's: the start of its
    last unit), at least the commitlog's min offset: the units a queue still lacks from there on are appended (a
    record starting exactly at the queues' max, which the recovery's dispatch skips, is one); without it the
    commitlog's end (none).  ``held_again``: the units it holds that the walk appends again
    (:func:`_held_put_again`)."""
    q = s.restart
    q.units_dispatched_again += held_again
    left = s.missing_offsets[~r.in_tail(s.missing_offsets)]
    later = (left >= again) & (left < r.end)   # the second reput appends them
    q.units_dispatched_again += int(later.sum())
    q.units_lost += int((~later).sum())


def _report_queue(p: RestartPrediction, q: QueueRestart) -> None:
    """One queue's figures into the store's totals, the queue listed where something happens to it."""
    p.units_dropped_by_recover += q.units_dropped_by_recover
    p.units_truncated += q.units_truncated
    p.units_dispatched_again += q.units_dispatched_again
    p.units_lost += q.units_lost
    p.ext_units_dropped += q.ext_units_dropped
    p.ext_units_orphaned += q.ext_units_orphaned
    p.ext_units_appended += q.ext_units_appended
    if (q.load_failure or q.units_dropped_by_recover or q.units_truncated or q.units_lost
            or q.units_dispatched_again or q.files_deleted_by_recover or q.files_deleted_by_truncate
            or q.recover_stops_at is not None or q.ext_units_dropped or q.ext_units_orphaned
            or q.ext_files_deleted or q.ext_units_appended or q.units_appended_by_recovery):
        p.queues.append(q)


def _restart_index(p: RestartPrediction, first: int, again: int, *, config: BrokerConfig,
                   store_index: list[tuple[str, int, dict]], expected_index: Callable[[], Iterator[bytes]],
                   checkpoint_index_ts: int | None, clean_shutdown: bool, end: int, abnormal_from: int | None,
                   second_reput: bool, reindex_from: int | None, skip: tuple[int, int] | None,
                   again_to: int | None, parsed_keys: tuple[int, ...] | None, parsed_then: int | None,
                   walk_end: int | None, walk_from: int | None, old_runs: tuple[tuple[int, int, int], ...]) -> None:
    """``IndexService.buildIndex`` during the start's dispatches (:func:`predict_index`; it skips records below the
    last index file's ``endPhyOffset``): from ``first`` (after
    ``CommitLog.recoverAbnormally``'s dispatch, ``abnormal_from``, from there: the records from there, then a 4.9.x
    reput from the queues' max, the records from there again, their keys from the last indexed record on, or the 5.x
    second one from ``again``).  With ``second_reput`` the second walk puts the keys of the records at or after both
    ``again`` and the last index file's ``endPhyOffset`` (the last indexed record a second time).

    After a 5.x DLedger crash: ``reindex_from``: the reput starts there and indexes the last indexed record
    again; ``skip``: the records whose keys no one puts; ``again_to``: the keys put again are those of
    ``reindex_from`` alone.  ``parsed_keys`` (the start's reput set inside an
    entry parses messages there: :attr:`store_format.dledger_crash.DLedgerCrash.inside_keys`, the PHYSICALOFFSET
    fields of their keys in put order) and ``parsed_then`` (where that reput walks on from, None: past the log's
    end): the keys are those of the walk, then the parsed ones ``buildIndex`` takes, then those of the records from
    ``parsed_then`` at or above the ``endPhyOffset`` they left (:func:`predict_index`), instead of
    ``reindex_from``'s; ``walk_end``: where the recovery's walk ended early (its keys are those below it, and every key
    counted lies below ``end``, where the dispatch ends: the walk's end when the start's reput begins at
    the log's end, ``DLedgerCrash.end``; the rebuild's index holds the records past it too).
    ``walk_from``: where the walk's keys begin (a reput from before it, ``dispatch_from``: its own records after,
    ``IndexService.buildIndex`` skipping those below the ``endPhyOffset`` the walk left: with ``parsed_keys`` its
    ``parsed_then``, else ``reindex_from``'s second walk).
    ``old_runs``: with ``parsed_keys``, a reput from a converted store's old files whose check refuses records there
    and parses messages 48 bytes further (:attr:`store_format.dledger_crash.DLedgerCrash.old_parsed_runs`): the last
    of ``parsed_keys`` are theirs, put in reput order among the old records' (:func:`predict_index`).
    With ``abnormal_from``, ``parsed_keys`` are those of a 5.5.1 accelerated walk from inside a record
    (``RecoveryPlan.walk_keys``; ``walk_end`` its start: the rebuild holds none of its records)."""
    # recoverAbnormally's dispatch, then a 4.9.x reput from the queues' max (or the 5.x second one)
    if abnormal_from is not None:
        then = again if second_reput else p.reput_from if not config.is_5x and p.reput_from < end else None
        predict_index(p, abnormal_from, config=config, store_index=store_index, expected_index=expected_index,
                      checkpoint_index_ts=checkpoint_index_ts, clean_shutdown=clean_shutdown, end=end,
                      parsed_keys=parsed_keys, parsed_then=parsed_then, walk_end=walk_end, accelerated=True,
                      second_reput_from=then, second_reput_note=None if second_reput else (
                          f"4.9.x DefaultMessageStore.start: the reput walks again from {then} (the queues' max "
                          "physical offset after the recovery), indexing the last indexed record a second time "
                          "when it lies there"))
    else:
        predict_index(p, first if walk_from is None else walk_from, config=config, store_index=store_index,
                      expected_index=expected_index, checkpoint_index_ts=checkpoint_index_ts,
                      clean_shutdown=clean_shutdown, end=end
                      if second_reput or reindex_from is not None or parsed_keys is not None or walk_end is not None
                      else None,
                      second_reput_from=again if second_reput else reindex_from, skip=skip, second_end=again_to,
                      parsed_keys=parsed_keys, parsed_then=parsed_then, walk_end=walk_end, old_runs=old_runs)


def _notes(p: RestartPrediction, *, recovery_dispatches: bool, unclean: bool, recovered_here: bool) -> None:
    """The report's notes on what the prediction leaves out: the 5.x recovery's dispatch skipping a record at the
    queues' max, an ``abort`` file's abnormal recovery beyond the index files it deletes (``unclean``), the broker's
    own recovery of the commitlog's end when the rebuild's walk set it (``recovered_here``)."""
    if recovery_dispatches:
        p.notes.append("5.x CommitLog.recoverNormally dispatches only records with commitLogOffset > the queues' max "
                       "physical offset (offset + size of their last unit), and the reput then starts at the "
                       "commitlog's end (getConfirmOffset), so a record starting exactly there is never dispatched "
                       "again: its units count as lost")
    if unclean:
        p.notes.append("abort file present: the broker runs its abnormal recovery, which re-dispatches from the "
                       "segment the checkpoint points at (not modelled here beyond the index files it deletes)")
    if recovered_here:
        p.notes.append("the commitlog end is where the rebuild's walk ended; the broker's own recovery (CRC checks of "
                       "the last segments) is not emulated")
