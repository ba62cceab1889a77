"""Writing the 5.5 RocksDB message index (``indexRocksDBEnable``) into ``rocksdbstore/`` with ``rocksdict``.

The key/value set is :mod:`store_format.index_rocksdb`'s; this module puts it into a database laid out as
``MessageRocksDBStorage.postLoad`` opens it: the column families ``default`` (the index), ``timer`` and
``trans``, bytewise comparator, block-based tables of ``format_version`` 5 as
``RocksDBOptionsFactory.createIndexCFOptions`` sets them (the broker's RocksDB 8.4.4 cannot read the
binding's newer default), uncompressed (as the broker writes them).  ``timer`` and ``trans`` stay empty:
their records are not derivable from the commitlog (:mod:`store_format.index_rocksdb`).  RocksDB's
files are not deterministic: the same key/value set is the target, not the same bytes.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from store_format.config import BrokerConfig
from store_format.index_rocksdb import INDEX_FAMILY, TIMER_FAMILY, TRANS_FAMILY, last_records

__all__ = ["IndexRocksDBBuilt", "ROCKSDB_DIR", "build_index_rocksdb", "read_message_rocksdb", "rocksdbstore_plan"]

_BATCH = 10_000    # entries per WriteBatch


@dataclasses.dataclass
class IndexRocksDBBuilt:
    entries: int             # index keys written (the two last-offset keys not counted)
    last_offset: int         # lastOffsetPy written, -1 when nothing was indexed


def _options():
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
    return opts


def build_index_rocksdb(work_uri: str, split_order: list[int], db_path: str) -> IndexRocksDBBuilt:
    """The rebuild's step for ``indexRocksDBEnable``: the entries of the splits on the reput's path
    (``split_order``, their ``rdbidx/`` work files) into a new database at ``db_path`` (local), then
    ``lastOffsetPy``/``lastStoreTimeStamp`` of the last indexed record; flushed and closed."""
    import numpy as np
    import rocksdict as rd

    from .workfiles import read_index_rocksdb

    db = rd.Rdict(str(db_path), options=_options(),
                  column_families={TIMER_FAMILY: _options(), TRANS_FAMILY: _options()})
    count, last_ts, last_off = 0, 0, -1
    try:
        family = db.get_column_family_handle(INDEX_FAMILY)
        for sid in split_order:
            entries = read_index_rocksdb(work_uri, sid)
            if entries is None:
                continue
            values = entries.store_timestamp.astype(">i8").tobytes()
            keys = entries.keys.to_pylist()
            for start in range(0, len(keys), _BATCH):
                wb = rd.WriteBatch(raw_mode=True)
                wb.set_default_column_family(family)
                for i in range(start, min(start + _BATCH, len(keys))):
                    wb.put(keys[i], values[8 * i:8 * i + 8])
                db.write(wb)
            count += len(keys)
            at = int(np.argmax(entries.commitlog_offset))
            if int(entries.commitlog_offset[at]) > last_off:
                last_off, last_ts = int(entries.commitlog_offset[at]), int(entries.store_timestamp[at])
        if last_off >= 0:
            wb = rd.WriteBatch(raw_mode=True)
            wb.set_default_column_family(family)
            for k, v in last_records(last_off, last_ts):
                wb.put(k, v)
            db.write(wb)
        db.flush()
        db.flush_wal(True)
    finally:
        db.close()
    return IndexRocksDBBuilt(count, last_off)


def read_message_rocksdb(path: str | Path) -> dict[str, dict[bytes, bytes]]:
    """Every key/value of every column family of a ``rocksdbstore/`` database (opened read-only)."""
    import rocksdict as rd

    families = rd.Rdict.list_cf(str(path))
    db = rd.Rdict(str(path), options=rd.Options(raw_mode=True),
                  column_families={f: rd.Options(raw_mode=True) for f in families if f != "default"},
                  access_type=rd.AccessType.read_only())
    try:
        return {f: {k: v for k, v in db.get_column_family(f).items()} for f in families}  # type: ignore[misc]
    finally:
        db.close()


ROCKSDB_DIR = "rocksdbstore"     # MessageRocksDBStorage.ROCKSDB_MESSAGE_DIRECTORY


def rocksdbstore_plan(config: BrokerConfig, *, as_restart: bool) -> tuple[bool, list[str]]:
    """Whether this rebuild writes ``rocksdbstore/`` (the 5.5 RocksDB message index), and the warning lines
    for what of that database it does not rebuild (one line each)."""
    warnings = []
    if config.brokerVersion != "5.5" or not (config.indexRocksDBEnable or config.transRocksDBEnable):
        return False, []
    build = config.index_rocksdb and not as_restart
    if config.indexRocksDBEnable and not build:
        why = ("--as-restart: a restart keeps the store's database and adds to it" if as_restart else
               "messageIndexEnable=false: the broker writes no entries either")
        warnings.append(f"warning: indexRocksDBEnable=true: {ROCKSDB_DIR}/ (the RocksDB message index) is not "
                        f"rebuilt ({why})")
    if config.transRocksDBEnable:
        warnings.append(f"warning: transRocksDBEnable=true: the trans family of {ROCKSDB_DIR}/ is not rebuilt"
                        + (" (written empty)" if build else "")
                        + ": its half-message records carry check counts that the broker's transaction checks "
                        "raise and delete them by (TransactionalMessageRocksDBService), not kept in the commitlog")
    return build, warnings
