"""The broker's files of an ordinary consume queue the 5.x DLedger crash recovery's walk wrote that a start's reput
set inside an entry touches, replayed whole (:func:`replay_queue`): the files ``truncateDirtyLogicFiles`` leaves,
then every unit the reput dispatches into the queue, in reput order, by the broker's own rule.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.putMessagePositionInfo`` (:func:`store_format.dledger_inside_state.put_cq`),
``ConsumeQueue.putMessagePositionInfoWrapper`` and ``ConsumeQueueExt.put``/``decorate`` (with ext files: the ext unit
put first, its address the unit's tags code), ``MappedFileQueue.getLastMappedFile`` (the files it creates: zeros),
``ConsumeQueue.fillPreBlank`` (the blank units before the first unit of a queue the cut left with no file) and
``ConsumeQueue.truncateDirtyLogicFiles`` (which files stay: from the last file back, one whose first unit lies at or
past ``processOffset`` is deleted; in the first one that stays the units past the write position stay on disk as bytes).

An ordinary queue here: a consume queue (not a BatchCQ topic's), with or without ext files (``enableConsumeQueueExt``),
whose state :mod:`store_format.dledger_inside_walked` built (:class:`WalkedQueue`, as the cut left it; write position
-1: no file left). From that state the reput dispatches, each by ``putMessagePositionInfo``:

1. the units of the messages its check parses inside the entry, in order (:class:`ParsedUnit`);
2. the queue's cut units it dispatches again after them (:attr:`WalkedQueue.again`, but the first
   :attr:`WalkedQueue.again_skip`, which lie inside the parsed messages): each unit's bytes are the walk's, read
   where the walk's queue holds it (:attr:`WalkedQueue.again_at`, else its queue offset * 20); one the walk's
   dispatch dropped (a queue holding own and light units, ``again_at`` -1) that the reput appends is written from its
   record: offset, size and tags code for this queue (``tags``, own or light: ``multiDispatchLmqQueue`` hands
   ``putMessagePositionInfo`` the request's tags code as ``putMessagePositionInfoWrapper`` does);
3. the records of the queue past the walk's end (:attr:`WalkedQueue.past`), their tags codes read from the log.

With ext files each of those that is a record's own unit (not a light one: ``multiDispatchLmqQueue`` calls
``putMessagePositionInfo`` alone) first gets an ext unit (``putMessagePositionInfoWrapper``: ``ConsumeQueueExt.put``,
whether ``putMessagePositionInfo`` then appends or drops the unit), the next after the walk's
(:attr:`WalkedQueue.ext_next`: ``truncateDirtyLogicFiles`` leaves the ext files as the walk wrote them, its
``truncateByMaxAddress`` reached only with every file deleted and then given no address), and the unit appended
holds that ext unit's address (``decorate``) as its tags code: a cut unit dispatched again a new one, not the walk's
bytes; in a queue on disk before the walk that the walk wrote no unit of, after the ext files' end as
``ConsumeQueue.recover`` left it (``ConsumeQueueExt.recover``, ``truncateByMaxAddress``:
:func:`store_format.dledger_inside_walked.inside_units`' ``ext_held``, :attr:`WalkedQueue.ext_end`), a byte end whatever
the units before it (ext units with filter bitmaps too): ``ConsumeQueueExt.put`` appends each 20-byte unit at the last
file's write position, or, when it would leave fewer than ``END_BLANK_DATA_LENGTH`` bytes of the file, marks the end
(``fullFillToEnd``) and puts it at the next file's start (:mod:`store_format.consumequeue_ext_recovery`'s
``ext_put_at``, ``ext_position_after_puts``).
The ext files themselves are the rebuild's (the walk's ext units, the parsed messages', then those of the
records the reput walks, :class:`store_format.dledger_crash_cut.ExtAgain`, in that order as the broker puts them).

``pipelines.restart_cut.apply_cut`` writes the files :class:`QueueFiles` describes whole (the walk's bytes of the
files the cut leaves, below the walk's end: what the rebuild's own dispatch appended after it is not the broker's)
and removes every other staged file of the queue.  The rule is the one :func:`put_cq` states for
:mod:`store_format.dledger_inside_units` (a few units of one queue: no array pass such as
:func:`store_format.consumequeue.assign_positions`).  A queue replayed so is one a parsed message goes to (the
queues :func:`store_format.dledger_inside_units.place_inside` is asked about; also one on disk before the walk that
the walk wrote no unit of, only records past its end, a file of it left by the cut: from that file's write
position and max, ``ConsumeQueue.recover`` and ``truncateDirtyLogicFiles`` on its files alone; none left: from no
file and its max, -1 on 5.5.1, ``processOffset`` on 5.3.3, its ext units after the ext files' end ``recover`` left,
:func:`store_format.dledger_inside_walked.inside_units`); one only cut units dispatched again
or records past the walk's end go to is put back by :func:`store_format.dledger_crash_cut.cut_queues` as before.
Refused (one line): a cut unit the walk's dispatch dropped (a queue holding own and light units) that the reput
appends with no ``tags`` to read its record's tags code; with ext files, a unit the reput dispatches after the parsed
ones with no ``tags`` to say whether it is a record's own.
"""
from __future__ import annotations

import dataclasses

from .consumequeue_ext import EXT_UNIT_SIZE, LONG_MIN
from .consumequeue_ext_recovery import ext_position_after_puts, ext_put_at
from .dledger_inside_state import ParsedUnit, QueueFiles, Tags, WalkedQueue, put_cq, refuse
from .layout import CQ_UNIT_SIZE

__all__ = ["QueueFiles", "replay_queue"]


def replay_queue(key: tuple[str, int], cut: WalkedQueue, parsed: list[ParsedUnit], cq_file_size: int, at: int,
                 tags: Tags | None, ext_file_size: int = 0) -> QueueFiles:
    """The broker's files of the ordinary queue ``key`` (module docstring) from ``cut`` (its state as the cut left it,
    not changed) and ``parsed`` (its parsed units, in order); ``at``: where the reput was set (for the refusals);
    ``tags(offset, size, queue)``: a record's tags code for ``queue``.

    Raises:
        UnsupportedConfigError: a cut unit the walk's dispatch dropped that the reput appends, or a record past the
            walk's end appended, whose unit is not read (no ``tags``).
    """
    assert not cut.batch and not cut.refused
    s = dataclasses.replace(cut)
    opened: list[tuple[str, int, int]] = []
    blanks: list[tuple[str, int, int]] = []
    units: list[tuple[int, int, int, int]] = []
    copies: list[tuple[int, int]] = []
    put_back: list[int] = []
    lost: list[int] = []
    ext = _Ext(s.ext_next, ext_file_size, s.ext_end)
    parsed_at = []
    for u in parsed:   # putMessagePositionInfoWrapper: the ext unit of an own unit first, whatever becomes of it
        tags_code = ext.put() if ext_file_size and u.own else u.tags_code
        if (pos := put_cq(key, s, u.offset + u.size, u.queue_offset, cq_file_size, opened, blanks)) >= 0:
            units.append((pos, u.offset, u.size, tags_code))
        parsed_at.append(pos)
    code: int | None
    source = list(cut.again_at) or [q * CQ_UNIT_SIZE for _o, _n, q in cut.again]
    for k, (offset, size, queue_offset) in enumerate(cut.again):
        if k < cut.again_skip:   # inside the parsed messages: not dispatched again (no ext unit put either)
            lost.append(offset)
            continue
        code = ext.put() if ext_file_size and _own(key, tags, offset, size, at) else None
        if (pos := put_cq(key, s, offset + size, queue_offset, cq_file_size, opened, blanks)) < 0:
            lost.append(offset)
            continue
        if code is None and source[k] < 0:
            # the walk's dispatch dropped it (a queue holding own and light units): no file of the walk's queue holds
            # its bytes; putMessagePositionInfo writes the record's offset, size and tags code for this queue (the
            # dispatch request's: its own unit's or, multiDispatchLmqQueue, its light unit's, the same code)
            code = tags(offset, size, key, light=True) if tags is not None else None
            if code is None:
                raise refuse(at, f"for {key[0]}/{key[1]}, a queue holding a record's own units and light ones, whose "
                                  f"cut unit at {offset} the walk's dispatch dropped the reput appends afterwards, its "
                                  "unit there not read (no tags code)")
        if code is None:
            copies.append((pos, source[k]))
        else:   # a new ext unit: the unit holds its address (ConsumeQueueExt.decorate), not the walk's
            units.append((pos, offset, size, code))
        put_back.append(offset)
    for offset, size, queue_offset in cut.past:
        code = ext.put() if ext_file_size and _own(key, tags, offset, size, at) else None
        if (pos := put_cq(key, s, offset + size, queue_offset, cq_file_size, opened, blanks)) < 0:
            lost.append(offset)
            continue
        if code is None:
            code = tags(offset, size, key, light=True) if tags is not None else None
        if code is None:
            raise refuse(at, f"for {key[0]}/{key[1]}, whose record past the walk's end at {offset} the reput appends "
                              "afterwards, its unit there not read (no tags code)")
        units.append((pos, offset, size, code))
        put_back.append(offset)
    cut_from = 0 if cut.write < 0 else -(-cut.write // cq_file_size) * cq_file_size
    return QueueFiles(key[0], key[1], cut_from, cut.rebuild_write, tuple(f for _t, _q, f in opened),
                      blanks[0][2] if blanks else -1, tuple(units), tuple(copies), tuple(put_back), tuple(lost),
                      tuple(parsed_at))


class _Ext:
    """The ext units ``ConsumeQueueExt.put`` appends to a queue (20 bytes each: no filter bitmap) from real offset
    ``end`` (>= 0, any byte) or else after its ``n`` 20-byte ones, files of ``file_size`` bytes: :meth:`put` gives the
    next one's address (``ConsumeQueueExt.decorate``), placed by :func:`ext_put_at`."""

    def __init__(self, n: int, file_size: int, end: int = -1) -> None:
        assert end < 0 or n == 0, "a queue's ext end given by bytes or by a unit count, not both"
        self.file_size = file_size
        self.at = end if end >= 0 else (ext_position_after_puts(0, n, file_size) if file_size else 0)

    def put(self) -> int:
        """``ConsumeQueueExt.put``: the unit's address, the end moved past it."""
        at = ext_put_at(self.at, self.file_size)
        self.at = at + EXT_UNIT_SIZE
        return at + LONG_MIN


def _own(key: tuple[str, int], tags: Tags | None, offset: int, size: int, at: int) -> bool:
    """Whether the record at ``offset`` has its own unit in ``key`` (an ext unit put for it), not a light one."""
    if tags is None:
        raise refuse(at, f"for {key[0]}/{key[1]}, with ext files, whose record at {offset} the reput dispatches "
                          "afterwards, its unit there not read")
    return tags(offset, size, key) is not None
