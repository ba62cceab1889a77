"""A 5.x DLedger crash restart of a store converted in place whose start's reput begins in the old commitlog files.

Mirrors ``DefaultMessageStore.doRecheckReputOffsetFromCq`` (called by ``start`` with
``recheckReputOffsetFromCq=true``), ``DLedgerCommitLog.getMinOffset``, ``DLedgerCommitLog.getData`` and
``DLedgerCommitLog.checkMessageAndReturnSize`` (rocketmq-all-5.3.3 and rocketmq-store 5.5.1), after
``DLedgerCommitLog.dledgerRecoverAbnormally`` (:mod:`store_format.dledger_crash`):

* A walk that dispatched records but queued none (every record it accepted a prepared or rolled back transaction
  message: ``CommitLogDispatcherBuildConsumeQueue`` puts no unit for them, so no queue is created) leaves the
  consume queue table empty.  ``doRecheckReputOffsetFromCq`` then sets the reput at the commitlog's min offset
  (its start value, no queue above it), the first old ``commitlog/`` file's on a store converted in place.
* From there ``getData`` below ``dividedCommitlogOffset`` is the base ``CommitLog``'s over the old files, loaded
  whole (``MappedFileQueue.load``; no recovery of them runs once DLedger has a data file), and
  ``checkMessageAndReturnSize`` hands a record whose second int is a message or blank magic code to the base
  check: the reput dispatches the old records, rolls into the first data file at the last old file's blank
  (``setRecoverPosition`` wrote it at the first start after the switch) and walks the data files to the log's end,
  the walk's records a second time.  That is the reput-before-the-walk rule
  (:func:`store_format.dledger_crash_reput_before.reput_before_walk`, ``DLedgerCrash.before``): the old records' units
  are put (no queue holds one), ``IndexService.buildIndex`` skips every record below the index's ``endPhyOffset`` (the
  old records and the earlier data files' ones: the walk indexed later records) and puts the walk's last indexed
  record's keys again.
* Every queue is empty at the start too after a walk that queued nothing before a damaged message it ends at (its
  body CRC: DLedger's recovery, which reads none, keeps the log), and after a 5.5.1 queue cut
  (``truncateDirtyLogicFiles`` at the walk's short ``processOffset``) that leaves every queue the walk wrote with
  no file (``ConsumeQueue.correctMinOffset`` sets the max of each to -1; 5.3.3 keeps ``processOffset`` there,
  inside the data files): the reput begins at the min offset as above, and from the first data file on it is the
  reput-before-the-walk rule with a damaged walk or a cut (the damaged message and the rest dispatched after the
  walk's records; each emptied queue written anew from the reput's start, ``QueueCut.reset``; with ext files the
  units put back point at ext units counted from the queue's old records too:
  :func:`store_format.dledger_crash_before.earlier_own_units` reads the old files as the base ``CommitLog`` wrote
  them).
* A queue the 5.5.1 cut (``truncateDirtyLogicFiles``) leaves with ``fillPreBlank`` units only has the max
  2147483647 (their ``offset + size``), so ``doRecheckReputOffsetFromCq`` sets the reput there, which lies in an
  old file when they reach past 2 GiB.  ``getData`` there is the base ``CommitLog``'s: the old file's bytes from
  that offset to its read position, its size (loaded whole); ``DLedgerCommitLog.checkMessageAndReturnSize`` reads
  them as in a data file (:mod:`store_format.dledger_reput_inside`: the base check where the second int is a
  message or blank magic code, a roll on DLedger's blank magic, else the base check 48 bytes further).  A failure
  (size -1) makes ``doReput`` jump to the end of those bytes, the old file's end (``reputFromOffset +=
  result.getSize() - readSize``), and a roll (``DLedgerCommitLog.rollNextFile``) goes there too: the reput goes
  on at the next file, the next old one or, after the last, the first data file (``dividedCommitlogOffset``:
  :func:`reput_inside_old_file`).  The messages a check parses there (right there or 48 bytes further) and a
  blank's empty request 48 bytes further are dispatched first, as in a data file.  Where that is before the
  walk's data file (the next old file, when 2147483647 lies in an old file
  but the last; the first data file, when the walk started at a later one) the reput walks the records from there
  to the walk's data file first (the later old files' as the base ``CommitLog`` wrote them, rolling at their
  blanks), then the walk's again, putting the cut units back: the reput-before-the-walk rule after a cut
  (:func:`store_format.dledger_crash_reput_before.reput_before_walk`).  Each queue the walk wrote kept no unit past
  2147483647 (else the reput would start there), so it holds ``fillPreBlank`` units only (max 2147483647) or no
  file (5.5.1: max -1, written anew from the reput's start): the first drops every earlier record, past
  2147483647 but with a queue offset below its write position (``putMessagePositionInfo``'s queue offset check,
  "Build consume queue repeatedly": :func:`dropped_before`); the other queues put theirs, ``fillPreBlank`` units
  before the first.  Checked against the 5.5.1 broker both ways (an earlier data file with a T9 and T0 records; a
  last old file of T0 records).  A record of queue offset 0 there of a queue of the first kind is appended instead
  (``putMessagePositionInfo`` makes no queue offset check for it), after the ``fillPreBlank`` units, the walk's units
  then put by the same rule (``-past-2gib-before-t9-first``: replayed,
  :func:`store_format.dledger_crash_before.appended_before`); a message the check parsed where it was set for a
  queue of the second kind writes it anew from the parsed unit, the rest by the same rule, as the rebuild's own
  dispatch does (``-past-2gib-before-no-file``: :func:`store_format.dledger_crash_before.without_queues`).
* The same holds for a reput set at 2147483647 inside an entry of a data file before the walk's (a log past 2 GiB,
  not converted, whose walk starts at a later data file): ``DLedgerCommitLog.getData`` there gives that data
  file's bytes to its read position (its size: ``MmapFileList.load``; DLedger's recovery moves the last file's
  only), cut at DLedger's committed position, and ``checkMessageAndReturnSize``'s failure (or roll) sends the
  reput to that file's end (:mod:`store_format.dledger_reput_inside`): the next data file, before the walk's (the
  reput-before-the-walk rule after a cut, its records dropped by :func:`dropped_before` as above) or the walk's
  own (the reput from the walk's start: the cut units put back, nothing before).  With DLedger's committed
  position inside that data file past 2147483647 the bytes end there, so the reput jumps to it, an entry's end
  (``DLedgerMmapFileStore.updateCommittedIndex``: the committed entry's ``pos + size``), and has caught up with
  ``DLedgerCommitLog.getConfirmOffset`` (``getMaxOffset``, the committed position): ``doRecheckReputOffsetFromCq``'s
  wait ends, and only then does ``DefaultMessageStore.start`` start the DLedger server (``commitLog.start``).  Each
  commit after it ends at an entry's end too, and ``doReput`` (``isCommitLogAvailable`` against the confirm offset)
  walks the entries from there in order whatever the commits' steps: the reput-before-the-walk rule from the
  committed position, the rest of that data file's records first (:func:`inside_earlier_refusal`).  Checked
  against the 5.5.1 broker all three ways (``tests/test_dledger_2gib_before_broker.py``).

* A reput from the min offset whose check refuses a record in an old file (``dledger_crash_before._old_goes_on``)
  where the DLedger check 48 bytes further parses a message or a blank dispatches those first, as above, then goes
  on at the next file; modelled where the parsed messages' keys lie below the index's ``endPhyOffset``
  (:func:`old_parsed_keys`) and, after a queue cut, go to queues the walk did not write (:func:`old_parsed_queues`).

A walk that queued something sets the reput at the queues' largest offset, inside the data files (never here but
at 2147483647).
"""
from __future__ import annotations

from collections.abc import Callable

from .config import BrokerConfig
from .dledger_inside_index import inside_key_offsets
from .dledger_inside_units import parsed_units
from .dledger_reput_inside import reput_inside_entry
from .errors import UnsupportedConfigError
from .restart_reput import Accepted
from .store import Segment, StoreLocation

__all__ = ["dropped_before", "inside_earlier_refusal", "old_parsed_keys", "old_parsed_queues", "reput_in_old_files",
           "reput_inside_old_file"]


def reput_in_old_files(config: BrokerConfig, accepted: Accepted, min_offset: int, dividing: int,
                       queued_on_disk: bool) -> int | None:
    """Where the start's reput begins when ``doRecheckReputOffsetFromCq`` finds every queue empty after a walk that
    queued nothing (whether it ended at a damaged message or not), on a store converted in place: the min offset
    ``min_offset``, in the old files below ``dividing`` (``dividedCommitlogOffset``, the first data file's offset).
    None: not this case (no switch, a queue unit from the walk or on disk, no old files)."""
    if not config.recheckReputOffsetFromCq or queued_on_disk:
        return None
    if accepted.max_physic_offset(config.batch_topics) >= 0:
        return None
    reput = max(min_offset, 0)
    return reput if reput < dividing else None


def reput_inside_old_file(read: Callable[[int, int], bytes], pos: int, *, file_base: int, file_size: int,
                          v55: bool) -> tuple[int, tuple[tuple[int, int], ...]]:
    """Where the reput set at ``pos`` inside the old commitlog file at ``file_base`` goes on from (module
    docstring): that file's end, where ``doReput``'s jump or roll takes it; and the messages its check parses from
    ``pos`` on before that (``(start, end)`` commitlog offsets), which it dispatches.  ``read(offset, n)``: up to
    ``n`` bytes of the file at a commitlog offset.  The DLedger check's outcomes are
    :func:`store_format.dledger_reput_inside.reput_inside_entry`'s with the buffer ending at the file's end
    (``CommitLog.getData``: no committed position cuts it).

    Raises:
        UnsupportedConfigError: what :func:`store_format.dledger_reput_inside.reput_inside_entry` refuses, or old
            bytes that read as a DLedger entry's header at ``pos`` (not modelled).
    """
    end = file_base + file_size
    gone_on, records = reput_inside_entry(read, pos, file_base=file_base, file_size=file_size, read_end=end,
                                          committed=end, v55=v55)
    if gone_on != end:   # the old bytes there read as a DLedger entry's header (its magic, its own position)
        raise UnsupportedConfigError(
            f"a 5.x DLedger store whose last shutdown was not clean (abort file): the start's reput would begin at "
            f"{pos}, in an old commitlog file, whose bytes there read as a DLedger entry's header; not modelled, let "
            "the broker recover")
    return end, records



def inside_earlier_refusal(old: list[Segment], files: list[Segment], inside_from: int, reput: int,
                           committed: int) -> str:
    """Why a reput set at ``inside_from`` (2147483647) and going on at ``reput``, before the walk's data file (after a
    cut, :func:`store_format.dledger_crash_reput_before.reput_before_walk`), is not modelled, or "" when it is: set
    inside an old commitlog file (``old``: a store converted in place), where it goes on at that file's end, the next
    old file's start or the first data file's (module docstring); or inside an entry of an earlier data file (a log past
    2 GiB whose walk started at a later data file), where ``DLedgerCommitLog.getData`` gives that file's bytes to its
    read position (its size: ``MmapFileList.load``), cut at DLedger's committed position ``committed``, so a failed
    check (or a roll) goes on at that file's end, a data file's start of ``files``, or at ``committed`` when that lies
    in the file past ``inside_from``: an entry's end, where ``doReput`` then waits (``isCommitLogAvailable`` against
    ``DLedgerCommitLog.getConfirmOffset``) until the group commits more after ``commitLog.start``, and goes on from
    there as from the committed position (module docstring).  Refused: a reput gone on elsewhere."""
    if any(s.base <= inside_from < s.end for s in old) or any(f.base == reput for f in files) \
            or inside_from < reput == committed:
        return ""
    return (f"{inside_from} lying inside an entry of an earlier data file, where the reput's check goes on at "
            f"{reput}, neither that file's end nor DLedger's committed position {committed}")


def dropped_before(walked: list[tuple[str, int]], reset: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """The queues of ``walked`` (those the walk wrote) whose records before the walk's data file (in the later old
    files and the earlier data files) the reput gone on from an old file drops: every one but those the 5.5.1 cut
    left with no file (``reset``, written anew).
    The reput's start at 2147483647 leaves no queue of the walk a unit past it, so each kept only ``fillPreBlank``
    units up to the walk's first (its max 2147483647, below those records: ``ConsumeQueue.putMessagePositionInfo``
    goes on to its queue offset check) and those records' queue offsets lie below its write position ("Build
    consume queue repeatedly").  A record of queue offset 0 among them is appended instead (no queue offset check
    for it), the walk's units then put by the same rule: :func:`store_format.dledger_crash_before.appended_before`
    replays that queue."""
    return tuple(sorted(set(walked) - set(reset)))


def old_parsed_keys(st: StoreLocation, parsed: list[tuple[int, tuple[tuple[int, int], ...]]], accepted: Accepted,
                    config: BrokerConfig, refusal: Callable[[str], Exception]) -> None:
    """Refuses the records the reput's check parses 48 bytes past a record it refuses in an old file
    (``DLedgerCrash.old_parsed``) where one holds an index key that ``IndexService.buildIndex`` would put: its
    PHYSICALOFFSET field at or above the index's ``endPhyOffset`` after the walk (the walk's last indexed record,
    ``accepted.last_indexed``; none indexed: every key put).  Below it ``buildIndex`` skips them, as the rebuild's
    index does in reading order; ``verify``'s count of keys put again leaves them out."""
    for at, records in parsed:
        keys = inside_key_offsets(st, records, config)
        if len(keys) and (accepted.last_indexed < 0 or int(keys.max()) >= accepted.last_indexed):
            raise refusal(f"its start's reput, in an old commitlog file, refuses the record at {at} and parses "
                          f"a message 48 bytes further whose keys buildIndex puts (its PHYSICALOFFSET field "
                          f"{int(keys.max())} not below the index's endPhyOffset {accepted.last_indexed})")


def old_parsed_queues(st: StoreLocation, parsed: list[tuple[int, tuple[tuple[int, int], ...]]],
                      walked: tuple[tuple[str, int], ...], config: BrokerConfig,
                      refusal: Callable[[str], Exception]) -> None:
    """After a queue cut, refuses the records of ``parsed`` (``DLedgerCrash.old_parsed``) with a unit for a queue the
    walk wrote (``walked``): the cut's units put back, their ext addresses and the units appended before the walk's
    data file count that queue's records from the reput's start
    (:func:`store_format.dledger_crash_before.earlier_own_units`), which leaves the parsed ones out.  A queue the
    walk did not write takes their units (and ext units) as the rebuild's dispatch puts them, in reading order."""
    holding = set(walked)
    for at, records in parsed:
        seg = next(s for s in st.segments if s.base <= at < s.end)
        with st.reader(seg) as r:
            def read(pos: int, n: int, seg: Segment = seg, r: Callable[[int, int], bytes] = r) -> bytes:
                return bytes(r(pos - seg.base, min(n, seg.end - pos)))
            units = parsed_units(read, tuple((a, b) for a, b in records if b > a), config)
        mine = sorted({f"{u.topic}/{u.queue_id}" for u in units if (u.topic, u.queue_id) in holding})
        if mine:
            raise refusal(f"its start's reput, in an old commitlog file, refuses the record at {at} and parses a "
                          f"message 48 bytes further for {', '.join(mine)}, a queue the walk wrote and the cut "
                          "changed (its units put back counted without it)")
