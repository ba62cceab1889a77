"""Intermediate files between the scan and the build tasks, kept under the run's staging folder.

Scan tasks write, per split, the consume queue units (one file per queue bucket, so that a build
task reads only its queues) and the index keys; build tasks read them back in chain order.  Arrow
IPC files on the output's filesystem: no Spark rows, no JVM conversion, and the files go away with
the staging folder.
"""
from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from store_format import commitlog as cl
from store_format.dispatch import index_keys, queue_units
from store_format.store import resolve

__all__ = ["UNIT_SCHEMA", "KEY_SCHEMA", "queue_bucket", "write_split_work", "read_units", "read_keys", "units_path",
           "keys_path", "drop_split_work"]

UNIT_SCHEMA = pa.schema([
    ("topic", pa.string()), ("queue_id", pa.int32()), ("queue_offset", pa.int64()),
    ("commitlog_offset", pa.int64()), ("size", pa.int32()), ("tags_code", pa.int64()),
])
KEY_SCHEMA = pa.schema([
    ("record", pa.int32()),            # record ordinal within the split's walk
    ("commitlog_offset", pa.int64()),
    ("store_timestamp", pa.int64()),
    ("key_hash", pa.int32()),
])


def queue_bucket(topic: str, queue_id: int, buckets: int) -> int:
    """Stable bucket of a queue (the same in every process)."""
    return (zlib.crc32(topic.encode("utf-8")) * 31 + queue_id) % buckets


def units_path(work_uri: str, bucket: int, split_id: int) -> str:
    return f"{work_uri}/units/b{bucket:05d}/s{split_id:07d}.arrow"


def keys_path(work_uri: str, split_id: int) -> str:
    return f"{work_uri}/keys/s{split_id:07d}.arrow"


def _write(uri: str, table: pa.Table) -> None:
    fs, path = resolve(uri)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as out, ipc.new_file(out, table.schema) as writer:
        writer.write_table(table)


def _read(uri: str) -> pa.Table | None:
    fs, path = resolve(uri)
    try:
        with fs.open_input_file(path) as f:
            return ipc.open_file(f).read_all()
    except FileNotFoundError:
        return None


def write_split_work(work_uri: str, split_id: int, res: cl.WalkResult | None, buckets: int) -> None:
    """Write a split's units (by queue bucket) and index keys.  Idempotent: a retried task
    overwrites the same files with the same bytes."""
    if res is None:
        return
    units = queue_units(res)
    if len(units):
        topics = units.topic.dictionary_encode()
        names = topics.dictionary.to_pylist()
        codes = topics.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        qids = units.queue_id
        pair = codes << 32 | (qids.astype(np.int64) & 0xFFFFFFFF)
        uniq, inverse = np.unique(pair, return_inverse=True)
        bucket_of_pair = np.array([queue_bucket(names[int(p >> 32)], int(np.int32(p & 0xFFFFFFFF)), buckets)
                                   for p in uniq], dtype=np.int64)
        bucket = bucket_of_pair[inverse]
        table = pa.table({"topic": units.topic, "queue_id": pa.array(qids), "queue_offset": pa.array(units.queue_offset),
                          "commitlog_offset": pa.array(units.offset), "size": pa.array(units.size),
                          "tags_code": pa.array(units.tags_code)}, schema=UNIT_SCHEMA)
        for b in np.unique(bucket):
            _write(units_path(work_uri, int(b), split_id), table.filter(pa.array(bucket == b)))
    keys = index_keys(res)
    if len(keys):
        ok = res.rec[keys.record, cl.R_STATUS] == cl.Status.DISPATCHED
        _write(keys_path(work_uri, split_id), pa.table({
            "record": pa.array(keys.record[ok].astype(np.int32)), "commitlog_offset": pa.array(keys.offset[ok]),
            "store_timestamp": pa.array(keys.store_ts[ok]), "key_hash": pa.array(keys.key_hash[ok]),
        }, schema=KEY_SCHEMA))


def read_units(work_uri: str, bucket: int, split_id: int) -> pa.Table | None:
    return _read(units_path(work_uri, bucket, split_id))


def read_keys(work_uri: str, split_id: int) -> pa.Table | None:
    return _read(keys_path(work_uri, split_id))


def drop_split_work(work_uri: str, split_id: int, buckets: int) -> None:
    """Remove a split's work files (before the driver writes the files of its own walk)."""
    fs, _ = resolve(work_uri)
    for uri in [keys_path(work_uri, split_id)] + [units_path(work_uri, b, split_id) for b in range(buckets)]:
        _, path = resolve(uri)
        try:
            fs.delete_file(path)
        except FileNotFoundError:
            pass
