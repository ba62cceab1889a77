"""Writing the 5.5 RocksDB message index (``indexRocksDBEnable``) into ``rocksdbstore/`` with ``rocksdict``.

The key/value set is :mod:`store_format.index_rocksdb`'s; this module puts it into a database laid out as
``MessageRocksDBStorage.postLoad`` opens it: the column families ``default`` (the index), ``timer`` and
``trans``, bytewise comparator, block-based tables of ``format_version`` 5 as
``RocksDBOptionsFactory.createIndexCFOptions`` sets them (the broker's RocksDB 8.4.4 cannot read the
binding's newer default), uncompressed (as the broker writes them).  ``timer`` and ``trans`` stay empty:
their records are not derivable from the commitlog (:mod:`store_format.index_rocksdb`).  RocksDB's
files are not deterministic: the same key/value set is the target, not the same bytes.

How it is written: each split's task sorts its entries (:func:`store_format.index_rocksdb.bytewise_unique`)
into one table file (:func:`write_split_sst`, an SST file of the ``default`` family's table options); the
driver ingests the files of the splits on the reput's path (:func:`build_index_rocksdb`: RocksDB moves
them in, giving files whose keys overlap others' their own sequence numbers in level 0), then compacts the
family into one sorted run, so that the broker starts on a database without a pile of level 0 files (its
``createIndexCFOptions`` stops writes at 20).
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from store_format.config import BrokerConfig
from store_format.index_rocksdb import (
    INDEX_FAMILY,
    LAST_OFFSET_PY,
    LAST_STORE_TIMESTAMP,
    TIMER_FAMILY,
    TRANS_FAMILY,
    IndexEntries,
    bytewise_unique,
    last_records,
    restart_last_records,
)
from store_format.message_rocksdb import ROCKSDB_MESSAGE_DIRECTORY, open_read_only

__all__ = ["IndexRocksDBBuilt", "ROCKSDB_DIR", "build_index_rocksdb", "read_message_rocksdb", "rocksdbstore_plan",
           "write_split_sst", "SplitSst"]

_CHUNK = 65_536               # entries turned into Python bytes at a time while a table file is written
_MAX_INGEST_FILES = 1_000     # table files per ingestion (then a compaction): each is open while merged
_READAHEAD = 256 << 10        # per file a compaction reads (RocksDB's default is 2 MiB)


@dataclasses.dataclass
class IndexRocksDBBuilt:
    entries: int             # index keys written (the two last-offset keys not counted)
    last_offset: int         # lastOffsetPy written, -1 when nothing was indexed


@dataclasses.dataclass(frozen=True)
class SplitSst:
    """A split's table file of index entries and what the driver needs of it."""
    path: str                # local path of the SST file
    keys: int                # distinct keys in it
    last_offset: int         # commitlog offset of the split's last indexed record
    last_store_timestamp: int
    first_key: bytes         # its smallest and largest keys
    last_key: bytes


def _options(*, build: bool = False):
    import rocksdict as rd

    table = rd.BlockBasedOptions()
    table.set_format_version(5)             # RocksDBOptionsFactory.createIndexCFOptions: setFormatVersion(5)
    table.set_bloom_filter(16, False)
    table.set_block_size(128 * 1024)
    opts = rd.Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    opts.set_block_based_table_factory(table)
    opts.set_compression_type(rd.DBCompressionType.none())
    if build:   # the driver's own compactions only, on every core; index and filter blocks read on demand
        cores = os.cpu_count() or 1
        table.set_cache_index_and_filter_blocks(True)
        opts.set_block_based_table_factory(table)
        opts.set_disable_auto_compactions(True)
        opts.increase_parallelism(cores)
        opts.set_max_subcompactions(cores)
        opts.set_compaction_readahead_size(_READAHEAD)
        opts.set_target_file_size_base(256 << 20)   # createIndexCFOptions: setTargetFileSizeBase(256 MB)
    return opts


def write_split_sst(entries: IndexEntries, path: str) -> SplitSst | None:
    """A split's entries as one SST file at ``path`` (local; None without entries): sorted and each key
    once (:func:`store_format.index_rocksdb.bytewise_unique`), value the store time (8 bytes big-endian).
    Written under a temporary name and renamed, so that ``path`` is whole whenever it exists (a retried
    task writes it again)."""
    import rocksdict as rd

    entries = bytewise_unique(entries)
    n = len(entries)
    if n == 0:
        return None
    values = pa.Array.from_buffers(pa.binary(8), n, [None, pa.py_buffer(entries.store_timestamp.astype(">i8"))])
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    writer = rd.SstFileWriter(options=_options())
    try:
        writer.open(tmp)
        for start in range(0, n, _CHUNK):
            for k, v in zip(entries.keys.slice(start, _CHUNK).to_pylist(), values.slice(start, _CHUNK).to_pylist()):
                writer[k] = v
        writer.finish()
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    at = int(np.argmax(entries.commitlog_offset))
    return SplitSst(path, n, int(entries.commitlog_offset[at]), int(entries.store_timestamp[at]),
                    entries.keys[0].as_py(), entries.keys[n - 1].as_py())


def _ingest_files() -> int:
    """Table files per ingestion: up to :data:`_MAX_INGEST_FILES`, and half the files the process may open."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return _MAX_INGEST_FILES if soft == resource.RLIM_INFINITY else max(16, min(_MAX_INGEST_FILES, (soft - 256) // 2))


def _compact(db, begin: bytes, end: bytes) -> None:
    """A compaction of the keys from ``begin`` to ``end`` into the last level (the index family)."""
    db.compact_range(begin, end)


def build_index_rocksdb(parts: list[SplitSst], db_path: str, base: str | None = None) -> IndexRocksDBBuilt:
    """The rebuild's step for ``indexRocksDBEnable``: a new database at ``db_path`` (local) holding the table
    files of the splits on the reput's path (``parts``, in the reput's order: their ``rdbidx/`` work files
    (:func:`pipelines.workfiles.read_index_rocksdb`), moved in: RocksDB deletes them once ingested) and
    ``lastOffsetPy``/``lastStoreTimeStamp`` of the last indexed record; flushed and closed.  The files are
    ingested in the reput's order, up to :func:`_ingest_files` at a time, each time followed by a compaction
    of their key range: keys begin with their hour, so a later group overlaps the earlier ones in the hours
    they share only.  Splits never share a key (a key ends with its record's offset), so the database holds
    the union of their keys.

    ``base`` (``--as-restart``): the store's own ``rocksdbstore/``, which a restart keeps and adds to
    (``MessageRocksDBStorage`` opens it, no recovery step deletes from it): copied to ``db_path`` first (the
    store's folder is never opened for writing; opening the copy replays its write-ahead log, as the broker's
    open does), the splits' entries (those at or after its ``lastOffsetPy``: :func:`store_format.index_rocksdb.
    entries_from`) ingested into the copy, and ``lastOffsetPy``/``lastStoreTimeStamp`` written only where the
    last indexed record's are above the stored ones (:func:`store_format.index_rocksdb.restart_last_records`).
    A store without the folder: a new database, as the broker creates."""
    import rocksdict as rd

    from .commit.journal import kill_point

    families = [TIMER_FAMILY, TRANS_FAMILY]
    if base is not None and os.path.isdir(base):
        shutil.copytree(base, db_path)
        families = sorted(set(families) | {f for f in rd.Rdict.list_cf(str(db_path)) if f != INDEX_FAMILY})
    db = rd.Rdict(str(db_path), options=_options(build=True),
                  column_families={f: _options() for f in families})
    try:
        stored = _stored_last(db) if base is not None else (-1, -1)
        ingest = rd.IngestExternalFileOptions()
        ingest.set_move_files(True)
        step = _ingest_files()
        for start in range(0, len(parts), step):
            group = parts[start:start + step]
            db.ingest_external_file([p.path for p in group], ingest)
            _compact(db, min(p.first_key for p in group), max(p.last_key for p in group))
            kill_point("rocksdb:ingested")
        last = max(parts, key=lambda p: p.last_offset, default=None)
        if last is not None:
            wb = rd.WriteBatch(raw_mode=True)
            wb.set_default_column_family(db.get_column_family_handle(INDEX_FAMILY))
            records = (restart_last_records(*stored, last.last_offset, last.last_store_timestamp) if base is not None
                       else last_records(last.last_offset, last.last_store_timestamp))
            for k, v in records:
                wb.put(k, v)
            if records:
                db.write(wb)
                db.flush()
                _compact(db, min(k for k, _ in records), max(k for k, _ in records))   # out of level 0 too
        db.flush_wal(True)
        written = max(stored[0], last.last_offset if last is not None else -1)
    finally:
        db.close()
    return IndexRocksDBBuilt(sum(p.keys for p in parts), written)


def _stored_last(db) -> tuple[int, int]:  # noqa: ANN001
    """``lastOffsetPy`` and ``lastStoreTimeStamp`` of an open database's index family (0 without them, as
    ``MessageRocksDBStorage.getLastOffsetPy``/``getLastStoreTimeStampForIndex`` read)."""
    def read(key: bytes) -> int:
        value = db.get(key)
        return int.from_bytes(value, "big", signed=True) if value is not None and len(value) == 8 else 0
    return read(LAST_OFFSET_PY), read(LAST_STORE_TIMESTAMP)


def read_message_rocksdb(path: str | Path) -> dict[str, dict[bytes, bytes]]:
    """Every key/value of every column family of a ``rocksdbstore/`` database (opened read-only)."""
    import rocksdict as rd

    families = rd.Rdict.list_cf(str(path))
    db = open_read_only(path)
    try:
        return {f: {k: v for k, v in db.get_column_family(f).items()} for f in families}
    finally:
        db.close()


ROCKSDB_DIR = ROCKSDB_MESSAGE_DIRECTORY


def rocksdbstore_plan(config: BrokerConfig, *, as_restart: bool) -> tuple[bool, list[str]]:
    """Whether this rebuild writes ``rocksdbstore/`` (the 5.5 RocksDB message index), and the warning lines
    for what of that database it does not rebuild (one line each)."""
    warnings = []
    if config.brokerVersion != "5.5" or not (config.indexRocksDBEnable or config.transRocksDBEnable):
        return False, []
    build = config.index_rocksdb
    if config.indexRocksDBEnable and not build:
        warnings.append(f"warning: indexRocksDBEnable=true: {ROCKSDB_DIR}/ (the RocksDB message index) is not "
                        "rebuilt (messageIndexEnable=false: the broker writes no entries either)")
    if config.transRocksDBEnable:
        warnings.append(f"warning: transRocksDBEnable=true: the trans family of {ROCKSDB_DIR}/ is not rebuilt"
                        + (" (kept as the store holds it: what the restart adds to it is not written)" if build and
                           as_restart else " (written empty)" if build else "")
                        + ": its half-message records carry check counts that the broker's transaction checks "
                        "raise and delete them by (TransactionalMessageRocksDBService), not kept in the commitlog")
    return build, warnings
