"""Consume queue assembly with the broker's append rules.

Mirrors ``ConsumeQueue.putMessagePositionInfo`` + ``fillPreBlank`` and
``MappedFileQueue.getLastMappedFile`` (4.9.x and 5.x are the same here):

* a unit is skipped when ``offset + size <= maxPhysicOffset`` of its queue ("build repeatedly");
* a queue's first file is created at ``expect - expect % fileSize`` with ``expect = queueOffset*20``;
  when its queueOffset is not 0 the file is filled from its start with blank units
  ``(0, Integer.MAX_VALUE, 0)`` up to ``expect``;
* a unit whose queueOffset is not 0 and whose ``expect`` lies before the queue's write position is
  skipped; any other unit is appended at the write position, whatever its queueOffset.

The per-queue state is tiny, so the assignment of positions runs as one sequential pass (numba)
over units in commitlog order, starting from any queue states carried in from earlier splits.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

import numba
import numpy as np

from .layout import CQ_BLANK_SIZE, CQ_UNIT_DTYPE, CQ_UNIT_SIZE, segment_name

__all__ = ["QueueTable", "Q_MAX_PHYS", "Q_WRITE_POS", "Q_FIRST_FILE", "Q_BLANK_UNTIL", "Q_LAST_FILE", "new_states",
           "loaded_state", "assign_positions", "build_cq_file", "cq_file_name", "runs_per_queue", "cq_queue_folder"]

NOT_STARTED = np.iinfo(np.int64).min


# columns of a queue's append state (a row of ``new_states``)
Q_MAX_PHYS = 0     # maxPhysicOffset: end (offset + size) of the last unit written
Q_WRITE_POS = 1    # write position: logical byte offset of the next unit, or NOT_STARTED
Q_FIRST_FILE = 2   # start of the queue's first file
Q_BLANK_UNTIL = 3  # where the first file's blank prefix ends (-1: none)
Q_LAST_FILE = 4    # start of the newest file the queue created (getLastMappedFile)


def new_states(n: int) -> np.ndarray:
    """Append-state rows (columns ``Q_*``) of ``n`` queues that have no unit yet."""
    states = np.full((n, 5), -1, dtype=np.int64)
    states[:, 1] = NOT_STARTED
    return states


def loaded_state(max_physic: int, write_position: int, *, loaded: bool, last_file: int | None = None) -> np.ndarray:
    """One queue's append-state row (for :func:`assign_positions`) as a start's load left it: its max physical offset
    and write position (bytes).  A ``loaded`` queue has a file (``ConsumeQueue.recover`` keeps one of zeros at write
    position 0): ``getLastMappedFile`` returns it (``MappedFile.isFirstCreateInQueue`` false), so no ``fillPreBlank``
    and the first unit goes at that write position; a queue without files at write position 0 starts at its first
    unit's own position.  ``last_file``: the start of its last file, tracked (5 columns); else 4 (no file tracking)."""
    state = new_states(1) if last_file is not None else new_states(1)[:, :Q_LAST_FILE].copy()
    state[0, Q_MAX_PHYS] = max_physic
    if loaded or write_position > 0:
        state[0, Q_WRITE_POS] = write_position
    if last_file is not None:
        state[0, Q_LAST_FILE] = last_file
    return state


@numba.njit(cache=True, nogil=True)
def _assign(queue_idx, offset, size, queue_offset, file_size, states, positions):
    track_files = states.shape[1] > 4
    for i in range(queue_idx.shape[0]):
        q = queue_idx[i]
        end = offset[i] + size[i]
        if end <= states[q, Q_MAX_PHYS]:
            positions[i] = -1  # repeated
            continue
        expect = queue_offset[i] * CQ_UNIT_SIZE
        if states[q, Q_WRITE_POS] == NOT_STARTED:
            rem = expect % file_size
            if rem < 0:
                rem += file_size
            first = expect - rem
            states[q, Q_FIRST_FILE] = first
            states[q, Q_WRITE_POS] = first
            if track_files:
                states[q, Q_LAST_FILE] = first
            if queue_offset[i] != 0:
                states[q, Q_WRITE_POS] = expect  # fillPreBlank
                states[q, Q_BLANK_UNTIL] = expect
        elif track_files and states[q, Q_WRITE_POS] == states[q, Q_LAST_FILE] + file_size:
            # getLastMappedFile creates the next file when the last one is full, before the
            # "repeatedly" check below may skip this unit: the file exists even if it stays empty
            states[q, Q_LAST_FILE] = states[q, Q_WRITE_POS]
        if queue_offset[i] != 0 and expect < states[q, Q_WRITE_POS]:
            positions[i] = -1  # "build consume queue repeatedly"
            continue
        positions[i] = states[q, Q_WRITE_POS]
        states[q, Q_WRITE_POS] += CQ_UNIT_SIZE
        states[q, Q_MAX_PHYS] = end


class QueueTable:
    """Queues by the key the broker finds them with, ``(topic, queueId)``
    (``DefaultMessageStore.findConsumeQueue``), numbered as first seen, with their append states
    (rows of ``new_rows``: :func:`new_states`, or another queue kind's)."""

    def __init__(self, new_rows: Callable[[int], np.ndarray] | None = None) -> None:
        self.new_rows = new_rows or new_states
        self.number: dict[tuple[str, int], int] = {}
        self.names: list[tuple[str, int]] = []
        self.states = self.new_rows(0)

    def numbers(self, keys: list[tuple[str, int]], topics: frozenset[str] | None = None) -> np.ndarray:
        """The number of each queue of ``keys`` (new queues get a state that has no unit yet); with
        ``topics``, -1 for the queues of other topics, which are not numbered."""
        out = np.full(len(keys), -1, dtype=np.int64)
        new = 0
        for j, key in enumerate(keys):
            if topics is not None and key[0] not in topics:
                continue
            q = self.number.get(key)
            if q is None:
                q = self.number[key] = len(self.names)
                self.names.append(key)
                new += 1
            out[j] = q
        if new:
            self.states = np.vstack([self.states, self.new_rows(new)])
        return out


def assign_positions(queue_idx: np.ndarray, offset: np.ndarray, size: np.ndarray, queue_offset: np.ndarray,
                     file_size: int, states: np.ndarray) -> np.ndarray:
    """Logical byte position of each unit in its queue, -1 where the broker skips it.

    Args:
        queue_idx: queue number of each unit (index into ``states``), units in dispatch order.
        offset, size, queue_offset: the unit's commitlog offset and size and the record's queueOffset.
        file_size: consume queue file size (a multiple of 20).
        states: int64 matrix ``[n_queues, 5]`` of ``Q_*`` columns (:func:`new_states`); updated
            in place.  (With 4 columns, the newest created file is not tracked.)
    """
    positions = np.empty(len(queue_idx), dtype=np.int64)
    _assign(np.ascontiguousarray(queue_idx, dtype=np.int64), np.ascontiguousarray(offset, dtype=np.int64),
            np.ascontiguousarray(size, dtype=np.int64), np.ascontiguousarray(queue_offset, dtype=np.int64),
            np.int64(file_size), states, positions)
    return positions


def build_cq_file(file_start: int, file_size: int, positions: np.ndarray, offset: np.ndarray, size: np.ndarray,
                  tags_code: np.ndarray, blank_until: int = -1, out: np.ndarray | None = None,
                  trim: bool = False) -> np.ndarray:
    """One consume queue file (uint8 array): units at their positions, blank units before
    ``blank_until`` if the file holds the queue's blank prefix, zeros elsewhere.

    Args:
        out: a reusable array of at least ``file_size`` bytes to build it in.
        trim: return only the bytes up to the last unit (the rest of the file is zeros): what a
            writer of sparse files needs, and all of the image that is touched.
    """
    positions = np.asarray(positions, dtype=np.int64)
    n_blank = 0
    if blank_until > file_start:
        n_blank = (min(blank_until, file_start + file_size) - file_start) // CQ_UNIT_SIZE
    slot = (positions - file_start) // CQ_UNIT_SIZE
    n_units = max(n_blank, int(slot.max()) + 1 if len(slot) else 0) if trim else file_size // CQ_UNIT_SIZE
    if out is None:
        units = np.zeros(n_units, dtype=CQ_UNIT_DTYPE)
    else:
        raw = out[:n_units * CQ_UNIT_SIZE]
        raw[:] = 0
        units = raw.view(CQ_UNIT_DTYPE)
    units["size"][:n_blank] = CQ_BLANK_SIZE
    units["commitlogOffset"][slot] = offset
    units["size"][slot] = size
    units["tagsCode"][slot] = tags_code
    return units.view(np.uint8)


def cq_file_name(file_start: int) -> str:
    """File name of a consume queue file: its 20-digit start offset in the queue's byte space."""
    return segment_name(file_start)


def runs_per_queue(qidx: np.ndarray, rows: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """``rows`` grouped by their queue number (``qidx[rows]``), each group keeping its order in ``rows``
    (the dispatch order, in which a queue's units are appended): (queue number, its rows)."""
    sel = rows[np.argsort(qidx[rows], kind="stable")]
    q_sorted = qidx[sel]
    bounds = np.r_[0, np.flatnonzero(np.diff(q_sorted)) + 1, len(q_sorted)]
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if a < b:
            yield int(q_sorted[a]), sel[a:b]


def cq_queue_folder(topic: str, queue_id: int) -> str:
    """A consume queue's folder below the store root (``ConsumeQueue``'s ``storePath + File.separator + topic +
    File.separator + queueId``): ``consumequeue/<topic>/<queueId>``, and for topic "" (a multi-dispatch request's
    empty name, a blank's empty request) ``consumequeue/<queueId>``, the empty name collapsing to nothing between
    the separators, so its files lie where a topic's queue folders would."""
    return f"consumequeue/{topic}/{queue_id}" if topic else f"consumequeue/{queue_id}"
