"""Build tasks: consume queue files per queue bucket, index files one per task.

Both read the scan's work files (:mod:`pipelines.workfiles`) in the order the reput reads the
splits and call :mod:`store_format` kernels.

* A queue bucket task owns every unit of its queues, so it carries each queue's append state
  (``ConsumeQueue.putMessagePositionInfo``) itself, split after split, and writes each consume
  queue file as soon as the queue's write position has passed the file's end: memory stays at a
  file per active queue.
* An index file task gets, for every split that holds some of its entries, the endPhyOffset carry
  and the number of keys before the split (computed by the driver from the scan summaries), so it
  knows which of the split's keys the broker indexes and their ordinals.
"""
from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from store_format.commitlog import Scratch
from store_format.config import BrokerConfig
from store_format.consumequeue import NOT_STARTED, assign_positions, build_cq_file, cq_file_name, new_states
from store_format.indexfile import accepted_by_index, index_file_pieces
from store_format.store import resolve

from .workfiles import read_keys, read_units

__all__ = ["RESULT_SCHEMA", "BuildTask", "build_queue_bucket", "build_index_part", "write_file",
           "index_part_name"]

RESULT_SCHEMA = pa.schema([
    ("kind", pa.string()), ("task_id", pa.int64()), ("topic", pa.string()), ("queue_id", pa.int32()),
    ("file_start", pa.int64()), ("entries", pa.int64()), ("bytes", pa.int64()),
    ("first_store_timestamp", pa.int64()), ("end_offset", pa.int64()), ("end_timestamp", pa.int64()),
])


# one per Python worker (tasks run one at a time in a worker): file images are built here
_SCRATCH = Scratch()


_ZEROS = np.zeros(4 << 20, dtype=np.uint8)


def write_file(uri_root: str, relative: str, data) -> int:
    """Write one output file below a root URI (creating folders) and return its size.  ``data``:
    bytes-like, or a list of pieces where an int stands for that many zero bytes."""
    fs, root = resolve(uri_root)
    path = f"{root}/{relative}"
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    pieces = data if isinstance(data, list) else [data]
    total = 0
    with fs.open_output_stream(path) as out:
        for piece in pieces:
            if isinstance(piece, int):
                left = piece
                while left > 0:
                    step = min(left, len(_ZEROS))
                    out.write(memoryview(_ZEROS)[:step])
                    left -= step
                total += piece
                continue
            view = memoryview(piece).cast("B")
            for i in range(0, len(view), 64 << 20):
                out.write(view[i:i + (64 << 20)])
            total += len(view)
    return total


def index_part_name(file_no: int) -> str:
    return f"index/.part-{file_no:010d}"


def _row(kind: str, task_id: int, **values) -> dict:
    row = {f.name: None for f in RESULT_SCHEMA}
    row.update(kind=kind, task_id=task_id, **values)
    return row


def build_queue_bucket(work_uri: str, staging_uri: str, bucket: int, split_ids: list[int],
                       config: BrokerConfig) -> list[dict]:
    """Assign positions to the bucket's units split by split and write its consume queue files."""
    file_size = config.cq_file_size
    queues: dict[tuple[str, int], int] = {}
    names: list[tuple[str, int]] = []
    states = new_states(0)
    pending: dict[int, list[tuple[np.ndarray, ...]]] = {}
    written: list[dict] = []

    def flush(q: int, final: bool) -> None:
        parts = pending.get(q)
        if not parts:
            return
        pos, off, size, tags = (np.concatenate([p[i] for p in parts]) for i in range(4))
        file_of = pos - pos % file_size
        done_before = states[q, 1] - states[q, 1] % file_size if not final else None
        keep = np.zeros(len(pos), dtype=bool)
        for f in np.unique(file_of):
            m = file_of == f
            if done_before is not None and f >= done_before:
                keep |= m
                continue
            topic, qid = names[q]
            data = build_cq_file(int(f), file_size, pos[m], off[m], size[m], tags[m], int(states[q, 3]),
                                 out=_SCRATCH.array("cq_file", (file_size,), np.uint8))
            n = write_file(staging_uri, f"consumequeue/{topic}/{qid}/{cq_file_name(int(f))}", data)
            written.append(_row("cq", bucket, topic=topic, queue_id=qid, file_start=int(f), entries=int(m.sum()),
                                bytes=n))
        pending[q] = [(pos[keep], off[keep], size[keep], tags[keep])] if keep.any() else []

    for sid in split_ids:
        units = read_units(work_uri, bucket, sid)
        if units is None or units.num_rows == 0:
            continue
        topics = units["topic"].combine_chunks().dictionary_encode()
        dict_names = topics.dictionary.to_pylist()
        codes = topics.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        qid = units["queue_id"].to_numpy()
        pair = codes << 32 | (qid.astype(np.int64) & 0xFFFFFFFF)
        uniq, inverse = np.unique(pair, return_inverse=True)
        local = np.empty(len(uniq), dtype=np.int64)
        for j, p in enumerate(uniq):
            key = (dict_names[int(p >> 32)], int(np.int32(p & 0xFFFFFFFF)))
            q = queues.get(key)
            if q is None:
                q = queues[key] = len(names)
                names.append(key)
                states = np.vstack([states, new_states(1)])
            local[j] = q
        qidx = local[inverse]
        off = units["commitlog_offset"].to_numpy()
        size = units["size"].to_numpy()
        tags = units["tags_code"].to_numpy()
        pos = assign_positions(qidx, off, size, units["queue_offset"].to_numpy(), file_size, states)
        kept = pos >= 0
        order = np.argsort(qidx[kept], kind="stable")
        q_sorted = qidx[kept][order]
        bounds = np.r_[0, np.nonzero(np.diff(q_sorted))[0] + 1, len(q_sorted)]
        sel = np.nonzero(kept)[0][order]
        for a, b in zip(bounds[:-1], bounds[1:]):
            if a == b:
                continue
            q = int(q_sorted[a])
            rows = sel[a:b]
            pending.setdefault(q, []).append((pos[rows], off[rows], size[rows], tags[rows]))
            flush(q, final=False)
    for q in list(pending):
        flush(q, final=True)
    # a file getLastMappedFile created for a unit it then skipped stays on disk, empty
    last_written: dict[int, int] = {}
    for row in written:
        q = queues[(row["topic"], row["queue_id"])]
        last_written[q] = max(last_written.get(q, -1), row["file_start"])
    for q, (topic, qid) in enumerate(names):
        if states[q, 4] > last_written.get(q, -1) and states[q, 1] != NOT_STARTED:
            n = write_file(staging_uri, f"consumequeue/{topic}/{qid}/{cq_file_name(int(states[q, 4]))}",
                           np.zeros(file_size, dtype=np.uint8))
            written.append(_row("cq", bucket, topic=topic, queue_id=qid, file_start=int(states[q, 4]), entries=0,
                                bytes=n))
    return written


def build_index_part(work_uri: str, staging_uri: str, file_no: int, parts: list[list[int]],
                     config: BrokerConfig) -> dict:
    """Write index file ``file_no`` from the keys of the splits that hold its entries.

    ``parts``: ``[split_id, endPhyOffset carry, keys before the split]`` in chain order, including
    the split that holds the previous file's last entry (the new file's header starts from it).
    """
    cap = config.index_entries_per_file
    lo, hi = file_no * cap, (file_no + 1) * cap
    chunks = []
    prev_off = prev_ts = 0
    for split_id, carry, base in parts:
        keys = read_keys(work_uri, split_id)
        if keys is None or keys.num_rows == 0:
            continue
        rec = keys["record"].to_numpy()
        offs = keys["commitlog_offset"].to_numpy()
        first = np.r_[True, rec[1:] != rec[:-1]]
        acc, _ = accepted_by_index(offs[first], carry)
        key_acc = np.repeat(acc, np.diff(np.r_[np.nonzero(first)[0], len(rec)]))
        idx = np.nonzero(key_acc)[0]
        ordinal = base + np.arange(len(idx), dtype=np.int64)
        if lo > 0:
            at = np.nonzero(ordinal == lo - 1)[0]
            if len(at):
                prev_off = int(offs[idx[at[0]]])
                prev_ts = int(keys["store_timestamp"].to_numpy()[idx[at[0]]])
        m = (ordinal >= lo) & (ordinal < hi)
        if m.any():
            take = idx[m]
            chunks.append((keys["key_hash"].to_numpy()[take], offs[take], keys["store_timestamp"].to_numpy()[take]))
    hashes = np.concatenate([c[0] for c in chunks]) if chunks else np.zeros(0, np.int32)
    offs = np.concatenate([c[1] for c in chunks]) if chunks else np.zeros(0, np.int64)
    ts = np.concatenate([c[2] for c in chunks]) if chunks else np.zeros(0, np.int64)
    data = index_file_pieces(hashes, offs, ts, max_hash_slot_num=config.maxHashSlotNum,
                             max_index_num=config.maxIndexNum, prev_end_offset=prev_off, prev_end_ts=prev_ts)
    n = write_file(staging_uri, index_part_name(file_no), data)
    return _row("index", file_no, entries=len(hashes), bytes=n,
                first_store_timestamp=int(ts[0]) if len(ts) else prev_ts,
                end_offset=int(offs[-1]) if len(offs) else prev_off, end_timestamp=int(ts[-1]) if len(ts) else prev_ts)


class BuildTask:
    """What ``mapInArrow`` runs on the task table: one row = one bucket or one index file."""

    def __init__(self, tasks: list[dict], config: BrokerConfig, work_uri: str, staging_uri: str) -> None:
        self.tasks = tasks
        self.config = config
        self.work_uri = work_uri
        self.staging_uri = staging_uri

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Input rows: ``id`` = position in the task list (``spark.range``, one task per partition)."""
        for batch in batches:
            for i in batch.column(0).to_pylist():
                task = self.tasks[i]
                if task["kind"] == "cq":
                    rows = build_queue_bucket(self.work_uri, self.staging_uri, task["task_id"], task["splits"],
                                              self.config)
                else:
                    rows = [build_index_part(self.work_uri, self.staging_uri, task["task_id"], task["parts"],
                                             self.config)]
                if rows:
                    yield pa.RecordBatch.from_pylist(rows, schema=RESULT_SCHEMA)
