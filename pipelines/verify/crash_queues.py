"""verify's plan of a 5.x DLedger crash restart (:func:`store_format.dledger_crash.plan_dledger_crash`) over the
queues the store holds on disk: each queue as ``ConsumeQueue.recover`` (``BatchConsumeQueue.recover``) left it, the
walk's units dispatched onto its files (``ConsumeQueue.putMessagePositionInfo``), then
``ConsumeQueue.truncateDirtyLogicFiles`` at the recovery's ``processOffset`` (:class:`QueuesOnDisk`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from store_format.batchconsumequeue import BCQ_DIR
from store_format.config import BrokerConfig
from store_format.consumequeue_recovery import (
    BCQ_RULES,
    CQ_RULES,
    dispatch_units,
    recover_consume_queue,
    truncate_dirty_logic_files,
)
from store_format.dledger_crash import DLedgerCrash, plan_dledger_crash
from store_format.dledger_crash_cut import OnDiskCut, QueuesOnDisk
from store_format.dledger_queue_track import BATCH_EARLIER_SIZE
from store_format.dledger_recovery import DLedgerRecovery
from store_format.errors import RestartFailsError, UnsupportedConfigError
from store_format.recovery import read_checkpoint
from store_format.store import StoreLocation

from .storefiles import CQ_DIR, queue_files

__all__ = ["dledger_crash_on_disk"]


def dledger_crash_on_disk(st: StoreLocation, config: BrokerConfig, dledger: DLedgerRecovery,
                   states: list) -> tuple[DLedgerCrash | None, str | None]:
    """What a 5.x DLedger store's restart after a crash dispatches
    (:func:`store_format.dledger_crash.plan_dledger_crash`) on the queues the store holds (``states``, after
    ``ConsumeQueue.recover``), or why it is not predicted: what that refuses."""
    def max_after_cut(offset: int, walked: dict[tuple[str, int], np.ndarray]) -> dict[tuple[str, int], OnDiskCut]:
        """Each queue holding units: ``truncateDirtyLogicFiles(offset)`` on its own units (a batch queue's
        ``BatchConsumeQueue``'s; a queue in ``walked`` once the walk's units there were dispatched onto its files:
        ``dispatch_units``, a batch queue's by ``putBatchMessagePositionInfo``; every file of it read when the cut
        goes on past those ``recover`` read),
        its max physical offset then, whether a file of it stays, its write position, and whether the walk's
        units were dispatched."""
        out = {}
        for s in states:
            if s.restart.max_physic_offset < 0 and id(s) not in zeros:
                continue   # no unit loaded (a queue of one file of zeros: its units go at 0, dispatch_units)
            rules = BCQ_RULES if s.restart.layout == BCQ_DIR else CQ_RULES
            topic, qid = s.restart.queue.rsplit("/", 1)
            name = (topic, int(qid))
            units = walked.get(name)   # QueueTrack.own_walked's, mixed_walked's, batch_walked's
            if units is not None and rules is BCQ_RULES and len(units) and units[0, 1] == BATCH_EARLIER_SIZE:
                # units in the walk's earlier data files too (not kept): dispatched only when every one of them
                # starts at or below the loaded max (skipped)
                units = units[1:] if units[0, 0] <= s.restart.max_physic_offset else None
            dispatched = units is not None
            files, older = list(s.tail_files), s.older_files
            for every in (False, True):
                if every:   # the cut goes on into the files older than recover's: read them all
                    layout = BCQ_DIR if rules is BCQ_RULES else CQ_DIR
                    rec = recover_consume_queue(
                        queue_files(st.fs, f"{st.root}/{layout}/{s.restart.queue}"), rules=rules, tail_count=0,
                        file_size=config.mapperFileSizeBatchConsumeQueue if rules is BCQ_RULES
                        else config.cq_file_size, broker_5x=config.is_5x)
                    files, older = rec.tail_files, rec.files_before_tail
                if dispatched:
                    assert units is not None
                    files = dispatch_units(files, units, s.restart.max_physic_offset,
                                           config.mapperFileSizeBatchConsumeQueue if rules is BCQ_RULES
                                           else config.cq_file_size, rules)
                t = truncate_dirty_logic_files(files, offset, unit_size=rules.unit_size,
                                               truncate_from=rules.truncate_from, older_files=older)
                if t.write_position >= 0:
                    break
            assert t.write_position >= 0, "every file read"
            out[name] = (t.max_physic_offset, t.write_position != 0, t.write_position, dispatched)
        return out

    def batch_position(name: tuple[str, int], offsets: np.ndarray) -> np.ndarray:
        """The unit numbers at which a batch queue on disk holds the units of commitlog ``offsets`` (-1: not in
        its last files, :class:`~.restart_queue.QueueState`'s ``tail_files``): searched among each file's units up to
        the first one ``recover`` does not accept (in commitlog order; the zeros past them are no units)."""
        out = np.full(len(offsets), -1, dtype=np.int64)
        for s in states:
            if s.restart.layout == BCQ_DIR and s.restart.queue == f"{name[0]}/{name[1]}":
                for file_name, off, _mx, ok, _tags in s.tail_files:
                    ok = np.asarray(ok, dtype=bool)
                    off = np.asarray(off, dtype=np.int64)[:int(np.argmin(ok)) if not ok.all() else len(ok)]
                    k = np.minimum(np.searchsorted(off, offsets), max(len(off) - 1, 0))
                    hit = (out < 0) & (off[k] == offsets) if len(off) else np.zeros(len(offsets), bool)
                    out[hit] = int(file_name) // BCQ_RULES.unit_size + k[hit]
        return out

    # the consume queues whose files on disk are all zeros (units that never reached the disk): ConsumeQueue.recover
    # keeps the one it stops in (the third from the end, or the first) empty (max -1, write position its start) and
    # MappedFileQueue.truncateDirtyFiles deletes those after it; the walk's putMessagePositionInfo appends onto it from
    # there with no fillPreBlank unit (the file was not created in this run: MappedFile.isFirstCreateInQueue), a unit
    # whose queue offset * 20 lies below the file's start plus its write position dropped, as onto any queue on disk
    # (dispatch_units; a file named 220 after files 0 or alone, -small-zeros-named, -zeros-four,
    # -zeros-emptied-named); with ext files on (one file named 0 only: not checked with others), its ext units from
    # the ext queue's start: recover's last ext address stays 1, so ConsumeQueueExt.truncateByMaxAddress does nothing,
    # and ConsumeQueueExt.put goes on at the ext files' end (QueuesOnDisk.ext_end), 0 when the queue has no ext unit
    # on disk (checked only so: not with ext units on disk)
    empty = [s for s in states if s.loaded and s.restart.layout == CQ_DIR and len(s.tail_files)
             and s.restart.max_physic_offset < 0]
    zeros = {id(s) for s in empty if _all_zeros(s.tail_files, s.older_files)
             and (not s.ext_file_size or not s.restart.ext_write_position
                  and [int(name) for name, *_rest in s.tail_files] == [0])}
    # the queues that hold units after the store's load (or those files of zeros): (topic, queue id), state, a batch
    # queue's or not
    loaded = [((topic, int(qid)), s, s.restart.layout == BCQ_DIR) for s in states
              if s.restart.max_physic_offset >= 0 or id(s) in zeros for topic, qid in [s.restart.queue.rsplit("/", 1)]]
    on_disk = QueuesOnDisk(max((s.restart.max_physic_offset for s in states), default=-1), max_after_cut,
                           batch_position, frozenset(q for q, _s, batch in loaded if not batch),
                           frozenset(q for q, _s, batch in loaded if batch), ext_end={
                               q: s.restart.ext_write_position for q, s, batch in loaded
                               if not batch and s.ext_file_size and s.restart.ext_write_position is not None},
                           empty_queues=frozenset((topic, int(qid)) for s in empty if id(s) not in zeros
                                                  for topic, qid in [s.restart.queue.rsplit("/", 1)]),
                           zeros_queues=frozenset((topic, int(qid)) for s in empty if id(s) in zeros
                                                  for topic, qid in [s.restart.queue.rsplit("/", 1)]),
                           loaded_at={q: (s.restart.max_physic_offset, s.restart.write_position)
                                      for q, s, batch in loaded if not batch})
    try:
        return plan_dledger_crash(st, config, dledger, read_checkpoint(st), on_disk), None
    except (UnsupportedConfigError, RestartFailsError) as e:
        return None, str(e)


def _all_zeros(tail_files: Any, older_files: int) -> bool:
    """A queue's files as ``ConsumeQueue.recover`` left them are all zeros (every file it kept, whatever its name)."""
    if older_files or not len(tail_files):
        return False
    return all(not ok.any() and not off.any() and not mx.any() and not tags.any()
               for _name, off, mx, ok, tags in tail_files)
