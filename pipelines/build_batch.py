"""Build step of the batch consume queues (5.x BatchCQ topics) inside a queue bucket task.

A bucket task (:func:`pipelines.build.build_queue_bucket`) hands each split's units of BatchCQ
queues to a :class:`BatchQueues` and keeps the others: their positions follow
``BatchConsumeQueue.putBatchMessagePositionInfo`` (:func:`store_format.batchconsumequeue.assign_batch_positions`),
and each ``batchconsumequeue/<topic>/<queueId>/<20-digit>`` file is written as soon as the queue's
write position has passed its end, so memory stays at a file per active queue.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from store_format.batchconsumequeue import (
    B_WRITE_POS,
    BCQ_DIR,
    BCQ_UNIT_SIZE,
    assign_batch_positions,
    bcq_file_name,
    build_bcq_file,
    new_batch_states,
)
from store_format.config import BrokerConfig
from store_format.consumequeue import QueueTable, runs_per_queue
from store_format.dispatch import QueueUnits
from store_format.layout import CQ_UNIT_SIZE

__all__ = ["BatchQueues", "BCQ_KIND", "place_batch_units"]

BCQ_KIND = "bcq"   # ``kind`` of a build result row for a batch consume queue file

# columns of a unit file read here, by name (pipelines.workfiles.UNIT_SCHEMA and OPTIONAL_UNIT_FIELDS)
_UNIT_COLUMNS = ("commitlog_offset", "size", "tags_code", "store_timestamp", "base_offset", "batch_size")


class BatchQueues:
    """The batch queues of one bucket: their append states, their units not yet written, the rows
    of the files written."""

    def __init__(self, config: BrokerConfig, bucket: int, write: Callable[[str, list], int] | None,
                 record_states: bool = False, seeds: dict[tuple[str, int], tuple[int, int]] | None = None) -> None:
        """``write(relative path, pieces) -> bytes written``, or None to write no file;
        ``record_states``: keep each queue's state as each split begins (:meth:`entry_states`);
        ``seeds``: the state (``B_*`` columns) of queues holding units before the first split (the
        tables refresh; no file is written then)."""
        self.record_states = record_states
        self.entered: list[tuple[int, np.ndarray, np.ndarray]] = []
        self.topics = config.batch_topics
        self.file_size = config.mapperFileSizeBatchConsumeQueue
        self.bucket = bucket
        self.write = write
        self.queues = QueueTable(new_batch_states)
        if seeds:
            assert write is None, "a seeded queue's open file would be written with the new units only"
            seeded = self.queues.numbers(list(seeds), self.topics)   # grows the states first
            self.queues.states[seeded] = np.array(list(seeds.values()), dtype=np.int64)
        self.pending: dict[int, list[tuple[np.ndarray, ...]]] = {}
        self.rows: list[dict] = []

    def take(self, units: pa.RecordBatch, file_queues: list, split_id: int) -> pa.RecordBatch:
        """Place the split's units of batch queues; returns the other units."""
        is_batch = np.array([t in self.topics for t, _ in file_queues], dtype=bool)
        file_queue = units.column("queue").to_numpy()
        mine = is_batch[file_queue] if len(is_batch) else np.zeros(len(file_queue), dtype=bool)
        if not mine.any():
            return units
        rows = np.flatnonzero(mine)
        local = self.queues.numbers([(t, int(q)) for t, q in file_queues], self.topics)
        qidx = local[file_queue[rows]]
        if self.record_states:
            present = np.unique(qidx)
            self.entered.append((split_id, present, self.queues.states[present].copy()))
        cols = [units.column(c).to_numpy()[rows] for c in _UNIT_COLUMNS]
        pos = assign_batch_positions(qidx, cols[0], cols[4], cols[5], self.queues.states)
        for q, part in runs_per_queue(qidx, np.flatnonzero(pos >= 0)):
            self.pending.setdefault(q, []).append((pos[part],) + tuple(c[part] for c in cols))
            self._flush(q, final=False)
        return units.filter(pa.array(~mine))

    def entry_states(self, first: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """The queue states as each split began, in the rows of :data:`pipelines.workfiles.STATE_SCHEMA`
        (``max_phys`` and ``write_pos`` hold the ``B_*`` columns, the others -1), the queues numbered
        from ``first`` on (after the bucket's ordinary queues)."""
        out = []
        for sid, queues, states in self.entered:
            rows = np.full((len(states), 5), -1, dtype=np.int64)
            rows[:, :states.shape[1]] = states
            out.append((sid, queues + first, rows))
        return out

    def finish(self) -> list[dict]:
        """Write what is left of every queue; the rows of all files written (``kind`` ``bcq``)."""
        for q in list(self.pending):
            self._flush(q, final=True)
        return self.rows

    def _flush(self, q: int, final: bool) -> None:
        """Write the queue's full files (every file when ``final``); keep the units of the open one."""
        size = self.file_size
        write_pos = int(self.queues.states[q, B_WRITE_POS])
        open_file = write_pos - write_pos % size   # the file the next unit goes to (or a new one)
        parts = self.pending[q]
        if not final and int(parts[0][0][0]) >= open_file:
            return
        pos, off, usize, tags, ts, base, batch = (np.concatenate([p[i] for p in parts]) for i in range(7))
        file_of = pos - pos % size
        done = np.ones(len(pos), dtype=bool) if final else file_of < open_file
        topic, qid = self.queues.names[q]
        for f in np.unique(file_of[done]):
            m = file_of == f
            n = None
            if self.write is not None:
                data = build_bcq_file(int(f), size, pos[m], off[m], usize[m], tags[m], ts[m], base[m], batch[m],
                                      trim=True)
                n = self.write(f"{BCQ_DIR}/{topic}/{qid}/{bcq_file_name(int(f))}", [data, size - len(data)])
            self.rows.append({"kind": BCQ_KIND, "task_id": self.bucket, "topic": topic, "queue_id": qid,
                              "file_start": int(f), "entries": int(m.sum()), "bytes": n,
                              "begin_offset": int(off[m][0]), "end_offset": int(off[m][-1]),
                              "first_store_timestamp": int(ts[m][0]), "end_timestamp": int(ts[m][-1])})
        if done.all():
            del self.pending[q]
        else:
            keep = ~done
            self.pending[q] = [(pos[keep], off[keep], usize[keep], tags[keep], ts[keep], base[keep], batch[keep])]


def place_batch_units(units: QueueUnits, split_states: dict[tuple[str, int], np.ndarray], topics: frozenset[str],
                      positions: np.ndarray) -> np.ndarray:
    """``positions`` (:func:`store_format.consumequeue.assign_positions` of a walk's units) with those
    of BatchCQ queues' units replaced: the unit's number in its batch queue times ``CQ_UNIT_SIZE`` (so
    that ``position // CQ_UNIT_SIZE`` is the unit's number in either kind of queue), or -1 where the
    broker writes none.  ``split_states``: each queue's state as the split began, as the build kept it
    (:meth:`BatchQueues.entry_states`); queues without one start empty."""
    is_batch = np.array([t in topics for t, _ in units.queues], dtype=bool)
    if not len(units) or not is_batch.any():
        return positions
    mine = np.flatnonzero(is_batch[units.queue])
    if not len(mine):
        return positions
    assert units.base_offset is not None and units.batch_size is not None
    queues = np.flatnonzero(is_batch)
    states = new_batch_states(len(queues))
    for j, q in enumerate(queues):
        known = split_states.get(units.queues[int(q)])
        if known is not None:
            states[j] = known[:2]
    local = np.full(len(units.queues), -1, dtype=np.int64)
    local[queues] = np.arange(len(queues))
    pos = assign_batch_positions(local[units.queue[mine]], units.offset[mine], units.base_offset[mine],
                                 units.batch_size[mine], states)
    out = positions.copy()
    out[mine] = np.where(pos >= 0, pos // BCQ_UNIT_SIZE * CQ_UNIT_SIZE, -1)
    return out
