"""The broker's next start on a store as it is (:class:`~pipelines.verify.report.RestartPrediction`), step by step
in the broker's order: each queue's ``MappedFileQueue.doLoad`` size check and ``ConsumeQueue.recover`` (with
``ConsumeQueueExt.recover`` / ``truncateByMaxAddress`` on its ext files; ``BatchConsumeQueue.recover`` for a batch
consume queue: :mod:`pipelines.verify.restart_queue`); ``DefaultMessageStore.load`` and the commitlog's recovery
(``CommitLog.recoverNormally`` → ``truncateDirtyLogicFiles`` on every queue; after a crash,
``CommitLog.recoverAbnormally``'s dispatch from its start segment before it: :mod:`pipelines.verify.restart_recovery`);
where the reput (4.9.x ``DefaultMessageStore.start``) or the recovery's own dispatch (5.x
``CommitLog.recoverNormally``) starts again and what it writes (``ReputMessageService``:
:mod:`pipelines.verify.restart_dispatch`); 5.x ``doRecheckReputOffsetFromCq``'s second walk
(:mod:`pipelines.verify.restart_recheck`); ``index/``: :mod:`pipelines.verify.restart_index`.  This module tells the
story (:func:`predict_restart`) and adds up the report."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import numpy as np

from store_format.batchconsumequeue import BCQ_DIR
from store_format.config import BrokerConfig
from store_format.consumequeue_recovery import CORRECT_MIN_OFFSET_533
from store_format.empty_topic_restart import reput_start_over_table

from .report import QueueRestart, RestartPrediction
from .restart_dispatch import Reput, dispatch_again, parsed_only_queues, put_ext_again, reput_start
from .restart_index import index_at_restart
from .restart_queue import QueueState, ext_orphans
from .restart_recheck import held_put_again, second_reput_units
from .restart_recovery import empty_last_files, recover_abnormally, store_loaded, truncate_dirty

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
                    reput_at: int | None = None, recovery_walk_from: int = -1,
                    after_load: Mapping[str, tuple[int, int]] | None = None,
                    walked_units: Callable[[int, int, set[str]], dict[str, np.ndarray]] | None = None
                    ) -> RestartPrediction:
    """The store-wide steps of a start, after each queue's :func:`~.restart_queue.recover_queue`, in the broker's order:
    ``DefaultMessageStore.load`` (:func:`~.restart_recovery.store_loaded`), the commitlog's recovery
    (``CommitLog.recoverAbnormally``'s dispatch, :func:`~.restart_recovery.recover_abnormally`;
    ``truncateDirtyLogicFiles``, :func:`~.restart_recovery.truncate_dirty`), where the dispatch starts again
    (:func:`~.restart_dispatch.reput_start`), what it writes into each queue (:func:`~.restart_dispatch.dispatch_again`,
    its ext units :func:`~.restart_dispatch.put_ext_again`; a queue only parsed messages go to,
    :func:`~.restart_dispatch.parsed_only_queues`), the queues as the load left them (``after_load``), what
    ``doRecheckReputOffsetFromCq``'s second walk appends (:func:`~.restart_recheck.second_reput_units`) and the ext
    units orphaned (:func:`~.restart_queue.ext_orphans`), each queue into the report (:func:`_report_queue`), then
    ``index/`` (:func:`~.restart_index.index_at_restart`) and the report's notes (:func:`_notes`).  Each step's
    docstring says what its parameters mean.  ``commitlog_end`` is where the commitlog ends after the broker's
    recovery (nothing at or after it is dispatched).  ``ext_not_predicted``: per queue, why its ext units orphaned are
    not predicted (0, and a note).  ``recovery_walk_from``: where the 5.x ``CommitLog.recoverNormally``'s walk begins
    (:attr:`store_format.recovery.RecoveryPlan.dispatch_from`; -1: unknown, as at the queues' max).

    ``after_load``: per queue, its max physical offset and write position once the store's load
    has run a 5.x DLedger crash restart's walk and cut (:attr:`store_format.dledger_crash_cut.QueueCut.loaded`), which
    the queue's report gives instead of ``ConsumeQueue.recover``'s (the queue before the start's reput, as for every
    other restart).  It is applied once the reput is counted, while :func:`~.crash_units.held_after_cut` (a queue on
    disk the reput appends to before the walk's data file) sets the cut's state before this prediction: at either
    moment alone a figure moves (both before: the walked-nothing stores' ``max_physic_offset_in_queues``; both after:
    the units the reput appends to such a held queue, decided against ``recover``'s max instead of the cut's; both
    after the load's max is taken, before the reput: a held queue's ``max_physic_offset_in_queues``).
    """
    p = store_loaded(states, config, clean_shutdown, commitlog_min, commitlog_end)
    abnormal = abnormal_from is not None and dispatch_from is None and truncate_at is None
    if abnormal:
        assert abnormal_from is not None
        recover_abnormally(p, states, abnormal_from, commitlog_end, read_expected,
                           walked_units if config.enableMultiDispatch else None)
    empty_last = empty_last_files(states, config, dispatch_from=dispatch_from)
    truncate_dirty(p, states, config, commitlog_end if truncate_at is None else truncate_at,
                   truncate_at=truncate_at, dispatch_from=dispatch_from, reput_from_queues=reput_from_queues,
                   abnormal_from=abnormal_from if abnormal else None, read_expected=read_expected,
                   empty_last=empty_last)
    recovery_dispatches = config.is_5x and reput_from_queues is None and dispatch_from is None and not abnormal
    first = reput_start(p, states, config, commitlog_min, dispatch_from=dispatch_from, reput_at=reput_at,
                        reput_from_queues=reput_from_queues, recovery_dispatches=recovery_dispatches,
                        abnormal=abnormal, table_max=table_max, walk_from=recovery_walk_from)
    r = Reput(first, commitlog_end, skip, cut_at, ext_again_from, again_to, second_reput)
    top = max((s.restart.max_physic_offset for s in states), default=-1)   # the queues' max after the dispatch
    # the recovery's dispatch puts each unit by its queue offset: with multi-dispatch as the walk names it
    walked = _walked(states, first, commitlog_end, walked_units) \
        if recovery_dispatches and config.enableMultiDispatch else {}
    for s in states:
        q = s.restart
        d = dispatch_again(s, r, (cut_lost or {}).get(q.queue, _NONE), read_expected, by_position=recovery_dispatches,
                           walked=walked.get(q.queue))
        q.units_dispatched_again, q.units_lost, top = d.units, d.lost, max(top, d.top)
        put_ext_again(s, d, r, puts=(ext_puts or {}).get(q.queue), parsed=(ext_parsed or {}).get(q.queue, 0),
                      parsed_kept=(ext_parsed_kept or {}).get(q.queue), back=(ext_put_back or {}).get(q.queue),
                      dledger_crash=dispatch_from is not None, moves_write_position=recovery_dispatches,
                      emptied=cut_emptied is not None and q.queue in cut_emptied)
    parsed_only_queues(p, states, ext_parsed or {})
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
    held_again = held_put_again(states, r, again, walked_units) if second_reput else {}
    for s in states:
        second_reput_units(s, r, again, held_again.get(id(s), 0))
        why = (ext_not_predicted or {}).get(s.restart.queue)
        s.restart.ext_units_orphaned = 0 if why else ext_orphans(s)
        if why:
            p.notes.append(f"ext units orphaned of {s.restart.queue} not predicted: {why}")
        _report_queue(p, s.restart)
    index_at_restart(p, first, again, config=config, store_index=store_index, expected_index=expected_index,
                     checkpoint_index_ts=checkpoint_index_ts, clean_shutdown=clean_shutdown, end=commitlog_end,
                     abnormal_from=abnormal_from if abnormal else None, second_reput=second_reput,
                     reindex_from=reindex_from, skip=skip, again_to=again_to, parsed_keys=parsed_keys,
                     parsed_then=parsed_then, walk_end=walk_end, walk_from=walk_from, old_runs=old_runs)
    _notes(p, recovery_dispatches=recovery_dispatches, unclean=not clean_shutdown and dispatch_from is None
           and not abnormal, recovered_here=truncate_at is None)
    return p


_NONE = np.zeros(0, np.int64)


def _walked(states: list[QueueState], first: int, end: int,
            walked_units: Callable[[int, int, set[str]], dict[str, np.ndarray]] | None) -> dict[str, np.ndarray]:
    """The units the recovery's dispatch from ``first`` to ``end`` hands each consume queue whose rebuilt files reach
    ``first`` (:func:`store_format.restart_reput.walked_file_queue_units`: own and light ones, with the queue offsets
    their records and requests name)."""
    queues = {s.restart.queue for s in states if s.restart.layout != BCQ_DIR
              and any(hi >= first for _name, _lo, hi, _n in s.expected_files)}
    return walked_units(first, end, queues) if walked_units is not None and queues and first < end else {}


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


def _notes(p: RestartPrediction, *, recovery_dispatches: bool, unclean: bool, recovered_here: bool) -> None:
    """The report's notes on what the prediction leaves out: the 5.x recovery's dispatch skipping a record at the
    queues' max, an ``abort`` file's abnormal recovery beyond the index files it deletes (``unclean``), the broker's
    own recovery of the commitlog's end when the rebuild's walk set it (``recovered_here``)."""
    if recovery_dispatches:
        p.notes.append("5.x CommitLog.recoverNormally dispatches only records with commitLogOffset > the queues' max "
                       "physical offset (offset + size of their last unit), and the reput then starts at the "
                       "commitlog's end (getConfirmOffset), so a record starting exactly there is never dispatched "
                       "again: its units count as lost")
        if p.reput_from_inclusive:   # restart_dispatch.reput_start: the walk begins past the queues' max
            p.notes.append(f"5.x CommitLog.recoverNormally's walk begins at {p.reput_from}, past the queues' max "
                           f"physical offset ({p.max_physic_offset_in_queues}; commitLogRecoverMaxNum files back): "
                           "it dispatches none of the records below")
    if unclean:
        p.notes.append("abort file present: the broker runs its abnormal recovery, which re-dispatches from the "
                       "segment the checkpoint points at (not modelled here beyond the index files it deletes)")
    if recovered_here:
        p.notes.append("the commitlog end is where the rebuild's walk ended; the broker's own recovery (CRC checks of "
                       "the last segments) is not emulated")
