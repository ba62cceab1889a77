"""``--as-restart``: the store as the reput sees it after the broker's commitlog recovery."""
from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow.fs as pafs

from store_format.anomalies import AnomalyKind
from store_format.batchconsumequeue import BCQ_DIR, BCQ_UNIT_DTYPE, BCQ_UNIT_SIZE, INVALID_POS
from store_format.config import BrokerConfig
from store_format.consumequeue import cq_file_name
from store_format.consumequeue_ext import (
    END_MARK,
    EXT_UNIT_SIZE,
    ext_addresses,
    ext_file_name,
    ext_real_offsets,
    ext_units_per_file,
)
from store_format.dledger_crash import DLedgerCrash, plan_dledger_crash
from store_format.dledger_crash_cut import ExtAgain, QueueMove
from store_format.dledger_inside_units import InsideUnit, Placed
from store_format.dledger_recovery import DLedgerRecovery, recover_dledger
from store_format.empty_request_held import HELD_FOLDERS
from store_format.errors import StoreError
from store_format.layout import CQ_BLANK_SIZE, CQ_UNIT_DTYPE, CQ_UNIT_SIZE
from store_format.recovery import RecoveryPlan, plan_recovery, read_checkpoint
from store_format.store import Segment, StoreLocation, jump_at, then_pieces, with_dledger_committed

from .anomalies import at_offset
from .build import write_file
from .build_batch import BCQ_KIND
from .build_stage import Built
from .commit import StagedOutput

__all__ = ["as_restart", "apply_cut", "Restart", "DLedgerRestart"]

# ConsumeQueue.fillPreBlank's unit: commitlog offset 0, size Integer.MAX_VALUE, tags code 0
_BLANK_UNIT = np.array([(0, CQ_BLANK_SIZE, 0)], dtype=CQ_UNIT_DTYPE).tobytes()


@dataclasses.dataclass
class Restart:
    """What a broker restart's commitlog recovery keeps and throws away (``--as-restart``)."""
    plan: RecoveryPlan

    def anomalies(self, kept: StoreLocation) -> list[dict]:
        """The restart's own finding, at the cut (in ``kept``, the store the restart leaves)."""
        p = self.plan
        if not (p.discarded_messages or p.discarded_bytes or p.deleted_segments):
            return []
        return [at_offset(kept, p.process_offset, AnomalyKind.RESTART_DISCARDS,
                          f"a broker restart ({p.mode} recovery, {p.broker_version}.x rules) cuts the commitlog at "
                           f"{p.process_offset}: {p.reason}; it discards {p.discarded_messages:,} record(s), "
                           f"{p.discarded_bytes:,} bytes, and deletes {p.deleted_segments} later segment(s)",
                          found=p.discarded_messages)]


@dataclasses.dataclass
class DLedgerRestart:
    """What a DLedger broker's restart keeps (``DLedgerMmapFileStore.recover``) and dispatches; ``nothing``:
    its reput starts at the committed position (5.x without ``recheckReputOffsetFromCq``)."""
    recovery: DLedgerRecovery
    committed_pos_before: int
    nothing: bool
    crash: DLedgerCrash | None = None   # 5.x after a crash: what dledgerRecoverAbnormally dispatches

    def anomalies(self, kept: StoreLocation) -> list[dict]:
        """DLedger's recovery cutting committed entries off (the committed position moves back)."""
        r = self.recovery
        if r.committed_pos >= self.committed_pos_before or not kept.segments:
            return []
        return [at_offset(kept, max(r.committed_pos, kept.segments[0].base), AnomalyKind.RESTART_DISCARDS,
                          "a broker restart (DLedgerMmapFileStore.recover) ends the DLedger log at "
                          f"{r.process_offset}: "
                          f"{r.reason}; the committed position moves from {self.committed_pos_before} to "
                          f"{r.committed_pos} (committed index {r.committed_index})", found=1)]


def dledger_restart(st: StoreLocation, config: BrokerConfig, progress) -> tuple[StoreLocation, DLedgerRestart]:  # noqa: ANN001
    """A DLedger store as a restart's reput reads it: DLedger's recovery first (where the log ends and
    what stays committed: :func:`store_format.dledger_recovery.recover_dledger`), then
    ``DefaultMessageStore.start``: 4.9.8 dispatches from the commitlog's min offset up to the committed
    position; 5.x starts at ``getConfirmOffset()``, the committed position itself, so nothing is
    dispatched unless ``recheckReputOffsetFromCq=true`` moves it back to the min offset.  A 5.x abnormal
    restart (``abort`` file): ``dledgerRecoverAbnormally`` dispatches every entry from the data file its
    checks start at to the log's end, committed or not (:func:`store_format.dledger_crash.plan_dledger_crash`);
    on 5.5.1 the queues it wrote may be cut (``truncateDirtyLogicFiles``): :func:`apply_cut` then
    removes the files that cut deleted and nothing wrote again and moves the units put back in part, and
    the start's reput may index the last indexed record again (``StoreLocation.reindex``)."""
    assert st.dledger is not None
    rec = recover_dledger(st.fs, st.dledger, config.mappedFileSizeCommitLog)
    before = st.dledger.committed_pos
    progress.emit(f"[rebuild] as a restart: DLedger's recovery (walk from data file {rec.checked_from}) ends the log "
                  f"at {rec.process_offset} ({rec.reason}); committed index {rec.committed_index}, position "
                  f"{rec.committed_pos}")
    if config.is_5x and st.broker_may_be_running():
        crash = plan_dledger_crash(st, config, rec, read_checkpoint(st))
        if crash.walked_nothing:
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
                kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, readable=0)
                                                           for seg in kept.segments])
            else:   # from the reput's start, inside its data file when it is the committed position
                segs = [seg for seg in kept.segments if seg.end > crash.start_offset]
                segs[0] = dataclasses.replace(segs[0], start=max(crash.start_offset - segs[0].base, 0))
                kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, index=i)
                                                           for i, seg in enumerate(segs)])
            return kept, DLedgerRestart(rec, before, crash.reput_from >= crash.end, crash)
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
        if crash.cut is not None:
            c = crash.cut
            progress.emit(f"[rebuild] as a restart after a crash: truncateDirtyLogicFiles cuts the queues at the "
                          f"recovery's processOffset {crash.process_offset} (its last file's message sizes, without "
                          f"the entry headers); the start's reput from {c.reput} puts back {c.restored} unit(s), "
                          f"{c.lost_units} stay cut or dropped (past their queue's write position, overwritten, or at "
                          f"or below its max once parsed units went before them) and "
                          f"{len(c.dropped) + len(c.batch_dropped)} queue file(s) stay deleted"
                          + (f"; in {len(c.moves)} queue(s) it puts back only the last cut units, appended at the "
                             "write position over the others (putMessagePositionInfo)" if c.moves else ""))
        if crash.cut is not None and crash.cut.inside_from >= 0:
            at = crash.cut.inside_from
            progress.emit(f"[rebuild] as a restart after a crash: doRecheckReputOffsetFromCq sets the reput at {at} ("
                          + ("processOffset" if at == crash.process_offset else
                             "processOffset - 1, where a batch queue the cut emptied leaves its max"
                             if at == crash.process_offset - 1 else
                             "where a queue the cut left with fillPreBlank units only leaves its max")
                          + ("), inside an old commitlog file (a store converted in place: CommitLog.getData gives its "
                             "bytes to the file's end)" if any(not seg.dledger and seg.base <= at < seg.end
                                                              for seg in st.segments) else "), inside an entry")
                          + (f": DLedgerCommitLog's message check there parses {len(crash.cut.inside_records)} "
                             f"message(s) ("
                             + ', '.join(f'{a} to {b}' if b > a else f'a blank at {a}, its empty request to topic "" '
                                         'queue 0' for a, b in crash.cut.inside_records)
                             + "), which it dispatches after the walk's records, then"
                             if crash.cut.inside_records else ": DLedgerCommitLog's message check there")
                          + f" sends it on to {crash.cut.reput} "
                          "(ReputMessageService.doReput)"
                          + (", from where it walks the records again (their units dropped or the cut ones put "
                             "back, their keys unless below the index's endPhyOffset)"
                             if crash.cut.inside_records and crash.start_offset <= crash.cut.reput < crash.end
                             and crash.cut.reput != crash.walk_end else
                             ", the entry where the walk ended, from where it dispatches the damaged message and the "
                             "rest (the cut units before it stay cut)" if crash.cut.inside_records
                             and crash.cut.reput == crash.walk_end else ""))
        placed = crash.cut.inside_placed if crash.cut is not None else Placed()
        if placed.units:
            progress.emit("[rebuild] as a restart after a crash: of the messages its check parses there, "
                          f"{len(placed.units)} unit(s) go to queues the walk wrote, at the write positions "
                          "the cut left (putMessagePositionInfo, whatever their queue offsets): "
                          + ", ".join(f"{u.topic}/{u.queue_id} at {u.position}" for u in placed.units))
        if placed.opened:
            progress.emit("[rebuild] as a restart after a crash: for those messages getLastMappedFile creates "
                          + ", ".join(f"{t}/{q}/{cq_file_name(f)}" for t, q, f in placed.opened)
                          + " (a write position at a file's start, or a queue the cut left with no file: "
                          "fillPreBlank units first; zeros but for the units put there, also when the unit is then "
                          "dropped)")
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
        reset = crash.cut.reset if crash.cut is not None and crash.before else ()
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
        kept = with_dledger_committed(st, rec.ledger_end_index, crash.end)
        runs = tuple((a, b) for a, b in crash.cut.inside_records if b > a) if crash.cut is not None else ()
        if crash.before:   # the earlier files' records after the walk's, then the walk's again (jump_at)
            assert crash.jump is not None
            kept = jump_at(dataclasses.replace(kept, reindex=-1), *crash.jump, walked_from=crash.start_offset)
            # the reput's pass: the segments after the one the walk's pass goes on from
            reput_pass = next(k for k, seg in enumerate(kept.segments) if seg.resume >= 0) + 1
            if runs:   # first the messages its check parses where it was set (a blank's empty request: inside_blanks)
                kept = then_pieces(kept, runs, st.segments, after=reput_pass - 1)
            if reset:   # from the reput's first piece on, the parsed messages' if any
                kept = dataclasses.replace(kept, queue_reset=reset, reset_from=reput_pass)
            return kept, DLedgerRestart(rec, before, False, crash)
        segs = [seg for seg in kept.segments if seg.base >= crash.start_offset]
        kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, index=i) for i, seg in enumerate(segs)],
                                   reindex=crash.reindex)
        if crash.jump is not None:   # the reput's records read where it reads them (the walk's again: its keys, ext)
            kept = jump_at(dataclasses.replace(kept, reindex=-1) if crash.again else kept, *crash.jump)
        if runs:   # the messages its check parses where it was set (a blank's empty request: inside_blanks), then the
            # records from where it goes on again when that is inside the walk's range (their keys as the index
            # takes them after those messages', not StoreLocation.reindex)
            assert crash.cut is not None
            if crash.jump is not None:   # after a walk that ended early (crash.again, going on at its end or past
                # it: crash.gap): between the walk's pass and the reput's, which jump_at sent on from walk_end to where
                # it goes on
                assert crash.cut.reput == crash.reput_from, crash
                walk_pass = next(k for k, seg in enumerate(kept.segments) if seg.resume >= 0)
                return then_pieces(kept, runs, st.segments, after=walk_pass), DLedgerRestart(rec, before, False, crash)
            again = crash.cut.reput if crash.start_offset <= crash.cut.reput < crash.end else -1
            kept = then_pieces(dataclasses.replace(kept, reindex=-1) if again >= 0 else kept, runs, st.segments,
                               then=again)
        return kept, DLedgerRestart(rec, before, False, crash)
    kept = with_dledger_committed(st, rec.committed_index, rec.committed_pos)
    if not kept.segments:
        raise StoreError(f"{st.uri}: a restart keeps no commitlog data (DLedger's recovery leaves nothing committed "
                         f"and there is no old commitlog)")
    nothing = config.is_5x and not config.recheckReputOffsetFromCq
    if nothing:
        progress.emit("[rebuild] as a restart: a 5.x DLedger broker starts its reput at the committed position "
                      "(getConfirmOffset), so its restart writes no consume queue or index file; "
                      "recheckReputOffsetFromCq=true makes it dispatch from the commitlog's min offset")
        kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, readable=0) for seg in kept.segments])
    return kept, DLedgerRestart(rec, before, nothing)


def inside_blanks(recovery: object) -> int:
    """How many blanks' empty requests a 5.x DLedger crash restart's reput set inside an entry dispatches
    (:mod:`store_format.dledger_reput_inside`: records of no bytes among those its check parses), which
    ``pipelines.rebuild`` writes with the concurrent reput's
    (:func:`store_format.concurrent_reput.empty_request_files`: topic "" queue 0's unit, with
    ``enableConsumeQueueExt`` each one's ext unit first, over what an ``--as-restart`` store holds there)."""
    crash = recovery.crash if isinstance(recovery, DLedgerRestart) else None
    return sum(b == a for a, b in crash.cut.inside_records) if crash is not None and crash.cut is not None else 0


def apply_cut(recovery: object, staged: StagedOutput, built: Built, config: BrokerConfig) -> bool:
    """The staged queues as a 5.x DLedger crash restart leaves them after ``truncateDirtyLogicFiles`` (5.5.1)
    and the start's reput (:class:`store_format.dledger_crash_cut.QueueCut`): the consume queue and batch
    consume queue files the cut deleted and nothing wrote again are removed, in a queue whose cut units are
    put back only in part they are moved to where the reput appends them (:func:`_write_moved`), and with
    ``enableConsumeQueueExt`` the reput's ext units are appended and the units it put back point at them
    (:func:`_put_ext_again`); the blanks' empty requests a reput set inside an entry dispatched are written with the
    concurrent reput's (:func:`inside_blanks`); the cut units of a queue the cut left with no file, of one it left a
    file of that go elsewhere than where they were, or of a batch queue that the reput appends after the parsed units
    (``Placed.again_moved``) are written with those.  ``built``'s file
    rows follow; returns whether anything changed."""
    crash = recovery.crash if isinstance(recovery, DLedgerRestart) else None
    if crash is None:
        return False
    cut, changed = crash.cut, False
    placed = cut.inside_placed if cut is not None else Placed()
    if cut is not None and (cut.before_placed.units or cut.before_placed.rebuild_units):   # queue offset 0 appended
        placed = dataclasses.replace(placed, units=placed.units + cut.before_placed.units,
                                     rebuild_units=placed.rebuild_units + cut.before_placed.rebuild_units)
    if placed.again_moved:   # the cut units of a queue the cut left with no file that the reput appends after the
        # parsed units: read where the walk's queue holds them, before the cut's files go
        placed = dataclasses.replace(placed, units=placed.units + _again_moved(staged, placed, config))
    if cut is not None and (cut.dropped or cut.batch_dropped or cut.moves):
        # read before the cut's files are deleted
        moved = [(move, _units_put_back(staged, move, *_queue_layout(config, move.batch))) for move in cut.moves]
        built.cq_files = _cut_files(staged, built.cq_files, cut.dropped, "consumequeue")
        built.bcq_files = _cut_files(staged, built.bcq_files, cut.batch_dropped, BCQ_DIR)
        for move, units in moved:
            folder, size, unit = _queue_layout(config, move.batch)
            _set_file_rows(built.bcq_files if move.batch else built.cq_files, BCQ_KIND if move.batch else "cq", size,
                           [(move.topic, move.queue_id, start, entries, first, end)
                            for start, entries, first, end in _write_moved(staged, move, units, folder, size, unit)])
        built.cq_files.sort(key=lambda r: (r["topic"], r["queue_id"], r["file_start"]))
        built.bcq_files.sort(key=lambda r: (r["topic"], r["queue_id"], r["file_start"]))
        changed = True
    if placed.units or placed.opened or placed.rebuild_units:
        assert cut is not None
        batch = config.batch_topics
        built.cq_files = _cut_files(staged, built.cq_files,
                                    tuple(f for f in placed.rebuild_files if f[0] not in batch), "consumequeue")
        built.bcq_files = _cut_files(staged, built.bcq_files,
                                     tuple(f for f in placed.rebuild_files if f[0] in batch), BCQ_DIR)
        new = _write_inside(staged, placed, (*cut.dropped, *cut.batch_dropped), config)
        _set_file_rows(built.cq_files, "cq", config.cq_file_size, [n for n in new if n[0] not in batch])
        _set_file_rows(built.bcq_files, BCQ_KIND, config.mapperFileSizeBatchConsumeQueue,
                       [n for n in new if n[0] in batch])
        built.cq_files.sort(key=lambda r: (r["topic"], r["queue_id"], r["file_start"]))
        built.bcq_files.sort(key=lambda r: (r["topic"], r["queue_id"], r["file_start"]))
        changed = True
    for again in crash.ext_again:   # crash.again, crash.before: the rebuild's walk put the ext units (jump_at), not
        # the addresses of the cut units put back (none without a cut)
        _put_ext_again(staged, again, config.mappedFileSizeConsumeQueueExt, config.cq_file_size,
                       put=not (crash.again or crash.before))
    return changed


def _queue_layout(config: BrokerConfig, batch: bool) -> tuple[str, int, int]:
    """A queue's folder, file size and unit size: a batch consume queue's (46-byte units) or a consume queue's."""
    return (BCQ_DIR, config.mapperFileSizeBatchConsumeQueue, BCQ_UNIT_SIZE) if batch \
        else ("consumequeue", config.cq_file_size, CQ_UNIT_SIZE)


def _cut_files(staged: StagedOutput, rows: list[dict], gone: tuple[tuple[str, int, int], ...],
               folder: str) -> list[dict]:
    """Remove the staged files ``gone`` (``(topic, queue id, file start)`` under ``folder``) and their rows."""
    for topic, qid, start in gone:
        staged.delete_staged(f"{folder}/{topic}/{qid}/{cq_file_name(start)}")
    drop = set(gone)
    return [r for r in rows if (r["topic"], r["queue_id"], r["file_start"]) not in drop]


def _units_put_back(staged: StagedOutput, move: QueueMove, folder: str, size: int, unit: int) -> bytes:
    """The ``move.count`` units at queue position ``move.source`` in the staged files (the recovery's queue)."""
    folder = f"{folder}/{move.topic}/{move.queue_id}"
    end = move.source + move.count * unit
    found = bytearray()
    for f in range(move.source - move.source % size, end, size):
        found += staged.read_staged(f"{folder}/{cq_file_name(f)}")[max(move.source - f, 0):]
    return bytes(found[:end - move.source])


def _write_moved(staged: StagedOutput, move: QueueMove, units: bytes, folder: str, size: int,
                 unit: int) -> list[tuple[int, int, int | None, int | None]]:
    """Write ``units`` from ``move.target`` on, as ``ConsumeQueue.putMessagePositionInfo`` (a batch queue:
    ``BatchConsumeQueue.putBatchMessagePositionInfo``) appends them at the queue's write position
    (:class:`store_format.dledger_crash_cut.QueueMove`); returns, per file written, its start, its units below
    the write position and the commitlog offsets where its first unit starts and its last one ends (None
    without one; a batch queue's: where its last unit starts)."""
    folder = f"{folder}/{move.topic}/{move.queue_id}"
    target_end = move.target + len(units)
    written = []
    for f in range(move.target - move.target % size, target_end, size):
        name = f"{folder}/{cq_file_name(f)}"
        data = bytearray(staged.read_staged(name)) if f < move.target and move.blank_from < 0 else bytearray(size)
        if f < move.zero_from < f + size:   # the units of records past the walk's end: only the reput put them
            data[move.zero_from - f:] = bytes(f + size - move.zero_from)
        if move.blank_from == f:
            data[:move.target - f] = _BLANK_UNIT * ((move.target - f) // CQ_UNIT_SIZE)
        lo, hi = max(move.target, f), min(target_end, f + size)
        data[lo - f:hi - f] = units[lo - move.target:hi - move.target]
        write_file(staged.staging_uri, name, bytes(data))
        put = np.frombuffer(bytes(data[:hi - f]), dtype=BCQ_UNIT_DTYPE if move.batch else CQ_UNIT_DTYPE)
        real = put if move.batch else put[put["size"] != CQ_BLANK_SIZE]
        last_end = (int(real["commitlogOffset"][-1]) + (0 if move.batch else int(real["size"][-1]))) if len(real) \
            else None
        written.append((f, len(put), int(real["commitlogOffset"][0]) if len(real) else None, last_end))
    return written


def _set_file_rows(files: list[dict], kind: str, size: int,
                   written: list[tuple[str, int, int, int, int | None, int | None]]) -> None:
    """``built``'s rows of the queue files the restart rewrote (``written``: topic, queue id, file start, units, and
    the commitlog offsets where the first starts and the last ends), each updated in ``files``, or added for a file it
    created (of ``kind`` and ``size`` bytes, no store times)."""
    rows = {(r["topic"], r["queue_id"], r["file_start"]): r for r in files}
    for topic, qid, start, entries, first, end in written:
        row = rows.get((topic, qid, start))
        if row is None:
            row = rows[(topic, qid, start)] = {"kind": kind, "topic": topic, "queue_id": qid, "file_start": start,
                                               "bytes": size, "first_store_timestamp": None, "end_timestamp": None}
            files.append(row)
        row.update(entries=entries, begin_offset=first, end_offset=end)


def _again_moved(staged: StagedOutput, placed: Placed, config: BrokerConfig) -> tuple[InsideUnit, ...]:
    """The cut units ``placed.again_moved`` puts back elsewhere, as units at their targets: each one's bytes from
    its source position in the staged queue (the walk's; a BatchCQ topic's 46-byte unit in its batch consume queue,
    its compacted offset and reserved bytes as ``_write_inside`` writes them); the dropped ones (target -1) left
    out."""
    out = []
    for topic, qid, source, target in placed.again_moved:
        if target < 0:
            continue
        batch = topic in config.batch_topics
        folder, size, unit = _queue_layout(config, batch)
        data = staged.read_staged(f"{folder}/{topic}/{qid}/{cq_file_name(source - source % size)}")
        at = source % size
        if batch:
            (offset, n, tags, stored, base, num, _pos, _rsv), = np.frombuffer(data[at:at + unit], dtype=BCQ_UNIT_DTYPE)
            out.append(InsideUnit(topic, qid, target, int(offset), int(n), int(tags), True, int(stored), int(base),
                                  int(num)))
            continue
        (offset, n, tags), = np.frombuffer(data[at:at + unit], dtype=CQ_UNIT_DTYPE)
        out.append(InsideUnit(topic, qid, target, int(offset), int(n), int(tags)))
    return tuple(out)


def _write_inside(staged: StagedOutput, placed: Placed, dropped: tuple[tuple[str, int, int], ...],
                  config: BrokerConfig) -> list[tuple[str, int, int, int, int | None, int | None]]:
    """The units the broker appends to queues the walk wrote for the messages its reput, set inside an entry, parses
    there (:func:`store_format.dledger_inside_units.place_inside`, ``placed.units``; a BatchCQ topic's in its batch
    consume queue, 46 bytes each), written over the staged bytes at their positions (the cut units' bytes past the
    write position it left), or into the files ``getLastMappedFile`` creates for them (``placed.opened``: zeros but
    for them; the cut deleted any staged file there), once the units the rebuild's own dispatch of those messages
    appended after the walk's are zeros again (``placed.rebuild_units``, in the files that stay: neither the cut's
    ``dropped`` nor ``placed.rebuild_files``, which ``apply_cut`` removed); in a file it creates, the units of records
    past the walk's end the broker appends there as the rebuild did (``placed.past_kept``) keep the staged bytes.
    Returns, for each file it creates, the
    units in it and the commitlog offsets where the first starts and the last ends (a batch queue's: starts; None
    without one): ``(topic, queue id, file start, units, first, end)``."""
    units, opened = placed.units, placed.opened

    def layout(topic: str) -> tuple[str, int, int]:
        return _queue_layout(config, topic in config.batch_topics)

    files: dict[tuple[str, int, int], bytearray] = {key: bytearray(layout(key[0])[1]) for key in opened}
    for topic, qid, until in placed.blank_until:   # fillPreBlank: the first unit of a queue the cut left empty
        size = config.cq_file_size
        files[(topic, qid, until - until % size)][:until % size] = _BLANK_UNIT * (until % size // CQ_UNIT_SIZE)

    def file_at(topic: str, qid: int, position: int) -> tuple[bytearray, int]:
        """The file holding queue byte ``position`` (read from the staged output the first time) and where in it."""
        folder, size, _unit = layout(topic)
        key = (topic, qid, position - position % size)
        if key not in files:
            files[key] = bytearray(staged.read_staged(f"{folder}/{topic}/{qid}/{cq_file_name(key[2])}"))
        return files[key], position % size

    gone = {*dropped, *placed.rebuild_files}
    for topic, qid, position in placed.rebuild_units:
        _folder, size, unit = layout(topic)
        if (topic, qid, position - position % size) not in gone:
            data, at = file_at(topic, qid, position)
            data[at:at + unit] = bytes(unit)
    for topic, qid, position, _offset, _size in placed.past_kept:   # in an opened file: the rebuild's unit there
        folder, size, unit = layout(topic)
        start = position - position % size
        staged_file = staged.read_staged(f"{folder}/{topic}/{qid}/{cq_file_name(start)}")
        files[(topic, qid, start)][position % size:position % size + unit] = \
            staged_file[position % size:position % size + unit]
    for u in units:
        data, at = file_at(u.topic, u.queue_id, u.position)
        data[at:at + (BCQ_UNIT_SIZE if u.batch else CQ_UNIT_SIZE)] = (
            np.array([(u.offset, u.size, u.tags_code, u.store_time, u.base, u.batch_size, INVALID_POS, 0)],
                     dtype=BCQ_UNIT_DTYPE) if u.batch else
            np.array([(u.offset, u.size, u.tags_code)], dtype=CQ_UNIT_DTYPE)).tobytes()
    for (topic, qid, start), data in files.items():
        write_file(staged.staging_uri, f"{layout(topic)[0]}/{topic}/{qid}/{cq_file_name(start)}", bytes(data))
    new = []
    for topic, qid, start in opened:
        size = layout(topic)[1]
        mine = [(u.position, u.offset, u.offset + (0 if u.batch else u.size)) for u in units
                if (u.topic, u.queue_id) == (topic, qid) and start <= u.position < start + size]
        mine = sorted(mine + [(p, o, o + n) for t, q, p, o, n in placed.past_kept
                              if (t, q) == (topic, qid) and start <= p < start + size])
        blank = next((b % size // CQ_UNIT_SIZE for t, q, b in placed.blank_until
                      if (t, q) == (topic, qid) and b - b % size == start), 0)
        new.append((topic, qid, start, blank + len(mine), mine[0][1] if mine else None,
                    mine[-1][2] if mine else None))
    return new


def _put_ext_again(staged: StagedOutput, again: ExtAgain, ext_size: int, cq_size: int, put: bool = True) -> None:
    """The start's reput on an ext queue (:class:`store_format.dledger_crash_cut.ExtAgain`): ``ConsumeQueueExt.put``
    appends the ext unit of each record it walks again (the same bytes as the recovery's unit of that record)
    after the recovery's units, a full file getting its end marker once the next unit goes into the next
    file, and each consume queue unit it put back holds its new unit's address (``decorate``).  ``put=False``:
    the ext units are there (the rebuild walked those records again), only the addresses are set."""
    if put:
        _append_ext_again(staged, again, ext_size)
    address = ext_addresses(again.before + again.ordinals, ext_size)
    folder = f"consumequeue/{again.topic}/{again.queue_id}"
    queue_files: dict[int, bytearray] = {}
    for pos, addr in zip(again.positions, address):
        start = int(pos) - int(pos) % cq_size
        if start not in queue_files:
            queue_files[start] = bytearray(staged.read_staged(f"{folder}/{cq_file_name(start)}"))
        at = int(pos) - start + _TAGS_CODE_AT
        queue_files[start][at:at + 8] = int(addr).to_bytes(8, "big", signed=True)
    for start, data in queue_files.items():
        write_file(staged.staging_uri, f"{folder}/{cq_file_name(start)}", bytes(data))


def _append_ext_again(staged: StagedOutput, again: ExtAgain, ext_size: int) -> None:
    """:func:`_put_ext_again`'s ext units: the last ``again.count`` of the ``again.before`` units but the
    ``again.skip`` last ones appended."""
    ext_folder = f"consumequeue_ext/{again.topic}/{again.queue_id}"
    files: dict[int, bytearray] = {}

    def file(no: int) -> bytearray:
        if no not in files:
            name = f"{ext_folder}/{ext_file_name(no, ext_size)}"
            files[no] = bytearray(staged.read_staged(name)) if no * ext_size < _ext_end(again.before, ext_size) \
                else bytearray(ext_size)
        return files[no]

    per_file = ext_units_per_file(ext_size)
    old = ext_real_offsets(np.arange(again.before - again.skip - again.count, again.before - again.skip), ext_size)
    new = ext_real_offsets(np.arange(again.before, again.before + again.count), ext_size)
    for src, dst, ordinal in zip(old, new, range(again.before, again.before + again.count)):
        unit = bytes(file(int(src) // ext_size)[src % ext_size:src % ext_size + EXT_UNIT_SIZE])
        data = file(int(dst) // ext_size)
        data[dst % ext_size:dst % ext_size + EXT_UNIT_SIZE] = unit
        if ordinal % per_file == 0 and ordinal:   # ConsumeQueueExt.put: the full file's end marker (fullFillToEnd)
            prev = file(ordinal // per_file - 1)
            prev[per_file * EXT_UNIT_SIZE:per_file * EXT_UNIT_SIZE + 2] = END_MARK.tobytes()
    for no, data in files.items():
        write_file(staged.staging_uri, f"{ext_folder}/{ext_file_name(no, ext_size)}", bytes(data))


_TAGS_CODE_AT: int = CQ_UNIT_DTYPE.fields["tagsCode"][1]  # type: ignore[index]  # where a consume queue unit's tagsCode (the ext address) sits


def _ext_end(units: int, ext_size: int) -> int:
    """Where the ext space of a queue with ``units`` ext units ends (the end of the file its last unit is in)."""
    if not units:
        return 0
    return (int(ext_real_offsets(np.array([units - 1]), ext_size)[0]) // ext_size + 1) * ext_size


def as_restart(st: StoreLocation, config: BrokerConfig, progress) -> tuple[StoreLocation, Restart | DLedgerRestart]:  # noqa: ANN001
    """The store as the reput sees it after the broker's recovery (:func:`store_format.recovery.plan_recovery`):
    segments after the cut deleted, the segment holding it read up to it, and, where the recovery itself
    dispatches (4.9 abnormal, 5.x), nothing before the segment it started from.  A RocksDB consume queue
    store: the record at commitlog offset 0 is dispatched where the recovery dispatches every record it
    accepts (abnormal), else read only (``RecoveryPlan.dispatch_above``).  DLedger stores:
    :func:`dledger_restart`; a store converted in place with no DLedger data file yet
    (``StoreLocation.dledger_pending``) is recovered as an ordinary one."""
    held = _held_queue_files(st) if not config.rocksdb_cq else []
    if held:
        progress.emit(f"[rebuild] as a restart: warning: the store holds {len(held)} consume queue or index file(s) "
                      f"({held[0]}{', ...' if len(held) > 1 else ''}); --as-restart writes what a restart makes of "
                      "it once consumequeue/ and index/ are deleted, as before a rebuild; a broker started on it as it "
                      "is recovers from those files instead (verify predicts that start)")
    if st.dledger is not None:
        return dledger_restart(st, config, progress)
    plan = plan_recovery(st, config)
    if st.dledger_pending:
        progress.emit("[rebuild] as a restart: enableDLegerCommitLog=true and no DLedger data file yet: "
                      "DLedgerCommitLog recovers the old commitlog/ files with the base CommitLog's recovery "
                      "(isInrecoveringOldCommitlog"
                      + ("" if plan.broker_version == "5" else "; 4.9.8: the normal one") + ")")
    progress.emit(f"[rebuild] as a restart: {plan.mode} recovery cuts the commitlog at {plan.process_offset} "
                  f"({plan.reason}); dispatch from {plan.dispatch_from}")
    kept: list[Segment] = []
    for seg in st.segments:
        if seg.base > plan.process_offset or seg.end <= plan.dispatch_from:
            continue
        # 5.5.1 enableAcceleratedRecovery: the abnormal recovery walks its first segment from inside it
        start = max(plan.dispatch_from - seg.base, 0)
        readable = plan.process_offset - seg.base if seg.base <= plan.process_offset < seg.end else -1
        offset_zero = config.rocksdb_cq and (plan.dispatch_above < 0 or plan.rocksdb_offset_zero)
        kept.append(dataclasses.replace(seg, index=len(kept), readable=readable, start=start,
                                        dispatch_offset_zero=offset_zero,
                                        index_offset_zero=plan.dispatch_above < 0 or plan.index_offset_zero))
    if not kept:
        raise StoreError(f"{st.uri}: a restart keeps no commitlog data (recovery cut at {plan.process_offset})")
    if plan.restart_reput_from >= 0:
        progress.emit(f"[rebuild] as a restart: the second reput (DefaultMessageStore.start) walks again from "
                      f"{plan.restart_reput_from}" + (f" and indexes the record at {plan.reindex} again"
                                                       if plan.reindex >= 0 else ""))
    return StoreLocation(st.uri, st.fs, st.root, kept, batch_topics=st.batch_topics, reindex=plan.reindex), \
        Restart(plan)


def _held_queue_files(st: StoreLocation) -> list[str]:
    """The consume queue, ext, batch consume queue and index files ``st`` holds (relative paths, sorted), but for
    topic "" queue 0's (files right in ``consumequeue/0/`` and ``consumequeue_ext/0/``: the folders the broker
    loads as topic "0", which ``store_format.empty_request_held`` models)."""
    out = []
    for folder in ("consumequeue", "consumequeue_ext", BCQ_DIR, "index"):
        infos = st.fs.get_file_info(pafs.FileSelector(f"{st.root}/{folder}", allow_not_found=True, recursive=True))
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            rel = info.path[len(st.root) + 1:]
            if rel.count("/") == 2 and rel.rsplit("/", 1)[0] in HELD_FOLDERS:
                continue
            out.append(rel)
    return sorted(out)
