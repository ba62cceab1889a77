"""Intermediate files between the scan and the build tasks, under the run's staging folder.

Two Arrow IPC files per split, whatever the number of queues or build tasks:

* ``units/s<split>.arrow``: the split's consume queue units (with the batch queue columns when the
  store has BatchCQ topics), one record batch per queue bucket
  (batch ``b`` holds the units of the queues of bucket ``b``, in dispatch order), so that a bucket
  task reads its batch of each split by offset and nothing else.  The split's queues are numbered
  in the file's metadata (``queues``: JSON list of ``[topic, queueId]``).
* ``keys/s<split>.arrow``: one row per dispatched record that put index keys, in walk order: its
  commitlog offset and store time (what ``IndexService.buildIndex`` checks and writes) and the
  index hashes of its keys.
* ``rdbidx/s<split>.sst`` (5.5 ``indexRocksDBEnable`` only, local work folders): the split's entries of
  the RocksDB message index (:func:`store_format.index_rocksdb.index_rocksdb_entries`) as a sorted table
  file (:func:`pipelines.index_rocksdb.write_split_sst`), and ``rdbidx/s<split>.arrow``, written after it:
  one row with its key count, the offset and store time of the split's last indexed record, and its
  smallest and largest keys.

No Spark rows and no JVM conversion; retried tasks overwrite the same files with the same bytes;
the files go away with the staging folder.  Local files are read through memory maps.
"""
from __future__ import annotations

import json
import os
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.ipc as ipc

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.dispatch import QueueUnits, queue_units, stable_order
from store_format.errors import StoreLayoutError
from store_format.index_rocksdb import entries_from, index_rocksdb_entries
from store_format.javahash import index_hash
from store_format.store import resolve

from .index_rocksdb import SplitSst, write_split_sst
from .oserrors import naming

__all__ = ["UNIT_SCHEMA", "OPTIONAL_UNIT_FIELDS", "KEY_SCHEMA", "STATE_SCHEMA", "queue_bucket", "write_split_work",
           "read_bucket_units", "read_keys", "drop_split_work", "split_batches", "SplitKeys", "write_queue_states",
           "read_queue_states", "RDBIDX_SCHEMA", "read_index_rocksdb"]

UNIT_SCHEMA = pa.schema([
    ("queue", pa.int32()),             # number of the unit's queue in the file's ``queues`` metadata
    ("queue_offset", pa.int64()),      # the record's stored queueOffset (or the light queue's)
    ("commitlog_offset", pa.int64()),
    ("size", pa.int32()),
    ("tags_code", pa.int64()),
])
# columns after UNIT_SCHEMA's that a store's layout needs, read by name: with enableConsumeQueueExt
# ``own`` and ``store_timestamp`` (store_format.consumequeue_ext); with a RocksDB consume queue
# ``store_timestamp`` (store_format.rocksdb_cq); with BatchCQ topics
# ``store_timestamp``, ``base_offset`` and ``batch_size`` (store_format.batchconsumequeue; unused for
# the units of ordinary queues)
OPTIONAL_UNIT_FIELDS = {
    "own": pa.bool_(),                 # the record's own queue (a light queue's unit gets no ext unit)
    "store_timestamp": pa.int64(),
    "base_offset": pa.int64(),         # msgBaseOffset: INNER_BASE, else the record's queue offset
    "batch_size": pa.int16(),          # INNER_NUM, else 1
}
KEY_SCHEMA = pa.schema([
    ("commitlog_offset", pa.int64()),
    ("store_timestamp", pa.int64()),
    ("key_hashes", pa.list_(pa.int32())),   # IndexFile.indexKeyHashMethod of each topic#key, in put order
])

RDBIDX_SCHEMA = pa.schema([              # one row: the split's rdbidx/ SST file (pipelines.index_rocksdb.SplitSst)
    ("keys", pa.int64()),
    ("last_offset", pa.int64()),
    ("last_store_timestamp", pa.int64()),
    ("first_key", pa.large_binary()),
    ("last_key", pa.large_binary()),
])


# the append state of a queue as a split begins (store_format.consumequeue Q_* columns)
STATE_SCHEMA = pa.schema([
    ("split_id", pa.int32()), ("topic", pa.string()), ("queue_id", pa.int32()),
    ("max_phys", pa.int64()), ("write_pos", pa.int64()), ("first_file", pa.int64()), ("blank_until", pa.int64()),
    ("last_file", pa.int64()),
])


def queue_bucket(topic: str, queue_id: int, buckets: int) -> int:
    """Stable bucket of a queue (the same in every process)."""
    return (zlib.crc32(topic.encode("utf-8", "surrogatepass")) * 31 + queue_id) % buckets


def _units_path(work_uri: str, split_id: int) -> str:
    return f"{work_uri}/units/s{split_id:07d}.arrow"


def _keys_path(work_uri: str, split_id: int) -> str:
    return f"{work_uri}/keys/s{split_id:07d}.arrow"


def _rdbidx_path(work_uri: str, split_id: int) -> str:
    return f"{work_uri}/rdbidx/s{split_id:07d}.arrow"


def _rdbidx_sst(work_uri: str, split_id: int) -> str:
    """The local path of a split's SST file (a RocksDB table file is written and ingested by path)."""
    fs, path = resolve(f"{work_uri}/rdbidx/s{split_id:07d}.sst")
    if not isinstance(fs, pafs.LocalFileSystem):   # preflight refuses such an OUT before any work
        raise StoreLayoutError(f"{work_uri}: the RocksDB message index (indexRocksDBEnable=true) is written on a "
                               "local file system only")
    return path


def _write(uri: str, schema: pa.Schema, batches: list[pa.RecordBatch]) -> None:
    fs, path = resolve(uri)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with naming(path), fs.open_output_stream(path) as out, ipc.new_file(out, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)


def _open(uri: str) -> ipc.RecordBatchFileReader | None:
    fs, path = resolve(uri)
    try:
        source = pa.memory_map(path) if isinstance(fs, pafs.LocalFileSystem) else fs.open_input_file(path)
    except FileNotFoundError:
        return None
    return ipc.open_file(source)


def _unit_batches(units: QueueUnits, buckets: int, extra: dict[str, np.ndarray]
                  ) -> tuple[pa.Schema, list[pa.RecordBatch]]:
    bucket_of_queue = np.array([queue_bucket(t, q, buckets) for t, q in units.queues], dtype=np.int64)
    bucket = bucket_of_queue[units.queue] if len(units) else np.zeros(0, dtype=np.int64)
    order = stable_order(bucket, buckets)  # dispatch order kept within a bucket
    bounds = np.searchsorted(bucket[order], np.arange(buckets + 1))
    columns = [units.queue, units.queue_offset, units.offset, units.size, units.tags_code, *extra.values()]
    schema = pa.schema([*UNIT_SCHEMA, *(pa.field(n, OPTIONAL_UNIT_FIELDS[n]) for n in extra)])
    sorted_cols = [pa.array(np.ascontiguousarray(c[order])) for c in columns]
    schema = schema.with_metadata({"queues": json.dumps(units.queues)})
    batches = [pa.RecordBatch.from_arrays([c.slice(int(a), int(b - a)) for c in sorted_cols], schema=schema)
               for a, b in zip(bounds[:-1], bounds[1:])]
    return schema, batches


def split_batches(res: cl.WalkResult, buckets: int, config: BrokerConfig | None = None,
                  units: QueueUnits | None = None
                  ) -> tuple[pa.Schema | None, list[pa.RecordBatch], pa.RecordBatch | None]:
    """A split's work as Arrow: its units' schema and one batch per queue bucket (none without
    units), and the batch of its index keys (None without keys).  With ``config``'s
    ``enableConsumeQueueExt``, BatchCQ topics (:func:`store_format.dispatch.queue_units`) or RocksDB
    consume queue, the units carry the columns of :data:`OPTIONAL_UNIT_FIELDS` these layouts need.
    ``units``: the walk's units for ``config``'s BatchCQ topics, when already numbered."""
    schema: pa.Schema | None = None
    batches: list[pa.RecordBatch] = []
    ext = config is not None and config.enableConsumeQueueExt
    if units is None:
        units = queue_units(res, config.batch_topics if config is not None else frozenset())
    if len(units):
        extra: dict[str, np.ndarray] = {}
        if ext:
            extra["own"] = units.own
        if ext or units.base_offset is not None or (config is not None and config.rocksdb_cq):
            extra["store_timestamp"] = res.rec[units.record, cl.R_STORE_TS]
        if units.base_offset is not None:
            assert units.batch_size is not None
            extra["base_offset"], extra["batch_size"] = units.base_offset, units.batch_size
        schema, batches = _unit_batches(units, buckets, extra)
    rec = res.rec
    keyed = np.nonzero((rec[:, cl.R_STATUS] == cl.Status.DISPATCHED) & (rec[:, cl.R_KEY_COUNT] > 0))[0]
    keys = None
    if len(keyed):
        counts = rec[keyed, cl.R_KEY_COUNT]
        offsets = np.zeros(len(keyed) + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        # keys of dispatched records lie in walk order, so those of the keyed records are res.key as is
        hashes = pa.array(index_hash(res.key[:, cl.K_HASH]))
        lists = pa.ListArray.from_arrays(pa.array(offsets), hashes)
        keys = pa.RecordBatch.from_arrays([pa.array(rec[keyed, cl.R_PHYS]), pa.array(rec[keyed, cl.R_STORE_TS]),
                                           lists], schema=KEY_SCHEMA)
    return schema, batches, keys


def write_split_work(work_uri: str, split_id: int, res: cl.WalkResult | None, buckets: int,
                     config: BrokerConfig | None = None, units: QueueUnits | None = None) -> None:
    """Write a split's units (one batch per queue bucket; their columns for ``config``'s layout: see
    :func:`split_batches`) and index keys."""
    if res is None:
        return
    schema, batches, keys = split_batches(res, buckets, config, units)
    if schema is not None:
        _write(_units_path(work_uri, split_id), schema, batches)
    if keys is not None:
        _write(_keys_path(work_uri, split_id), KEY_SCHEMA, [keys])
    if config is not None and config.index_rocksdb:
        path = _rdbidx_sst(work_uri, split_id)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with naming(path):
            sst = write_split_sst(entries_from(index_rocksdb_entries(res), config.rocksdb_index_from), path)
        if sst is not None:
            _write(_rdbidx_path(work_uri, split_id), RDBIDX_SCHEMA, [pa.RecordBatch.from_arrays(
                [pa.array([getattr(sst, f.name)], f.type) for f in RDBIDX_SCHEMA],
                schema=RDBIDX_SCHEMA)])


def read_index_rocksdb(work_uri: str, split_id: int) -> SplitSst | None:
    """A split's SST file of RocksDB message index entries (``rdbidx/``), or None without any."""
    reader = _open(_rdbidx_path(work_uri, split_id))
    if reader is None or reader.num_record_batches == 0:
        return None
    row = {name: col[0].as_py() for name, col in zip(RDBIDX_SCHEMA.names, reader.get_batch(0).columns)}
    return SplitSst(_rdbidx_sst(work_uri, split_id), **row)


def read_bucket_units(work_uri: str, split_id: int, bucket: int) -> tuple[pa.RecordBatch, list] | None:
    """A split's units of one queue bucket and the split's queue names, or None without units."""
    reader = _open(_units_path(work_uri, split_id))
    if reader is None:
        return None
    queues = json.loads(reader.schema.metadata[b"queues"])
    return reader.get_batch(bucket), queues


class SplitKeys:
    """A split's keyed records (``commitlog_offset``, ``store_timestamp``) and their keys' hashes
    (``hashes``; ``counts[i]`` of them belong to record i)."""

    def __init__(self, batch: pa.RecordBatch) -> None:
        self.offset = batch.column(0).to_numpy()
        self.store_ts = batch.column(1).to_numpy()
        lists = batch.column(2)
        bounds = lists.offsets.to_numpy()
        self.counts = np.diff(bounds)
        self.hashes = lists.values.to_numpy()[bounds[0]:bounds[-1]]


def read_keys(work_uri: str, split_id: int) -> SplitKeys | None:
    reader = _open(_keys_path(work_uri, split_id))
    if reader is None or reader.num_record_batches == 0:
        return None
    return SplitKeys(reader.get_batch(0))


def _states_path(work_uri: str, bucket: int) -> str:
    return f"{work_uri}/states/b{bucket:05d}.arrow"


def write_queue_states(work_uri: str, bucket: int, names: list[tuple[str, int]],
                       entry_states: list[tuple[int, np.ndarray, np.ndarray]]) -> None:
    """A bucket's queue states as each split began: ``(split, queue numbers, state rows)``."""
    if not entry_states:
        return
    split = np.concatenate([np.full(len(q), sid, dtype=np.int32) for sid, q, _ in entry_states])
    queue = np.concatenate([q for _, q, _ in entry_states])
    states = np.concatenate([st for _, _, st in entry_states])
    cols = [pa.array(split), pa.array([names[int(q)][0] for q in queue], pa.string()),
            pa.array(np.array([names[int(q)][1] for q in queue], dtype=np.int32))]
    cols += [pa.array(np.ascontiguousarray(states[:, c])) for c in range(states.shape[1])]
    _write(_states_path(work_uri, bucket), STATE_SCHEMA, [pa.RecordBatch.from_arrays(cols, schema=STATE_SCHEMA)])


def read_queue_states(work_uri: str, buckets: int, split_ids: set[int]) -> dict[int, dict[tuple[str, int], np.ndarray]]:
    """Per split of ``split_ids``: each queue's state as the split began (from every bucket)."""
    out: dict[int, dict[tuple[str, int], np.ndarray]] = {}
    for b in range(buckets):
        reader = _open(_states_path(work_uri, b))
        if reader is None:
            continue
        table = reader.read_all()
        sid = table.column(0).to_numpy()
        rows = np.flatnonzero(np.isin(sid, np.fromiter(split_ids, dtype=np.int64)))
        if not len(rows):
            continue
        topics = table.column(1).take(pa.array(rows)).to_pylist()
        qids = table.column(2).to_numpy()[rows]
        states = np.stack([table.column(c).to_numpy()[rows] for c in range(3, 8)], axis=1)
        for i, r in enumerate(rows):
            out.setdefault(int(sid[r]), {})[(topics[i], int(qids[i]))] = states[i]
    return out


def drop_split_work(work_uri: str, split_id: int) -> None:
    """Remove a split's work files (before the driver writes the files of its own walk)."""
    for uri in (_units_path(work_uri, split_id), _keys_path(work_uri, split_id), _rdbidx_path(work_uri, split_id),
                f"{work_uri}/rdbidx/s{split_id:07d}.sst"):
        fs, path = resolve(uri)
        try:
            fs.delete_file(path)
        except FileNotFoundError:
            pass
