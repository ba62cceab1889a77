"""The dispatch after the recovery at the broker's next start, for :func:`pipelines.verify.restart.predict_restart`:
where it starts (:func:`reput_start`: 4.9.x ``DefaultMessageStore.start``'s reput, 5.x ``CommitLog.recoverNormally``'s
own dispatch, a DLedger store's), the records it walks (:class:`Reput`, ``ReputMessageService.doReput``), what it
writes into each queue (:func:`dispatch_again`: ``ConsumeQueue.putMessagePositionInfo``,
``BatchConsumeQueue.putBatchMessagePositionInfo``) and its ext files (:func:`put_ext_again`:
``putMessagePositionInfoWrapper``'s ``ConsumeQueueExt.put``), and a queue only the messages a DLedger reput parses go
to (:func:`parsed_only_queues`).  5.x ``doRecheckReputOffsetFromCq``'s second walk: :mod:`.restart_recheck`."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping

import numpy as np

from store_format.batchconsumequeue import BCQ_DIR
from store_format.config import BrokerConfig
from store_format.empty_topic_restart import reput_start_over_table
from store_format.recovery_dispatch import recovery_dispatch

from .report import QueueRestart, RestartPrediction
from .restart_queue import QueueState, holds_ext, put_ext, queue_rules

__all__ = ["Dispatched", "Reput", "dispatch_again", "parsed_only_queues", "put_ext_again", "reput_start"]


def reput_start(p: RestartPrediction, states: list[QueueState], config: BrokerConfig, commitlog_min: int, *,
                dispatch_from: int | None, reput_at: int | None, reput_from_queues: bool | None,
                recovery_dispatches: bool, abnormal: bool, table_max: int = -1, walk_from: int = -1) -> int:
    """Where the dispatch after the load starts (``p.reput_from``, the first offset it dispatches, returned, and
    the bytes from there, ``p.tail_bytes``):

    * 4.9.x ``DefaultMessageStore.start``: the reput starts at max(commitlog min offset, max
      physical offset over the queues after truncation) and dispatches everything from there: the queue table's,
      ``table_max`` its queues beside the own ones (topic "" and those made of its files' names,
      :func:`store_format.empty_topic_restart.table_max_beside_own`; the start:
      :func:`store_format.empty_topic_restart.reput_start_over_table`, as 5.x's second reput's);
    * 5.x ``CommitLog.recoverNormally`` dispatches, while it recovers, the records whose offset is
      strictly greater than the queues' max physical offset (computed before the truncation) from where its
      walk begins (``walk_from``, :attr:`store_format.recovery.RecoveryPlan.dispatch_from`: 5.5.1 walks back at most
      ``commitLogRecoverMaxNum`` files, so past that max where the count runs out first; the records between are
      never the recovery's); the reput then starts at the commitlog's end (``recheckReputOffsetFromCq`` defaults to
      false).  A record starting exactly at that offset (the one after the last unit) is not dispatched;
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
    elif recovery_dispatches and walk_from > p.max_physic_offset_in_queues + 1:   # the walk begins past the max
        p.reput_from, p.reput_from_inclusive = walk_from, True
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
class Reput:
    """The records the dispatch after the load walks (``ReputMessageService.doReput``, or the 5.x recovery's own):
    from ``first`` to ``end``, the commitlog's end after the broker's recovery, but those in ``skip``.

    After a 5.x DLedger crash the start's reput adds nothing but, on 5.5.1, what ``truncateDirtyLogicFiles`` at the
    walk's short ``processOffset`` (``cut_at``) cut and it puts back: every unit at or past ``cut_at`` is written again
    (the cut took it, the reput puts it back) but the ones the cut leaves out for good (``cut_lost``,
    :func:`dispatch_again`); ``ext_again_from``: where that reput starts, which puts an ext unit again for each
    record of an ext queue from there (:class:`store_format.dledger_crash_cut.ExtAgain`); ``skip``: the records no
    one dispatches (:attr:`store_format.dledger_crash.DLedgerCrash.gap`), whose units a queue lacks stay lost (and
    those it holds at or past ``cut_at`` too: the cut takes them) and whose keys are not put; ``again_to``: the reput
    walks the records from its start to there again, then goes on past the records the recovery's walk left
    (:attr:`store_format.dledger_crash.DLedgerCrash.again`): the ext units put again are those of the records
    below it.  ``second_reput``: :func:`~.restart_recheck.second_reput_units` follows."""
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
class Dispatched:
    """What :func:`dispatch_again` counts for one queue."""
    units: int       # units dispatched again (appended or put back)
    lost: int        # units the queue lacks or the cut took that nothing writes again
    records: int     # the records of its own the dispatch hands it (an ext queue: one ext unit each)
    again: int       # of those, the ones from ext_again_from walked again
    own_put: int     # own units appended or put back
    own_cut: int     # of those, the ones at or past cut_at
    top: int         # the largest max physical offset the appended units leave (-1: none)


def dispatch_again(s: QueueState, r: Reput, cut_away: np.ndarray,
                   read_expected: Callable[[str, str, str], bytes], *, by_position: bool = False,
                   walked: np.ndarray | None = None) -> Dispatched:
    """What the dispatch over ``r`` writes into one queue (``ReputMessageService.doReput``, the 5.x
    ``CommitLog.recoverNormally``'s own): a dispatched unit is appended unless ``offset + size <= maxPhysicOffset``
    of its queue (``ConsumeQueue.putMessagePositionInfo``), for a batch queue unless ``offset <=
    maxMsgPhyOffsetInCommitLog`` (``BatchConsumeQueue.putBatchMessagePositionInfo``).  Units a queue lacks (compared
    by commitlog offset with the rebuild) and that the dispatch skips are never written again: they are lost, as are
    ``cut_away``, the commitlog offsets of the units a 5.5.1 DLedger crash's cut leaves out for good
    (:class:`store_format.dledger_crash_cut.QueueCut`), a queue's own units among them too.

    ``by_position`` (the 5.x ``CommitLog.recoverNormally``'s own dispatch, on a consume queue): a unit past the max
    is also dropped when its queue offset's byte position lies behind the write position the load left ("build
    consume queue repeatedly", :func:`_put_by_position`), an own unit and a light one alike; ``walked``: the units
    the walk hands the queue with the queue offsets their records name
    (:func:`store_format.restart_reput.walked_file_queue_units`, with multi-dispatch), else the rebuilt positions."""
    q = s.restart
    rules = queue_rules(q.layout)
    n_tail = n_cut = n_records = n_again = n_own_put = n_own_cut = 0
    top = -1
    rule = by_position and q.layout != BCQ_DIR and r.cut_at is None and r.skip is None
    if rule and walked is None:   # _put_by_position and the loop below read the same files: each once
        read_expected = functools.cache(read_expected)
    placed = _put_by_position(s, r, read_expected, walked) if rule else None
    upto = np.iinfo(np.int64).max if r.again_to is None else r.again_to
    first, commitlog_end, skip, cut_at, ext_again_from = r.first, r.end, r.skip, r.cut_at, r.ext_again_from
    for name, lo, hi, n in s.expected_files:
        if hi < first or lo >= commitlog_end:
            continue
        if placed is None and _appended_whole(s, r, cut_away, lo, hi):
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
        put = tail & (rules.appended(off, size, q.max_physic_offset) if placed is None
                      else np.isin(off, placed.offsets)) & ~lost_here
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
    if placed is not None:   # every unit appended, those the rebuild lacks too (a walked unit it dropped)
        n_tail, top = len(placed.offsets), placed.top
    return Dispatched(n_tail, n_cut, n_records, n_again, n_own_put, n_own_cut, top)


@dataclasses.dataclass(frozen=True)
class _Placed:
    offsets: np.ndarray   # commitlog offsets of the units appended, in order
    top: int              # the queue's max physical offset after them (-1: none appended)


def _put_by_position(s: QueueState, r: Reput, read_expected: Callable[[str, str, str], bytes],
                     walked: np.ndarray | None) -> _Placed:
    """The units of the records in ``r`` that ``ConsumeQueue.putMessagePositionInfo`` appends to one consume queue,
    one by one from the write position and max the load left
    (:func:`store_format.recovery_dispatch.recovery_dispatch`: :func:`store_format.consumequeue.assign_positions`
    from :func:`store_format.consumequeue.loaded_state`): each unit's queue offset is ``walked``'s (the offset its
    record or request names) or, without it, its position in the rebuilt file."""
    q = s.restart
    rules = queue_rules(q.layout)
    if walked is None:
        parts = []
        for name, lo, hi, _n in s.expected_files:
            if hi < r.first or lo >= r.end:
                continue
            data = read_expected(q.layout, q.queue, name)
            u = np.frombuffer(data, dtype=rules.dtype, count=len(data) // rules.unit_size)
            msg = np.flatnonzero(rules.is_message(u))
            parts.append(np.column_stack([u["commitlogOffset"][msg].astype(np.int64),
                                          u["size"][msg].astype(np.int64),
                                          (int(name) + msg * rules.unit_size) // rules.unit_size]))
        walked = np.concatenate(parts) if parts else np.zeros((0, 3), np.int64)
    walked = walked[r.in_tail(walked[:, 0])]
    d = recovery_dispatch(walked[:, 0], walked[:, 1], walked[:, 2] * rules.unit_size, start=r.first, end=r.end,
                          max_physic=q.max_physic_offset, write_position=q.write_position,
                          unit_size=rules.unit_size, batch=False, loaded=s.loaded)
    put = walked[d.appended, 0]
    return _Placed(put, d.max_physic_offset if len(put) else -1)


def _appended_whole(s: QueueState, r: Reput, cut_away: np.ndarray, lo: int, hi: int) -> bool:
    """Whether the dispatch over ``r`` appends every unit of the rebuilt file whose records span ``[lo, hi]`` to the
    queue ``s`` (``ConsumeQueue.putMessagePositionInfo``: each lies past the queue's max) and nothing in it is cut,
    skipped or walked again: :func:`dispatch_again` then counts it from its summary without reading it."""
    q = s.restart
    return lo >= r.first and hi < r.end and lo > q.max_physic_offset and not r.second_reput \
        and (r.skip is None or hi < r.skip[0] or lo >= r.skip[1]) \
        and not ((cut_away >= lo) & (cut_away <= hi)).any() \
        and (r.ext_again_from is None or not lo < r.ext_again_from <= hi) \
        and (r.again_to is None or not lo < r.again_to <= hi) \
        and not (s.ext_file_size and r.cut_at is not None and lo < r.cut_at <= hi)


def put_ext_again(s: QueueState, d: Dispatched, r: Reput, *, puts: int | None, parsed: int,
                  parsed_kept: int | None, back: int | None, dledger_crash: bool, moves_write_position: bool,
                  emptied: bool) -> None:
    """The ext units the dispatch puts into one ext queue (``putMessagePositionInfoWrapper``'s ``ConsumeQueueExt.put``,
    one per record of its own: :func:`put_ext`; the units dispatched again get their ext units after the ext units on
    disk), and after a DLedger crash (``dledger_crash``) how many of them its units leave pointed at,
    for :func:`~.restart_queue.ext_orphans`: the walk's and the reput's puts but one per own unit they leave in
    the queue (an own unit of the rebuild they append or put back, a parsed message's), and the store's units the 5.5.1
    cut takes (at or past ``cut_at``: past the write position, which bounds what the broker reads) point at none.

    ``parsed``: the ext units ``putMessagePositionInfoWrapper`` puts for the messages the start's reput set inside an
    entry parses (:attr:`store_format.dledger_inside_state.Placed.ext_put`; no rebuilt queue holds their units),
    added to its ext units appended (a queue no file of the store or the rebuild holds, one those messages alone go
    to: :func:`parsed_only_queues`); ``parsed_kept``: those parsed own units ``putMessagePositionInfo`` appends (the
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


def parsed_only_queues(p: RestartPrediction, states: list[QueueState], ext_parsed: Mapping[str, int]) -> None:
    """A queue only the messages a DLedger crash restart's reput set inside an entry parses go to (no file of the
    store or the rebuild holds it): a queue of its own in the report, with the ext units
    ``putMessagePositionInfoWrapper`` puts for them."""
    held = {s.restart.queue for s in states}
    for queue, n in sorted(ext_parsed.items()):   # a queue only parsed messages go to: no state, its puts
        if queue not in held and n > 0:
            q = QueueRestart(queue, ext_units_appended=n)
            p.ext_units_appended += n
            p.queues.append(q)
