"""verify's next start on a store's queue and index files (not a RocksDB consume queue's:
:mod:`.rocksdb_restart`): what :func:`~.restart.predict_restart` is handed, from where the commitlog's recovery
(``CommitLog.recoverNormally``/``recoverAbnormally``, :func:`store_format.recovery.plan_recovery`), DLedger's
(``DLedgerCommitLog.recover``, ``DLedgerMmapFileStore.recover``) or a 5.x DLedger crash's plan
(``dledgerRecoverAbnormally``, :class:`store_format.dledger_crash_plan.DLedgerCrash`) ends the log
(:func:`predict_files_restart`), and that recovery told in the report (:func:`explain_recovery`)."""
from __future__ import annotations

from typing import Any, Protocol

from store_format.config import BrokerConfig
from store_format.restart_reput import reput_data_end, walked_file_queue_units
from store_format.store import StoreLocation

from .crash_units import cut_lost, held_after_cut, parsed_kept
from .ext_reput import ext_reput_puts
from .report import RestartPrediction
from .restart import predict_restart
from .storefiles import checkpoint_index_ts, end_of_data

__all__ = ["explain_recovery", "predict_files_restart"]


class _Compared(Protocol):
    """What the prediction reads from verify's comparison of the store with the rebuild
    (:mod:`.compare_store`): every queue as the start recovers it, the rebuild's index files and queue files."""
    states: list

    def expected_index(self) -> Any: ...

    def read_expected(self, layout: str, queue: str, name: str) -> bytes: ...


def predict_files_restart(st: StoreLocation, config: BrokerConfig, c: _Compared, summary: Any, *, clean: bool,
                           dledger: Any, crash: Any, recovery: Any, abnormal: bool, led: bool,
                           store_index: list, table_max: int = -1) -> RestartPrediction:
    """The next start on the queue and index files (:func:`~.restart.predict_restart`), its inputs step by step in the
    broker's order: where ``CommitLog.recoverNormally``/``recoverAbnormally``, ``DLedgerCommitLog.recover`` or the crash
    plan's ``dledgerRecoverAbnormally`` ends the log (:func:`_recovered_end`), where ``DefaultMessageStore.start`` sets
    the reput of a led DLedger store (:func:`_led_reput_at`), a 5.x DLedger crash restart's walk, cut and reput
    (:func:`_crash_steps`), the messages a reput set inside a record parses first (:func:`_parsed_first`), then
    ``DefaultMessageStore.recoverTopicQueueTable`` and the ``ReputMessageService`` from there.  ``table_max``: the
    queue table's max physical offset over the queues beside the own ones, which a reput set from the whole table
    reads (:func:`store_format.empty_topic_restart.table_max_beside_own`)."""
    walk_first = recovery if recovery is not None and recovery.walk_first >= 0 and crash is None else None
    # before the prediction: the crash's steps read the queues as recover left them, then set the cut's state
    crash_steps = _crash_steps(st, c, summary, crash) if crash is not None else _NO_CRASH
    return predict_restart(
        c.states, config=config, commitlog_min=st.segments[0].base,
        commitlog_end=_recovered_end(st, config, summary, dledger=dledger, crash=crash, recovery=recovery, led=led),
        reput_at=_led_reput_at(st, config, dledger, led),
        clean_shutdown=clean, store_index=store_index,
        expected_index=c.expected_index,
        checkpoint_index_ts=None if clean else checkpoint_index_ts(st.fs, st.root),
        read_expected=c.read_expected,
        walked_units=lambda start, end, queues: walked_file_queue_units(st, config, start, end, queues),
        truncate_at=dledger.process_offset if dledger else None,
        reput_from_queues=(not config.is_5x or config.recheckReputOffsetFromCq) if dledger else None,
        second_reput=dledger is None and config.is_5x and config.recheckReputOffsetFromCq,
        abnormal_from=recovery.dispatch_from if recovery is not None and abnormal else None, table_max=table_max,
        recovery_walk_from=recovery.dispatch_from if recovery is not None and not abnormal else -1,
        **_parsed_first(crash, walk_first), **crash_steps)


def _read_to(st: StoreLocation, summary: Any, ledger: Any) -> int:
    """Where a reading of the log stops: the end of its data, or a DLedger log's committed position
    (``DLedgerCommitLog.getData``; ``ledger``: the store's DLedger log, or the recovery of it)."""
    data_end = end_of_data(st, summary.data_end)
    return data_end if ledger is None or ledger.committed_pos < 0 else min(ledger.committed_pos, data_end)


def _recovered_end(st: StoreLocation, config: BrokerConfig, summary: Any, *, dledger: Any, crash: Any,
                   recovery: Any, led: bool) -> int:
    """Where the start's recovery ends the commitlog, nothing at or past it dispatched: ``CommitLog.recoverNormally``/
    ``recoverAbnormally``'s cut as the reput reads it (:func:`store_format.restart_reput.reput_data_end`), a 5.x crash's
    ``dledgerRecoverAbnormally`` (the log's end DLedger keeps), a led DLedger store's log end
    (``DLedgerMmapFileStore.recover``), else the committed position ``DLedgerCommitLog.getData`` reads to."""
    if recovery is not None:
        return reput_data_end(st, config, recovery)
    if crash is not None:
        return crash.end
    if led and dledger is not None:
        return dledger.process_offset
    return _read_to(st, summary, dledger)


def _led_reput_at(st: StoreLocation, config: BrokerConfig, dledger: Any, led: bool) -> int | None:
    """A led DLedger store's 5.x start without ``recheckReputOffsetFromCq``: ``DefaultMessageStore.start`` sets the
    reput at ``getConfirmOffset()``, the committed position (none yet: the first data file's start); None otherwise."""
    if not (led and dledger is not None and config.is_5x and not config.recheckReputOffsetFromCq):
        return None
    return dledger.committed_pos if dledger.committed_pos > 0 else next(seg.base for seg in st.segments if seg.dledger)


def _parsed_first(crash: Any, walk_first: Any) -> dict[str, Any]:
    """The start's reput set inside an entry (``doRecheckReputOffsetFromCq``) parses messages there (their keys), then
    walks on from ``reput_from``; a 5.5.1 accelerated walk from inside a record (``RecoveryPlan.walk_first``,
    ``CommitLog.recoverAbnormally``): its keys, then the reput's."""
    parsed = crash is not None and (crash.cut is not None and crash.cut.inside_records or crash.old_parsed)
    return {
        "parsed_keys": crash.inside_keys if parsed else walk_first.walk_keys if walk_first is not None else None,
        "parsed_then": crash.reput_from if crash is not None and crash.reput_from < crash.end else
        walk_first.restart_reput_from if walk_first is not None else None,
        "walk_end": crash.walk_end if crash is not None and crash.walk_end >= 0 else
        walk_first.dispatch_from if walk_first is not None else None,
    }


# no 5.x DLedger crash: no walk, no cut, no ext unit put again
_NO_CRASH: dict[str, Any] = {"old_runs": (), "ext_put_back": {}, "ext_not_predicted": {}}


def _crash_steps(st: StoreLocation, c: _Compared, summary: Any, crash: Any) -> dict[str, Any]:
    """A 5.x DLedger crash restart's steps, in the broker's order: the ext units its reput puts again, against the
    queues as ``ConsumeQueue.recover`` left them (:func:`_ext_again`), then ``truncateDirtyLogicFiles``' state set on
    the held queues (:func:`~.crash_units.held_after_cut`), the walk and the reput's range
    (:func:`_walk_and_reput`), and what the cut leaves (:func:`_cut`)."""
    ext = _ext_again(st, c, summary, crash)
    held_after_cut(crash, c.states)   # a queue on disk the reput appends to before the walk's data file
    return {**_walk_and_reput(crash), **_cut(crash, c), **ext}


def _walk_and_reput(crash: Any) -> dict[str, Any]:
    """``dledgerRecoverAbnormally``'s walk and ``ReputMessageService.doReput`` after it: where the dispatch starts, the
    record indexed again, the records no one dispatches (``skip``), the walk's end the reput walks again to, and a
    reput from before the walk's data file walking records after the walk indexed its own."""
    return {
        # a converted store's reput from the old files (store_format.dledger_crash_old): every record from there; set
        # at 2147483647 inside an old file or an earlier data file and gone on before the walk's data file, from there
        # (drops_before)
        "dispatch_from": crash.reput_from if crash.before and (crash.from_old_files or crash.drops_before or crash.anew)
        else crash.start_offset,
        "reindex_from": (crash.reindex if crash.again else crash.reput_from) if crash.reindex >= 0 else None,
        "skip": crash.gap,
        "again_to": crash.walk_end if crash.again else None,
        # a reput from before the walk's data file (old files, earlier data files) or writing the queues anew walks
        # their records after the walk indexed its own: the walk's keys from its start, theirs below its endPhyOffset
        "walk_from": crash.start_offset if crash.before or crash.old_parsed or crash.anew else None,
        "old_runs": crash.old_parsed_runs,
    }


def _cut(crash: Any, c: _Compared) -> dict[str, Any]:
    """``truncateDirtyLogicFiles`` at the recovery's ``processOffset`` (5.5.1): the units never written back, the queues
    it leaves no file of, the queues after the walk and the cut (``after_load``), and the ext units of the messages
    the reput parses where ``doRecheckReputOffsetFromCq`` set it (no rebuilt queue holds their units)."""
    if crash.cut is None:
        return {}
    return {
        "cut_lost": cut_lost(crash, c.states, c.read_expected),
        "cut_at": crash.process_offset,
        "ext_parsed": {f"{t}/{qid}": n for t, qid, n in crash.cut.inside_placed.ext_put},
        "ext_parsed_kept": (lambda k: {**k, **{q: k.get(q, 0) + n for q, n in crash.old_parsed_kept}})(
            parsed_kept(crash.cut)),
        "cut_emptied": frozenset(f"{t}/{qid}" for t, qid in crash.cut.held_emptied),
        "after_load": {f"{t}/{q}": v for (t, q), v in crash.cut.loaded.items()},
    }


def _ext_again(st: StoreLocation, c: _Compared, summary: Any, crash: Any) -> dict[str, Any]:
    """``ConsumeQueueExt.put`` again for the records the reput walks again (:func:`~.ext_reput.ext_reput_puts`, from
    the queues as ``recover`` left them and where the rebuild stops reading, the committed position): the records from
    where it puts them, per ext queue the units the walk and the reput put, those it puts back, and those not
    predicted."""
    ext_back, ext_refused = ext_reput_puts(crash, _read_to(st, summary, st.dledger), {
        (t, int(q)): s.restart.max_physic_offset for s in c.states if s.restart.max_physic_offset >= 0
        for t, q in [s.restart.queue.rsplit("/", 1)]}, {
        (t, int(q)): s.restart.write_position for s in c.states if s.restart.max_physic_offset >= 0
        for t, q in [s.restart.queue.rsplit("/", 1)]})
    return {
        # the records the walk put ext units for that the reput walks again: from the walk's data file on at least
        "ext_again_from": max(crash.reput_from, crash.start_offset if crash.before else -1)
        if crash.ext_again else None,
        # a 5.5.1 cut after a walk to the log's end (the plan's QueueTrack holds every record the reput walks): per ext
        # queue the reput walks, the ext units the walk and the reput put (one per own record, its unit dropped or
        # not; the rebuild's units miss the dropped ones and the records past its end)
        # (no cut or a walk ended early: the modelled ones, with the records the reput appends past that walk's end)
        "ext_puts": {f"{a.topic}/{a.queue_id}": a.before + a.count + a.past for a in crash.ext_again
                     if (crash.cut is not None and crash.walk_end < 0) or f"{a.topic}/{a.queue_id}" in ext_back}
        | {f"{t}/{q}": n for t, q, n, _u in crash.ext_unwalked
           if f"{t}/{q}" in ext_refused or f"{t}/{q}" in ext_back},   # held, not walked
        # of those, the own units the reput puts back, from the plan (the rebuild stops at the committed position)
        "ext_put_back": ext_back, "ext_not_predicted": ext_refused,
    }


def _reput_goes_on(crash: Any, file_size: int) -> str:
    """How the start's reput set inside an entry after a walk that dispatched nothing goes on, in the restart note's
    words: set at ``processOffset - 1`` (a batch queue the cut left with no file), its check failing on the one byte
    ``getData`` hands and jumping past it; at an entry's start right after the messages its check parsed (it walks the
    entries on from there); or where its failing check jumps (the end of the bytes ``getData`` hands) or rolls
    (DLedger's blank magic)."""
    records = crash.cut.inside_records
    if crash.cut.inside_from == crash.process_offset - 1:   # a batch queue's max: the file's last byte
        return ("fails on the one byte getData hands and it jumps to the end of the bytes getData hands, "
                f"{crash.reput_from}")
    if records and records[-1][1] == crash.reput_from < crash.end and crash.reput_from % file_size:
        return f"meets an entry's start, {crash.reput_from}, from which it walks the entries"
    if crash.reput_from == crash.end or crash.reput_from % file_size:
        return f"fails and it jumps to the end of the bytes getData hands, {crash.reput_from}"
    return ("fails and it jumps to the end of the bytes getData hands, or reads DLedger's blank magic and rolls: "
            f"either way to the next data file's start, {crash.reput_from}")


def explain_recovery(restart: RestartPrediction, st: StoreLocation, config: BrokerConfig, *, dledger: Any,
                      crash: Any, recovery: Any, abnormal: bool, led: bool) -> None:
    """The commitlog's recovery into ``restart``: ``DLedgerCommitLog.recover`` (a converted store's first start,
    ``dledgerRecoverAbnormally`` after a crash, ``DLedgerMmapFileStore.recover`` otherwise) or
    ``CommitLog.recoverNormally``/``recoverAbnormally``, with its notes."""
    if st.dledger_pending:
        restart.notes[:] = [n for n in restart.notes if not n.startswith("abort file present: the broker runs its "
                                                                          "abnormal recovery")]
        restart.notes.append("enableDLegerCommitLog=true and no DLedger data file yet: DLedgerCommitLog recovers the "
                             "old commitlog/ files with the base CommitLog's recovery ("
                             + ("abnormal" if abnormal else "normal, 4.9.8's whatever the abort file says")
                             + ") and starts its first data file after them")
    if crash is not None:
        restart.dledger = True
        restart.recovery_cut = crash.end
        restart.recovery_reason = crash.reason
        restart.notes.append(
            f"DLedger store after a crash: DLedgerCommitLog.dledgerRecoverAbnormally's message check fails at the "
            f"first entry of data file {crash.start_file} ({crash.reason}), so it puts nothing, and the start's reput "
            "puts "
            + (f"every message from {crash.reput_from} to {crash.end}" if crash.reput_from < crash.end else "nothing")
            + (f", after truncateDirtyLogicFiles cut the queues it loaded at {crash.process_offset}, that data file's "
               "start" if crash.cut is not None else "")
            + (f"; doRecheckReputOffsetFromCq sets it at {crash.cut.inside_from} ("
               + ("processOffset - 1, where a batch queue the cut left with no file leaves its max), inside an entry, "
                  "where its check " if crash.cut.inside_from == crash.process_offset - 1 else
                  "where a queue the cut left with fillPreBlank units only leaves its max), inside an entry, where its "
                  "check " + (f"parses {sum(b > a for a, b in crash.cut.inside_records)} message(s)"
                              + (f" and {sum(b <= a for a, b in crash.cut.inside_records)} blank(s) 48 bytes "
                                 'further (each an empty request, dispatched to topic "" queue 0)'
                                 if any(b <= a for a, b in crash.cut.inside_records) else "")
                              + ", then " if crash.cut.inside_records else ""))
               + _reput_goes_on(crash, config.mappedFileSizeCommitLog)
               if crash.cut is not None and crash.cut.inside_from >= 0 else "")
            + "".join(f"; {t}/{q}'s parsed unit ends at {mx}, past there: putMessagePositionInfo drops its units of "
                      "the records from there ending at or below it"
                      for (t, q), mx in sorted(crash.cut.drops_to.items() if crash.cut is not None else ()))
            + (f"; the records from {crash.gap[0]} to {crash.gap[1]} are dispatched by no one"
               if crash.gap is not None else "")
            if crash.walked_nothing else
            "DLedger store after a crash: DLedgerCommitLog.dledgerRecoverAbnormally puts every message from data file "
            f"{crash.start_file} (the last whose first message the checkpoint covers) to {crash.end}, committed or "
            "not; a queue whose first message there is not its first starts with fillPreBlank units"
            + (f"; truncateDirtyLogicFiles then cuts the queues at its processOffset {crash.process_offset} (without "
               f"the entry headers): the start's reput (from {crash.reput_from}) puts {crash.cut.restored} cut unit(s) "
               f"back, {crash.cut.lost_units} stay cut and "
               f"{len(crash.cut.dropped) + len(crash.cut.batch_dropped)} queue file(s) stay deleted"
               if crash.cut is not None else f"; the start's reput (from {crash.reput_from}) adds nothing")
            + (f"; its message check ends the walk at {crash.gap[0]} and the start's reput begins at {crash.gap[1]}: "
               "the records between are never dispatched, the queues get the later ones at their write positions"
               if crash.gap is not None else "")
            + (f"; it indexes the record at {crash.reindex} again" if crash.reindex >= 0 else ""))
    elif dledger is not None:
        restart.dledger = True
        restart.recovery_cut = dledger.process_offset
        restart.recovery_reason = (f"{dledger.reason}; committed index {dledger.committed_index}, position "
                                   f"{dledger.committed_pos}")
        restart.notes.append(
            "DLedger store: DLedgerMmapFileStore.recover ends the log, the queues are truncated against its end, and "
            + ("the reput starts at the queues' max physical offset (at least the min offset) and dispatches up to "
               "the committed position" if not config.is_5x or config.recheckReputOffsetFromCq else
               "the reput starts at the committed position (5.x, recheckReputOffsetFromCq=false): nothing is "
               "dispatched again, so units missing from the queues stay missing (rebuild them with this tool)")
            + (f"; it assumes the node leads: a group of one commits the entries past committed index "
               f"{dledger.committed_index} (position {dledger.committed_pos}) and the reput goes on to the log's end "
               f"{dledger.process_offset} (a multi-node group may truncate them instead)" if led else ""))
    else:
        assert recovery is not None
        restart.recovery_cut = recovery.process_offset
        restart.recovery_reason = recovery.reason
        restart.recovery_discarded_messages = recovery.discarded_messages
        restart.recovery_discarded_bytes = recovery.discarded_bytes
        restart.recovery_deleted_segments = recovery.deleted_segments
