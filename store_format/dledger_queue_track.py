"""What a 5.x DLedger crash recovery's walk hands the consume queues, as the cut needs it
(:mod:`store_format.dledger_crash_cut`): the units ``CommitLogDispatcherBuildConsumeQueue`` dispatches per record
(``DefaultMessageStore.doDispatch``: ``ConsumeQueue.putMessagePositionInfoWrapper``, a light queue's
``multiDispatchLmqQueue``, ``BatchConsumeQueue.putBatchMessagePositionInfo``), collected per data file while
``DLedgerCommitLog.recoverAbnormally`` walks (rocketmq-store 5.5.1), and the max physical offset a unit leaves
(``ConsumeQueue.getMaxPhysicOffset``, ``BatchConsumeQueue``'s ``maxMsgPhyOffsetInCommitLog``)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import commitlog as cl
from .consumequeue import NOT_STARTED, Q_FIRST_FILE, Q_LAST_FILE, Q_MAX_PHYS, Q_WRITE_POS, assign_positions, new_states
from .dispatch import queue_units
from .layout import CQ_UNIT_SIZE

__all__ = ["BATCH_EARLIER_SIZE", "BLANK_MAX", "KIND_BATCH", "KIND_CQ", "KIND_LIGHT", "UNIT_COLUMNS", "U_END", "U_KEY",
           "U_KIND", "U_OFFSET", "U_QUEUE", "QueueTrack", "max_key", "mixed_queues", "positions", "replayed"]

BLANK_MAX = 2**31 - 1   # a fillPreBlank unit's offset + size (ConsumeQueue.fillPreBlank: 0 and Integer.MAX_VALUE)


class QueueTrack:
    """What the cut needs of the walk's consume queue units, collected batch by batch (numpy per batch,
    Python per queue): the queues seen in the files before the current one and the largest max physical
    offset they leave (:func:`max_key`), each batch queue's units so far, and the current file's units
    (rows of :data:`UNIT_COLUMNS`).  ``batch_topics``: the store's BatchCQ topics; ``keep_own``
    (``enableConsumeQueueExt``): the commitlog offsets and queue numbers of a record's own consume queue units
    in the files before the current one are kept too (:func:`ext_reput`: a reput from before the last file);
    ``keep_queues`` (the consume queues on disk before the walk, ``verify``): their units in the files before the
    current one are kept too, with the kinds of unit each had there (:meth:`own_walked`, :meth:`mixed_walked`).
    Each consume queue's write position and max after the files before the current one, by
    ``putMessagePositionInfo``'s rule in commitlog order from no unit (:meth:`replayed_before`: a queue holding a
    record's own units and light ones, their queue offsets from two counters)."""

    def __init__(self, batch_topics: frozenset[str] = frozenset(), keep_own: bool = False,
                 keep_queues: frozenset[tuple[str, int]] = frozenset()) -> None:
        self.batch_topics = batch_topics
        self.keep_own = keep_own
        self.keep_queues = keep_queues
        # with keep_queues: per queue kept, its units (offset, size, queue offset) in the files before the current
        # one, and the kinds of unit it had there
        self.kept_before: dict[int, list[np.ndarray]] = {}
        self.kinds_before: dict[int, set[int]] = {}
        self.own_before: list[np.ndarray] = []   # with keep_own: rows (offset, queue, end, key) of the earlier files
        self.names: list[tuple[str, int]] = []
        self.ids: dict[tuple[str, int], int] = {}
        self.seen_before: set[int] = set()
        self.end_before = -1
        self.batch_units: dict[int, int] = {}   # units a batch queue took so far (its next position / 46)
        self.own_units: dict[int, int] = {}     # units a record's own consume queue took (with ext: its ext units)
        # per queue, the queue offset and end of its last own consume queue unit in the files before the current one
        self.last_before: dict[int, tuple[int, int]] = {}
        # the same of its last light queue unit there (ConsumeQueue.multiDispatchLmqQueue: putMessagePositionInfo too)
        self.light_before: dict[int, tuple[int, int]] = {}
        # per batch queue, the start of its last unit in the files before the current one (its max there)
        self.batch_before: dict[int, int] = {}
        # per queue (row: queue number), the write position and max putMessagePositionInfo leaves a consume queue
        # (a light queue too) that had no unit before the walk after the units of the files before the current one,
        # in commitlog order (:meth:`replayed_before`; columns Q_MAX_PHYS, Q_WRITE_POS of consumequeue's states)
        self._states_before = new_states(0)[:, :4].copy()
        self.base = -1
        self.first = -1   # the start of the first data file walked (records before it: not tracked)
        self._cur: list[np.ndarray] = []

    def add(self, res: cl.WalkResult, n: int, file_base: int) -> None:
        """The first ``n`` records of ``res`` (walked with their text) from the data file at ``file_base``:
        what ``CommitLogDispatcherBuildConsumeQueue`` hands the queues for them
        (:func:`store_format.dispatch.queue_units`: a record's own unit, then its light queue units)."""
        if self.first < 0:
            self.first = file_base
        if file_base != self.base:
            last = self.last_file()
            if len(last):
                self.seen_before.update(int(k) for k in np.unique(last[:, U_QUEUE]))
                self.end_before = max(self.end_before, int(max_key(last).max()))
                if self.keep_own:
                    self.own_before.append(last[last[:, U_KIND] == KIND_CQ][:, [U_OFFSET, U_QUEUE, U_END, U_KEY]])
                if self.keep_queues:
                    self._keep_before(last)
                self.last_before.update((q, (int(r[U_KEY]), int(r[U_END])))
                                        for q, r in _last_per_queue(last, KIND_CQ).items())
                self.light_before.update((q, (int(r[U_KEY]), int(r[U_END])))
                                         for q, r in _last_per_queue(last, KIND_LIGHT).items())
                self.batch_before.update((q, int(r[U_OFFSET])) for q, r in _last_per_queue(last, KIND_BATCH).items())
                self._replay_before(last)
            self.base, self._cur = file_base, []
        units = queue_units(res, self.batch_topics)
        keep = units.record < n
        if not keep.any():
            return
        local = np.array([self._queue_id(name) for name in units.queues], dtype=np.int64)
        queue = local[units.queue[keep]]
        phys = units.offset[keep].astype(np.int64)
        kind = np.where(units.own[keep], KIND_CQ, KIND_LIGHT)
        key = units.queue_offset[keep].astype(np.int64)
        if self.batch_topics:
            batch = np.array([t in self.batch_topics for t, _ in units.queues], dtype=bool)[units.queue[keep]]
            kind[batch] = KIND_BATCH
            for q in np.unique(queue[batch]):   # a batch unit's position: the queue's units before it
                at = np.flatnonzero(batch & (queue == q))
                done = self.batch_units.get(int(q), 0)
                key[at] = np.arange(done, done + len(at))
                self.batch_units[int(q)] = done + len(at)
        for q, k in zip(*np.unique(queue[kind == KIND_CQ], return_counts=True)):
            self.own_units[int(q)] = self.own_units.get(int(q), 0) + int(k)
        self._cur.append(np.stack([phys, phys + units.size[keep], queue, key, kind], axis=1))

    def _replay_before(self, last: np.ndarray) -> None:
        """The consume queue units (own and light) of a file the walk leaves (``last``) put by
        ``putMessagePositionInfo``'s rule onto each queue's state after the files before it
        (:func:`store_format.consumequeue.assign_positions`: one pass, its 4-column states, whose write position and
        max do not depend on the file size)."""
        grow = len(self.names) - len(self._states_before)
        if grow > 0:
            self._states_before = np.vstack([self._states_before, new_states(grow)[:, :4]])
        cq = last[last[:, U_KIND] != KIND_BATCH]
        assign_positions(cq[:, U_QUEUE], cq[:, U_OFFSET], cq[:, U_END] - cq[:, U_OFFSET], cq[:, U_KEY],
                         CQ_UNIT_SIZE, self._states_before)

    def replayed_before(self, q: int) -> tuple[int, int] | None:
        """The write position and max ``ConsumeQueue.putMessagePositionInfo`` leaves queue ``q`` (an ordinary or
        light consume queue holding no unit before the walk) after the walk's units of it in the data files before
        the current one, in commitlog order (its own units and light ones alike, wherever their queue offsets from
        two counters put them: dropped at or below the max or a queue offset not 0 whose ``* 20`` lies below the
        write position, else appended at the write position); None when it has none there."""
        if q >= len(self._states_before) or self._states_before[q, Q_WRITE_POS] == NOT_STARTED:
            return None
        return int(self._states_before[q, Q_WRITE_POS]), int(self._states_before[q, Q_MAX_PHYS])

    def written(self) -> tuple[tuple[str, int], ...]:
        """The queues with a unit so far (``names`` also holds those of records past a window's last one kept)."""
        last = {int(k) for k in np.unique(self.last_file()[:, U_QUEUE])}
        return tuple(self.names[q] for q in sorted(self.seen_before | last))

    def queue_id(self, name: tuple[str, int]) -> int:
        """The queue number of ``name`` (a new one for a queue not seen yet)."""
        return self._queue_id(name)

    def _queue_id(self, name: tuple[str, int]) -> int:
        if name not in self.ids:
            self.ids[name] = len(self.names)
            self.names.append(name)
        return self.ids[name]

    def place_batch(self, position: Callable[[tuple[str, int], np.ndarray], np.ndarray]) -> None:
        """Each batch queue's units of the current file moved to where a queue on disk holds them:
        ``position(queue, offsets)``, the unit numbers at which that queue holds the units of those commitlog
        offsets (-1: not held; none held: the walk's units keep counting from 0).  A unit the walk finds there is
        dropped (``putBatchMessagePositionInfo``: offset at or below the queue's max), the ones after it appended
        behind it: the walk's units of a queue are consecutive there, so one held unit places them all."""
        cur = self.last_file()
        batch = cur[:, U_KIND] == KIND_BATCH
        for q in np.unique(cur[batch, U_QUEUE]):
            rows = np.flatnonzero(batch & (cur[:, U_QUEUE] == q))
            at = position(self.names[int(q)], cur[rows, U_OFFSET])
            held = np.flatnonzero(at >= 0)
            if len(held):
                j = rows[held[-1]]
                cur[rows, U_KEY] += int(at[held[-1]]) - int(cur[j, U_KEY])
        self._cur = [cur]

    def _keep_before(self, last: np.ndarray) -> None:
        """The units of the queues of ``keep_queues`` in a file the walk leaves (``last``), kept, of every kind (the
        kinds noted in ``kinds_before``; :meth:`own_walked` and :meth:`mixed_walked` read them)."""
        for q in np.unique(last[:, U_QUEUE]).tolist():
            if self.names[q] in self.keep_queues:
                rows = last[last[:, U_QUEUE] == q]
                self.kinds_before.setdefault(q, set()).update(np.unique(rows[:, U_KIND]).tolist())
                self.kept_before.setdefault(q, []).append(positions(rows))

    def own_walked(self) -> dict[tuple[str, int], np.ndarray]:
        """The consume queues the walk wrote units of one kind in, a record's own ones only or light ones only
        (``ConsumeQueue.multiDispatchLmqQueue`` puts a light unit by the same ``putMessagePositionInfo``, its
        ``INNER_MULTI_QUEUE_OFFSET`` the queue offset; no ext unit): in the current (last) data file, nothing in an
        earlier file, or, for a queue of ``keep_queues`` (on disk before the walk), in the earlier files too or
        there only (those kept): all their units (rows of commitlog offset, size, queue offset, in commitlog order),
        those of the earlier files first."""
        units = self.last_file()
        out = {}
        for q in sorted(set(np.unique(units[:, U_QUEUE]).tolist()) | set(self.kept_before)):
            rows = units[units[:, U_QUEUE] == q]
            kinds = set(np.unique(rows[:, U_KIND]).tolist()) | self.kinds_before.get(q, set())
            earlier = self.kept_before.get(q)
            if kinds in ({KIND_CQ}, {KIND_LIGHT}) and (q not in self.seen_before or earlier):
                out[self.names[q]] = np.concatenate([*(earlier or []), positions(rows)])
        return out

    def kinds(self, name: tuple[str, int]) -> set[int]:
        """The kinds of unit the walk wrote into queue ``name``: in the current (last) data file, and, for one of
        ``keep_queues``, in the earlier ones."""
        q = self.ids.get(name)
        if q is None:
            return set()
        units = self.last_file()
        return set(np.unique(units[units[:, U_QUEUE] == q, U_KIND]).tolist()) | self.kinds_before.get(q, set())

    def mixed_walked(self) -> dict[tuple[str, int], np.ndarray]:
        """The queues of ``keep_queues`` (consume queues on disk before the walk) the walk wrote both a record's own
        units and light ones in, in the current (last) data file, in the earlier ones (kept) or both, no batch unit:
        all their units (rows of commitlog offset, size, queue offset: a light unit's its ``INNER_MULTI_QUEUE_OFFSET``;
        in commitlog order, those of the earlier files first), which ``putMessagePositionInfo`` dispatched onto the
        files ``ConsumeQueue.recover`` loaded in that order (:func:`store_format.consumequeue_recovery.dispatch_units`:
        its rule reads each unit's queue offset whichever counter gave it)."""
        units = self.last_file()
        out = {}
        for q in sorted(set(np.unique(units[:, U_QUEUE]).tolist()) | set(self.kept_before)):
            if self.names[q] not in self.keep_queues or (q in self.seen_before and q not in self.kept_before):
                continue
            rows = units[units[:, U_QUEUE] == q]
            kinds = set(np.unique(rows[:, U_KIND]).tolist()) | self.kinds_before.get(q, set())
            if kinds == {KIND_CQ, KIND_LIGHT}:
                out[self.names[q]] = np.concatenate([*self.kept_before.get(q, []), positions(rows)])
        return out

    def batch_walked(self) -> dict[tuple[str, int], np.ndarray]:
        """The batch queues the walk wrote in the current (last) data file, or in earlier ones only when it is one
        of ``keep_queues`` (a batch queue on disk before the walk, its units there kept): their units (rows of
        commitlog offset, size, unit number, in commitlog order), to dispatch onto the files the queue held before
        the walk (``BatchConsumeQueue.putBatchMessagePositionInfo``: appended only past the loaded max, whatever
        their unit numbers); for one it wrote in an earlier data file too, its units there first when it is one of
        ``keep_queues`` (all of them dispatched), else after a first row
        ``(start, -1, -1)``, the start of its last unit there (:data:`BATCH_EARLIER_SIZE`): those units are not kept,
        so it is dispatched only when that start is at or below the loaded max (every earlier unit skipped)."""
        units = self.last_file()
        batch = units[units[:, U_KIND] == KIND_BATCH]
        out = {}
        kept = {q for q in self.kept_before if self.names[q][0] in self.batch_topics}   # on disk, earlier units kept
        for q in sorted(set(np.unique(batch[:, U_QUEUE]).tolist()) | kept):
            rows = positions(batch[batch[:, U_QUEUE] == q])
            if q in self.seen_before and q in self.kept_before:   # one of keep_queues: its earlier units kept
                rows = np.concatenate([*self.kept_before[q], rows])
            elif q in self.seen_before:
                if q not in self.batch_before:
                    continue
                rows = np.concatenate([np.array([[self.batch_before[q], BATCH_EARLIER_SIZE, -1]], np.int64), rows])
            out[self.names[q]] = rows
        return out

    def last_file(self) -> np.ndarray:
        """The current (last) file's units: rows of :data:`UNIT_COLUMNS`."""
        return np.concatenate(self._cur) if self._cur else np.zeros((0, 5), dtype=np.int64)


# QueueTrack.batch_walked's size for the row standing for a batch queue's units in the walk's earlier data files
BATCH_EARLIER_SIZE = -1

# a tracked unit: commitlog offset, offset + size, queue number, its queue offset (a batch queue's: its
# unit number in the queue), kind
UNIT_COLUMNS = ("offset", "end", "queue", "key", "kind")
U_OFFSET, U_END, U_QUEUE, U_KEY, U_KIND = range(5)
KIND_CQ, KIND_LIGHT, KIND_BATCH = 0, 1, 2   # a record's own consume queue, a light queue (LMQ), a batch queue


def max_key(units: np.ndarray) -> np.ndarray:
    """What each unit leaves as its queue's ``getMaxPhysicOffset``: ``ConsumeQueue``'s (a light queue's too) is
    the unit's end, ``BatchConsumeQueue``'s (``maxMsgPhyOffsetInCommitLog``) its start."""
    return np.where(units[:, U_KIND] == KIND_BATCH, units[:, U_OFFSET], units[:, U_END])


def _last_per_queue(units: np.ndarray, kind: int) -> dict[int, np.ndarray]:
    """Each queue's last unit of ``kind`` among ``units`` (rows of :data:`UNIT_COLUMNS`, in walk order): queue
    number to that row."""
    rows = units[units[:, U_KIND] == kind][::-1]
    queues, at = np.unique(rows[:, U_QUEUE], return_index=True)
    return {int(q): rows[k] for q, k in zip(queues, at)}


def positions(rows: np.ndarray) -> np.ndarray:
    """Units (rows of :data:`UNIT_COLUMNS`) as ``putMessagePositionInfo`` takes them: rows of commitlog offset, size
    and queue offset."""
    return np.stack([rows[:, U_OFFSET], rows[:, U_END] - rows[:, U_OFFSET], rows[:, U_KEY]], 1)


def mixed_queues(units: np.ndarray) -> list[int]:
    """The queues of ``units`` (rows of :data:`UNIT_COLUMNS`) holding both a record's own units and light ones (a
    message put to topic ``%LMQ%...`` itself beside multi-dispatch into it): their queue offsets come from two
    counters (``QueueOffsetOperator``'s ``topicQueueTable`` and ``lmqTopicQueueTable``), so the positions
    ``putMessagePositionInfo`` gave them are not their queue offsets (:func:`replayed`)."""
    own = np.unique(units[units[:, U_KIND] == KIND_CQ, U_QUEUE])
    light = np.unique(units[units[:, U_KIND] == KIND_LIGHT, U_QUEUE])
    return [int(q) for q in np.intersect1d(own, light)]


def replayed(rows: np.ndarray, cq_file_size: int,
             start: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """A queue's units (rows of :data:`UNIT_COLUMNS`, in commitlog order) as ``ConsumeQueue.putMessagePositionInfo``
    put them into a queue that had none (:func:`store_format.consumequeue.assign_positions`: dropped at or below the
    max, or a queue offset not 0 whose ``* 20`` lies below the write position; else appended at the write position,
    whatever the queue offset): each one's queue byte position (-1: dropped), where each one stands (its position, a
    dropped one's the next appended unit's: the write position the queue had then, after the units before it) and the
    write position after the last.  ``start``: the write position and max the queue had before them instead (its
    units in the walk's earlier data files)."""
    states = new_states(1)
    if start is not None:
        states[0, Q_WRITE_POS], states[0, Q_MAX_PHYS] = start
        states[0, Q_FIRST_FILE] = 0
        states[0, Q_LAST_FILE] = (start[0] - 1) // cq_file_size * cq_file_size
    pos = assign_positions(np.zeros(len(rows), dtype=np.int64), rows[:, U_OFFSET], rows[:, U_END] - rows[:, U_OFFSET],
                           rows[:, U_KEY], cq_file_size, states)
    final = int(states[0, Q_WRITE_POS])
    at = np.minimum.accumulate(np.where(pos >= 0, pos, np.iinfo(np.int64).max)[::-1])[::-1]
    return pos, np.where(at == np.iinfo(np.int64).max, final, at), final
