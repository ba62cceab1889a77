"""A 5.x DLedger crash restart whose ``dledgerRecoverAbnormally`` walk dispatches nothing, with the consume queues
on disk (``verify`` predicts the next start on the store as it is): the queue cut and where the start's reput begins.

Mirrors (rocketmq-all-5.3.3 and rocketmq-store 5.5.1): ``DefaultMessageStore.recover`` runs ``ConsumeQueue.recover``
(loading the queues) before ``DLedgerCommitLog.dledgerRecoverAbnormally``, whose message check fails at the first
entry of the data file it starts at (``forceVerifyPropCRC=true``: DLedger's encoder appends no ``__CRC32#``
property): it dispatches nothing onto the loaded queues and its ``processOffset`` is that file's start.
``truncateDirtyLogicFiles(processOffset)`` runs when the ``maxPhyOffsetOfConsumeQueue`` passed in reaches it
(5.3.3: ``getMaxPhyOffsetInConsumeQueue``, the loaded queues' largest max; 5.5.1: ``getDispatchFromPhyOffset(false)``,
the checkpoint's ``logicsPhysicalOffset``, then ``ConsumeQueueStore.truncateDirty``'s own check of the loaded queues'
largest max) and cuts every queue's units at or past it (``ConsumeQueue.truncateDirtyLogicFiles``:
:attr:`store_format.dledger_crash_cut.QueuesOnDisk.max_after_cut` with no walked unit gives each queue's max then; a
queue left with no file keeps ``processOffset`` as its max on 5.3.3 and gets -1 on 5.5.1 from
``recoverTopicQueueTable``'s ``correctMinOffset``).  ``DefaultMessageStore.start``'s reput then begins at
``getConfirmOffset`` (DLedger's committed position) or, with ``recheckReputOffsetFromCq``
(``doRecheckReputOffsetFromCq``), at the queues' largest max after the cut (before it, when nothing is cut), at least
``DLedgerCommitLog.getMinOffset``, and dispatches every record from there to the log's end by
``ConsumeQueue.putMessagePositionInfo``'s rule: a unit at or below its queue's max dropped, the others appended at the
write position.  From at or before ``processOffset`` every cut unit comes back; from past it the records between are
dispatched by no one (:attr:`store_format.dledger_crash_plan.DLedgerCrash.gap`), their cut units lost.

A batch queue the cut left with no file has the max ``processOffset - 1``
(``BatchConsumeQueue.truncateDirtyLogicFiles``, which its ``correctMinOffset`` leaves, 5.3.3 and 5.5.1), the largest
when every consume queue keeps a unit below the walk's data file (or, on 5.5.1, gets -1): the reput is set on the last
byte of the data file before, inside the blank DLedger ends a full file with (``MmapFileList.preAppend``: at least 8
bytes; in a store converted in place whose walk starts at the first data file, the last old ``commitlog/`` file's
last byte).  ``DLedgerCommitLog.getData`` hands that one byte (``DefaultMmapFile.selectMappedBuffer`` to the file's
read position, its size), its ``checkMessageAndReturnSize`` fails on the first ``getInt`` (caught: size -1), and
``ReputMessageService.doReput`` jumps to the end of the bytes handed, ``processOffset`` (``reputFromOffset +=
result.getSize() - readSize``), from which it dispatches as above: nothing parsed, every cut unit back
(:func:`store_format.dledger_reput_inside.reput_inside_entry`, through ``inside``).

A consume queue the cut left with ``fillPreBlank`` units only has the max 2147483647 (their ``offset + size``), which on
a log past 2 GiB lies inside an entry: ``getData`` hands the bytes from there to the file's read position, cut at
DLedger's committed position (``truncate``). ``checkMessageAndReturnSize`` there
(:func:`store_format.dledger_reput_inside.reput_inside_entry`) may parse well-formed messages the bytes happen to form:
``doReput`` dispatches each (``doDispatch``) onto the queues as the cut left them and checks on at its end. Where a
check then fails (size -1) it jumps to the end of the bytes handed (``reputFromOffset += result.getSize() - readSize``):
the log's end (2147483647 in the last data file, the whole log committed), where it dispatches nothing more, or
DLedger's committed position before it, where it waits (``isCommitLogAvailable``) until the group commits the rest after
``commitLog.start`` and then walks the entries from there like any reput. Either way the records from ``processOffset``
to where it goes on are dispatched by no one, their cut units lost
(:attr:`store_format.dledger_crash_plan.DLedgerCrash.gap`); the parsed messages are ``QueueCut.inside_records`` and
their keys ``DLedgerCrash.inside_keys`` (``IndexService.buildIndex`` puts each at or above ``endPhyOffset``). Modelled
for parsed messages whose own consume queue units go to queues the store holds no file of
(``ConsumeQueue.putMessagePositionInfo`` on a new queue: a unit at its queue offset's place, ``fillPreBlank`` units
before it; the rebuild's own dispatch) or to queues a file of which the cut leaves (``putMessagePositionInfo`` from
the write position and max ``truncateDirtyLogicFiles`` left: a unit ending at or below the max dropped, one whose
queue offset * 20 lies below the write position dropped unless it is 0, any other appended at the write position,
whatever its queue offset: :func:`_placed_on_disk`, ``QueueCut.inside_placed``) or that the cut left no file of
(its max -1 on 5.5.1, ``processOffset`` on 5.3.3, whose ``correctMinOffset`` with no file keeps what the cut set; the
unit ends past either: ``getLastMappedFile`` creates the first file where the queue offset falls, ``fillPreBlank``
units before the unit), ext files or not
(``putMessagePositionInfoWrapper``: ``ConsumeQueueExt.put`` first, whatever becomes of the unit, in a held queue after
the ext files' end ``ConsumeQueue.recover`` left, which the cut, a file staying, does not move); and, their properties
also naming light queues, the light units (``putMessagePositionInfoWrapper`` once the own unit is put or dropped:
``MultiDispatchUtils.checkMultiDispatchQueue``, then ``multiDispatchLmqQueue``'s ``putMessagePositionInfo`` on each,
queue id 0 for a ``%LMQ%`` name with ``enableLmq``, at its ``INNER_MULTI_QUEUE_OFFSET``; no ext unit, no index key):
for a light queue the store holds no file of, a new queue's first file where that falls, ``fillPreBlank`` units
before the unit, the rebuild's own dispatch's like a new queue's own unit; for one a file of which the cut leaves
(``ConsumeQueueStore.truncateDirty`` cuts every loaded queue, light ones too, and ``findConsumeQueue`` hands the
loaded one), the same rule as an own unit's on a held queue from the write position and max the cut left
(:func:`_placed_on_disk`; the light queue offset ``recoverOffsetTable`` puts in the queue offset table is for later
puts, the dispatch takes the message's property), and for one the cut left no file of (5.5.1: ``recoverOffsetTable``
runs ``correctMinOffset`` on every loaded queue, light ones too: max -1; 5.3.3: the max ``processOffset`` the cut set,
which its ``correctMinOffset`` with no file leaves, as an own queue's), the same rule as an own unit's on such a
queue (a first file where the light queue offset falls, ``fillPreBlank`` units before the unit), ext files or not
(with them, the light unit holds the dispatch request's tags code, not the ext address the wrapper put the own unit's
ext unit at, and the light queue gets no ext unit: the running broker wrote none for it either).  The records the
reput dispatches after them lie at or past the committed position, where the reference rebuild ``verify`` compares
with stops, so nothing there meets them. Checked against the 5.5.1 broker
(``DLEDGER_2GIB=1``: ``tests/test_dledger_walked_nothing_inside_broker.py``, nothing parsed, to the log's end;
``tests/test_dledger_walked_nothing_2gib_broker.py``, a T5 message parsed then the log's end, the same then the
committed position at the last T9 entry's start, and that jump with nothing parsed;
``tests/test_dledger_walked_nothing_2gib_parsed_broker.py``, that T5 message also put to ``%LMQ%q1`` at light queue
offset 2; ``tests/test_dledger_walked_nothing_2gib_light_disk_broker.py``, the same with ``%LMQ%q1`` written before the
crash, the cut leaving its first unit: appended at queue byte 20;
``tests/test_dledger_walked_nothing_2gib_light_emptied_broker.py``, the same with ``%LMQ%q1``'s only unit past the
cut, which deletes its file: a new file at 0, 2 ``fillPreBlank`` units, the light unit at 40;
``tests/test_dledger_walked_nothing_2gib_light_ext_broker.py``, those two with ext files: the same units, tags code 0,
no ext file for ``%LMQ%q1``;
``tests/test_dledger_walked_nothing_2gib_blank_broker.py``, a blank's header 48 bytes past 2147483647 and the T5
message after it: the check 48 bytes on reads the blank (size 0, success, ``bufferSize`` 48), so ``doReput``
dispatches its empty request (topic "" queue 0, a new queue: one unit of zeros, no key; a record of no bytes among
``QueueCut.inside_records``, written by ``pipelines.restart_cut.apply_cut``) and checks on 8 bytes ahead of the
reput, parses the message and jumps, to the log's end or the committed position, where the lag leaves it all the same
(``reputFromOffset += result.getSize() - readSize``);
``tests/test_dledger_walked_nothing_2gib_more_broker.py``, a T0 message parsed, its queue offset past T0's write
position, appended there, or 1, dropped, and with ext files those two and the T5 message; a T7 message of queue
offset 5 whose planted file the cut deleted; on the 5.3.3 broker too,
``tests/test_dledger_walked_nothing_2gib_533_broker.py``, T7's max after the cut ``processOffset``, and the
``-embedded-light-emptied`` store's ``%LMQ%q1``, its max after the cut ``processOffset`` too, the light unit at
queue byte 40 after 2 ``fillPreBlank`` units); 5.3.3's
``doReput``, ``DLedgerCommitLog.getData`` and ``putMessagePositionInfo`` read the same (and
``multiDispatchLmqQueue``). Where 2147483647 lies in a data file before the last (the walk starting there: the
checkpoint's ``logicsPhysicalOffset`` below the next one's first message) and the committed position past that file,
``getData`` hands the bytes up to the file's read position, its end: a failed check jumps there, and DLedger's blank
magic (-1, ``MmapFileList.BLANK_MAGIC_CODE``: size 0, success) rolls there (``DLedgerCommitLog.rollNextFile``), the
next data file's start, from which the reput walks the entries like any reput onto the queues as the cut left them,
the records from ``processOffset`` to there dispatched by no one (``DLedgerCrash.gap``); modelled, ext files or not,
where the parsed messages' units appended to queues the store holds files of end at or before that start (the next
file's units then all appended after them; ``tests/test_dledger_walked_nothing_2gib_next_file_broker.py``: a failed
check, a T5 message parsed first, a T0 message parsed first (its unit at T0's write position, the next file's after
it), the roll, and the jump with the committed position one entry behind the log's end: T9's cut units and T0's of
the next file appended at their write positions; with ext files, the plain jump and the T0 message: each ext unit put
after the ext end ``recover`` left, the parsed one's first) or, an own unit of an ordinary queue, past it: that
queue's max is then the unit's end (its PHYSICALOFFSET field, which the check does not compare with where the
message lies, + its size), and ``putMessagePositionInfo`` drops the queue's units of the records from the next file's
start that end at or below it (``offset + size <= maxPhysicOffset``), appending the rest after the parsed unit
(:func:`_maxes_past`, ``QueueCut.drops_to``; ``putMessagePositionInfoWrapper`` puts each dropped one's ext unit all
the same: ``tests/test_dledger_walked_nothing_2gib_next_file_past_broker.py``, a T0 unit ending where the next
file's fifth T0 unit ends, which is dropped too, one ending past the last T9 record's start, every T0 unit there
dropped and ``K9`` below the index's ``endPhyOffset``, and the first with ext files). The same where DLedger's
committed position lies in that data file past 2147483647 (``getData`` cuts the bytes there, the failed check
jumps there, an entry's start, and the reput walks on from it once the group commits), and where the check, after
parsed messages, meets an entry's start in that file: the reput walks the entries on from there like any reput
(``DLedgerCommitLog.checkMessageAndReturnSize`` reads the entry's magic and size there and runs the base check 48
bytes further, on the entry's message: :mod:`store_format.dledger_reput_inside`), the records from
``processOffset`` to there dispatched by no one, a parsed own unit ending past it dropping its queue's units there
as above (``tests/test_dledger_walked_nothing_2gib_in_file_broker.py``:
``-committed-in-file``, ``-to-entry``, a T5 message ending at the next T0 entry's start, and ``-to-entry-t0-past``,
that message for T0 ending where the third T0 record from there ends). Refused, one line each: going on elsewhere
(another data file's end; an entry's start with no parsed message; no broker case), a parsed light unit or batch
queue unit appended to a queue the store holds files of that ends past where it goes on before the committed
position (not checked against a broker), 2147483647 at or before ``processOffset`` (the reput before the walk's data
file).
A parsed message for a batch queue is modelled: for one the store holds no file of, ``findOrCreateConsumeQueue``
creates a ``BatchConsumeQueue`` (its max physical offset -1) and ``putBatchMessagePositionInfo`` appends the unit at
its start, no ``fillPreBlank`` units whatever its ``INNER_BASE`` (the rebuild's own dispatch of a new batch queue);
for one on disk, from the write position and max ``BatchConsumeQueue.truncateDirtyLogicFiles`` left (a file staying:
after its units below ``processOffset``, the max the start of the last; none: ``processOffset - 1`` and a first file
at 0), no queue offset check (:func:`_placed_on_disk`). Broker cases
``tests/test_dledger_walked_nothing_2gib_batch_broker.py`` (``INNER_BASE`` 7, ``INNER_NUM`` 3): a new B5/0, the unit
at 0; B5/0 planted with one unit below the cut, the unit appended at 46; planted with one past it, the file deleted,
a new one at 0, the unit there.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .config import BrokerConfig
from .consumequeue_recovery import no_file_max, no_file_resets_max
from .dledger_crash_after import refusal
from .dledger_crash_cut import BLANK_MAX, Inside, QueueCut, QueuesOnDisk
from .dledger_inside_mixed import OnDiskCut
from .dledger_inside_state import ParsedUnit, Placed, WalkedQueue
from .dledger_inside_units import place_inside
from .dledger_inside_walked import emptied_past_only, held_past_only
from .dledger_queue_track import UNIT_COLUMNS
from .filedump.checkpoint import Checkpoint

__all__ = ["reput_after_cut"]


def reput_after_cut(on_disk: QueuesOnDisk, process_offset: int, cp: Checkpoint, config: BrokerConfig, *,
                    min_offset: int, confirm_offset: int, log_end: int, why: str,
                    inside: Inside | None = None) -> tuple[int, QueueCut | None]:
    """Where the start's reput begins after a walk that dispatched nothing onto the queues ``on_disk`` (module
    docstring), and the cut ``truncateDirtyLogicFiles`` made at ``process_offset`` (None: none): its ``reput``, and
    ``held_emptied`` the queues it left with no file (no lost units listed: a reput past ``process_offset`` leaves
    them out as :attr:`store_format.dledger_crash_plan.DLedgerCrash.gap`'s).  ``confirm_offset``: the committed position
    (at least the first data file's offset), ``log_end``: where DLedger's recovery ends the log.  ``inside``: where
    a reput set at an offset goes on and what its check parses there
    (:func:`store_format.dledger_crash._reput_inside`): a reput set one byte before ``process_offset`` goes on at
    ``process_offset`` and one set at 2147483647 inside the log where ``inside`` says (to the log's end or the
    committed position before it, after the messages its check parsed there, ``QueueCut.inside_records``;
    ``QueueCut.inside_from`` the offset it was set at, ``QueueCut.inside_placed`` where their units go in the queues
    a file of which the cut leaves, :func:`_placed_on_disk`; module docstring, :func:`_parsed_refusal`; or at the
    end of the data file it is set in, the next one's start, or an entry's start there after parsed messages, before
    the committed position, where it walks on: ``QueueCut.drops_to``, per queue a parsed own unit appended to ends
    past there, the max it leaves, :func:`_maxes_past`).

    Raises:
        UnsupportedConfigError: with ``recheckReputOffsetFromCq``, a reput set by a queue the cut left inside the log
            (``why`` leads the text), without ``inside``, or where ``inside`` refuses or says it parses a record or
            goes on elsewhere than modelled: one byte before ``process_offset`` (a batch queue left with no file;
            modelled: at ``process_offset``, none parsed) or at 2147483647 (a queue left with ``fillPreBlank`` units
            only) inside a log past 2 GiB (what :func:`_parsed_refusal` says), or before the committed position after
            a parsed light or batch unit appended to a queue on disk that ends past where it goes on.
    """
    v55 = config.brokerVersion == "5.5"
    truncates = on_disk.max_physic_offset >= process_offset and (not v55 or cp.logics_physical_offset >= process_offset)
    after = on_disk.max_after_cut(process_offset, {}) if truncates else {}
    # each queue's max and write position after the cut and recoverTopicQueueTable (a queue left with no file:
    # no_file_max, a batch queue's, one of on_disk.batch_queues, kept)
    resets = no_file_resets_max(config.brokerVersion)
    loaded = {n: (v if stays else no_file_max(v, resets=resets, batch=n in on_disk.batch_queues), w)
              for n, (v, stays, w, _d) in after.items()}
    inside_from = -1
    inside_records: tuple[tuple[int, int], ...] = ()
    placed = Placed()
    drops_to: dict[tuple[str, int], int] = {}
    if not config.recheckReputOffsetFromCq:
        reput = confirm_offset
    else:
        tops = [v for v, _w in loaded.values()] if truncates else [on_disk.max_physic_offset]
        reput = max(min_offset, 0, *tops)
        if truncates and reput == process_offset - 1 and inside is not None:
            goes_on, records, _units = inside(reput)   # the file's last byte: its check fails, the reput jumps
            if goes_on != process_offset or records:
                raise refusal(f"{why}: the start's reput, set at {reput} (a batch queue truncateDirtyLogicFiles left "
                              f"with no file), goes on at {goes_on} after parsing {len(records)} record(s) there "
                              f"(modelled: at processOffset {process_offset}, none parsed)")
            inside_from, reput = reput, goes_on
        elif truncates and BLANK_MAX == reput < log_end and inside is not None:
            goes_on, records, units = inside(reput)   # inside an entry past 2 GiB: its check there
            file_end = reput - reput % config.mappedFileSizeCommitLog + config.mappedFileSizeCommitLog
            if why_not := _parsed_refusal(goes_on, reput=reput, process_offset=process_offset,
                                          confirm_offset=confirm_offset, log_end=log_end, file_end=file_end,
                                          parsed=bool(records)):
                raise refusal(f"{why}: the start's reput, set at {reput} (a queue truncateDirtyLogicFiles left with "
                              f"fillPreBlank units only), inside an entry, goes on at {goes_on} after parsing "
                              f"{len(records)} record(s) there ({why_not})")
            inside_from, reput, inside_records = reput, goes_on, records
            placed = _placed_on_disk(units, after, config.cq_file_size, inside_from,
                                     config.mappedFileSizeConsumeQueueExt if config.enableConsumeQueueExt else 0,
                                     on_disk.ext_end, no_file_max(process_offset, resets=resets),
                                     bcq_file_size=config.mapperFileSizeBatchConsumeQueue)
            if goes_on < confirm_offset:   # the next data file's start or an entry's: it walks the entries on
                drops_to = _maxes_past(placed, units, goes_on)
                if refused := sorted(f"{t}/{q}" for (t, q), mx in drops_to.items() if mx < 0):
                    raise refusal(f"{why}: the start's reput, set at {inside_from} (a queue truncateDirtyLogicFiles "
                                  f"left with fillPreBlank units only), inside an entry, goes on at {goes_on}, before "
                                  f"DLedger's committed position {confirm_offset}, after parsing a message whose "
                                  f"light or batch unit, appended to {refused[0]}, a queue the store holds files of, "
                                  "ends past it (its max would drop its units of the records there: not checked; "
                                  "modelled: an own unit of an ordinary queue)")
        elif (truncates and reput == process_offset - 1) or BLANK_MAX == reput < log_end:
            raise refusal(f"{why}: the start's reput would begin at {reput} (a queue truncateDirtyLogicFiles left with "
                          "no file or with fillPreBlank units only), inside an entry")
    if not truncates:
        return reput, None
    return reput, QueueCut(reput, (), {}, 0, inside_from=inside_from, inside_records=inside_records,
                           inside_placed=placed, loaded=loaded, drops_to=drops_to,
                           held_emptied=frozenset(n for n, (_v, stays, _w, _d) in after.items() if not stays))


def _parsed_refusal(goes_on: int, *, reput: int, process_offset: int, confirm_offset: int, log_end: int,
                    file_end: int, parsed: bool = False) -> str:
    """Why the reput set at 2147483647 (``reput``) inside an entry past ``process_offset``, whose check parses
    messages and goes on at ``goes_on``, is not modelled ("" when it is).

    Modelled where it jumps to the end of the bytes ``getData`` handed: the log's end ``log_end``, or DLedger's
    committed position ``confirm_offset`` before it (it then waits for the group's commit and walks on from there;
    the records between ``process_offset`` and it are dispatched by no one).  The parsed units go to consume queues
    (``ConsumeQueue.putMessagePositionInfo`` and ``multiDispatchLmqQueue``, new queues or queues on disk as the cut
    left them, ext files or not: :func:`_placed_on_disk`), blanks 48 bytes further among the records (their empty
    requests, a new queue's unit of zeros, the reput lagging the buffer by 8 bytes after each until the jump); the
    records the reput dispatches after them lie at or past the committed position, where the reference rebuild
    ``verify`` compares with stops.  Their units' queues do not matter here: a batch queue's go by
    ``putBatchMessagePositionInfo`` too, a new one's at its start whatever ``INNER_BASE`` (the rebuild's own
    dispatch), one on disk's from the state the cut left (:func:`_placed_on_disk`).  Also modelled: going on at
    ``file_end``, the end of the data file the reput is set in, before the committed position (a failed check's jump
    to the end of the bytes ``getData`` hands, the file's read position, or ``rollNextFile`` after DLedger's blank
    magic), where the reput walks the next file's entries, and, after ``parsed`` messages, at an entry's start in
    that file before the committed position, where it walks the entries on (after a parsed unit appended to a queue
    the store holds files of that ends past either, that queue's max drops its units there, :func:`_maxes_past`:
    :func:`reput_after_cut` refuses it for a light unit or a batch queue's).
    Refused: going on anywhere else, and a reput at or before ``process_offset``."""
    at_file_end = goes_on == file_end < confirm_offset
    at_entry = parsed and reput < goes_on < min(file_end, confirm_offset)   # an entry's start after parsed messages
    if (goes_on not in (log_end, confirm_offset) and not at_file_end and not at_entry) \
            or not reput < confirm_offset <= log_end or reput <= process_offset:
        return (f"modelled: at the log's end {log_end}, at DLedger's committed position {confirm_offset} past "
                f"it, at the end {file_end} of the data file it is set in before that or at an entry's start "
                f"there after parsed messages, set past processOffset {process_offset}")
    return ""


def _maxes_past(placed: Placed, units: tuple[ParsedUnit, ...], goes_on: int) -> dict[tuple[str, int], int]:
    """Per queue the store holds files of (``placed.whole``) whose appended parsed units end past ``goes_on``, where
    the reput goes on before the committed position (the next data file's start or an entry's): the max physical
    offset they leave it (``putMessagePositionInfo``: the end of the last one appended, each ending past the max
    before it), at or below which the reput's ``putMessagePositionInfo`` drops its units of the records from there
    (:attr:`store_format.dledger_crash_cut.QueueCut.drops_to`); -1 for a queue whose appended parsed units are light
    ones (``multiDispatchLmqQueue``) or a batch queue's (``putBatchMessagePositionInfo`` compares a unit's start):
    not checked against a broker, refused by :func:`reput_after_cut`."""
    other = {(u.topic, u.queue_id) for u in units if u.batch or not u.own}
    out = {}
    for q in placed.whole:
        ends = [off + size for pos, off, size, *_rest in q.units if pos in q.parsed_at and pos >= 0]
        if ends and max(ends) > goes_on:
            out[(q.topic, q.queue_id)] = -1 if (q.topic, q.queue_id) in other else max(ends)
    return out


def _placed_on_disk(units: tuple[ParsedUnit, ...], after: dict[tuple[str, int], OnDiskCut], cq_file_size: int,
                    at: int, ext_file_size: int = 0, ext_end: Mapping[tuple[str, int], int] | None = None,
                    emptied_max: int = -1, *, bcq_file_size: int = 0) -> Placed:
    """Where ``doReput`` puts the parsed ``units`` of the queues the store holds files of (``after``: each as
    ``truncateDirtyLogicFiles`` left it, its max, whether a file stays, its write position), each such queue replayed
    whole from the write position and max the cut left (``ConsumeQueue.putMessagePositionInfo``, in parse order:
    :func:`store_format.dledger_inside_state.put_cq` by way of
    :func:`store_format.dledger_inside_units.place_inside`; the walk dispatched nothing, so nothing else goes to
    them before the reput goes on at the log's end or the committed position); a queue it holds no file of is the
    rebuild's own dispatch's (None).  ``at``: where the reput was set.  ``ext_file_size`` > 0
    (``enableConsumeQueueExt``): ``putMessagePositionInfoWrapper`` puts each parsed own unit's ext unit first
    (``ConsumeQueueExt.put``, whatever becomes of the unit: :attr:`Placed.ext_put`, a new queue's too), in a queue
    the store holds files of after its ext files' end as ``ConsumeQueue.recover`` left it (``ext_end``,
    :attr:`store_format.dledger_crash_cut.QueuesOnDisk.ext_end`; the cut, a file of the queue staying, returns
    before its ``truncateByMaxAddress``), and a unit appended holds that ext unit's address as its tags code
    (``decorate``); refused (one line) where that end is not read.  A queue the store holds files of that the cut
    left no file of: from no file and its max ``emptied_max`` (5.5.1: -1, ``recoverTopicQueueTable``'s
    ``correctMinOffset``; 5.3.3: ``processOffset``, which ``truncateDirtyLogicFiles`` set and its ``correctMinOffset``
    leaves, no file to read), ``getLastMappedFile`` creating its first file where the unit's queue offset falls,
    ``fillPreBlank`` units before it (``putMessagePositionInfo``, ``isFirstCreateInQueue``), its ext units after the
    ext files' end ``recover`` left (the cut's ``truncateByMaxAddress`` given no address does nothing).  A batch
    queue the store holds files of (its units' ``batch``; ``bcq_file_size``: ``mapperFileSizeBatchConsumeQueue``):
    ``putBatchMessagePositionInfo`` from the write position and max ``BatchConsumeQueue.truncateDirtyLogicFiles``
    left (the start of its last unit below ``processOffset``; with no file left, ``processOffset - 1``, which its
    ``correctMinOffset`` keeps, and the write position 0: ``getLastMappedFile`` creates the first file there), a unit
    starting at or below the max dropped, any other appended at the write position, no queue offset check
    (:func:`store_format.dledger_inside_state.put_bcq`)."""
    none = np.zeros((0, len(UNIT_COLUMNS)), np.int64)
    batch = {(u.topic, u.queue_id) for u in units if u.batch}

    def state(name: tuple[str, int]) -> WalkedQueue | None:
        held = after.get(name)
        if held is None:
            return None
        if name in batch:
            write = held[2] if held[1] else 0
            return WalkedQueue(write, held[0], write, held[0], batch=True, disk=True)
        if held[1]:
            return held_past_only(held, none, ext_file_size, (ext_end or {}).get(name))
        return emptied_past_only(emptied_max, none, ext_file_size, (ext_end or {}).get(name))
    return place_inside(units, state, cq_file_size=cq_file_size, at=at, ext_file_size=ext_file_size,
                        bcq_file_size=bcq_file_size)
