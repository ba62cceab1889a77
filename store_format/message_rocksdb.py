"""The 5.5.1 message RocksDB store's last physical offsets, as a restart's recovery reads them.

Mirrors rocketmq-store 5.5.1:

* ``DefaultMessageStore`` (constructor): ``MessageRocksDBStorage`` opens the database in
  ``<storePathRootDir>/rocksdbstore`` whatever the settings, creating it (and its column families
  ``default``, ``timer``, ``trans``: ``postLoad``) when it is missing.
* ``MessageRocksDBStorage.getLastOffsetPy(family)``: the value of key ``lastOffsetPy`` in that family,
  8 bytes big-endian; 0 without the key.  ``writeRecordsForIndex`` (``default`` family) stores there the
  commitlog offset of the last message a batch of the index ends with (the offset where that record
  starts); ``writeRecordsForTrans`` (``trans`` family) the largest offset of the half messages it put.
* ``IndexRocksDBStore`` (``indexRocksDBEnable``, ``default`` family) and ``TransMessageRocksDBStore``
  (``transRocksDBEnable``, ``trans`` family), both ``CommitLogDispatchStore``:
  ``getDispatchFromPhyOffset`` is that value when above 0 (else none) and ``isMappedFileMatchedRecover``
  holds for a segment whose first record's offset is at most that value.

How ``CommitLog``'s recovery uses them: :mod:`store_format.recovery`.  The database is read with the
``rocksdict`` binding (imported only here, only when one of the two settings is on), read-only.
"""
from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pyarrow.fs as pafs

from .config import BrokerConfig
from .errors import UnsupportedConfigError
from .store import StoreLocation

__all__ = ["DispatchStoreOffsets", "ROCKSDB_MESSAGE_DIRECTORY", "dispatch_store_offsets", "open_read_only"]

ROCKSDB_MESSAGE_DIRECTORY = "rocksdbstore"      # MessageRocksDBStorage.ROCKSDB_MESSAGE_DIRECTORY
LAST_OFFSET_PY = b"lastOffsetPy"                # MessageRocksDBStorage.LAST_OFFSET_PY
INDEX_FAMILY = "default"                        # RocksDB.DEFAULT_COLUMN_FAMILY: IndexRocksDBStore
TRANS_FAMILY = "trans"                          # MessageRocksDBStorage.TRANS_COLUMN_FAMILY


@dataclasses.dataclass(frozen=True)
class DispatchStoreOffsets:
    """``lastOffsetPy`` of each RocksDB dispatch store the settings register, by store name
    (``IndexRocksDBStore``, ``TransMessageRocksDBStore``); empty with neither setting on."""

    last: dict[str, int] = dataclasses.field(default_factory=dict)

    def dispatch_from(self, queue_store_offset: int) -> int:
        """``DefaultMessageStore.recover``: the queue store's ``getDispatchFromPhyOffset``, lowered to each
        store's offset that is above 0."""
        return min([queue_store_offset] + [v for v in self.last.values() if v > 0])

    def segment_matches(self, phys: int) -> bool:
        """Every store's ``isMappedFileMatchedRecover`` for a segment whose first record is at ``phys``."""
        return all(phys <= v for v in self.last.values())

    def describe(self) -> str:
        return ", ".join(f"{name} lastOffsetPy {v}" for name, v in self.last.items())


def open_read_only(path: str | Path):  # noqa: ANN201
    """A ``rocksdbstore/`` database (or any RocksDB database of raw bytes) opened read-only with every column
    family it has, as ``rocksdict.Rdict``."""
    import rocksdict as rd

    families = [f for f in rd.Rdict.list_cf(str(path)) if f != "default"]
    return rd.Rdict(str(path), options=rd.Options(raw_mode=True),
                    column_families={f: rd.Options(raw_mode=True) for f in families},
                    access_type=rd.AccessType.read_only())


def dispatch_store_offsets(store: StoreLocation, config: BrokerConfig) -> DispatchStoreOffsets:
    """The ``lastOffsetPy`` of the stores ``indexRocksDBEnable`` and ``transRocksDBEnable`` register
    (brokerVersion=5.5 only; nothing otherwise).  A store without ``rocksdbstore/``, or a database
    without the key or the family, reads 0, as the broker's newly created empty database does.

    Raises:
        UnsupportedConfigError: the store is not on the local file system, ``rocksdict`` is missing, or the
            database cannot be opened.
    """
    wanted = {}
    if config.brokerVersion == "5.5" and config.indexRocksDBEnable:
        wanted["IndexRocksDBStore"] = INDEX_FAMILY
    if config.brokerVersion == "5.5" and config.transRocksDBEnable:
        wanted["TransMessageRocksDBStore"] = TRANS_FAMILY
    if not wanted:
        return DispatchStoreOffsets()
    path = f"{store.root}/{ROCKSDB_MESSAGE_DIRECTORY}"
    setting = "/".join(k for k, on in (("indexRocksDBEnable", config.indexRocksDBEnable),
                                       ("transRocksDBEnable", config.transRocksDBEnable)) if on)
    if not isinstance(store.fs, pafs.LocalFileSystem):
        raise UnsupportedConfigError(
            f"{setting}=true: a 5.5.1 restart reads the last offsets in {ROCKSDB_MESSAGE_DIRECTORY}/ (a RocksDB "
            "database), which is read from a local store only")
    if store.fs.get_file_info(path).type == pafs.FileType.NotFound:
        return DispatchStoreOffsets({name: 0 for name in wanted})
    if importlib.util.find_spec("rocksdict") is None:
        raise UnsupportedConfigError(
            f"{setting}=true: a 5.5.1 restart reads the last offsets in {path} (a RocksDB database), which needs "
            "the rocksdict package; install it or let the broker recover")
    import rocksdict as rd

    try:
        db = open_read_only(path)
        families = rd.Rdict.list_cf(str(Path(path)))
    except Exception as e:  # rocksdict raises plain exceptions
        raise UnsupportedConfigError(f"{setting}=true: cannot open the RocksDB database {path}: {e}") from None
    try:
        last = {}
        for name, family in wanted.items():
            if family != "default" and family not in families:
                last[name] = 0
                continue
            value = db.get_column_family(family).get(LAST_OFFSET_PY)
            if value is not None and len(value) != 8:
                raise UnsupportedConfigError(
                    f"{path}: key lastOffsetPy of family {family} holds {len(value)} bytes, not 8")
            last[name] = int.from_bytes(value, "big", signed=True) if value is not None else 0
    finally:
        db.close()
    return DispatchStoreOffsets(last)
