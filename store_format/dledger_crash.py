"""A 5.x DLedger broker's restart after a crash (an ``abort`` file): what its recovery dispatches.

Mirrors ``DLedgerCommitLog.dledgerRecoverAbnormally`` and ``isMmapFileMatchedRecover`` (rocketmq-all-5.3.3
and rocketmq-store 5.5.1, ``store/dledger/DLedgerCommitLog.java``), run by ``DefaultMessageStore.recover``
when the last shutdown was not clean, after DLedger's own recovery (:mod:`store_format.dledger_recovery`):

* Which data file the walk starts at: from the last data file back to the first, the first whose first
  entry's message (48 bytes in, behind the DLedger header) has the V1 magic code (a V2 record, a topic
  longer than 127 bytes, never matches), a store timestamp that is not 0, and: 5.3.3, that timestamp at
  most the checkpoint's ``getMinTimestamp()`` (``getMinTimestampIndex()`` with ``messageIndexEnable &&
  messageIndexSafe``); 5.5.1, with ``messageIndexEnable && messageIndexSafe`` that timestamp at most
  ``indexMsgTimestamp``, then ``ConsumeQueueStore.isMappedFileMatchedRecover``: the message's physical
  offset at most the checkpoint's ``logicsPhysicalOffset`` (when that is > 0, else the timestamp at most
  ``logicsMsgTimestamp``).  The fields are read raw: no CRC, no ``commitLogRecoverMaxNum``.  When no file
  matches, the first.  Every input is on disk: the ``checkpoint`` file and the data files.
* The walk: ``checkMessageAndReturnSize`` (the DLedger override: skip the 48-byte header, then the
  message check with ``checkCRCOnRecover``) on each entry; a DLedger blank moves it to the next file (after
  the last it ends); the first entry that fails (zeros after the last entry, a bad body CRC, ...) ends it.
  **Every message accepted is dispatched** (``doDispatch``), committed or not, and nothing before the
  start file.  So a queue whose first message there has queue offset k > 0 starts with k
  ``fillPreBlank`` units (offset 0, size 2147483647) in its consume queue, where a clean restart writes
  the queue's first messages: the explanation of "a unit of offset 0 and size 2147483647 at the head of a
  queue" once seen on 5.5.1 (the start file depends on the checkpoint the crashed broker left; restarts
  on copies of the same files write the same bytes).
* A walk whose message check fails at its first entry (``forceVerifyPropCRC=true``: DLedger writes no CRC
  property) dispatches nothing: the start's reput alone does, from the committed position or, with
  ``recheckReputOffsetFromCq``, the min offset, a converted store's first old file's (:func:`_walked_nothing`);
  with queues on disk, after their cut at that file's start (:mod:`store_format.dledger_walked_nothing`).
* A walk whose message check fails later, inside the log DLedger keeps (a bad body CRC: DLedger's recovery reads
  none), dispatches up to there; the start's reput goes on from its start (:func:`_walk_ends_early`).  When
  ``truncateDirtyLogicFiles`` then cuts the queues at the walk's ``processOffset``, the reput from at or before
  the walk's end puts back the cut units it reaches and appends the records past the walk behind them
  (:func:`walk_after`, :func:`store_format.dledger_crash_cut.cut_queues`' ``after``); from the log's end it adds
  nothing.  From between the two ends (the committed position) it dispatches from there: the records between the
  walk's end and it are never dispatched (:attr:`DLedgerCrash.gap`, which the rebuild leaves out of its walk:
  :func:`store_format.store.jump_at`), and each queue appends the later ones at its write position, after the
  walk's units (after the cut, the cut units left out: ``cut_queues``' ``after``).  A reput from before the walk's
  end walks the walk's records from its start again, then the rest: ``IndexService.buildIndex`` puts the walk's
  last indexed record's keys again (at its ``endPhyOffset``) and ``ConsumeQueueExt.put`` an ext unit again for each
  of those records, before those of the records past the walk (:attr:`DLedgerCrash.again`: the rebuild reads those
  records a second time, :func:`store_format.store.jump_at`; per ext queue, its own records past the walk's end,
  each unit appended pointing at the ext unit put for it: ``ExtAgain.past``, from :func:`walk_after`'s units); with a
  queue cut, the cut's moves then apply to what that walk wrote (the records read again drop as repeats), and the
  cut units put back point at the ext units put again.  So too a reput set at 2147483647 inside an entry (a queue
  the cut left with ``fillPreBlank`` units only)
  whose check parses well-formed messages there and then goes on at an entry's start before the walk's end: it
  dispatches those messages after the walk's records, then walks the walk's records on from there, the damaged
  message and the rest (``QueueCut.inside_records``; the rebuild reads the messages between its two passes,
  :func:`store_format.store.then_pieces`' ``after``, :attr:`DLedgerCrash.again` also where no record from there is
  indexed again and no ext unit put again: the parsed messages' keys go before those of the records past the walk);
  going on before the walk's data file, the reput-before-the-walk rule below (the damaged message and the rest after
  the walk's records again); going on at the walk's end (the damaged message's entry), it dispatches the messages
  after the walk's records, then the damaged message and the rest, the cut units before it staying cut
  (:attr:`DLedgerCrash.jump` at the walk's end: the rebuild's second pass starts there); going on past it (the
  parsed records' jump to the end of the bytes ``getData`` gave, a data file's end), the messages after the walk's
  records, then the records from there (:attr:`DLedgerCrash.gap`: those between never dispatched).
* Past such a walk, a record the start's reput's own check refuses (a bad magic code: DLedger's recovery reads no
  message field) ends its dispatch: ``doReput`` skips to the end of ``getData``'s buffer.  In the last data file, with
  the committed position at or before it and a group of one, that is the log's end, so :attr:`DLedgerCrash.end`
  is that record (:func:`reput_skips`); in an earlier data file, with the committed position at or before it or
  past that file and a group of one, that file's end: the reput goes on at the next data file
  (:func:`reput_goes_on`; elsewhere refused).
* A start's reput from before the data file the walk started at (the committed position, or with
  ``recheckReputOffsetFromCq`` the queues' largest offset, in an earlier file) walks the earlier files' records, then
  the walk's ones again (:attr:`DLedgerCrash.before`,
  :func:`store_format.dledger_crash_reput_before.reput_before_walk`); after a walk that ended at a damaged message, then
  that message and the rest; after a queue cut it puts every cut unit back (all lie past its start; none in a queue left
  with ``fillPreBlank`` units only), with ext files pointing at the ext units it put
  (:mod:`store_format.dledger_crash_before`); a consume queue the 5.5.1 cut left with no file (max -1) gets the earlier
  files' records too, written anew from the reput's start (``QueueCut.reset``).
* ``processOffset``: the walk's last file's start plus the message sizes in it (``getMsgSize``, without
  the 48-byte headers).  When the ``maxPhyOffsetOfConsumeQueue`` passed in (5.3.3: the consume queues'
  max physical offset, -1 with ``consumequeue/`` deleted; 5.5.1: ``getDispatchFromPhyOffset(false)``, the
  checkpoint's ``logicsPhysicalOffset``) is at least that, ``truncateDirtyLogicFiles`` cuts the queues the
  walk just wrote at that short offset (5.5.1 only when their largest max reaches it):
  :mod:`store_format.dledger_crash_cut`.  On both lines ``DefaultMessageStore.recover`` runs
  ``ConsumeQueue.recover`` (loading the queues on disk) before that walk, whose ``doDispatch`` puts its units onto
  those files before the cut (``verify``: ``QueueTrack.keep_queues``, ``QueuesOnDisk.max_after_cut``; checked on
  5.3.3 by ``-emptied-kept-embedded-light-mixed-held``, ``-held-t5`` and ``-earlier-both``).  A queue whose files
  on disk are all zeros (units that never reached the disk) is such a queue: ``ConsumeQueue.recover`` keeps the file
  it stops in (the first, or the third from the end) empty (max -1, write position its start; ``truncateDirtyFiles``
  deletes those after it), and ``putMessagePositionInfo`` appends the walk's units onto it from its start whatever
  the first one's queue offset: the file was not created in this run (``MappedFile.isFirstCreateInQueue``), so no
  ``fillPreBlank`` units; a unit whose queue offset * 20 lies below the file's start plus its write position is
  dropped ("Build consume queue repeatedly"; a file named past 0: the cut then reads its first unit, zeros, below
  ``processOffset`` and keeps it, max 0, the start's reput dropping the unit again by the same check: 5.5.1
  ``-small-zeros-emptied-named``; ``-zeros-named``, ``-zeros-two``, ``-zeros-four``); the cut then deletes it when
  its first unit lies past ``processOffset``
  (``QueuesOnDisk.zeros_queues``; checked on 5.5.1 by ``-small-zeros-kept`` and ``-small-zeros-emptied``, without a
  cut by ``-small-zeros-uncut-emptied``, and on 5.3.3, which walks from the first data file there and cuts nothing;
  with ext files on and no ext unit of it on disk, its ext units go from 0 and the cut leaves them: ``recover``'s last
  ext address stays 1, so ``truncateByMaxAddress`` does nothing, 5.5.1 ``-small-zeros-ext-kept``, ``-ext-emptied``;
  light units only, ``multiDispatchLmqQueue`` putting them alike: 5.5.1 ``-small-zeros-light``; own and light units
  both, each by the queue offset check against the write position the one before left, a unit whose queue offset * 20
  lies below it dropped: 5.5.1 and 5.3.3 ``-small-zeros-mixed``; a walk ending early at a damaged message, the start's
  reput from the queues with ``recheckReputOffsetFromCq``: 5.5.1 and 5.3.3 ``-small-zeros-kept-damaged``).
  Where the cut deletes every such file and the store holds no other queue, no queue keeps a max and the start's
  reput begins at the min offset, before the walk's data file: it writes every queue anew from there, its records
  below the walk's last indexed one unindexed (``IndexService.buildIndex``: ``endPhyOffset``), so units follow the
  reput's start and keys the walk's (``DLedgerCrash.anew``; checked on 5.5.1 by ``-zeros-before`` and the 2 GiB
  ``-past-2gib-before-t9-first-on-disk-zeros``).
* 5.5.1 ``enableAcceleratedRecovery`` and ``checkCommitLogOffsetOnRecover`` are read by
  ``CommitLog.recoverAbnormally`` only, which a DLedger store runs on its old commitlog alone (no data file
  yet); the first also by ``ConsumeQueueStore.getDispatchFromPhyOffset(false)``, which
  ``DefaultMessageStore.recover`` asks first and which throws on a checkpoint logicsPhysicalOffset <= 0 with a
  physicMsgTimestamp: the broker's ``load()`` fails (refused, :class:`store_format.errors.RestartFailsError`).
* A store converted in place (old ``commitlog/`` files below ``dividedCommitlogOffset``, the first data
  file's offset): once DLedger has data files, ``dledgerRecoverAbnormally`` walks them alone as above;
  its call of the base ``CommitLog.recoverAbnormally`` over the old files (``isInrecoveringOldCommitlog``,
  then ``setRecoverPosition``) runs only when ``dledger-<selfId>/data`` is empty, the first start after
  the switch (such a store is read as an ordinary one: ``StoreLocation.dledger_pending``).  The old files are
  neither checked, cut nor dispatched by it; they only lower
  ``DLedgerCommitLog.getMinOffset`` (the old ``MappedFileQueue``'s first file while it has one), the
  least offset the start's reput with ``recheckReputOffsetFromCq`` begins at.  So after a walk that dispatched
  the old messages get no unit: the queues start with ``fillPreBlank`` units up to the first message the walk
  dispatched.  After a walk that dispatched nothing that reput begins at that min offset and dispatches the old
  records, then the data files' (:func:`_walked_nothing`); after a walk that queued nothing (prepared transaction
  messages only) too, then walks the data files again (:mod:`store_format.dledger_crash_old`), and so after such a
  walk that ended at a damaged message or a 5.5.1 cut leaving every queue with no file.  Set at 2147483647 inside
  an old file (a queue the cut left with ``fillPreBlank`` units only), it goes on at that file's end
  (:func:`_reput_inside`): the walk's data file, or before it (the next old file, an earlier data file) the
  reput-before-the-walk rule with a cut, the walk's queues dropping the records there (``DLedgerCrash.drops_before``),
  after the well-formed messages its check parses at 2147483647, if any (``QueueCut.inside_records``, new queues);
  so too set inside an entry of a data file before the walk's (a log past 2 GiB walked from a later data file): it
  goes on at that data file's end, the next one, or at DLedger's committed position where that lies in the file
  past it, walking on from there once the group commits the rest, or at the next entry's start where the messages
  its check parsed there end, walking the entries on from it
  (:func:`store_format.dledger_crash_old.inside_earlier_refusal`).
* ``DefaultMessageStore.start``: the reput starts at ``getConfirmOffset()`` (DLedger's committed position
  after its recovery), or with ``recheckReputOffsetFromCq=true`` at the queues' largest physical offset
  (:func:`store_format.restart_reput.start_reput_check`; after a cut, the cut queues', which may be
  ``processOffset`` inside an entry: :mod:`store_format.dledger_reput_inside` says where it goes on from); once the node
  leads, the group commits the rest and the reput walks it: a message whose unit is still in its queue is
  dropped (``putMessagePositionInfo`` drops a unit at or below a queue's max physical offset), a cut one is
  put back, and ``IndexService.buildIndex`` indexes the last indexed message again when the reput starts
  at or before it (``DLedgerCrash.reindex``, written through ``StoreLocation.reindex``), unless messages its check
  parsed inside an entry first moved ``endPhyOffset`` past it (:mod:`store_format.dledger_inside_index`,
  ``DLedgerCrash.inside_keys``).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from . import commitlog as cl
from .config import BrokerConfig
from .consumequeue_recovery import no_file_resets_max
from .dledger import ENTRY_HEADER_SIZE
from .dledger_crash_after import checked_windows, refusal, walk_after
from .dledger_crash_before import earlier_counter
from .dledger_crash_cut import (
    QueueCut,
    QueuesOnDisk,
    QueueTrack,
    cut_queues,
    ext_refused,
    ext_reput,
)
from .dledger_crash_cut_reput import ext_past
from .dledger_crash_old import reput_in_old_files, reput_inside_old_file
from .dledger_crash_plan import DLedgerCrash
from .dledger_crash_reput_before import reput_before_walk
from .dledger_inside_index import indexed_again, inside_key_offsets
from .dledger_inside_units import ParsedUnit, parsed_units
from .dledger_recovery import DLedgerRecovery
from .dledger_reput_inside import reput_inside_entry
from .dledger_walked_nothing import reput_after_cut
from .errors import RestartFailsError
from .filedump.checkpoint import Checkpoint
from .layout import (
    BORN_HOST_OFFSET,
    HOST_V4_LEN,
    HOST_V6_LEN,
    MAGIC_V1,
    OFF_MAGIC,
    OFF_PHYSICAL_OFFSET,
    OFF_SYSFLAG,
    SYSFLAG_BORNHOST_V6,
)
from .restart_reput import Accepted, start_reput_check
from .store import Segment, StoreLocation

__all__ = ["DLedgerCrash", "plan_dledger_crash", "walk_data_files"]


def _matches(head: bytes, config: BrokerConfig, cp: Checkpoint) -> bool:
    """``DLedgerCommitLog.isMmapFileMatchedRecover`` on a data file's first bytes (module docstring)."""
    m = head[ENTRY_HEADER_SIZE:]
    if len(m) < BORN_HOST_OFFSET + HOST_V6_LEN + 8:
        return False

    def i(a: int, n: int) -> int:
        return int.from_bytes(m[a:a + n], "big", signed=True)
    if i(OFF_MAGIC, 4) != MAGIC_V1:
        return False
    at = BORN_HOST_OFFSET + (HOST_V6_LEN if i(OFF_SYSFLAG, 4) & SYSFLAG_BORNHOST_V6 else HOST_V4_LEN)
    ts = i(at, 8)
    if ts == 0:
        return False
    safe = config.messageIndexEnable and config.messageIndexSafe
    if config.brokerVersion != "5.5":
        return ts <= (cp.min_timestamp_index if safe else cp.min_timestamp)
    if safe and ts > cp.index_msg_timestamp:
        return False
    if cp.logics_physical_offset <= 0:
        return ts <= cp.logics_msg_timestamp
    return i(OFF_PHYSICAL_OFFSET, 8) <= cp.logics_physical_offset


def plan_dledger_crash(st: StoreLocation, config: BrokerConfig, rec: DLedgerRecovery,
                       cp: Checkpoint, on_disk: QueuesOnDisk | None = None) -> DLedgerCrash:
    """``dledgerRecoverAbnormally`` on ``st`` after DLedger's recovery ``rec``, with the store's checkpoint
    ``cp`` (module docstring); ``on_disk``: the consume queues the store holds (``verify``; the rebuild's
    restart starts without them), which the walk's dispatch adds to and the cut takes units from.  In the broker's
    order: :func:`_load_fails`, the start file (:func:`_start_file`), the walk (:func:`walk_data_files`), the cut's
    condition (:func:`_truncates`) and :func:`_cut`, where the start's reput begins (:func:`_start_reput`), then its
    dispatch: :func:`_walked_nothing`, :func:`reput_before_walk` or :func:`_reput_from_walk`.

    Raises:
        RestartFailsError: 5.5.1 ``enableAcceleratedRecovery=true`` with a checkpoint logicsPhysicalOffset <= 0
            (and a physicMsgTimestamp): the broker's ``load()`` fails.
        UnsupportedConfigError: what is not modelled: a RocksDB consume queue, a queue the walk writes whose files
            on disk hold no unit (``QueuesOnDisk.empty_queues``; files all zeros, ``zeros_queues``, are
            modelled with or without the cut (a walk ending early: with recheckReputOffsetFromCq), the start's
            reput from the walk's data
            files on or, the cut deleting every such file and no other queue on disk, from before them, not set
            inside an entry), a message check that ends the
            walk elsewhere than DLedger's recovery ends the log where :func:`_walked_nothing` (at the first entry)
            and :func:`walk_after` (the reput's check ending before the log's end: :func:`reput_skips`) refuse, the
            cases of the queue truncation at the short ``processOffset`` that
            :func:`store_format.dledger_crash_cut.cut_queues` refuses, a reput from before the walk's file that
            :func:`store_format.dledger_crash_reput_before.reput_before_walk` refuses (after a cut it does not undo).
    """
    assert st.dledger is not None
    _load_fails(config, cp)
    files = [Segment(k, name, int(name), size, path, mtime, dledger=True)
             for k, (name, size, path, mtime) in enumerate(st.dledger.files)]
    old = [s for s in st.segments if not s.dledger]   # a store converted in place: never walked here
    min_offset = old[0].base if old else files[0].base   # DLedgerCommitLog.getMinOffset
    first = _start_file(st, files, config, cp)
    # DefaultMessageStore.recover loads the queues (ConsumeQueue.recover) before the walk on 5.3.3 and 5.5.1 alike:
    # the walk's doDispatch puts its units onto those files, which truncateDirtyLogicFiles then cuts
    accepted, track = Accepted(), QueueTrack(config.batch_topics, keep_own=config.enableConsumeQueueExt,
                                             keep_queues=on_disk.consume_queues | on_disk.batch_queues
                                             if on_disk is not None else frozenset())
    end, last_base, last_sizes, reason = walk_data_files(st, files, first, config, accepted, track)
    if end != rec.process_offset and end == files[first].base:
        return _walked_nothing(files, first, end, reason, rec, config, min_offset, on_disk, cp, st)
    early = end != rec.process_offset   # the walk's check fails inside the log DLedger keeps (_walk_ends_early)
    process_offset = last_base + last_sizes
    if on_disk is not None and on_disk.batch_position is not None and config.batch_topics:
        track.place_batch(on_disk.batch_position)   # the walk found the batch queues' units there
    truncates = _truncates(config, cp, accepted, on_disk, process_offset)
    walked = track.written()   # the queues the walk wrote
    zeros = _zeros_queues(walked, on_disk, early, config, rec)
    after, reput_ends, past = None, -1, None
    if early and (truncates or rec.committed_pos < rec.process_offset or config.recheckReputOffsetFromCq):
        # the records past the walk as the start's reput's check reads them (with a cut: their units)
        after, reput_ends = walk_after(st, files, end, rec.process_offset, last_base, reason, config, track,
                                       rec.committed_pos)
        past = after
        if not truncates:
            after = None
    cut = _cut(st, files, first, end, early, process_offset, rec, config, min_offset, on_disk, track, after) \
        if truncates else None
    reput = _start_reput(files, first, end, rec, config, min_offset, on_disk, accepted, cut)
    walk_end, log_end = -1, end
    if early:
        walk_end, log_end = end, _walk_ends_early(end, reason, reput, rec)
        if 0 <= reput <= reput_ends < log_end:   # its check refuses a record there (reput_skips)
            log_end = reput_ends
    anew = _written_anew(zeros, cut, on_disk, reput, files[first].base)
    if reput < files[first].base:
        plan = reput_before_walk(st, files, first, walk_end, log_end, process_offset, reput, reason, accepted,
                                 track, config, cut, rec.committed_pos, walked, past)
        return dataclasses.replace(plan, anew=True) if anew else plan
    return _reput_from_walk(st, files[first], end, walk_end, log_end, process_offset, reput, reason, early, accepted,
                            track, config, cut, past)


def _load_fails(config: BrokerConfig, cp: Checkpoint) -> None:
    """What stops ``DefaultMessageStore.recover`` before ``dledgerRecoverAbnormally``: a RocksDB consume queue store
    (refused, not modelled); 5.5.1 ``ConsumeQueueStore.getDispatchFromPhyOffset(false)``, asked first, throwing on
    ``enableAcceleratedRecovery`` with a checkpoint logicsPhysicalOffset <= 0 and a physicMsgTimestamp."""
    if config.rocksdb_cq:
        raise refusal("a RocksDB consume queue store")
    if config.brokerVersion == "5.5" and config.enableAcceleratedRecovery and cp.physic_msg_timestamp > 0 \
            and cp.logics_physical_offset <= 0:
        # DefaultMessageStore.recover asks ConsumeQueueStore.getDispatchFromPhyOffset(false) first, which throws;
        # past that, dledgerRecoverAbnormally's walk over the data files reads neither setting
        raise RestartFailsError(
            f"enableAcceleratedRecovery=true with a checkpoint whose logicsPhysicalOffset is "
            f"{cp.logics_physical_offset}: the 5.5.1 broker's abnormal restart fails to load the store "
            "(ConsumeQueueStore.getDispatchFromPhyOffset throws); nothing to predict")


def _start_file(st: StoreLocation, files: list[Segment], config: BrokerConfig, cp: Checkpoint) -> int:
    """``dledgerRecoverAbnormally``'s start file: from the last data file back, the first that
    ``isMmapFileMatchedRecover`` (:func:`_matches`) accepts, else the first."""
    for k in range(len(files) - 1, -1, -1):
        with st.reader(files[k]) as read:
            head = bytes(read(0, ENTRY_HEADER_SIZE + BORN_HOST_OFFSET + HOST_V6_LEN + 8))
        if _matches(head, config, cp):
            return k
    return 0


def _truncates(config: BrokerConfig, cp: Checkpoint, accepted: Accepted, on_disk: QueuesOnDisk | None,
               process_offset: int) -> bool:
    """Whether ``dledgerRecoverAbnormally`` calls ``truncateDirtyLogicFiles(processOffset)``: the
    ``maxPhyOffsetOfConsumeQueue`` passed in at least ``processOffset`` (5.5.1: ``getDispatchFromPhyOffset(false)``,
    the checkpoint's, then ``ConsumeQueueStore.truncateDirty``'s check of the queues' largest max; 5.3.3: the loaded
    queues' max physical offset, no check in ``truncateDirty``)."""
    loaded_max = on_disk.max_physic_offset if on_disk is not None else -1
    if config.brokerVersion == "5.5":
        queues_max = accepted.max_physic_offset(config.batch_topics)   # a batch queue's: its last unit's start
        return cp.logics_physical_offset >= process_offset and max(queues_max, loaded_max) >= process_offset
    return loaded_max >= process_offset


def _zeros_queues(walked: tuple[tuple[str, int], ...], on_disk: QueuesOnDisk | None, early: bool,
                  config: BrokerConfig, rec: DLedgerRecovery) -> list[tuple[str, int]]:
    """The queues the walk wrote whose files on disk are all zeros (``QueuesOnDisk.zeros_queues``:
    ``ConsumeQueue.recover`` kept them empty, ``putMessagePositionInfo`` appends onto them from their start), after
    refusing those the walk wrote whose files hold no unit otherwise (``QueuesOnDisk.empty_queues``) and a walk
    ending early onto them with the start's reput from the committed position inside the log (module docstring)."""
    empty = sorted(set(walked) & on_disk.empty_queues) if on_disk is not None else []
    # a queue of files of zeros (QueuesOnDisk.zeros_queues): checked against the broker with or without the cut, the
    # start's reput from the walk's data files on, not set inside an entry; not the others
    zeros = sorted(set(walked) & on_disk.zeros_queues) if on_disk is not None else []
    # own units, light ones (multiDispatchLmqQueue's putMessagePositionInfo appends them onto it from 0 as own ones,
    # -small-zeros-light) or both (each by the queue offset check from the write position the one before left,
    # dispatch_units, -small-zeros-mixed)
    if empty:
        raise _empty_refusal(empty)
    # a walk ending early (a damaged message) onto such a queue: checked with recheckReputOffsetFromCq (5.5.1 cut, 5.3.3
    # none: -small-zeros-kept-damaged) and without it with the committed position at the log's end, where the start's
    # reput dispatches nothing (-small-zeros-kept-damaged-norecheck); not a committed position inside the log
    if zeros and early and not config.recheckReputOffsetFromCq and rec.committed_pos < rec.process_offset:
        raise _empty_refusal(zeros, "and the walk ends early, the start's reput from the committed position inside "
                             "the log (modelled: at its end)")
    return zeros


def _cut(st: StoreLocation, files: list[Segment], first: int, end: int, early: bool, process_offset: int,
         rec: DLedgerRecovery, config: BrokerConfig, min_offset: int, on_disk: QueuesOnDisk | None,
         track: QueueTrack, after: np.ndarray | None) -> QueueCut:
    """``truncateDirtyLogicFiles(processOffset)`` on the queues the walk wrote (and those on disk), with where the
    start's reput then begins: :func:`store_format.dledger_crash_cut.cut_queues`."""
    return cut_queues(track, process_offset, cq_file_size=config.cq_file_size,
                      bcq_file_size=config.mapperFileSizeBatchConsumeQueue, ext=config.enableConsumeQueueExt,
                      recheck=config.recheckReputOffsetFromCq, min_offset=min_offset,
                      confirm_offset=max(rec.committed_pos, files[0].base), end=rec.process_offset,
                      on_disk=on_disk.max_after_cut(
                          process_offset, {**track.own_walked(), **track.mixed_walked(), **track.batch_walked()})
                      if on_disk is not None else None,
                      inside=lambda pos: _reput_inside(st, files, pos, rec.process_offset, rec.committed_pos,
                                                       config),
                      ext_file_size=config.mappedFileSizeConsumeQueueExt,
                      reset_emptied=no_file_resets_max(config.brokerVersion), after=after,
                      walk_end=end if early else -1,
                      tags=lambda offset, size, queue, light=False: _own_tags(st, files, offset, size, queue,
                                                                              config, light),
                      ext_held=on_disk.ext_end if on_disk is not None else None,
                      loaded_at=on_disk.loaded_at if on_disk is not None else None,
                      ext_earlier=earlier_counter(st, files, first, config, rec.committed_pos))


def _start_reput(files: list[Segment], first: int, end: int, rec: DLedgerRecovery, config: BrokerConfig,
                 min_offset: int, on_disk: QueuesOnDisk | None, accepted: Accepted, cut: QueueCut | None) -> int:
    """Where ``DefaultMessageStore.start``'s reput begins: after a cut, the cut's answer; a converted store's walk
    that queued nothing, in the old files (:func:`store_format.dledger_crash_old.reput_in_old_files`); with
    ``recheckReputOffsetFromCq``, :func:`store_format.restart_reput.start_reput_check`; else ``getConfirmOffset()``."""
    if cut is not None:
        return cut.reput
    if (in_old := reput_in_old_files(config, accepted, min_offset, files[0].base,
                                     on_disk is not None and on_disk.max_physic_offset >= 0)) is not None:
        return in_old   # a converted store's walk that queued nothing: from the old files (dledger_crash_old)
    if config.recheckReputOffsetFromCq:
        second = start_reput_check(config, min_offset, files[first].base, end, accepted, abnormal=True,
                                   batch_topics=config.batch_topics)
        assert second is not None   # 5.x with the switch: the second reput always runs
        return second.reput
    return max(rec.committed_pos, files[0].base)


def _written_anew(zeros: list[tuple[str, int]], cut: QueueCut | None, on_disk: QueuesOnDisk | None, reput: int,
                  walk_base: int) -> bool:
    """Whether the start's reput writes every queue anew (:attr:`DLedgerCrash.anew`): from before the walk's data
    file (``walk_base``) after the cut deleted every file of zeros the walk wrote, no other queue on disk; refused
    (one line) for the other shapes of a walk onto files of zeros it does not model (module docstring)."""
    if zeros and cut is not None and cut.inside_from >= 0:
        raise _empty_refusal(zeros, "and the start's reput is set inside an entry")
    # the reput from before the walk's data file after the cut deleted every file of zeros the walk wrote, no other
    # queue on disk: no queue keeps a unit, so it writes every queue anew from there (DLedgerCrash.anew); not others
    anew = bool(zeros) and reput < walk_base
    if anew and (cut is None or not set(zeros) <= cut.held_emptied or on_disk is not None
                 and bool((on_disk.consume_queues | on_disk.batch_queues) - set(zeros))):
        raise _empty_refusal(zeros, "and the start's reput begins before the walk's data file (modelled: only when "
                             "the cut deletes every such file and the store holds no other queue)")
    return anew


def _reput_from_walk(st: StoreLocation, start: Segment, end: int, walk_end: int, log_end: int, process_offset: int,
                     reput: int, reason: str, early: bool, accepted: Accepted, track: QueueTrack,
                     config: BrokerConfig, cut: QueueCut | None, past: np.ndarray | None) -> DLedgerCrash:
    """The start's reput from the walk's data files on (``ReputMessageService.doReput``): the ext units it puts
    again (``ConsumeQueueExt.put``), the walk's last indexed record indexed again (``IndexService.buildIndex``), the
    walk's records walked again before those past it (:attr:`DLedgerCrash.again`), the keys of the messages its check
    parsed inside an entry; the plan."""
    ext_again = ext_refused(cut.ext_again) if cut is not None else \
        ext_reput(track, reput, end) if config.enableConsumeQueueExt else ()
    if past is not None and ext_again and reput < end:   # the reput walks on past the walk's end: its own units there
        ext_again = ext_past(ext_again, past, track)
    reindex = accepted.last_indexed if config.writes_index_files and 0 <= reput <= accepted.last_indexed < log_end \
        else -1
    # the reput from before the walk's end walks the walk's records again, then those past it: the ext units and
    # keys it puts again go before theirs (DLedgerCrash.again), and the messages its check parsed where it was set
    # inside an entry before all of them, whether or not a key or ext unit is put again (the parsed messages' keys
    # go before those past the walk)
    again = early and log_end > end and reput < end and (bool(ext_again) or reindex >= 0 or (
        cut is not None and bool(cut.inside_records)))
    keys = inside_key_offsets(st, cut.inside_records if cut is not None else (), config)
    return DLedgerCrash(start.name, start.base, log_end, process_offset, reput, reason,
                        indexed_again(reindex, keys), cut, ext_again, walk_end=walk_end,
                        again=again, inside_keys=tuple(int(k) for k in keys))


def _empty_refusal(queues: list[tuple[str, int]], then: str = "") -> Exception:
    """The one line refusing a walk that writes ``queues``, consume queues whose files on disk hold no unit, in a shape
    not checked against the broker (``then``: which)."""
    names = ", ".join(f"{t}/{q}" for t, q in queues)
    return refusal(f"the walk writes {names}, whose consume queue files on disk hold no unit (ConsumeQueue.recover "
                   "keeps them empty: its first unit goes at 0 whatever its queue offset, no fillPreBlank units, "
                   "MappedFile.isFirstCreateInQueue)" + (f", {then}" if then else ""))


def _walk_ends_early(stop: int, reason: str, reput: int, rec: DLedgerRecovery) -> int:
    """Where the dispatch ends when the walk's message check fails at ``stop``, inside the log DLedger's recovery
    keeps (a record whose body CRC fails: DLedger's recovery reads no CRC): the walk dispatched up to ``stop``,
    and the start's reput (its message check reads no CRC) from ``reput`` walks to the log's end.  From at or
    before ``stop`` it dispatches every record from there (the walk's ones dropped, or put back where
    ``truncateDirtyLogicFiles`` cut them, the record that failed the check and those after it put as any:
    :func:`store_format.dledger_crash_cut.cut_queues` with ``after``); from the log's end (the committed position,
    without ``recheckReputOffsetFromCq``) nothing: the dispatch ends at ``stop``.

    From between ``stop`` and the log's end (the committed position inside the log) it dispatches the records from
    there to the log's end: those from ``stop`` to it are never dispatched (:attr:`DLedgerCrash.gap`: no queue
    unit, no index key, no ext unit), and each queue gets the units of the later ones at its write position
    (``ConsumeQueue.putMessagePositionInfo`` appends whatever queue offset a unit holds, logging "logic queue order
    maybe wrong"), below their own queue offsets by the records left out.
    """
    if reput >= rec.process_offset:
        return stop
    return rec.process_offset


def _walked_nothing(files: list[Segment], first: int, end: int, reason: str, rec: DLedgerRecovery,
                    config: BrokerConfig, min_offset: int, on_disk: QueuesOnDisk | None,
                    cp: Checkpoint, st: StoreLocation) -> DLedgerCrash:
    """The walk's message check ends it elsewhere than DLedger's recovery ends the log.  Modelled when it fails at
    the first entry of its start file (with ``forceVerifyPropCRC=true`` always: DLedger's encoder appends no
    ``__CRC32#`` property, :mod:`store_format.propcrc`): ``dledgerRecoverAbnormally`` dispatches nothing, its
    ``processOffset`` is that file's start.  No queue unit on disk (the rebuild's restart): ``truncateDirtyLogicFiles``
    does not run (the loaded queues' max -1) and the start's reput (whose check reads no CRC) dispatches everything
    from the committed position (``getConfirmOffset``), or with ``recheckReputOffsetFromCq`` the min offset
    ``min_offset`` (``DLedgerCommitLog.getMinOffset``), to the log's end.  Queues on disk (``verify``): the cut at
    ``processOffset`` and the reput after it, :func:`store_format.dledger_walked_nothing.reput_after_cut` (from past
    it: the records between dispatched by no one, :attr:`DLedgerCrash.gap`; one byte before it: :func:`_reput_inside`).

    On a store converted in place that min offset is the first old ``commitlog/`` file's: ``getData`` below
    ``dividedCommitlogOffset`` is the base ``CommitLog``'s (the old files, loaded whole: ``MappedFileQueue.load``
    leaves each one's positions at its size, and no recovery of them runs once DLedger has data files), and
    ``DLedgerCommitLog.checkMessageAndReturnSize`` hands a record whose second int is a message or blank magic code
    to the base check: the reput dispatches the old records, rolls at each old file's blank (the last one's written
    by ``setRecoverPosition`` at the first start after the switch; ``rollNextFile``) and so reaches the first data
    file at ``dividedCommitlogOffset``, then the entries to the log's end: every record from the min offset, as a
    rebuild of the store reads it.  A reput from the committed position inside the log starts at an entry (the
    committed entry's end): the queues then start with ``fillPreBlank`` units up to the first message it dispatches.

    Raises:
        UnsupportedConfigError: the walk dispatched something first; with queues on disk, what
            :func:`store_format.dledger_walked_nothing.reput_after_cut` refuses.
    """
    why = f"its message check ends the walk at {end} ({reason})"
    if end != files[first].base:
        raise refusal(f"{why}, DLedger's recovery the log at {rec.process_offset}")
    process_offset, cut = files[first].base, None
    if on_disk is not None and on_disk.max_physic_offset >= 0:   # the queues ConsumeQueue.recover loaded
        reput, cut = reput_after_cut(on_disk, process_offset, cp, config, min_offset=min_offset, confirm_offset=max(
            rec.committed_pos, files[0].base), log_end=rec.process_offset, why=f"{why}, where it starts",
            inside=lambda pos: _reput_inside(st, files, pos, rec.process_offset, rec.committed_pos, config))
    else:
        reput = max(min_offset, 0) if config.recheckReputOffsetFromCq else max(rec.committed_pos, files[0].base)
    past = on_disk is not None and on_disk.max_physic_offset >= 0 and reput > process_offset   # gap's records
    keys = inside_key_offsets(st, cut.inside_records if cut is not None else (), config)   # parsed at 2147483647
    return DLedgerCrash(files[first].name, process_offset if past else min(reput, rec.process_offset),
                        rec.process_offset, process_offset, reput, reason, cut=cut, walked_nothing=True,
                        walk_end=process_offset if past else -1, from_old_files=reput < files[0].base,
                        inside_keys=tuple(int(k) for k in keys))


def _own_tags(st: StoreLocation, files: list[Segment], offset: int, size: int, queue: tuple[str, int],
              config: BrokerConfig, light: bool = False) -> int | None:
    """The tags code of the own consume queue unit for ``queue`` of the record at ``offset`` (``size`` bytes) in the
    data files (:func:`store_format.dledger_inside_units.parsed_units`; ``light``: its own or light unit there),
    None when it has none there."""
    seg = next((f for f in files if f.base <= offset and offset + size <= f.end), None)
    if seg is None:
        return None
    with st.reader(seg) as r:
        def read(at: int, n: int) -> bytes:
            return bytes(r(at - seg.base, min(n, seg.end - at)))
        units = parsed_units(read, ((offset, offset + size),), config)
    return next((u.tags_code for u in units if (u.topic, u.queue_id) == queue and (u.own or light) and not u.batch),
                None)


def _reput_inside(st: StoreLocation, files: list[Segment], pos: int, end: int, committed: int,
                  config: BrokerConfig) -> tuple[int, tuple[tuple[int, int], ...], tuple[ParsedUnit, ...]]:
    """:func:`store_format.dledger_reput_inside.reput_inside_entry` on the data file holding ``pos``, or
    :func:`store_format.dledger_crash_old.reput_inside_old_file` on the old commitlog file (a converted store),
    with the consume queue units of the messages they say the reput dispatches
    (:func:`store_format.dledger_inside_units.parsed_units`; a blank's empty request, a record of no bytes, has none).

    Raises:
        UnsupportedConfigError: ``pos`` lies in no file, or what those refuse.
    """
    seg = next((f for f in files if f.base <= pos < f.end), None)
    old = next((f for f in st.segments if not f.dledger and f.base <= pos < f.end), None)
    if seg is None and old is not None:   # a converted store's old file (dledger_crash_old)
        with st.reader(old) as r:
            def read_old(at: int, n: int) -> bytes:
                return bytes(r(at - old.base, min(n, old.end - at)))
            gone_on, records = reput_inside_old_file(read_old, pos, file_base=old.base, file_size=old.size,
                                                     v55=config.brokerVersion == "5.5")
            return gone_on, records, parsed_units(read_old, tuple(r for r in records if r[1] > r[0]), config)
    if seg is None:
        raise refusal(f"its start's reput would begin at {pos}, below the data files (in the old commitlog files of "
                      "a store converted in place)")
    with st.reader(seg) as r:
        def read(at: int, n: int) -> bytes:
            return bytes(r(at - seg.base, min(n, seg.end - at)))
        gone_on, records = reput_inside_entry(read, pos, file_base=seg.base, file_size=seg.size,
                                              read_end=end if seg.base <= end < seg.end else seg.end,
                                              committed=committed, v55=config.brokerVersion == "5.5")
        return gone_on, records, parsed_units(read, tuple(r for r in records if r[1] > r[0]), config)


def walk_data_files(st: StoreLocation, files: list[Segment], first: int, config: BrokerConfig,
                    accepted: Accepted, track: QueueTrack | None = None) -> tuple[int, int, int, str]:
    """``dledgerRecoverAbnormally``'s walk from ``files[first]``: (where it ends, its last file's offset, the message
    sizes in that file, why it ends); ``accepted`` (and ``track``, when given) collect what it dispatched.  Its
    ``processOffset`` is that offset plus those sizes (no entry headers)."""
    k = first
    scratch = cl.Scratch()
    while True:
        seg = files[k]
        sizes = 0
        for window in checked_windows(st, seg, 0, config, scratch, check_crc=config.checkCRCOnRecover,
                                      prop_crc=config.forceVerifyPropCRC):
            res, stop, n_ok = window
            accepted.add(res, n_ok)
            if track is not None:
                track.add(res, n_ok, seg.base)
            sizes += int(res.rec[:n_ok, cl.R_TOTAL].sum()) if n_ok else 0
        if stop is not None:
            return stop.offset - ENTRY_HEADER_SIZE, seg.base, sizes, stop.reason
        if res.stop == cl.Stop.BLANK and k + 1 < len(files):
            k += 1
            continue
        if res.stop == cl.Stop.BLANK:
            return seg.end, seg.base, sizes, f"the blank that ends the last data file {seg.name}"
        at = seg.base + res.state.bufpos
        return at, seg.base, sizes, f"no entry the message check accepts at {at}"
