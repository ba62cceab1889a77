"""The plan of a 5.x DLedger crash restart's dispatch (:class:`DLedgerCrash`): what ``dledgerRecoverAbnormally``
walks and where ``DefaultMessageStore.start``'s reput begins, as :func:`store_format.dledger_crash.plan_dledger_crash`
computes it (its module docstring has the rules) and the rebuild (``pipelines.restart``) and ``verify`` read it."""
from __future__ import annotations

import dataclasses

import numpy as np

from .dledger_crash_cut import ExtAgain, QueueCut

__all__ = ["DLedgerCrash"]


@dataclasses.dataclass(frozen=True)
class DLedgerCrash:
    """What ``dledgerRecoverAbnormally`` dispatches (see the module's docstring): the data file the walk
    starts at (name and offset), where it ends, the ``processOffset`` it computes, and where the start's
    reput begins."""
    start_file: str
    start_offset: int
    end: int
    process_offset: int
    reput_from: int
    reason: str
    reindex: int = -1             # the record whose keys the start's reput indexes again (-1: none)
    cut: QueueCut | None = None   # 5.5.1: truncateDirtyLogicFiles at process_offset (store_format.dledger_crash_cut)
    ext_again: tuple[ExtAgain, ...] = ()   # enableConsumeQueueExt: the ext units the start's reput puts
    # with before and no cut: the own queues the reput walks records of in the earlier data files that the walk walks
    # none of (no ext_again entry), each (topic, queue id, how many: one ext unit put for each, and, of a queue on
    # disk before the walk, its units among those records: rows of dledger_queue_track.UNIT_COLUMNS in reput order);
    # pipelines.verify.ext_reput counts those puts and the units appended of such a queue the store held below the
    # walk's data file (dledger_crash_reput_before.held_reput_appends)
    ext_unwalked: tuple[tuple[str, int, int, np.ndarray], ...] = ()
    # the walk's message check failed at the first entry of start_file: it dispatched nothing, and the start's
    # reput dispatches everything from start_offset (its start) to end (the log's end): nothing when
    # start_offset >= end
    walked_nothing: bool = False
    # where the walk's message check failed inside the log DLedger keeps (-1: it did not): the walk dispatches up to
    # there, the start's reput the rest to end (_walk_ends_early)
    walk_end: int = -1

    # the walk's message check failed at walk_end and the start's reput from before it walks the records from there
    # again, then those past it: the keys of the walk's last indexed record (reindex) and the ext units of its
    # records from reput_from (ext_again) are put between the walk's ones and theirs (the rebuild reads those
    # records a second time, store_format.store.jump_at, which does both, instead of putting them at the end)
    again: bool = False
    # the start's reput begins before start_offset (in an earlier data file): after the walk it walks the earlier
    # files' records, then the walk's ones again, to end (dledger_crash_reput_before)
    before: bool = False
    # with before, after a reput set at 2147483647 inside an old commitlog file or an earlier data file's entry
    # (dledger_crash_old): the queues the walk wrote that drop every record of the files before the walk's (queue
    # offsets below their write position; verify counts those units lost); empty elsewhere
    drops_before: tuple[tuple[str, int], ...] = ()
    # with before or walked_nothing: the start's reput begins in a converted store's old commitlog files, below the
    # first data file (store_format.dledger_crash_old): it reads their records first
    from_old_files: bool = False
    # the PHYSICALOFFSET fields of the index keys of the messages the start's reput parses where it is set inside an
    # entry (cut.inside_records), in put order: buildIndex puts each at or above endPhyOffset, moving it there, so
    # one above the walk's last indexed record keeps that record from being indexed again (dledger_inside_index)
    inside_keys: tuple[int, ...] = ()
    # with before: each record the reput's check refuses in a converted store's old commitlog file where the
    # DLedger check 48 bytes further parses records (a message or a blank's empty request: (start, end), end ==
    # start for a blank), which it dispatches before it goes on at the next file: (the refused record's offset,
    # those records), in reading order (dledger_crash_before._old_goes_on); the rebuild reads that file up to the
    # refused record, then those records (store_format.store.pieces_at_refusals)
    old_parsed: tuple[tuple[int, tuple[tuple[int, int], ...]], ...] = ()
    # of those records, per queue the walk wrote and the 5.5.1 cut left with no file (written anew from the reput's
    # start, dledger_crash_old.old_parsed_queues), the own units put there ("topic/queue id", count): with ext files
    # each holds its ext unit's address (verify's ext units pointed at)
    old_parsed_kept: tuple[tuple[str, int], ...] = ()
    # per record of old_parsed: its offset, where the reput goes on (that old file's end) and how many of inside_keys'
    # last keys it parsed there (dledger_crash_old.old_parsed_keys): verify's keys in put order
    old_parsed_runs: tuple[tuple[int, int, int], ...] = ()
    # with before: every queue on disk was a file of zeros the walk wrote (QueuesOnDisk.zeros_queues) and the cut
    # deleted it, so no queue keeps a unit and the reput writes every queue anew from reput_from: verify counts the
    # units put from there, the keys from start_offset (buildIndex skips the records below the walk's last indexed one)
    anew: bool = False

    @property
    def jump(self) -> tuple[int, int] | None:
        """Where the dispatch stops and where it goes on (:func:`store_format.store.jump_at`): the walk's end and
        the reput's start, with :attr:`gap` or :attr:`again`; the log's end and the reput's start with
        :attr:`before` (None: one walk from the start file to ``end``)."""
        if self.before:
            return (self.walk_end if self.walk_end >= 0 else self.end), self.reput_from
        # the messages its check parsed where it was set, then on from the walk's end (the damaged message's entry)
        at_end = self.cut is not None and bool(self.cut.inside_records) and 0 <= self.walk_end == self.reput_from
        return (self.walk_end, self.reput_from) if self.gap is not None or self.again or at_end else None

    @property
    def gap(self) -> tuple[int, int] | None:
        """The records no one dispatches, ``[walk_end, reput_from)``: the walk's message check failed at
        ``walk_end`` and the start's reput begins past it, before the log's end (None: no such range).  The one
        place the rebuild (:func:`store_format.store.jump_at`) and ``verify`` read it from; ``walked_nothing``: to the
        log's end too (:func:`_walked_nothing`)."""
        if 0 <= self.walk_end < self.reput_from < self.end:
            return self.walk_end, self.reput_from
        if self.walked_nothing and 0 <= self.walk_end < self.end <= self.reput_from:
            return self.walk_end, self.end
        return None
