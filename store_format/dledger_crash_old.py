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
  against the 5.5.1 broker all three ways (``tests/test_dledger_2gib_before_broker.py``).  Where the check there
  parses well-formed messages the last of which ends exactly at the next entry's start, it reads that entry's magic
  and size (neither a message magic code nor DLedger's blank magic), runs the base check 48 bytes further, on that
  entry's message, and walks the entries on from there (:mod:`store_format.dledger_reput_inside`): the
  reput-before-the-walk rule from that entry's start, after the parsed messages, the rest of that data file's
  records first, as from a committed position there (checked against the 5.5.1 broker,
  ``tests/test_dledger_2gib_before_to_entry_broker.py``, ``-past-2gib-before-embedded-to-entry``).

* A reput from the min offset whose check refuses a record in an old file (``dledger_crash_before._old_goes_on``)
  where the DLedger check 48 bytes further parses a message or a blank dispatches those first, as above, then goes
  on at the next file: ``IndexService.buildIndex`` puts a parsed message's keys at its PHYSICALOFFSET field where
  that is not below the index's ``endPhyOffset`` and ``IndexFile.putKey`` moves ``endPhyOffset`` there
  (:func:`old_parsed_keys`, after a walk that indexed nothing too: the old records before the refused one first); after
  a queue cut, a parsed message goes to a queue the walk did not write, or to one
  the 5.5.1 cut left with no file, which ``ConsumeQueue.putMessagePositionInfo`` writes anew in reput order
  (:func:`old_parsed_queues`).

A walk that queued something sets the reput at the queues' largest offset, inside the data files (never here but
at 2147483647).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .config import BrokerConfig
from .dledger_crash_cut import QueueCut
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
                           committed: int, parsed: tuple[tuple[int, int], ...] = ()) -> str:
    """Why a reput set at ``inside_from`` (2147483647) and going on at ``reput``, before the walk's data file (after a
    cut, :func:`store_format.dledger_crash_reput_before.reput_before_walk`), is not modelled, or "" when it is: set
    inside an old commitlog file (``old``: a store converted in place), where it goes on at that file's end, the next
    old file's start or the first data file's (module docstring); or inside an entry of an earlier data file (a log past
    2 GiB whose walk started at a later data file), where ``DLedgerCommitLog.getData`` gives that file's bytes to its
    read position (its size: ``MmapFileList.load``), cut at DLedger's committed position ``committed``, so a failed
    check (or a roll) goes on at that file's end, a data file's start of ``files``, or at ``committed`` when that lies
    in the file past ``inside_from``: an entry's end, where ``doReput`` then waits (``isCommitLogAvailable`` against
    ``DLedgerCommitLog.getConfirmOffset``) until the group commits more after ``commitLog.start``, and goes on from
    there as from the committed position (module docstring); or, after messages its check parsed there (``parsed``:
    ``QueueCut.inside_records``) the last of which ends at ``reput``, an entry's start in that file, from which it
    walks the entries on (module docstring).  Refused: a reput gone on elsewhere (an entry's start after a blank's
    empty request)."""
    if any(s.base <= inside_from < s.end for s in old) or any(f.base == reput for f in files) \
            or inside_from < reput == committed or (bool(parsed) and inside_from < reput == parsed[-1][1]):
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


def old_parsed_keys(st: StoreLocation, inside: np.ndarray, parsed: list[tuple[int, tuple[tuple[int, int], ...]]],
                    config: BrokerConfig) -> tuple[np.ndarray, tuple[tuple[int, int, int], ...]]:
    """The PHYSICALOFFSET fields of the index keys of the records the reput's check parses 48 bytes past a record it
    refuses in an old file (``DLedgerCrash.old_parsed``), after ``inside`` (those of the messages parsed where the
    reput was set), in put order; and per refused record (``DLedgerCrash.old_parsed_runs``) its offset, where the
    reput goes on (that old file's end) and how many of those keys it parsed there.  ``IndexService.buildIndex``
    takes each request whose ``commitLogOffset`` (that field) is not below the last index file's ``endPhyOffset``
    and ``IndexFile.putKey`` moves ``endPhyOffset`` to it (:func:`store_format.dledger_inside_index.keys_after_parsed`),
    in reput order: the records from the reput's start up to the first refused one, its parsed keys, the next file's
    records up to the next refused one, and so on.  After a walk that indexed something, ``endPhyOffset`` lies at the
    walk's last indexed record, above every old one: only a parsed key at or above it is put, and then the records
    after it in reput order below the new ``endPhyOffset`` go unindexed, the walk's last indexed record too
    (:func:`store_format.dledger_inside_index.indexed_again`).  After a walk that indexed nothing (its records rolled
    back or keyless) and an index the crash start deleted, ``endPhyOffset`` starts at 0: the old records before the
    refused one are indexed first, then a parsed key not below the last of them, then the later records not below it
    (checked against the 5.5.1 and 5.3.3 brokers: ``tests/test_dledger_crash_old_48_unindexed_broker.py``).  The
    rebuild's index applies the same rule in reading order; ``verify`` follows these runs
    (``pipelines.verify.restart_index.predict_index``)."""
    old = [inside_key_offsets(st, records, config) for _, records in parsed]
    runs = tuple((at, next(s.end for s in st.segments if s.base <= at < s.end), len(k))
                 for (at, _), k in zip(parsed, old))
    return np.concatenate([inside, *old]), runs


def old_parsed_queues(st: StoreLocation, parsed: list[tuple[int, tuple[tuple[int, int], ...]]],
                      walked: tuple[tuple[str, int], ...], cut: QueueCut, config: BrokerConfig,
                      refusal: Callable[[str], Exception]) -> tuple[tuple[str, int], ...]:
    """After a queue cut, refuses the records of ``parsed`` (``DLedgerCrash.old_parsed``) with a unit for a queue the
    walk wrote (``walked``) that the 5.5.1 cut did not leave with no file (``QueueCut.reset``, max -1:
    ``ConsumeQueue.correctMinOffset``), or a batch queue's, or with the reput set at 2147483647 (where such a queue
    drops the earlier records by their queue offsets: :func:`dropped_before`).  A queue of ``reset`` is written anew
    from the reput's start: ``putMessagePositionInfo`` appends each unit at the write position in reput order (a
    parsed one at its PHYSICALOFFSET field, after the records before the refused one; ``putMessagePositionInfoWrapper``
    its ext unit first), so the cut's put-backs and their ext addresses count it
    (:func:`store_format.dledger_crash_before.earlier_own_units`), as the rebuild's own dispatch of that queue does.  A
    queue the walk did not write takes their units (and ext units) as the rebuild's dispatch puts them, in reading
    order.  Returns, per queue of ``reset`` (``"topic/queue id"``), the parsed own units put there
    (``DLedgerCrash.old_parsed_kept``)."""
    holding = set(walked) - (set(cut.reset) if cut.inside_from < 0 else set())
    kept: dict[str, int] = {}
    for at, records in parsed:
        seg = next(s for s in st.segments if s.base <= at < s.end)
        with st.reader(seg) as r:
            def read(pos: int, n: int, seg: Segment = seg, r: Callable[[int, int], bytes] = r) -> bytes:
                return bytes(r(pos - seg.base, min(n, seg.end - pos)))
            units = parsed_units(read, tuple((a, b) for a, b in records if b > a), config)
        mine = sorted({f"{u.topic}/{u.queue_id}" for u in units if (u.topic, u.queue_id) in holding or u.batch and
                       (u.topic, u.queue_id) in set(walked)})
        if mine:
            raise refusal(f"its start's reput, in an old commitlog file, refuses the record at {at} and parses a "
                          f"message 48 bytes further for {', '.join(mine)}, a queue the walk wrote and the cut "
                          "changed but did not leave with no file, or a batch queue (its units put back counted "
                          "without it)")
        for u in units:
            if u.own and not u.batch and (u.topic, u.queue_id) in set(walked):
                kept[f"{u.topic}/{u.queue_id}"] = kept.get(f"{u.topic}/{u.queue_id}", 0) + 1
    return tuple(sorted(kept.items()))
