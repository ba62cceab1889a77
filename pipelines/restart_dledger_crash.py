"""``--as-restart`` on a 5.x DLedger store after a crash (an ``abort`` file): the broker's start sequence in its order,
one step each, from the plan :func:`store_format.dledger_crash.plan_dledger_crash` makes of it.

* ``DLedgerCommitLog.dledgerRecoverAbnormally``: its walk from the data file its checks start at
  (:func:`_tell_walk`); a walk whose check fails at the first entry dispatches nothing (:func:`_walked_nothing`).
* ``ConsumeQueueStore.truncateDirtyLogicFiles`` (5.5.1) at the recovery's ``processOffset``, and
  ``DefaultMessageStore.doRecheckReputOffsetFromCq`` setting the start's reput where the cut queues leave their max
  (:func:`_tell_cut`), with ``ConsumeQueue.putMessagePositionInfo`` placing the units of the messages its check parses
  there (:func:`_tell_parsed`).
* ``ReputMessageService.doReput`` from where it was set (:func:`_tell_reput`), then the segments in the order the walk
  and that reput read them (:func:`_read_as_walked`: :func:`_earlier_files_then_walk` or :func:`_from_walk_file`)."""
from __future__ import annotations

import dataclasses

from store_format.config import BrokerConfig
from store_format.consumequeue import cq_file_name
from store_format.dledger_crash import DLedgerCrash, plan_dledger_crash
from store_format.dledger_inside_units import Placed
from store_format.dledger_recovery import DLedgerRecovery
from store_format.recovery import read_checkpoint
from store_format.store import (
    StoreLocation,
    jump_at,
    pieces_at_refusals,
    read_from,
    read_nothing,
    then_pieces,
    with_dledger_committed,
)

__all__ = ["crash_restart"]


def crash_restart(st: StoreLocation, config: BrokerConfig, rec: DLedgerRecovery,
                  progress) -> tuple[StoreLocation, DLedgerCrash, bool]:  # noqa: ANN001
    """A 5.x DLedger store after a crash as its start reads it (``DefaultMessageStore.recover`` after an abnormal
    shutdown, then ``start``): the plan, the steps told in the broker's order, the segments as they are read, and
    whether nothing is dispatched."""
    crash = plan_dledger_crash(st, config, rec, read_checkpoint(st))
    if crash.walked_nothing:
        kept, nothing = _walked_nothing(st, config, rec, crash, progress)
        return kept, crash, nothing
    _tell_walk(crash, progress)
    _tell_cut(st, crash, progress)
    _tell_parsed(crash, progress)
    reset = crash.cut.reset if crash.cut is not None and crash.before else ()
    _tell_reput(crash, reset, progress)
    return _read_as_walked(st, rec, crash, reset), crash, False


def _walked_nothing(st: StoreLocation, config: BrokerConfig, rec: DLedgerRecovery, crash: DLedgerCrash,
                    progress) -> tuple[StoreLocation, bool]:  # noqa: ANN001
    """``dledgerRecoverAbnormally`` whose message check fails at the first entry of the data file it starts at: it
    dispatches nothing, and ``ReputMessageService.doReput`` from the start's reput offset (the committed position, or
    with ``recheckReputOffsetFromCq`` the min offset) to the log's end does it all: the segments from that offset, or
    none read (True) where it is the log's end."""
    progress.emit(f"[rebuild] as a restart after a crash: DLedgerCommitLog.dledgerRecoverAbnormally's message "
                  f"check fails at the first entry of data file {crash.start_file} ({crash.reason}): it "
                  "dispatches nothing, and the start's reput "
                  + (f"dispatches every entry from {crash.reput_from} to {crash.end}"
                     if crash.reput_from < crash.end else
                     f"starts at the committed position {crash.reput_from}, the log's end: nothing")
                  + (" (recheckReputOffsetFromCq=true: the queues are empty, so from the min offset)"
                     if config.recheckReputOffsetFromCq else "")
                  + (", the old commitlog files' records first (a store converted in place)"
                     if crash.from_old_files else ""))
    kept = with_dledger_committed(st, rec.ledger_end_index, crash.end)
    if crash.reput_from >= crash.end:
        return read_nothing(kept), True
    # from the reput's start, inside its data file when it is the committed position
    return read_from(kept, crash.start_offset), False


def _tell_walk(crash: DLedgerCrash, progress) -> None:  # noqa: ANN001
    """``DLedgerCommitLog.dledgerRecoverAbnormally``'s walk: every entry from its data file on, committed or not, up to
    the log's end or the message its check fails at, and where the start's reput goes on after such an early end."""
    if crash.walk_end >= 0:
        progress.emit(f"[rebuild] as a restart after a crash: DLedgerCommitLog.dledgerRecoverAbnormally's message "
                      f"check ends its walk at {crash.walk_end} ({crash.reason}), inside the log DLedger keeps; "
                      f"the start's reput from {crash.reput_from} "
                      + ("adds nothing (the log's end)" if crash.end <= crash.walk_end else
                         f"dispatches the rest to {crash.end}" if crash.gap is None else
                         f"dispatches from there to {crash.end}: the records from {crash.walk_end} to "
                         f"{crash.reput_from} are never dispatched, and each queue appends the later ones at its "
                         "write position")
                      + (" (it walks the walk's records from there again before the rest: their ext units and "
                         "the last indexed record's keys go before the rest's)" if crash.again else ""))
    progress.emit(f"[rebuild] as a restart after a crash: DLedgerCommitLog.dledgerRecoverAbnormally dispatches "
                  f"every entry from data file {crash.start_file} to {crash.end}, committed or not")


def _tell_cut(st: StoreLocation, crash: DLedgerCrash, progress) -> None:  # noqa: ANN001
    """``ConsumeQueueStore.truncateDirtyLogicFiles`` at the recovery's ``processOffset`` (what the start's reput puts
    back and what stays cut), then ``DefaultMessageStore.doRecheckReputOffsetFromCq`` setting the reput inside an
    entry (or an old commitlog file), where ``DLedgerCommitLog.checkMessageAndReturnSize`` parses messages or fails
    and ``ReputMessageService.doReput`` sends it on."""
    if crash.cut is None:
        return
    c = crash.cut
    progress.emit(f"[rebuild] as a restart after a crash: truncateDirtyLogicFiles cuts the queues at the "
                  f"recovery's processOffset {crash.process_offset} (its last file's message sizes, without "
                  f"the entry headers); the start's reput from {c.reput} puts back {c.restored} unit(s), "
                  f"{c.lost_units} stay cut or dropped (past their queue's write position, overwritten, or at "
                  f"or below its max once parsed units went before them) and "
                  f"{len(c.dropped) + len(c.batch_dropped)} queue file(s) stay deleted"
                  + (f"; in {len(c.moves)} queue(s) it puts back only the last cut units, appended at the "
                     "write position over the others (putMessagePositionInfo)" if c.moves else ""))
    if c.inside_from < 0:
        return
    at = c.inside_from
    progress.emit(f"[rebuild] as a restart after a crash: doRecheckReputOffsetFromCq sets the reput at {at} ("
                  + ("processOffset" if at == crash.process_offset else
                     "processOffset - 1, where a batch queue the cut emptied leaves its max"
                     if at == crash.process_offset - 1 else
                     "where a queue the cut left with fillPreBlank units only leaves its max")
                  + ("), inside an old commitlog file (a store converted in place: CommitLog.getData gives its "
                     "bytes to the file's end)" if any(not seg.dledger and seg.base <= at < seg.end
                                                      for seg in st.segments) else "), inside an entry")
                  + (f": DLedgerCommitLog's message check there parses {len(c.inside_records)} "
                     f"message(s) ("
                     + ', '.join(f'{a} to {b}' if b > a else f'a blank at {a}, its empty request to topic "" '
                                 'queue 0' for a, b in c.inside_records)
                     + "), which it dispatches after the walk's records, then"
                     if c.inside_records else ": DLedgerCommitLog's message check there")
                  + f" sends it on to {c.reput} "
                  "(ReputMessageService.doReput)"
                  + (", from where it walks the records again (their units dropped or the cut ones put "
                     "back, their keys unless below the index's endPhyOffset)"
                     if c.inside_records and crash.start_offset <= c.reput < crash.end
                     and c.reput != crash.walk_end else
                     ", the entry where the walk ended, from where it dispatches the damaged message and the "
                     "rest (the cut units before it stay cut)" if c.inside_records
                     and c.reput == crash.walk_end else ""))


def _tell_parsed(crash: DLedgerCrash, progress) -> None:  # noqa: ANN001
    """``ConsumeQueue.putMessagePositionInfo`` of the messages the start's reput's check parses where
    ``doRecheckReputOffsetFromCq`` set it (``QueueCut.inside_placed``): their units at the write positions the cut left,
    the queues replayed from the files the cut leaves, and the files ``getLastMappedFile`` creates for them."""
    placed = crash.cut.inside_placed if crash.cut is not None else Placed()
    if placed.units:
        progress.emit("[rebuild] as a restart after a crash: of the messages its check parses there, "
                      f"{len(placed.units)} unit(s) go to queues the walk wrote, at the write positions "
                      "the cut left (putMessagePositionInfo, whatever their queue offsets): "
                      + ", ".join(f"{u.topic}/{u.queue_id} at {u.position}" for u in placed.units))
    if placed.whole:
        progress.emit("[rebuild] as a restart after a crash: the queues the walk wrote that the reput touches, "
                      "replayed from the files the cut leaves (putMessagePositionInfo in reput order: the parsed "
                      "units, the cut units dispatched again, the records past the walk's end): "
                      + ", ".join(f"{w.topic}/{w.queue_id} ({len(w.units) + len(w.copies)} unit(s) appended, "
                                  f"{len(w.opened)} file(s) created)" for w in placed.whole))
    if placed.opened:
        progress.emit("[rebuild] as a restart after a crash: for those messages getLastMappedFile creates "
                      + ", ".join(f"{t}/{q}/{cq_file_name(f)}" for t, q, f in placed.opened)
                      + " (a write position at a file's start, or a queue the cut left with no file: "
                      "fillPreBlank units first; zeros but for the units put there, also when the unit is then "
                      "dropped)")


def _tell_reput(crash: DLedgerCrash, reset: tuple[tuple[str, int], ...], progress) -> None:  # noqa: ANN001
    """``ReputMessageService.doReput`` from where the start set it: the record it indexes again, the ext units it puts
    again (``ConsumeQueueExt.put``), a queue the cut left fillPreBlank units only appending before the walk's data
    file, a reput from before that file (the earlier files' records, the old commitlog files', the queues it drops
    records of or writes anew: ``reset``), and an old file's refused record whose bytes 48 further it parses
    (``DLedgerCommitLog.checkMessageAndReturnSize``)."""
    progress.emit(f"[rebuild] as a restart after a crash: the start's reput begins at {crash.reput_from}"
                  + (f" and indexes the record at {crash.reindex} again" if crash.reindex >= 0 else "")
                  + ("; it puts an ext unit again for each record of an ext queue from there (ConsumeQueueExt.put "
                     "before the unit is dropped or put)" if crash.ext_again and crash.before else
                     f"; it puts {sum(a.count for a in crash.ext_again)} ext unit(s) again, one per record of an "
                     "ext queue (ConsumeQueueExt.put before the unit is dropped or put back)"
                     if crash.ext_again else ""))
    if crash.cut is not None and crash.cut.before_placed.units:
        progress.emit("[rebuild] as a restart after a crash: a queue the cut left fillPreBlank units only appends "
                      "a record of queue offset 0 before the walk's data file (putMessagePositionInfo: no queue "
                      "offset check), then the walk's units by the same rule: "
                      + ", ".join(f"{u.topic}/{u.queue_id} at {u.position}" for u in crash.cut.before_placed.units))
    if crash.before:
        progress.emit(f"[rebuild] as a restart after a crash: the start's reput from {crash.reput_from}, before "
                      f"data file {crash.start_file}, walks the earlier files' records, then the walk's ones again "
                      "(their units dropped: putMessagePositionInfo)"
                      + ("; it goes on in the old commitlog files, the base CommitLog's records (a store converted "
                         "in place: from inside an earlier old file)"
                         if crash.drops_before and crash.from_old_files else
                         "; it begins in the old commitlog files (a store converted in place: "
                         "recheckReputOffsetFromCq=true finds every queue empty, the walk having queued nothing "
                         "or the cut having left no queue file, so from the min offset)"
                         if crash.from_old_files else "")
                      + (f"; {', '.join(f'{t}/{q}' for t, q in crash.drops_before)} drop every record before "
                         "the walk's data file (queue offsets below the write position: putMessagePositionInfo)"
                         + (", but the ones appended above" if crash.cut and crash.cut.before_placed.units else "")
                         if crash.drops_before else "")
                      + (f"; the cut left {', '.join(f'{t}/{q}' for t, q in reset)} with no file (max -1: "
                         "ConsumeQueue.correctMinOffset), which it writes anew from its start" if reset else ""))
    for at, recs in crash.old_parsed:
        progress.emit(f"[rebuild] as a restart after a crash: the start's reput's check refuses the record at {at} "
                      "in an old commitlog file and, 48 bytes further (DLedgerCommitLog.checkMessageAndReturnSize),"
                      f" parses {len(recs)} record(s) ("
                      + ", ".join(f"{a} to {b}" if b > a else f"a blank at {a}, its empty request" for a, b in recs)
                      + "), which it dispatches before it goes on at the next file")


def _read_as_walked(st: StoreLocation, rec: DLedgerRecovery, crash: DLedgerCrash,
                    reset: tuple[tuple[str, int], ...]) -> StoreLocation:
    """The log DLedger's recovery keeps (to ``crash.end``) in the order ``dledgerRecoverAbnormally``'s walk and then the
    start's reput read it: a reput from before the walk's data file (:func:`_earlier_files_then_walk`), else from that
    file on (:func:`_from_walk_file`); ``runs``: the messages the reput's check parses where it was set."""
    kept = with_dledger_committed(st, rec.ledger_end_index, crash.end)
    runs = tuple((a, b) for a, b in crash.cut.inside_records if b > a) if crash.cut is not None else ()
    if crash.before:
        return _earlier_files_then_walk(st, kept, crash, runs, reset)
    return _from_walk_file(st, kept, crash, runs)


def _earlier_files_then_walk(st: StoreLocation, kept: StoreLocation, crash: DLedgerCrash,
                             runs: tuple[tuple[int, int], ...], reset: tuple[tuple[str, int], ...]) -> StoreLocation:
    """``ReputMessageService.doReput`` from before the walk's data file (``DLedgerCrash.before``): the walk's pass
    (``dledgerRecoverAbnormally``), then the reput's over the earlier files' records and the walk's again
    (:func:`store_format.store.jump_at`), first the messages its check parses where it was set (a blank's empty
    request: ``inside_blanks``), an old file's refused record with those parsed 48 bytes further, and from the
    reput's first piece on the queues the cut left with no file written anew (``StoreLocation.queue_reset``)."""
    assert crash.jump is not None
    kept = jump_at(dataclasses.replace(kept, reindex=-1), *crash.jump, walked_from=crash.start_offset)
    # the reput's pass: the segments after the one the walk's pass goes on from
    reput_pass = next(k for k, seg in enumerate(kept.segments) if seg.resume >= 0) + 1
    if runs:
        kept = then_pieces(kept, runs, st.segments, after=reput_pass - 1)
    if crash.old_parsed:
        kept = pieces_at_refusals(kept, crash.old_parsed, st.segments, reput_pass + len(runs))
    if reset:
        kept = dataclasses.replace(kept, queue_reset=reset, reset_from=reput_pass)
    return kept


def _from_walk_file(st: StoreLocation, kept: StoreLocation, crash: DLedgerCrash,
                    runs: tuple[tuple[int, int], ...]) -> StoreLocation:
    """``ReputMessageService.doReput`` from the walk's data file on: the segments ``dledgerRecoverAbnormally`` walks
    (its last indexed record indexed again: ``StoreLocation.reindex``), the reput's records read where it reads them
    after a walk that ended early (:func:`store_format.store.jump_at`: the walk's records again, their keys and ext
    units), and the messages its check parses where it was set (:func:`store_format.store.then_pieces`), then the
    records from where it goes on again when that is inside the walk's range (their keys as the index takes them
    after those messages')."""
    segs = [seg for seg in kept.segments if seg.base >= crash.start_offset]
    kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, index=i) for i, seg in enumerate(segs)],
                               reindex=crash.reindex)
    if crash.jump is not None:
        kept = jump_at(dataclasses.replace(kept, reindex=-1) if crash.again else kept, *crash.jump)
    if not runs:
        return kept
    assert crash.cut is not None
    if crash.jump is not None:   # after a walk that ended early (crash.again, going on at its end or past it:
        # crash.gap): between the walk's pass and the reput's, which jump_at sent on from walk_end to where it goes on
        assert crash.cut.reput == crash.reput_from, crash
        walk_pass = next(k for k, seg in enumerate(kept.segments) if seg.resume >= 0)
        return then_pieces(kept, runs, st.segments, after=walk_pass)
    again = crash.cut.reput if crash.start_offset <= crash.cut.reput < crash.end else -1
    return then_pieces(dataclasses.replace(kept, reindex=-1) if again >= 0 else kept, runs, st.segments, then=again)
