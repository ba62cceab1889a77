""":mod:`store_format.message_rocksdb`: the 5.5.1 message RocksDB's lastOffsetPy per dispatch store.

The key (``lastOffsetPy``), its encoding (8 bytes big-endian) and the families (``default`` for
``IndexRocksDBStore``, ``trans`` for ``TransMessageRocksDBStore``) are rocketmq-store 5.5.1
``MessageRocksDBStorage``'s; a database written by the broker itself is read in
:mod:`test_restart_accelerated_broker` (``-accel-index-rocksdb``).  Here: the families are not mixed up,
a missing database reads as the empty one the broker creates, and one that cannot be opened is refused.
"""
from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from store_format.config import load_broker_config
from store_format.errors import UnsupportedConfigError
from store_format.message_rocksdb import dispatch_store_offsets
from store_format.store import StoreLocation

rd = pytest.importorskip("rocksdict")


def _store(root) -> StoreLocation:
    return StoreLocation(uri=str(root), fs=pafs.LocalFileSystem(), root=str(root), segments=[])


def _conf(text: str):
    return load_broker_config(f"brokerVersion=5.5\n{text}")


def _write(path, values: dict[str, int]) -> None:
    opts = rd.Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    db = rd.Rdict(str(path), options=opts, column_families={f: rd.Options(raw_mode=True) for f in ("timer", "trans")})
    try:
        for family, v in values.items():
            db.get_column_family(family)[b"lastOffsetPy"] = v.to_bytes(8, "big")
    finally:
        db.close()


def test_each_store_reads_its_own_family(tmp_path) -> None:
    _write(tmp_path / "rocksdbstore", {"default": 4096, "trans": 1234})
    both = dispatch_store_offsets(_store(tmp_path), _conf("indexRocksDBEnable=true\ntransRocksDBEnable=true"))
    assert both.last == {"IndexRocksDBStore": 4096, "TransMessageRocksDBStore": 1234}
    assert both.dispatch_from(5000) == 1234 and both.dispatch_from(1000) == 1000
    assert both.segment_matches(1234) and not both.segment_matches(1235)
    assert dispatch_store_offsets(_store(tmp_path), _conf("indexRocksDBEnable=true")).last == {
        "IndexRocksDBStore": 4096}
    assert not dispatch_store_offsets(_store(tmp_path), _conf("")).last
    assert not dispatch_store_offsets(_store(tmp_path), load_broker_config(
        "brokerVersion=5\nindexRocksDBEnable=true")).last   # 5.3.3 has no such store


def test_missing_database_reads_as_the_empty_one(tmp_path) -> None:
    got = dispatch_store_offsets(_store(tmp_path), _conf("indexRocksDBEnable=true"))
    assert got.last == {"IndexRocksDBStore": 0}
    assert got.dispatch_from(777) == 777                       # 0 is not above 0: not taken
    assert got.segment_matches(0) and not got.segment_matches(1)   # phyOffset <= 0


def test_unreadable_database_is_refused(tmp_path) -> None:
    (tmp_path / "rocksdbstore").mkdir()
    (tmp_path / "rocksdbstore" / "CURRENT").write_text("garbage\n")
    with pytest.raises(UnsupportedConfigError, match="cannot open the RocksDB database"):
        dispatch_store_offsets(_store(tmp_path), _conf("transRocksDBEnable=true"))
