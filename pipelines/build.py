"""Assign queue positions and index ordinals per split, then build each file in one task.

Both steps call :mod:`store_format` kernels; the functions here only move Arrow tables around, so
the driver uses them too for the splits it walked itself.
"""
from __future__ import annotations

from typing import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.consumequeue import assign_positions, build_cq_file, cq_file_name
from store_format.indexfile import accepted_by_index, build_index_file
from store_format.store import resolve

__all__ = ["CQ_ROW_SCHEMA", "INDEX_ROW_SCHEMA", "CQ_FILE_SCHEMA", "INDEX_FILE_SCHEMA", "queue_rows", "index_rows",
           "AssignQueues", "AssignIndex", "BuildQueueFiles", "BuildIndexFiles", "write_file", "index_part_name", "grouped"]

CQ_ROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("queue_id", pa.int32()), ("file_start", pa.int64()), ("position", pa.int64()),
    ("commitlog_offset", pa.int64()), ("size", pa.int32()), ("tags_code", pa.int64()),
])
INDEX_ROW_SCHEMA = pa.schema([
    ("file_no", pa.int64()), ("ordinal", pa.int64()), ("key_hash", pa.int32()), ("commitlog_offset", pa.int64()),
    ("store_timestamp", pa.int64()), ("is_carry", pa.bool_()),
])
CQ_FILE_SCHEMA = pa.schema([
    ("topic", pa.string()), ("queue_id", pa.int32()), ("file_start", pa.int64()), ("units", pa.int64()),
    ("bytes", pa.int64()),
])
INDEX_FILE_SCHEMA = pa.schema([
    ("file_no", pa.int64()), ("entries", pa.int64()), ("first_store_timestamp", pa.int64()),
    ("end_offset", pa.int64()), ("end_timestamp", pa.int64()), ("bytes", pa.int64()),
])


def _np(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return col.to_numpy() if isinstance(col, pa.Array) else col.to_numpy()


def queue_rows(records: pa.Table, entering: dict[tuple[str, int], list[int]], config: BrokerConfig) -> pa.Table:
    """Consume queue units of one split's records (in walk order) with their queue positions."""
    status = _np(records["status"])
    flags = _np(records["flags"])
    own = np.nonzero((status == cl.Status.DISPATCHED) & ((flags & cl.F_CQ) != 0))[0]
    lmq_lists = records["lmq_topics"].combine_chunks() if isinstance(records["lmq_topics"], pa.ChunkedArray) \
        else records["lmq_topics"]
    parents = pc.list_parent_indices(lmq_lists).to_numpy() if len(records) else np.zeros(0, np.int64)
    lmq_topics = pc.list_flatten(lmq_lists)
    lmq_qids = _np(pc.list_flatten(records["lmq_queue_ids"]))
    lmq_qoffs = _np(pc.list_flatten(records["lmq_queue_offsets"]))
    rec_of = np.concatenate([own, parents]).astype(np.int64)
    sub = np.concatenate([np.zeros(len(own), np.int64), np.arange(1, len(parents) + 1, dtype=np.int64)])
    order = np.lexsort((sub, rec_of))
    topic = pa.concat_arrays([records["topic"].take(pa.array(own)).combine_chunks()
                              if isinstance(records["topic"], pa.ChunkedArray) else records["topic"].take(pa.array(own)),
                              lmq_topics.cast(pa.string())]).take(pa.array(order))
    qid = np.concatenate([_np(records["queue_id"])[own], lmq_qids]).astype(np.int32)[order]
    qoff = np.concatenate([_np(records["queue_offset"])[own], lmq_qoffs]).astype(np.int64)[order]
    rec_of = rec_of[order]
    offset = _np(records["commitlog_offset"])[rec_of]
    size = _np(records["size"])[rec_of].astype(np.int32)
    tags = _np(records["tags_code"])[rec_of]
    names = topic.to_pylist()
    keys = list(zip(names, qid.tolist()))
    index: dict[tuple[str, int], int] = {}
    rows = []
    qidx = np.empty(len(keys), dtype=np.int64)
    for i, k in enumerate(keys):
        j = index.get(k)
        if j is None:
            j = index[k] = len(rows)
            rows.append(entering[k])
        qidx[i] = j
    states = np.array(rows, dtype=np.int64).reshape(len(rows), 4)
    pos = assign_positions(qidx, offset, size, qoff, config.cq_file_size, states)
    kept = pos >= 0
    file_start = pos - pos % config.cq_file_size
    return pa.table({
        "topic": topic.filter(pa.array(kept)), "queue_id": pa.array(qid[kept]), "file_start": pa.array(file_start[kept]),
        "position": pa.array(pos[kept]), "commitlog_offset": pa.array(offset[kept]), "size": pa.array(size[kept]),
        "tags_code": pa.array(tags[kept]),
    }, schema=CQ_ROW_SCHEMA)


def index_rows(records: pa.Table, carry: int, base: int, config: BrokerConfig) -> pa.Table:
    """Index entries of one split's records with their global ordinal and file number; the last
    entry of each file is repeated for the next file (``is_carry``), whose header starts from it."""
    status = _np(records["status"])
    flags = _np(records["flags"])
    hashes_list = records["key_hashes"]
    counts = _np(pc.list_value_length(hashes_list).fill_null(0))
    keyed = np.nonzero((status == cl.Status.DISPATCHED) & ((flags & cl.F_INDEX) != 0) & (counts > 0))[0]
    offsets_all = _np(records["commitlog_offset"])
    acc, _ = accepted_by_index(offsets_all[keyed], carry)
    chosen = keyed[acc]
    chosen_lists = hashes_list.take(pa.array(chosen))
    hashes = _np(pc.list_flatten(chosen_lists)).astype(np.int32)
    parent = chosen[_np(pc.list_parent_indices(chosen_lists))] if len(chosen) else np.zeros(0, np.int64)
    ordinal = base + np.arange(len(hashes), dtype=np.int64)
    cap = config.index_entries_per_file
    file_no = ordinal // cap
    offs = offsets_all[parent]
    ts = _np(records["store_timestamp"])[parent]
    last = (ordinal % cap) == cap - 1
    return pa.table({
        "file_no": pa.array(np.concatenate([file_no, file_no[last] + 1])),
        "ordinal": pa.array(np.concatenate([ordinal, ordinal[last]])),
        "key_hash": pa.array(np.concatenate([hashes, hashes[last]])),
        "commitlog_offset": pa.array(np.concatenate([offs, offs[last]])),
        "store_timestamp": pa.array(np.concatenate([ts, ts[last]])),
        "is_carry": pa.array(np.concatenate([np.zeros(len(hashes), bool), np.ones(int(last.sum()), bool)])),
    }, schema=INDEX_ROW_SCHEMA)


def _by_split(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[int, pa.Table]]:
    """All rows of the partition grouped by split, each in walk order."""
    batches = [b for b in batches if b.num_rows]
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    ids = _np(table["split_id"])
    for sid in np.unique(ids):
        part = table.filter(pa.array(ids == sid)) if len(np.unique(ids)) > 1 else table
        seq = _np(part["seq"])
        if len(seq) > 1 and (np.diff(seq) < 0).any():
            part = part.take(pa.array(np.argsort(seq, kind="stable")))
        yield int(sid), part.combine_chunks()


class AssignQueues:
    def __init__(self, config: BrokerConfig, entering) -> None:
        self.config = config
        self.entering = entering  # broadcast of {split_id: {(topic, qid): state}}

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        entering = self.entering.value
        for sid, part in _by_split(batches):
            yield from queue_rows(part, entering.get(sid, {}), self.config).to_batches()


class AssignIndex:
    def __init__(self, config: BrokerConfig, entering) -> None:
        self.config = config
        self.entering = entering  # broadcast of {split_id: (carry, base)}

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        entering = self.entering.value
        for sid, part in _by_split(batches):
            carry, base = entering[sid]
            yield from index_rows(part, carry, base, self.config).to_batches()


def grouped(task: Callable[[pa.Table], pa.Table]) -> Callable[[pa.Table], pa.Table]:
    """A plain function around a task object: ``applyInArrow`` reads its type hints."""
    def apply(table: pa.Table) -> pa.Table:
        return task(table)
    return apply


def write_file(uri_root: str, relative: str, data) -> int:
    """Write one output file below a root URI (creating folders) and return its size."""
    fs, root = resolve(uri_root)
    path = f"{root}/{relative}"
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    view = memoryview(data)
    with fs.open_output_stream(path) as out:
        step = 64 << 20
        for i in range(0, len(view), step):
            out.write(view[i:i + step])
    return len(view)


def index_part_name(file_no: int) -> str:
    return f"index/.part-{file_no:010d}"


class BuildQueueFiles:
    """``applyInArrow`` over one (topic, queueId, file) group: write the consume queue file."""

    def __init__(self, config: BrokerConfig, staging: str, blank_until) -> None:
        self.config = config
        self.staging = staging
        self.blank_until = blank_until  # broadcast of {(topic, qid): blankUntil}

    def __call__(self, table: pa.Table) -> pa.Table:
        topic = table["topic"][0].as_py()
        qid = table["queue_id"][0].as_py()
        start = table["file_start"][0].as_py()
        data = build_cq_file(start, self.config.cq_file_size, _np(table["position"]), _np(table["commitlog_offset"]),
                             _np(table["size"]), _np(table["tags_code"]),
                             self.blank_until.value.get((topic, qid), -1))
        n = write_file(self.staging, f"consumequeue/{topic}/{qid}/{cq_file_name(start)}", data)
        return pa.table({"topic": [topic], "queue_id": [qid], "file_start": [start], "units": [table.num_rows],
                         "bytes": [n]}, schema=CQ_FILE_SCHEMA)


class BuildIndexFiles:
    """``applyInArrow`` over one index file's entries (plus the previous file's last entry)."""

    def __init__(self, config: BrokerConfig, staging: str) -> None:
        self.config = config
        self.staging = staging

    def __call__(self, table: pa.Table) -> pa.Table:
        file_no = table["file_no"][0].as_py()
        table = table.sort_by([("ordinal", "ascending"), ("is_carry", "descending")])
        carry = _np(table["is_carry"])
        prev_off = prev_ts = 0
        if carry.any():
            i = int(np.nonzero(carry)[0][0])
            prev_off = int(_np(table["commitlog_offset"])[i])
            prev_ts = int(_np(table["store_timestamp"])[i])
        entries = table.filter(pa.array(~carry))
        offs = _np(entries["commitlog_offset"])
        ts = _np(entries["store_timestamp"])
        data = build_index_file(_np(entries["key_hash"]), offs, ts, max_hash_slot_num=self.config.maxHashSlotNum,
                                max_index_num=self.config.maxIndexNum, prev_end_offset=prev_off, prev_end_ts=prev_ts)
        n = write_file(self.staging, index_part_name(file_no), data)
        return pa.table({"file_no": [file_no], "entries": [entries.num_rows],
                         "first_store_timestamp": [int(ts[0]) if len(ts) else prev_ts],
                         "end_offset": [int(offs[-1]) if len(offs) else prev_off],
                         "end_timestamp": [int(ts[-1]) if len(ts) else prev_ts], "bytes": [n]},
                        schema=INDEX_FILE_SCHEMA)
