"""The state a 5.5.1 DLedger start's reput set inside an entry finds a queue in, and the broker's rule putting one
unit into it: the units it parses there (:class:`ParsedUnit`), a queue the walk wrote as the cut left it
(:class:`WalkedQueue`), what the broker does with them (:class:`InsideUnit`, :class:`Placed`).

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.putMessagePositionInfo`` (:func:`put_cq`),
``BatchConsumeQueue.putBatchMessagePositionInfo`` (:func:`put_bcq`) and ``MappedFileQueue.getLastMappedFile``
(the files they create).  :mod:`store_format.dledger_inside_units` and the replays
(:mod:`store_format.dledger_inside_replay`, :mod:`store_format.dledger_inside_replay_batch`) place the units with
them.
"""
from __future__ import annotations

import dataclasses
from typing import Protocol

from .batchconsumequeue import BCQ_UNIT_SIZE
from .errors import UnsupportedConfigError
from .layout import CQ_UNIT_SIZE

__all__ = ["InsideUnit", "ParsedUnit", "Placed", "QueueFiles", "Tags", "WalkedQueue", "put_bcq", "put_cq", "refuse"]

class Tags(Protocol):
    """The tags code of a record's own unit for a queue: ``(offset, size, (topic, queue id))``, None when it has none
    (``light``: its own or light unit there)."""
    def __call__(self, offset: int, size: int, queue: tuple[str, int], light: bool = False) -> int | None: ...


@dataclasses.dataclass(frozen=True)
class ParsedUnit:
    """A consume queue unit of a message the reput's check parses inside an entry, as
    ``CommitLogDispatcherBuildConsumeQueue`` hands it over (:func:`store_format.dispatch.queue_units`)."""
    topic: str
    queue_id: int
    offset: int
    size: int
    queue_offset: int
    tags_code: int
    own: bool      # the record's own consume queue (False: a light queue, multi-dispatch)
    batch: bool    # a BatchCQ topic's queue
    # a batch queue's unit: the store time, msgBaseOffset and batchSize the dispatch request carries (INNER_BASE
    # and INNER_NUM, else the queue offset and 1: CommitLog.setBatchSizeIfNeeded)
    store_time: int = 0
    base: int = -1
    batch_size: int = 1


@dataclasses.dataclass(frozen=True)
class InsideUnit:
    """A parsed message's unit the broker appends to a queue the walk wrote, at queue byte ``position`` (in a file
    the cut left, over the bytes there, or in one it creates: :attr:`Placed.opened`)."""
    topic: str
    queue_id: int
    position: int
    offset: int
    size: int
    tags_code: int
    # a batch queue's 46-byte unit (BatchConsumeQueue.putBatchMessagePositionInfo): its store time, msgBaseOffset
    # and batchSize (ParsedUnit's)
    batch: bool = False
    store_time: int = 0
    base: int = -1
    batch_size: int = 1


@dataclasses.dataclass
class WalkedQueue:
    """A queue the walk wrote as the cut left it (built by ``dledger_crash_cut`` from the walk's units): the broker's
    write position (queue bytes; -1: the cut left no file, 5.5.1 setting the max to -1, 5.3.3 keeping
    ``processOffset``) and max physical offset,
    the rebuild's after the walk (every walk unit kept), the ordinal of its next ext unit (``enableConsumeQueueExt``:
    the ext units the walk put), and, when its parsed units are not modelled, why (:func:`place_inside` refuses
    them)."""
    write: int
    max: int
    rebuild_write: int
    rebuild_max: int
    ext_next: int = 0
    refused: str = ""
    # with ext files, a queue whose ext units go on from a byte end rather than after ``ext_next`` 20-byte ones: that
    # end (real offset in its ext space, ConsumeQueueExt.recover and truncateByMaxAddress's, any unit sizes before it:
    # dledger_inside_walked._past_only, dledger_inside_mixed.mixed_on_disk); -1: after ``ext_next`` units
    ext_end: int = -1
    # a batch queue (BatchConsumeQueue: 46-byte units, its max the start of its last unit)
    batch: bool = False
    # the cut units the reput dispatches again after the parsed ones (it goes on before them), in commitlog order:
    # ``(offset, size, queue offset)``, each at queue byte ``queue offset * 20`` in the walk's queue (a batch queue's:
    # its unit index, at ``* 46``, its records past the walk's end after the cut units)
    again: tuple[tuple[int, int, int], ...] = ()
    # of a queue holding a record's own units and light ones (dledger_inside_mixed.mixed_state), the queue byte position
    # at which the walk's queue holds each of ``again`` (where putMessagePositionInfo put it in commitlog order, not
    # its queue offset * 20; -1: the walk's dispatch dropped it); empty: each at its queue offset * 20
    again_at: tuple[int, ...] = ()
    # the records of this queue past the walk's end (a walk ended by a damaged message) that the reput dispatches
    # after the parsed ones and the cut units, in commitlog order: ``(offset, size, queue offset)``
    past: tuple[tuple[int, int, int], ...] = ()
    # a queue on disk before the walk that the cut left a file of (keepQueues: as truncateDirtyLogicFiles left those
    # files, which stay): its cut units the reput dispatches again go wherever the rule puts them
    disk: bool = False
    # of ``again``, the first ones the reput does not dispatch again (it goes on past them, at an entry's start
    # after the parsed messages that hold them): lost (the replay's QueueFiles.lost, a batch queue's
    # BatchQueueFiles')
    again_skip: int = 0
    # with records past the walk's end, the number of its cut units the reput does not dispatch again (it goes on
    # past them): all of them, none in :attr:`again` (only the first ones: :attr:`again_skip`)
    skipped: int = 0


@dataclasses.dataclass(frozen=True)
class QueueFiles:
    """The broker's files of one queue after the reput (:func:`replay_queue`): the staged (walk's) files starting
    below ``cut_from`` stay, their bytes from queue byte ``walk_end`` on zeros; ``opened``, the files
    ``getLastMappedFile`` creates (zeros, ``fillPreBlank`` units up to ``blank_until`` in the one holding it);
    ``units`` ``(position, offset, size, tags code)`` written, and ``copies`` ``(position, source)``: a cut unit's 20
    bytes read from queue byte ``source`` of the walk's queue, written at ``position``.  ``put_back``: the commitlog
    offsets of the cut units (and records past the walk's end) appended, ``lost`` those dropped or never
    dispatched; ``parsed_at``: where each parsed unit went (-1: dropped), the first of ``units``."""
    topic: str
    queue_id: int
    cut_from: int
    walk_end: int
    opened: tuple[int, ...] = ()
    blank_until: int = -1
    units: tuple[tuple[int, int, int, int], ...] = ()
    copies: tuple[tuple[int, int], ...] = ()
    put_back: tuple[int, ...] = ()
    lost: tuple[int, ...] = ()
    parsed_at: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class Placed:
    """What :func:`place_inside` gives: the units the broker appends (``units``) and the consume queue files
    ``getLastMappedFile`` creates for them (``opened``: ``(topic, queue id, file start)``, zeros but for those
    units; also for a unit then dropped), both from the replay of each queue (``whole``); ``blank_until``: the
    ``fillPreBlank`` units before the first unit of a queue the cut left with no file.  A reput set before the walk's
    units (``store_format.dledger_crash_before.appended_before``) gives ``units`` and ``rebuild_units``: the queue
    positions ``(topic, queue id, position)`` where the rebuild's own dispatch appended units the broker's queues do
    not hold (zeros in the broker's file)."""
    units: tuple[InsideUnit, ...] = ()
    opened: tuple[tuple[str, int, int], ...] = ()
    rebuild_units: tuple[tuple[str, int, int], ...] = ()
    # ``(topic, queue id, position)``: an opened file holds fillPreBlank units from its start up to that position
    blank_until: tuple[tuple[str, int, int], ...] = ()
    # ``(topic, queue id, n)``: with ext files, the ext units the parsed units put in an ordinary queue (in one the
    # walk wrote after the walk's, the reput's ones, where it goes on, after them; in one it did not write, counted
    # for verify's ext units appended alone)
    ext_put: tuple[tuple[str, int, int], ...] = ()
    # the ordinary queues (ext files or not) and batch queues the reput touches, their files replayed whole
    # (store_format.dledger_inside_replay.QueueFiles, a batch queue's dledger_inside_replay_batch.BatchQueueFiles):
    # apply_cut writes them and nothing else of those queues
    whole: tuple[QueueFiles, ...] = ()

    def parsed_queues(self) -> set[tuple[str, int]]:
        """The queues the walk wrote that a parsed unit is appended to."""
        return {(u.topic, u.queue_id) for u in self.units}


def put_bcq(key: tuple[str, int], s: WalkedQueue, offset: int, bcq_file_size: int,
               opened: list[tuple[str, int, int]]) -> int:
    """``BatchConsumeQueue.putBatchMessagePositionInfo`` of a unit starting at commitlog offset ``offset`` into the
    batch queue ``key`` in state ``s`` (updated): the queue byte position it is written at, -1 when dropped (at or
    below the queue's max, the start of its last unit; no queue offset check); ``getLastMappedFile`` creates a file
    (``opened``) where the write position is a file's start."""
    if offset <= s.max:
        return -1
    if s.write % bcq_file_size == 0 and (*key, s.write) not in opened:
        opened.append((*key, s.write))
    s.write += BCQ_UNIT_SIZE
    s.max = offset
    return s.write - BCQ_UNIT_SIZE


def put_cq(key: tuple[str, int], s: WalkedQueue, end: int, queue_offset: int, cq_file_size: int,
         opened: list[tuple[str, int, int]], blanks: list[tuple[str, int, int]]) -> int:
    """``ConsumeQueue.putMessagePositionInfo`` of a unit ending at commitlog offset ``end`` with ``queue_offset``
    into queue ``key`` in state ``s`` (updated): the queue byte position it is written at, -1 when dropped; the files
    ``getLastMappedFile`` creates go to ``opened``, the ``fillPreBlank`` ends to ``blanks``."""
    if end <= s.max:
        return -1   # at or below the queue's max physical offset
    if s.write < 0:   # a queue the cut left with no file (max -1): its first file where the unit's queue offset
        # falls (getLastMappedFile on no file), fillPreBlank units before it in that file
        s.write = queue_offset * CQ_UNIT_SIZE
        opened.append((*key, s.write - s.write % cq_file_size))
        blanks.append((*key, s.write))
    elif s.write % cq_file_size == 0 and (*key, s.write) not in opened:
        # getLastMappedFile: the last file is full (or the cut deleted the one there), so a new one (zeros) is
        # created at the write position, before the queue offset check may drop the unit
        opened.append((*key, s.write))
    if queue_offset != 0 and queue_offset * CQ_UNIT_SIZE < s.write:
        return -1   # "build consume queue repeatedly"
    s.write += CQ_UNIT_SIZE
    s.max = end
    return s.write - CQ_UNIT_SIZE


def refuse(at: int, why: str) -> UnsupportedConfigError:
    """The one-line refusal of a parsed message whose placement is not modelled (``why``), the reput set at ``at``."""
    return UnsupportedConfigError(f"a 5.x DLedger store whose last shutdown was not clean (abort file): the start's "
                                  f"reput set at {at}, inside an entry, would parse a message there {why}; not "
                                  "modelled, let the broker recover")
