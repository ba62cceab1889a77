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

import os

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from store_format import commitlog as cl
from store_format.commitlog import Scratch
from store_format.config import BrokerConfig
from store_format.consumequeue import (
    NOT_STARTED,
    Q_BLANK_UNTIL,
    Q_LAST_FILE,
    Q_WRITE_POS,
    QueueTable,
    assign_positions,
    build_cq_file,
    cq_file_name,
    cq_queue_folder,
    new_states,
    runs_per_queue,
)
from store_format.consumequeue_ext import (
    build_ext_file,
    ext_addresses,
    ext_file_name,
    ext_ordinals,
    ext_units_per_file,
)
from store_format.indexfile import (
    HEAD_ENTRIES,
    accepted_by_index,
    index_file_pieces,
    index_part_bounds,
    write_index_file,
    write_index_file_part,
)
from store_format.store import resolve

from .build_batch import BatchQueues
from .oserrors import naming
from .workfiles import read_bucket_units, read_keys, write_queue_states

__all__ = ["RESULT_SCHEMA", "BuildTask", "build_queue_bucket", "build_index_part", "index_tasks", "merge_index_rows",
           "write_file", "index_part_name"]

RESULT_SCHEMA = pa.schema([
    ("kind", pa.string()), ("task_id", pa.int64()), ("topic", pa.string()), ("queue_id", pa.int32()),
    ("file_start", pa.int64()), ("entries", pa.int64()), ("bytes", pa.int64()),
    ("first_store_timestamp", pa.int64()), ("end_offset", pa.int64()), ("end_timestamp", pa.int64()),
    ("begin_offset", pa.int64()),      # commitlog offset of the file's first unit or entry
])


# one per Python worker (tasks run one at a time in a worker): file images are built here
_SCRATCH = Scratch()


_ZEROS = np.zeros(4 << 20, dtype=np.uint8)


def write_file(uri_root: str, relative: str, data) -> int:
    """Write one output file below a root URI (creating folders) and return its size.

    ``data``: bytes-like, or a list of pieces where an int stands for that many zero bytes.  On a
    local filesystem zero pieces become holes (a sparse file, as the broker's own ``MappedFile``
    creates its files with ``RandomAccessFile.setLength``): the bytes read back are the same, and
    the zeros cost neither writes nor memory.  Elsewhere (HDFS, S3) the zeros are written.
    """
    fs, root = resolve(uri_root)
    path = f"{root}/{relative}"
    with naming(path):
        return _write_file(fs, path, data)


def _write_file(fs: pafs.FileSystem, path: str, data) -> int:
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    pieces = data if isinstance(data, list) else [data]
    if isinstance(fs, pafs.LocalFileSystem):
        return _write_sparse(path, pieces)
    total = 0
    with fs.open_output_stream(path) as out:
        for piece in pieces:
            if isinstance(piece, int):
                left = piece
                while left > 0:
                    step = min(left, len(_ZEROS))
                    out.write(_ZEROS.data[:step])
                    left -= step
                total += piece
                continue
            view = memoryview(np.asarray(piece).data).cast("B")
            for i in range(0, len(view), 64 << 20):
                out.write(view[i:i + (64 << 20)])
            total += len(view)
    return total


def _write_sparse(path: str, pieces: list) -> int:
    total = 0
    with open(path, "wb") as out:
        for piece in pieces:
            if isinstance(piece, int):
                out.seek(piece, os.SEEK_CUR)
                total += piece
            else:
                view = memoryview(np.asarray(piece).data).cast("B")
                out.write(view)
                total += len(view)
        out.truncate(total)
    return total


def index_part_name(file_no: int) -> str:
    return f"index/.part-{file_no:010d}"


def _row(kind: str, task_id: int, **values) -> dict:
    row: dict[str, object] = {f.name: None for f in RESULT_SCHEMA}
    row.update(kind=kind, task_id=task_id, **values)
    return row


class _ExtFiles:
    """The ext files of a bucket's queues (``enableConsumeQueueExt``: :mod:`store_format.consumequeue_ext`):
    each queue's ext units so far, and those of its files not yet written (a file is written once
    a unit of the next one exists, i.e. with its end marker, or at the end)."""

    def __init__(self, staging_uri: str | None, file_size: int, bucket: int) -> None:
        self.staging_uri, self.file_size, self.bucket = staging_uri, file_size, bucket
        self.per_file = ext_units_per_file(file_size)
        self.counts = np.zeros(0, dtype=np.int64)     # ext units put, per queue number
        self.pending: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.rows: list[dict] = []

    def put(self, qidx: np.ndarray, own: np.ndarray, tags: np.ndarray, store_ts: np.ndarray,
            names: list[tuple[str, int]]) -> np.ndarray:
        """Put the ext units of a split's units (in dispatch order) and return the tagsCode the consume
        queue stores for each: the ext address for a record's own queue, the tagsCode for a light queue."""
        if len(self.counts) < len(names):
            self.counts = np.r_[self.counts, np.zeros(len(names) - len(self.counts), dtype=np.int64)]
        at = np.flatnonzero(own)
        before = self.counts.copy()
        ordinal = ext_ordinals(qidx[at], self.counts)
        stored = tags.copy()
        stored[at] = ext_addresses(ordinal, self.file_size)
        for q, rows in runs_per_queue(qidx, at):
            self.pending.setdefault(q, []).append((tags[rows], store_ts[rows]))
            if (self.counts[q] - 1) // self.per_file > max(before[q] - 1, 0) // self.per_file:   # a next file began
                self.flush(q, names[q], final=False)
        return stored

    def flush(self, q: int, name: tuple[str, int], final: bool) -> None:
        """Write the queue's pending files that are complete (all of them when ``final``)."""
        parts = self.pending.pop(q)
        tags, ts = (np.concatenate([p[i] for p in parts]) for i in range(2))
        count = int(self.counts[q])
        first = count - len(tags)            # ordinal of the first pending unit (the start of a file)
        topic, qid = name
        for f in range(first // self.per_file, (count - 1) // self.per_file + 1):
            lo, hi = f * self.per_file - first, min((f + 1) * self.per_file, count) - first
            marked = count > (f + 1) * self.per_file
            if not marked and not final:
                self.pending[q] = [(tags[lo:], ts[lo:])]
                break
            n = write_file(self.staging_uri, f"consumequeue_ext/{topic}/{qid}/{ext_file_name(f, self.file_size)}",
                           build_ext_file(self.file_size, tags[lo:hi], ts[lo:hi], marked)) \
                if self.staging_uri is not None else None
            self.rows.append(_row("cqext", self.bucket, topic=topic, queue_id=qid, file_start=f * self.file_size,
                                  entries=hi - lo, bytes=n))

    def finish(self, names: list[tuple[str, int]]) -> list[dict]:
        for q in list(self.pending):
            self.flush(q, names[q], final=True)
        return self.rows


def build_queue_bucket(work_uri: str, staging_uri: str | None, bucket: int, split_ids: list[int],
                       config: BrokerConfig, record_states: bool = False, *,
                       seeds: dict[tuple[str, int], list[int]] | None = None,
                       write_files: bool = True,
                       reset: tuple[int, list[tuple[str, int]]] | None = None) -> list[dict]:
    """Assign positions to the bucket's units split by split (``ConsumeQueue.putMessagePositionInfo``,
    :func:`store_format.consumequeue.assign_positions`) and write its consume queue files.

    With ``record_states`` the append state of each queue as each split begins is kept in the work
    folder (:func:`pipelines.workfiles.write_queue_states`): the tables place a split's units with the
    very state the files were built from.

    Args:
        seeds: the append state (a row of ``Q_*`` columns; ``B_*`` for a BatchCQ topic's queue) of
            queues that already hold units before the first split (the tables refresh: the state the
            previous run's tables give; a rebuild with tables: topic "" queue 0 after a blank's empty
            request, :func:`pipelines.restart_topic_empty.queue_zero_seeds`); the others start empty.
            A file such a queue left open would be written with the units of these splits only, so the
            tables refresh passes seeds with ``write_files=False``; the rebuild's seed of queue 0 goes
            with ``write_files=True``, the files of that queue written over afterwards
            (:func:`pipelines.restart_topic_empty.write_topic_empty`).
        write_files: False to write no consume queue file (``staging_uri`` is not used): the rows
            still say which files the units fill (``bytes`` null).
        reset: ``(split, queues)``: those queues start empty again at that split (``StoreLocation.queue_reset``:
            a 5.5.1 DLedger crash restart's cut left them with no file, ``ConsumeQueue.correctMinOffset`` their
            max at -1, and the start's reput from that split on writes them anew, over every file the walk's
            splits wrote of them, since it puts all those units again).

    With ``enableConsumeQueueExt`` (and ``write_files``) each record's own unit also puts an ext unit
    (:class:`_ExtFiles`); the ext files' rows have kind ``cqext``.
    """
    assert not write_files or staging_uri is not None
    files = _QueueFiles(config, bucket, staging_uri if write_files else None)
    # BatchCQ topics' queues (batchconsumequeue/): placed and written apart (pipelines.build_batch)
    batch = _batch_queues(config, bucket, staging_uri if write_files else None, seeds, record_states)
    files.seed({k: v for k, v in (seeds or {}).items() if k[0] not in config.batch_topics})
    entry_states: list[tuple[int, np.ndarray, np.ndarray]] = []   # (split, queues, their states)
    ext = _ExtFiles(staging_uri, config.mappedFileSizeConsumeQueueExt, bucket) \
        if config.enableConsumeQueueExt and write_files else None
    for sid in split_ids:
        if reset is not None and sid == reset[0]:
            files.reset([tuple(name) for name in reset[1]])
        got = read_bucket_units(work_uri, sid, bucket)
        if got is None or got[0].num_rows == 0:
            continue
        units, file_queues = got
        if batch is not None:
            units = batch.take(units, file_queues, sid)
        file_queue = units.column(0).to_numpy()
        local = files.queues.numbers([(t, int(q)) for t, q in file_queues])
        qidx = local[file_queue]
        if record_states:
            present = local[np.unique(file_queue)]
            entry_states.append((sid, present, files.queues.states[present].copy()))
        tags = units.column(4).to_numpy()
        if ext is not None:
            tags = ext.put(qidx, units.column("own").to_numpy(zero_copy_only=False), tags,
                           units.column("store_timestamp").to_numpy(), files.queues.names)
        files.put(qidx, units.column(2).to_numpy(), units.column(3).to_numpy(), tags, units.column(1).to_numpy())
    rows = files.finish()
    names = files.queues.names
    if record_states:
        write_queue_states(work_uri, bucket, names + (batch.queues.names if batch is not None else []),
                           entry_states + (batch.entry_states(len(names)) if batch is not None else []))
    if ext is not None:
        rows += ext.finish(names)
    return rows + (batch.finish() if batch is not None else [])


class _QueueFiles:
    """A bucket's consume queue files as its units are put, split after split (``ConsumeQueue``): each queue's
    append state (``putMessagePositionInfo``, :func:`store_format.consumequeue.assign_positions`), the units of its
    files not yet complete, and the rows of the files written (``staging_uri`` None: rows only, no file)."""

    def __init__(self, config: BrokerConfig, bucket: int, staging_uri: str | None) -> None:
        self.file_size = config.cq_file_size
        self.bucket, self.staging_uri = bucket, staging_uri
        self.queues = QueueTable()
        self.last_written: dict[int, int] = {}   # per queue: start of the newest file written (or seeded)
        self.pending: dict[int, list[tuple[np.ndarray, ...]]] = {}   # units of files not yet complete, per queue
        self.pending_from: dict[int, int] = {}                       # start of the oldest such file
        self.rows: list[dict] = []

    def seed(self, seeds: dict[tuple[str, int], list[int]]) -> None:
        """Queues that hold units before the first split start from these states (``Q_*`` rows)."""
        if not seeds:
            return
        seeded = self.queues.numbers(list(seeds))
        self.queues.states[seeded] = np.array(list(seeds.values()), dtype=np.int64)
        self.last_written.update(zip(seeded.tolist(), self.queues.states[seeded, Q_LAST_FILE].tolist()))

    def put(self, qidx: np.ndarray, off: np.ndarray, size: np.ndarray, tags: np.ndarray, queue_offset: np.ndarray
            ) -> None:
        """Put a split's units (in dispatch order) and write each queue's files its write position has passed."""
        pos = assign_positions(qidx, off, size, queue_offset, self.file_size, self.queues.states)
        for q, rows in runs_per_queue(qidx, np.flatnonzero(pos >= 0)):
            self.pending.setdefault(q, []).append((pos[rows], off[rows], size[rows], tags[rows]))
            self.pending_from.setdefault(q, int(pos[rows[0]] - pos[rows[0]] % self.file_size))
            write_pos = self.queues.states[q, Q_WRITE_POS]
            if write_pos - write_pos % self.file_size > self.pending_from[q]:
                self.flush(q, final=False)

    def flush(self, q: int, final: bool) -> None:
        """Write the queue's complete files (all of them when ``final``); keep the rest pending."""
        file_size = self.file_size
        parts = self.pending.pop(q)
        pos, off, size, tags = (np.concatenate([p[i] for p in parts]) for i in range(4))
        self.pending_from.pop(q)
        file_of = pos - pos % file_size
        write_pos = self.queues.states[q, Q_WRITE_POS]
        keep = np.zeros(len(pos), dtype=bool) if final else file_of >= write_pos - write_pos % file_size
        topic, qid = self.queues.names[q]
        for f in np.unique(file_of[~keep]):
            m = file_of == f
            n = None
            if self.staging_uri is not None:
                data = build_cq_file(int(f), file_size, pos[m], off[m], size[m], tags[m],
                                     int(self.queues.states[q, Q_BLANK_UNTIL]),
                                     out=_SCRATCH.array("cq_file", (file_size,), np.uint8), trim=True)
                n = write_file(self.staging_uri, f"{cq_queue_folder(topic, qid)}/{cq_file_name(int(f))}",
                               [data, file_size - len(data)])
            self.rows.append(_row("cq", self.bucket, topic=topic, queue_id=qid, file_start=int(f),
                                  entries=int(m.sum()), bytes=n, begin_offset=int(off[m][0]),
                                  end_offset=int(off[m][-1])))
        if keep.any():
            self.pending[q] = [(pos[keep], off[keep], size[keep], tags[keep])]
            self.pending_from[q] = int(file_of[keep][0])

    def reset(self, names: list[tuple]) -> None:
        """:func:`build_queue_bucket`'s ``reset``: the queues of ``names`` this bucket holds lose their state (max
        physical offset -1, no write position: 5.5.1 ``ConsumeQueue.correctMinOffset`` on a queue with no file, so
        ``ConsumeQueue.putMessagePositionInfo`` writes it anew), their pending units and the rows of the files
        written so far (the reput puts the walk's units again at their positions, so it writes those files again).
        Its ext units are left as they are: ``truncateDirtyLogicFiles`` reads no ext address in a queue it empties,
        so ``ConsumeQueueExt.truncateByMaxAddress`` keeps them, and the reput appends after them (5.5.1; checked
        against the broker: ``5.5.1-dledger-abort-before-cut-emptied-layouts``)."""
        for name in names:
            q = self.queues.number.get(name)
            if q is None:
                continue
            self.pending.pop(q, None)
            self.pending_from.pop(q, None)
            self.last_written.pop(q, None)
            self.rows[:] = [r for r in self.rows if (r["topic"], r["queue_id"]) != name]
            self.queues.states[q] = new_states(1)[0]

    def finish(self) -> list[dict]:
        """Write every pending file, then the empty last files: a file ``getLastMappedFile`` created for a unit the
        queue offset check then skipped stays on disk, empty.  The rows of every file written."""
        for q in list(self.pending):
            self.flush(q, final=True)
        for row in self.rows:
            q = self.queues.number[(row["topic"], row["queue_id"])]
            self.last_written[q] = max(self.last_written.get(q, -1), row["file_start"])
        for q, (topic, qid) in enumerate(self.queues.names):
            last_file = int(self.queues.states[q, Q_LAST_FILE])
            if last_file > self.last_written.get(q, -1) and self.queues.states[q, Q_WRITE_POS] != NOT_STARTED:
                n = write_file(self.staging_uri, f"{cq_queue_folder(topic, qid)}/{cq_file_name(last_file)}",
                               [self.file_size]) if self.staging_uri is not None else None
                self.rows.append(_row("cq", self.bucket, topic=topic, queue_id=qid, file_start=last_file,
                                      entries=0, bytes=n))
        return self.rows


def _batch_queues(config: BrokerConfig, bucket: int, staging_uri: str | None, seeds: dict | None,
                  record_states: bool) -> BatchQueues | None:
    """The bucket's batch queues, when the store has BatchCQ topics."""
    if not config.batch_topics:
        return None
    batch_seeds = {k: (int(v[0]), int(v[1])) for k, v in (seeds or {}).items() if k[0] in config.batch_topics}
    return BatchQueues(config, bucket, None if staging_uri is None else
                       (lambda relative, pieces: write_file(staging_uri, relative, pieces)), record_states,
                       batch_seeds)


MIN_INDEX_PART = 1 << 20   # keys: below this a part costs more than it saves


def index_tasks(file_parts: list[list[list[int]]], total_keys: int, config: BrokerConfig,
                parallelism: int, staging_uri: str) -> list[dict]:
    """Build tasks for the index files: one per file, or, on a local filesystem, for a file of many
    keys one per part of it (:func:`store_format.indexfile.index_part_bounds`; the parts write into
    the one file side by side), so that a 400 MB file is not one long task."""
    if not isinstance(resolve(staging_uri)[0], pafs.LocalFileSystem):
        parallelism = 1
    cap = config.index_entries_per_file
    tasks = []
    for f, parts in enumerate(file_parts):
        entries = min(cap, total_keys - f * cap)
        cuts = index_part_bounds(entries, min(parallelism, entries // MIN_INDEX_PART), config.maxHashSlotNum) \
            if entries >= 2 * MIN_INDEX_PART and parallelism > 1 else [0, entries]
        for a, b in zip(cuts[:-1], cuts[1:]):
            tasks.append({"kind": "index", "task_id": f, "parts": parts, "keys": [a, b], "entries": entries})
    return tasks


def merge_index_rows(rows: list[dict]) -> list[dict]:
    """One result row per index file from the rows of its parts (in file order)."""
    files: dict[int, list[dict]] = {}
    for r in rows:
        files.setdefault(r["task_id"], []).append(r)
    merged = []
    for f in sorted(files):
        parts = sorted(files[f], key=lambda r: r["first_key"])
        row = {k: v for k, v in parts[0].items() if k != "first_key"}
        row.update(entries=sum(p["entries"] for p in parts), end_offset=parts[-1]["end_offset"],
                   end_timestamp=parts[-1]["end_timestamp"])
        merged.append(row)
    return merged


def build_index_part(work_uri: str, staging_uri: str, file_no: int, parts: list[list[int]],
                     config: BrokerConfig, keys: tuple[int, int] | None = None, entries: int | None = None) -> dict:
    """Write index file ``file_no`` (or its keys ``keys[0] .. keys[1]`` of ``entries``: one part of
    it, see :func:`index_tasks`) from the keys of the splits that hold its entries.

    ``parts``: ``[split_id, endPhyOffset carry, keys before the split]`` in chain order, including
    the split that holds the previous file's last entry (the new file's header starts from it).
    """
    cap = config.index_entries_per_file
    lo, hi = file_no * cap, (file_no + 1) * cap
    a, b = (lo, hi) if keys is None else (lo + keys[0], lo + keys[1])
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []   # the part's keys: hash, offset, store time
    head: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []     # the file's first keys (header, shared block)
    before: list[np.ndarray] = []                                  # hashes of the file's keys before the part
    prev_off = prev_ts = 0
    for split_id, carry, base in parts:
        split_keys = read_keys(work_uri, split_id)
        if split_keys is None:
            continue
        acc, _ = accepted_by_index(split_keys.offset, carry)
        key_record = np.repeat(np.arange(len(split_keys.counts)), split_keys.counts)
        idx = np.flatnonzero(acc[key_record])            # accepted keys, in put order
        ordinal = base + np.arange(len(idx), dtype=np.int64)
        if lo > 0:
            at = np.flatnonzero(ordinal == lo - 1)
            if len(at):
                r = key_record[idx[at[0]]]
                prev_off, prev_ts = int(split_keys.offset[r]), int(split_keys.store_ts[r])
        m = (ordinal >= lo) & (ordinal < a)   # the keys before the part: their hashes seed its slots
        if m.any():
            before.append(split_keys.hashes[idx[m]])
        for out, m in ((chunks, (ordinal >= a) & (ordinal < b)),
                       (head, (ordinal >= lo) & (ordinal < min(lo + HEAD_ENTRIES, a)))):
            if m.any():
                take = idx[m]
                rec_of = key_record[take]
                out.append((split_keys.hashes[take], split_keys.offset[rec_of], split_keys.store_ts[rec_of]))
    hashes, offs, ts = _joined(chunks)
    before_hash = np.concatenate(before) if before else np.zeros(0, np.int32)
    fs, root = resolve(staging_uri)
    if keys is not None and (keys[0] > 0 or keys[1] < (entries or 0)):   # one part of the file (local only)
        path = f"{root}/{index_part_name(file_no)}"
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        n = write_index_file_part(path, before_hash, hashes, offs, ts, head=_joined(head) if head else None,
                                  entries=entries or 0, max_hash_slot_num=config.maxHashSlotNum,
                                  max_index_num=config.maxIndexNum, prev_end_ts=prev_ts)
    elif isinstance(fs, pafs.LocalFileSystem):  # built in place in the file: no entry buffer
        path = f"{root}/{index_part_name(file_no)}"
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        n = write_index_file(path, hashes, offs, ts, max_hash_slot_num=config.maxHashSlotNum,
                             max_index_num=config.maxIndexNum, prev_end_offset=prev_off, prev_end_ts=prev_ts)
    else:
        data = index_file_pieces(hashes, offs, ts, max_hash_slot_num=config.maxHashSlotNum,
                                 max_index_num=config.maxIndexNum, prev_end_offset=prev_off, prev_end_ts=prev_ts)
        n = write_file(staging_uri, index_part_name(file_no), data)
    return _row("index", file_no, entries=len(hashes), bytes=n, begin_offset=int(offs[0]) if len(offs) else None,
                first_store_timestamp=int(ts[0]) if len(ts) else prev_ts,
                end_offset=int(offs[-1]) if len(offs) else prev_off, end_timestamp=int(ts[-1]) if len(ts) else prev_ts,
                first_key=keys[0] if keys is not None else 0)


def _joined(chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not chunks:
        return np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return tuple(np.concatenate([c[i] for c in chunks]) for i in range(3))  # type: ignore[return-value]


class BuildTask:
    """The build tasks: one per queue bucket and one per index file; their rows are the files written."""

    def __init__(self, tasks: list[dict], config: BrokerConfig, work_uri: str, staging_uri: str) -> None:
        self.tasks = tasks
        self.config = config
        self.work_uri = work_uri
        self.staging_uri = staging_uri

    def rows(self, i: int) -> list[dict]:
        """Task ``i`` of the list: a bucket's consume queue files, or one index file."""
        cl.use_system_allocator()
        task = self.tasks[i]
        if task["kind"] == "cq":
            return build_queue_bucket(self.work_uri, self.staging_uri, task["task_id"], task["splits"], self.config,
                                      record_states=task.get("record_states", False), reset=task.get("reset"),
                                      seeds=task.get("seeds"))
        return [build_index_part(self.work_uri, self.staging_uri, task["task_id"], task["parts"], self.config,
                                 keys=task.get("keys"), entries=task.get("entries"))]
