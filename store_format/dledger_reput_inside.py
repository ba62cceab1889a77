"""Where a 5.x DLedger broker's reput goes when its start sets it inside a DLedger entry.

After a crash, ``DefaultMessageStore.doRecheckReputOffsetFromCq`` (``recheckReputOffsetFromCq=true``) may set the
reput at ``dledgerRecoverAbnormally``'s short ``processOffset``, which lies inside an entry: on 5.3.3, where a queue
whose files the cut all deleted keeps it as its max (:mod:`store_format.dledger_crash_cut`; 5.5.1's
``ConsumeQueue.correctMinOffset`` sets that max to -1 before the start), or one byte before it, where a batch queue
the cut emptied leaves its max (``BatchConsumeQueue.truncateDirtyLogicFiles`` sets ``processOffset - 1``, and its
``correctMinOffset`` leaves it, on 5.3.3 and 5.5.1), or at 2147483647, where a queue the cut left with
``fillPreBlank`` units only leaves its max (their ``offset + size``), inside a log past 2 GiB.
``ReputMessageService.doReput`` (rocketmq-all 5.3.3 and rocketmq-store 5.5.1) then asks
``DLedgerCommitLog.getData(offset)``: the data file's bytes from that offset to its read position, cut at DLedger's
committed position (``truncate``: the buffer's limit too), or null at or past the committed position.  On them,
``DLedgerCommitLog.checkMessageAndReturnSize`` (``readBody`` and ``checkCRC`` false):

* the int 4 bytes in is ``CommitLog.BLANK_MAGIC_CODE`` or a message magic code: the base
  ``CommitLog.checkMessageAndReturnSize`` right there;
* else the int at the offset is DLedger's blank magic (-1): size 0, the reput moves to the next file
  (``rollNextFile``);
* else the base check 48 bytes further (a position past the limit throws, caught: a failure).

The base check fails (size -1) with 4 bytes or fewer left, a total size past the bytes left (5.5.1: or below 0),
and a magic code that is neither a message's nor a blank's; a blank gives size 0.  A failure of size -1 makes a
DLedger store's reput jump to the end of the bytes it was handed (``reputFromOffset += result.getSize() -
readSize``): the committed position, or the file's read position when that comes first.  Nothing is dispatched
on the way.  The broker's ``start()`` runs that reput to the committed position before it starts the DLedger
server (``commitLog.start()`` comes after ``doRecheckReputOffsetFromCq``), so the position it jumps to is the one
DLedger's recovery left, not a later one.

Modelled: an offset that is an entry's start or its message's start (the reput walks on from there, the message
check landing on the next entry), the jumps and rolls above, and messages the check parses, where the second int is
a message magic code (right there) or, where it is neither int above, 48 bytes further (the request's
``bufferSize`` the message's size + 48, by which ``doReput`` moves the reput, the buffer standing at the message's
end too): the broker dispatches each like any record (its unit from the queue, queue offset and tags code its bytes
give, the offset its PHYSICALOFFSET field's, the request's ``commitLogOffset``, wherever it starts; its keys by
``IndexService.buildIndex``'s ``endPhyOffset`` rule on that field) and checks on at its end by the rules above, so
:func:`reput_inside_entry` returns those records (from each message's start) with where the reput goes on, and the
rebuild reads them after the walk's records (:func:`store_format.store.then_pieces`; where the reput then goes on
before the walk's data file, between the walk's records and that reput's pass: ``then_pieces``' ``after``,
``tests/test_dledger_2gib_before_broker.py``, the ``-past-2gib-before-embedded`` stores;
``tests/test_dledger_2gib_broker.py``, the ``-embedded`` stores, and ``tests/test_dledger_2gib_inside_broker.py``,
``-embedded-48``, 5.5.1, at 2147483647; ``tests/test_dledger_crash_broker.py``, the small ``-emptied-*-embedded``
stores, at ``processOffset`` or one byte before it.  In the queues the walk wrote
``putMessagePositionInfo`` appends their units at the write positions the cut left, whatever their queue offsets
(:mod:`store_format.dledger_inside_units`, which says what it refuses; ``tests/test_dledger_2gib_queues_broker.py``).
A blank 48 bytes further (the base check's size 0, success): the request's
``bufferSize`` is 48, so ``doReput`` dispatches it, an empty request (``DispatchRequest(size, success)``: topic "",
queue 0, offset, size and tags code 0, no keys), and moves the reput and its read count 48 bytes on, while the
buffer stands past the blank's two ints, 56 bytes on, where the next check reads: a record of no bytes at the
blank among the returned ones (its unit: ``pipelines.restart_cut.apply_cut``), the checks after it 8 bytes ahead of
the reput.  That lag changes no outcome above: a parse within the bytes handed keeps the reput below the reput end
(``getReputEndOffset``), the loop runs one more check where the buffer has no 8 bytes left (a failure), and a jump
or roll goes to the same place (``tests/test_dledger_2gib_inside_broker.py``, ``-embedded-blank-48``, a message
read after the blank).  A check after the parsed records that lands on an entry's start reads the entry's magic
and size (neither a message magic code nor -1), so it runs the base check 48 bytes further, on that entry's
message, and the reput walks the entries on from there like any reput: it goes on at that entry's start, after
dispatching the parsed records (the rebuild reads them after the walk's records, then the records from that start
again: ``pipelines.restart``, :func:`store_format.store.then_pieces`; ``tests/test_dledger_2gib_inside_broker.py``,
``-embedded-to-entry``: a message ending at the last T9 entry's start, T9's cut unit put back and its keys indexed
again after the message's).  The 8 bytes of lag after a blank's empty request change nothing there either (the
reput's offset catches up at the end of the bytes handed).

An offset at or past the committed position cannot be derived from the store: ``getData`` gives nothing there, so
the reput waits for DLedger's first commit after the start, and the bytes it is then handed end at that commit (or
the file's read position).
How far that commit goes is decided by ``DLedgerEntryPusher.QuorumAckChecker`` (dledger 0.3.1.2, 0.3.2): the
median of the group's water marks, the followers' from their acks, the leader's own set to its ledger end once a
second (``updatePeerWaterMark``) or to each entry appended as leader (``waitAck``), so by the group's acks and by
the messages put after the start, which the store does not hold (a single-node group with no message put in its
first second as leader commits to the log's end in one step).  Refused in one line, saying so.
"""
from __future__ import annotations

from collections.abc import Callable

from .dledger import ENTRY_BLANK_MAGIC, ENTRY_HEADER_SIZE, ENTRY_MAGIC, OFF_ENTRY_POS
from .errors import UnsupportedConfigError
from .layout import (
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
)

__all__ = ["reput_inside_entry"]


_ROLL, _JUMP, _PARSE = "roll", "jump", "parse"


def reput_inside_entry(read: Callable[[int, int], bytes], pos: int, *, file_base: int, file_size: int,
                       read_end: int, committed: int, v55: bool) -> tuple[int, tuple[tuple[int, int], ...]]:
    """Where the reput set at ``pos`` (in the data file at ``file_base``, whose data ends at ``read_end``) goes
    on, and the records it dispatches on the way (``(start, end)`` commitlog offsets, in order; none when an entry
    or its message starts at ``pos``, where it goes on from ``pos`` itself): each message the check parses from
    ``pos``, where its second int is a message magic code or 48 bytes further, and each blank 48 bytes further, a
    record of no bytes at the blank (its empty request; module docstring), until a check that does not parse,
    whose jump or roll gives where it goes on, or one at an entry's start, where it goes on walking the entries.
    ``read(offset, n)``: up to ``n`` bytes of the log at ``offset``; ``committed``: DLedger's committed position
    after its recovery.

    Raises:
        UnsupportedConfigError: the cases the module docstring leaves out.
    """
    def i32(at: int) -> int | None:
        b = read(at, 4)
        return int.from_bytes(b, "big", signed=True) if len(b) == 4 else None

    def entry_at(at: int) -> bool:
        head = read(at, ENTRY_HEADER_SIZE) if at >= file_base else b""
        return len(head) == ENTRY_HEADER_SIZE and int.from_bytes(head[:4], "big", signed=True) == ENTRY_MAGIC \
            and int.from_bytes(head[OFF_ENTRY_POS:OFF_ENTRY_POS + 8], "big", signed=True) == at

    if entry_at(pos) or entry_at(pos - ENTRY_HEADER_SIZE):
        return pos, ()
    if pos >= committed:
        raise UnsupportedConfigError(
            f"a 5.x DLedger store whose last shutdown was not clean (abort file): the start's reput would begin "
            f"inside an entry, at {pos}, at or past DLedger's committed position {committed}: it then waits for "
            "DLedger's first "
            "commit after the start, and where it jumps depends on how far that commit goes (the group's acks and the "
            "messages put after the start: DLedgerEntryPusher.QuorumAckChecker), which the store does not say; let "
            "the broker recover")
    limit = min(committed, read_end)

    def base_check(at: int) -> str:
        """``CommitLog.checkMessageAndReturnSize`` at ``at``, the buffer ending at ``limit``."""
        if limit - at <= 4:
            return _JUMP
        total = i32(at)
        if total is None or (v55 and total < 0) or limit - at - 4 < total - 4 or limit - at < 8:
            return _JUMP
        magic = i32(at + 4)
        return _PARSE if magic in (MAGIC_V1, MAGIC_V2) else _ROLL if magic == MAGIC_BLANK else _JUMP

    records: list[tuple[int, int]] = []
    at = pos
    while True:   # doReput's loop over the bytes getData gave, one check per record
        if records and entry_at(at):   # an entry's start: the reput walks the entries on from there
            return at, tuple(records)
        if limit - at < 8:
            outcome = _JUMP
        elif i32(at + 4) in (MAGIC_BLANK, MAGIC_V1, MAGIC_V2):
            outcome = base_check(at)
            if outcome == _PARSE:   # a message right there: dispatched, the next check at its end
                size = i32(at)
                assert size is not None and size > 0
                records.append((at, at + size))
                at += size
                continue
        elif i32(at) == ENTRY_BLANK_MAGIC:
            outcome = _ROLL
        elif at + ENTRY_HEADER_SIZE > limit:
            outcome = _JUMP
        else:
            outcome = base_check(at + ENTRY_HEADER_SIZE)
            if outcome == _ROLL:   # a blank 48 bytes further: its empty request dispatched (bufferSize 48), the
                # reput 48 bytes on, the buffer past the blank's two ints, where the next check reads
                records.append((at + ENTRY_HEADER_SIZE, at + ENTRY_HEADER_SIZE))
                at += ENTRY_HEADER_SIZE + 8
                continue
            if outcome == _PARSE:   # a message 48 bytes further: dispatched (bufferSize its size + 48), then on
                size = i32(at + ENTRY_HEADER_SIZE)
                assert size is not None and size > 0
                records.append((at + ENTRY_HEADER_SIZE, at + ENTRY_HEADER_SIZE + size))
                at += ENTRY_HEADER_SIZE + size
                continue
        break
    if outcome == _ROLL:
        return at + file_size - at % file_size, tuple(records)
    return limit, tuple(records)
