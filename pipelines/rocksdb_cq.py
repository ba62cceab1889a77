"""Writing a RocksDB consume queue (``storeType=defaultRocksDB``) with the ``rocksdict`` binding.

The key/value set is :func:`store_format.rocksdb_cq.rocksdb_cq_entries`'s; this module only puts it
into a database the broker opens: the ``default`` and ``offset`` column families
(``ConsumeQueueRocksDBStorage.postLoad``), the bytewise comparator both use, and block-based tables
of ``format_version`` 5 as ``RocksDBOptionsFactory.createCQCFOptions``/``createOffsetCFOptions``
set them (the broker's RocksDB, 8.4.4 for 5.5.1, cannot read the newer default format of the
binding's RocksDB).  Files are written uncompressed (the broker reads any block compression it is
built with, so ``rocksdbCompressionType`` need not match).  RocksDB's files are not deterministic:
the same key/value set is the target, not the same bytes.
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from store_format.rocksdb_cq import OFFSET_FAMILY, RocksCqEntries, rocksdb_cq_entries

__all__ = ["write_rocksdb_cq", "read_rocksdb_cq", "build_rocksdb_cq"]

log = logging.getLogger(__name__)

_BATCH = 10_000    # entries per WriteBatch


def _options():
    import rocksdict as rd

    table = rd.BlockBasedOptions()
    table.set_format_version(5)             # RocksDBOptionsFactory: setFormatVersion(5)
    table.set_bloom_filter(16, False)
    table.set_block_size(32 * 1024)
    opts = rd.Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    opts.set_block_based_table_factory(table)
    opts.set_compression_type(rd.DBCompressionType.none())
    return opts


def write_rocksdb_cq(path: str | Path, entries: RocksCqEntries) -> None:
    """Create the database at ``path`` (a folder that must not hold one yet) with ``entries``,
    flushed to table files and closed (the write-ahead log holds nothing the broker must replay)."""
    import rocksdict as rd

    opts = _options()
    db = rd.Rdict(str(path), options=opts, column_families={OFFSET_FAMILY: _options()})
    try:
        for family, rows in ((db.get_column_family_handle("default"), entries.default),
                             (db.get_column_family_handle(OFFSET_FAMILY), entries.offset)):
            for start in range(0, len(rows), _BATCH):
                wb = rd.WriteBatch(raw_mode=True)
                wb.set_default_column_family(family)
                for k, v in rows[start:start + _BATCH]:
                    wb.put(k, v)
                db.write(wb)
        db.flush()
        db.get_column_family(OFFSET_FAMILY).flush()
        db.flush_wal(True)
    finally:
        db.close()
    if entries.replaced:
        log.warning("%d consume queue unit(s) share a key (queue offset) with a later unit: the RocksDB consume "
                    "queue keeps the later one; the broker's choice depends on its write batches", entries.replaced)


def read_rocksdb_cq(path: str | Path) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every key/value of both families of a RocksDB consume queue, sorted by key (opened read-only)."""
    import rocksdict as rd

    opts = rd.Options(raw_mode=True)
    db = rd.Rdict(str(path), options=opts, column_families={OFFSET_FAMILY: rd.Options(raw_mode=True)},
                  access_type=rd.AccessType.read_only())
    try:
        return {name: [(k, v) for k, v in db.get_column_family(name).items()]  # type: ignore[misc]
                for name in ("default", OFFSET_FAMILY)}
    finally:
        db.close()


def build_rocksdb_cq(work_uri: str, split_order: list[int], buckets: int, db_path: str,
                     extra_units: tuple = ()) -> RocksCqEntries:
    """The rebuild's build step for ``storeType=defaultRocksDB``: the units of the splits on the reput's
    path (``split_order``, their work files: :func:`pipelines.workfiles.read_bucket_units`, with the
    ``store_timestamp`` column), queue bucket by bucket, and ``extra_units`` (topic, queue id, queue offset,
    commitlog offset, size, tagsCode, store time: each the only unit of its own queue, as
    :func:`store_format.concurrent_reput.empty_request_units` gives them) into the database at ``db_path``
    (local).

    A queue lies in one bucket and its units keep their dispatch order there, which is all the key/value
    set depends on (a queue's last unit, the latest unit of a key, the highest end overall)."""
    from .workfiles import read_bucket_units

    number: dict[tuple[str, int], int] = {}
    parts: list[tuple[np.ndarray, ...]] = []
    for bucket in range(buckets):
        for sid in split_order:
            got = read_bucket_units(work_uri, sid, bucket)
            if got is None or got[0].num_rows == 0:
                continue
            units, file_queues = got
            remap = np.array([number.setdefault((t, int(q)), len(number)) for t, q in file_queues], dtype=np.int64)
            parts.append((remap[units.column("queue").to_numpy()],
                          *(units.column(c).to_numpy() for c in ("queue_offset", "commitlog_offset", "size",
                                                                 "tags_code", "store_timestamp"))))
    for topic, qid, *unit in extra_units:
        q = number.setdefault((topic, qid), len(number))
        parts.append((np.array([q], dtype=np.int64), *(np.array([v], dtype=np.int64) for v in unit)))
    queues = sorted(number, key=number.__getitem__)
    cols = [np.concatenate(c) for c in zip(*parts)] if parts else [np.zeros(0, dtype=np.int64)] * 6
    entries = rocksdb_cq_entries(queues, *cols)
    write_rocksdb_cq(db_path, entries)
    return entries
