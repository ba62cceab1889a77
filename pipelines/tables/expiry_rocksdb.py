"""The ``expiry_audit`` rows of a RocksDB consume queue (``storeType=defaultRocksDB``): per queue, the
units the compaction after the next cleanup removes and the queue's minimum offset afterwards
(:func:`store_format.expiry_rocksdb.rocksdb_queue_cleanup`), from the ``messages`` rows of the segments
that go (their own queue's unit and their light queue units)."""
from __future__ import annotations

import datetime as _dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from store_format.expiry_rocksdb import rocksdb_queue_cleanup

__all__ = ["ROCKSDB_CQ_NOTE", "ROCKSDB_DLEDGER_NOTE", "rocksdb_queue_rows"]

ROCKSDB_CQ_NOTE = (
    "RocksDB consume queue (storeType=defaultRocksDB): no consume queue files; once segments go, the next "
    "RocksDBCleanConsumeQueueService round (at deleteWhen or with a full disk) compacts the database with a filter "
    "that removes every unit below the new minimum commitlog offset (RocksDBConsumeQueueStore.cleanExpired; the "
    "rocksdb_queue rows), and getMinOffsetInQueue then answers one past each queue's last removed unit. Not "
    "derivable from the store: when RocksDB's compaction thread finishes (the units stay readable, though "
    "unreachable below the queue's minimum, until then), and a minimum raised outside deleteWhen without a full "
    "disk (a manual deleteExpiredCommitLog): that round then compacts nothing and the next compaction waits for "
    "the next rise")
ROCKSDB_DLEDGER_NOTE = (
    "RocksDB consume queue over a DLedger commitlog: the new minimum is DLedgerCommitLog.getMinOffset (the first "
    "old commitlog file left, else the first DLedger data file left), as for consume queue files; DLedger's "
    "CleanSpaceService deletes the data files in its own thread, and the compaction follows at the broker's next "
    "RocksDBCleanConsumeQueueService round (every cleanResourceInterval) if that round falls in deleteWhen's hour or "
    "sees the consume queue disk above diskMaxUsedSpaceRatio; a deletion the round sees only after that hour "
    "compacts nothing until the next rise (getMinOffsetInQueue answers the same either way)")


def _units(msgs: pa.Table) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Every unit of ``msgs``: queue names (``topic/queueId``), queue number per unit, queue offsets and
    commitlog offsets; the records' own units and their light queue units."""
    own = msgs.filter(pc.fill_null(msgs["consume_queue"], False))
    names = [f"{t}/{q}" for t, q in zip(own["topic"].to_pylist(), own["queue_id"].to_pylist())]
    cq = own["consume_queue_offset"].to_numpy(zero_copy_only=False).astype(np.int64)
    off = own["commitlog_offset"].to_numpy(zero_copy_only=False).astype(np.int64)
    if "lmq_queues" in msgs.column_names:
        lmq = msgs.filter(pc.greater(pc.fill_null(pc.list_value_length(msgs["lmq_queues"]), 0), 0))
        if lmq.num_rows:
            n = pc.list_value_length(lmq["lmq_queues"]).to_numpy(zero_copy_only=False)
            qs = pc.list_flatten(lmq["lmq_queues"]).to_pylist()
            ids = pc.list_flatten(lmq["lmq_queue_ids"]).to_pylist()
            offs = pc.list_flatten(lmq["lmq_consume_queue_offsets"]).to_pylist()
            rec = np.repeat(lmq["commitlog_offset"].to_numpy(zero_copy_only=False).astype(np.int64), n)
            written = np.array([o is not None for o in offs], bool)
            names += [f"{t}/{i}" for t, i, w in zip(qs, ids, written) if w]
            cq = np.concatenate([cq, np.array([o for o in offs if o is not None], np.int64)])
            off = np.concatenate([off, rec[written]])
    queues = sorted(set(names))
    number = {q: i for i, q in enumerate(queues)}
    return queues, np.array([number[q] for q in names], np.int64), cq, off


def rocksdb_queue_rows(msgs: pa.Table | None, new_min: int, *, as_of: _dt.datetime | None, run_id: str,
                       deleted_at: _dt.datetime | None) -> tuple[list[dict], list[dict]]:
    """The ``rocksdb_queue`` rows (one per queue with units below ``new_min``; ``segment``: the segment of
    its first removed unit) and their summary entries.  ``msgs``: the ``messages`` rows of the segments
    that go (None: none)."""
    if msgs is None or not msgs.num_rows:
        return [], []
    queues, q, cq, off = _units(msgs)
    c = rocksdb_queue_cleanup(q, cq, off, new_min)
    seg = dict(zip(msgs["commitlog_offset"].to_pylist(), msgs["segment"].to_pylist()))
    rows, summary = [], []
    for i, n, lo, hi, after in zip(c.queue.tolist(), c.units_removed.tolist(), c.first_offset.tolist(),
                                   c.last_offset.tolist(), c.min_offset_after.tolist()):
        topic, qid = queues[i].rsplit("/", 1)
        rows.append({"as_of": as_of, "run_id": run_id, "kind": "rocksdb_queue", "name": queues[i],
                     "segment": seg.get(lo), "topic": topic, "queue_id": int(qid),
                     "min_offset": lo, "max_offset": hi, "deleted_at": deleted_at, "at_next_cleanup": True,
                     "reason": f"{n} unit(s) below the new minimum commitlog offset {new_min}: removed by the "
                               f"compaction (RocksDBConsumeQueueStore.cleanExpired); getMinOffsetInQueue then "
                               f"answers {after}",
                     "messages": n, "bytes": None})
        summary.append({"queue": queues[i], "units_removed": n, "min_offset_in_queue_after": after})
    return rows, summary
