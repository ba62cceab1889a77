"""5.5.1's cut of the consume queues a DLedger crash recovery just wrote, and what the start then puts back.

``DLedgerCommitLog.dledgerRecoverAbnormally`` (rocketmq-store 5.5.1) ends with ``processOffset``, its last
data file's start plus the message sizes in it (the 48-byte entry headers left out), and calls
``DefaultMessageStore.truncateDirtyLogicFiles(processOffset)`` when the checkpoint's ``logicsPhysicalOffset``
(``getDispatchFromPhyOffset(false)``, read before the recovery) is at or past it.  That is
``ConsumeQueueStore.truncateDirty``: when the queues' largest ``getMaxPhysicOffset`` (after the walk's
dispatch: the end of the last unit put) is at or past the offset, ``ConsumeQueue.truncateDirtyLogicFiles``
on every queue (5.3.3 the same file code, but its ``truncateDirty`` does not check, and it is called only
when the queues loaded from disk reach ``processOffset``: never with ``consumequeue/`` deleted):

* the queue's max physical offset is set to ``processOffset``; from its last file backwards, a file whose
  first unit's commitlog offset is at or past it is deleted (``MappedFileQueue.deleteLastMappedFile``: the
  file is destroyed on disk); in the first file that stays, the units below it are kept (a ``fillPreBlank``
  unit, offset 0 and size 2147483647, too) and the write position is set after the last one, whose
  ``offset + size`` becomes the queue's max physical offset (2147483647 after ``fillPreBlank`` units only;
  ``processOffset`` itself when every file went).  The units after the write position stay on disk.
* no ext or batch queue here (refused by the caller when the store has them); ``index/`` is not touched.
* then ``DefaultMessageStore.recoverTopicQueueTable`` (``ConsumeQueue.correctMinOffset``): 5.5.1 sets the max
  physical offset of a queue left with no file to -1; 5.3.3 leaves it at ``processOffset``.

``DefaultMessageStore.start`` then sets the reput at ``getConfirmOffset()`` (the committed position) or,
with ``recheckReputOffsetFromCq=true``, at the largest ``getMaxPhysicOffset`` over the cut queues (at least
the commitlog's min offset): ``doRecheckReputOffsetFromCq``.  The reput walks to the log's end (the group
commits the rest).  ``ConsumeQueue.putMessagePositionInfo`` drops a unit with ``offset + size`` at or below
its queue's max, and appends every other unit at the queue's write position (``getLastMappedFile``: the
last file, or a new one after it when it is full), whatever queue offset the unit's message holds ("logic
queue order maybe wrong" is only logged); only in a queue left with no file does the new file start where
the unit's own offset falls, with ``fillPreBlank`` units before it.  A cut queue's units are consecutive, so
the reput puts back a suffix of them (those at or past where it starts):

* all of them: each lands at its own position, the files stay as the recovery wrote them;
* none: they stay only as bytes past the write position, or not at all in a deleted file;
* some (:class:`QueueMove`): they land from the write position on, shifted down over the ones left out
  (in a file that stayed, the bytes after them are still the old units); in a queue the cut emptied, at
  their own positions in a new file that starts with ``fillPreBlank`` units.

``IndexService.buildIndex`` indexes the last indexed record again when the reput reaches it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from . import commitlog as cl
from .errors import UnsupportedConfigError
from .javahash import java_utf8_decode
from .layout import CQ_UNIT_SIZE

__all__ = ["BLANK_MAX", "QueueCut", "QueueMove", "QueuesOnDisk", "QueueTrack", "cut_queues"]

BLANK_MAX = 2**31 - 1   # a fillPreBlank unit's offset + size (ConsumeQueue.fillPreBlank: 0 and Integer.MAX_VALUE)


class QueueTrack:
    """What the cut needs of the walk's consume queue units, collected batch by batch (numpy per batch,
    Python per queue): the queues seen in the files before the current one and the end of their last unit,
    and the current file's units (commitlog offset, end, queue, queue offset)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, int, int], int] = {}
        self.names: list[tuple[str, int]] = []
        self.seen_before: set[int] = set()
        self.end_before = -1
        self.multi = False
        self.base = -1
        self._cur: list[np.ndarray] = []

    def add(self, res: cl.WalkResult, n: int, file_base: int) -> None:
        """The first ``n`` records of ``res`` (walked with their text) from the data file at ``file_base``."""
        if file_base != self.base:
            last = self.last_file()
            if len(last):
                self.seen_before.update(int(k) for k in np.unique(last[:, 2]))
                self.end_before = max(self.end_before, int(last[:, 1].max()))
            self.base, self._cur = file_base, []
        rec = res.rec[:n]
        rec = rec[(rec[:, cl.R_FLAGS] & cl.F_CQ) != 0]
        if not len(rec):
            return
        self.multi = self.multi or bool(((rec[:, cl.R_FLAGS] & cl.F_MULTI) != 0).any())
        triple = np.stack([rec[:, cl.R_TOPIC_HASH] & 0xFFFFFFFF, rec[:, cl.R_TOPIC_LEN], rec[:, cl.R_QID]], axis=1)
        uniq, first, inverse = np.unique(triple, axis=0, return_index=True, return_inverse=True)
        local = np.empty(len(uniq), dtype=np.int64)
        text = np.asarray(res.text, dtype=np.uint8)
        for j, (t, k) in enumerate(zip(uniq, first)):
            key = (int(t[0]), int(t[1]), int(t[2]))
            if key not in self.ids:
                at = int(rec[k, cl.R_TOPIC_START]) - res.text_origin
                self.ids[key] = len(self.names)
                self.names.append((java_utf8_decode(text[at:at + int(t[1])]), int(t[2])))
            local[j] = self.ids[key]
        phys = rec[:, cl.R_PHYS].astype(np.int64)
        self._cur.append(np.stack([phys, phys + rec[:, cl.R_TOTAL], local[inverse.reshape(-1)],
                                   rec[:, cl.R_QOFF].astype(np.int64)], axis=1))

    def last_file(self) -> np.ndarray:
        """The current (last) file's units: rows of (offset, offset + size, queue, queue offset)."""
        return np.concatenate(self._cur) if self._cur else np.zeros((0, 4), dtype=np.int64)


@dataclasses.dataclass(frozen=True)
class QueuesOnDisk:
    """The consume queues a store holds when the crash restart starts (``verify`` predicts that start on the
    store as it is): their largest max physical offset after ``ConsumeQueue.recover`` (5.3.3 passes it to
    ``dledgerRecoverAbnormally``; 5.5.1's ``truncateDirty`` checks it with the walk's), and, per queue
    ``(topic, queue id)``, its max physical offset once ``truncateDirtyLogicFiles`` cut its own units at an
    offset: the end of its last unit below it, 2147483647 after ``fillPreBlank`` units only, the offset
    itself when every file goes."""
    max_physic_offset: int
    max_after_cut: Callable[[int], dict[tuple[str, int], int]]


@dataclasses.dataclass(frozen=True)
class QueueMove:
    """A cut queue whose units the start's reput puts back only in part (module docstring): the ``count``
    units that sat at queue byte position ``source`` in the recovery's queue are appended from ``target`` on
    (the cut's write position: the first cut unit's own position); ``blank_from`` >= 0 for a queue the cut
    emptied: then ``target == source``, and the new file holds ``fillPreBlank`` units from ``blank_from``
    (its start) up to ``target``.  Files from the first one past ``target`` on are new (zeros where no
    unit is put); the file holding ``target``, when it is not a file start, keeps its other bytes."""
    topic: str
    queue_id: int
    source: int
    target: int
    count: int
    blank_from: int = -1


@dataclasses.dataclass(frozen=True)
class QueueCut:
    """``truncateDirtyLogicFiles(processOffset)`` and the start's reput after it (module docstring):
    where the reput starts, the consume queue files the cut deleted that nothing writes again
    (``(topic, queue id, file start)``), the queues whose units are put back only in part (``moves``),
    and the commitlog offsets of the units cut off and not put back (``lost``: past their queue's write
    position or overwritten, on disk only where their file stayed), with the number of units cut and put
    back (``restored``)."""
    reput: int
    dropped: tuple[tuple[str, int, int], ...]
    lost: np.ndarray
    restored: int
    moves: tuple[QueueMove, ...] = ()
    inside_from: int = -1   # where the reput was set when that is inside an entry (``reput``: where it goes on from)


def cut_queues(track: QueueTrack, process_offset: int, *, cq_file_size: int, recheck: bool, min_offset: int,
               confirm_offset: int, end: int, on_disk: dict[tuple[str, int], int] | None = None,
               inside: Callable[[int], int] | None = None, reset_emptied: bool = False) -> QueueCut:
    """The cut at ``process_offset`` of the queues the walk filled (``track``), and the start's reput from
    ``confirm_offset`` (the committed position) or, with ``recheck``, from the cut queues' largest max (at
    least ``min_offset``), walking to ``end`` (module docstring).  ``on_disk``: the queues the store held
    before the walk, each with its max physical offset once the cut took its own units
    (:class:`QueuesOnDisk`); the walk's units of every record from its start file are in ``track`` whether
    its dispatch appended them or found them there, so the units the cut takes are the walk's.  ``inside``: where
    the reput set at ``process_offset`` (inside an entry) dispatches from, or where it stands when it dispatches
    nothing (:func:`store_format.dledger_reput_inside.reput_inside_entry`).  ``reset_emptied`` (5.5.1): a queue the
    cut left with no file counts -1 for the reput's start, not ``processOffset``.

    Raises:
        UnsupportedConfigError: a light queue (multi-dispatch) unit, and a reput that would start inside
            an entry: at ``processOffset`` itself without ``inside``, or at 2147483647 inside the log.
    """
    units = track.last_file()
    below = units[:, 0] < process_offset
    cut = units[~below]
    if track.multi:
        raise _refuse("light queue (multi-dispatch) units")
    kept = track.seen_before | {int(k) for k in np.unique(units[below, 2])}
    top = max(track.end_before, int(units[below, 1].max()) if below.any() else -1)
    per_queue: dict[int, np.ndarray] = {}
    if len(cut):
        order = np.argsort(cut[:, 2], kind="stable")
        ids, starts = np.unique(cut[order, 2], return_index=True)
        for q, rows in zip(ids, np.split(order, starts[1:])):
            per_queue[int(q)] = cut[rows]
    emptied: set[int] = set()
    if on_disk:
        queue_ids = {name: k for k, name in enumerate(track.names)}
        ends_below = [v for v in on_disk.values() if v < process_offset]
        top = max(top, *ends_below) if ends_below else top
        kept |= {queue_ids[n] for n, v in on_disk.items() if v < process_offset and n in queue_ids}
        emptied = {queue_ids[n] for n, v in on_disk.items() if v == process_offset and n in queue_ids}
    max_after = {}
    for q, rows in per_queue.items():
        if q in kept:
            continue   # its last kept unit ends at or below top, before every cut unit
        if q in emptied:   # its files on disk all went: the walk appended to them, created none
            max_after[q] = process_offset
        else:
            max_after[q] = BLANK_MAX if (int(rows[0, 3]) * CQ_UNIT_SIZE) % cq_file_size else process_offset
    inside_from = -1
    if recheck:
        # 5.5.1 recoverTopicQueueTable (ConsumeQueue.correctMinOffset) sets the max of a queue left with no file to
        # -1 before the start; 5.3.3 keeps processOffset there
        reput = max(top, *(-1 if reset_emptied and v == process_offset else v for v in max_after.values()),
                    min_offset, 0)
        if reput == process_offset and reput > top:
            if inside is None:
                raise _refuse(f"the reput would start at processOffset {process_offset}, inside an entry")
            inside_from, reput = reput, inside(reput)   # where doReput goes on from (store_format.dledger_reput_inside)
        if reput == BLANK_MAX and reput < end:
            raise _refuse("the reput would start at 2147483647 (a queue left with fillPreBlank units only), inside "
                          "the log")
    else:
        reput = confirm_offset
    dropped: list[tuple[str, int, int]] = []
    lost: list[np.ndarray] = []
    moves: list[QueueMove] = []
    restored = 0
    for q, rows in per_queue.items():
        again = (rows[:, 0] >= reput) & (rows[:, 0] < end) & (rows[:, 1] > max_after.get(q, -1))
        n = int(again.sum())
        assert again[len(rows) - n:].all(), "the units put back are the queue's last ones"
        restored += n
        if n == len(rows):
            continue
        topic, qid = track.names[q]
        lost.append(rows[:len(rows) - n, 0])
        pos = rows[:, 3] * CQ_UNIT_SIZE
        first, last = int(pos[0]), int(pos[-1])
        if n == 0:
            gone_from = first
        elif q not in kept and max_after[q] == process_offset:   # the cut emptied the queue (every file deleted)
            source = int(pos[-n])
            blank_from = source - source % cq_file_size
            moves.append(QueueMove(topic, qid, source, source, n, blank_from))
            dropped += [(topic, qid, f) for f in range(first, blank_from, cq_file_size)]
            continue
        else:
            moves.append(QueueMove(topic, qid, int(pos[-n]), first, n))
            gone_from = first + n * CQ_UNIT_SIZE
        start = -(-gone_from // cq_file_size) * cq_file_size   # the first file that starts at or past it
        dropped += [(topic, qid, f) for f in range(start, last - last % cq_file_size + 1, cq_file_size)]
    return QueueCut(reput, tuple(sorted(dropped)), np.concatenate(lost) if lost else np.zeros(0, np.int64), restored,
                    tuple(moves), inside_from)


def _refuse(why: str) -> UnsupportedConfigError:
    return UnsupportedConfigError(f"a 5.x DLedger store whose last shutdown was not clean (abort file): "
                                  f"truncateDirtyLogicFiles cuts the queues dledgerRecoverAbnormally wrote at its "
                                  f"short processOffset, with {why}; not modelled, let the broker recover")
