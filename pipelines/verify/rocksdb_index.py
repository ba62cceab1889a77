"""``verify`` on the 5.5 RocksDB message index (``indexRocksDBEnable``): the store's ``rocksdbstore/`` ``default``
family against the entries the rebuild derives from the commitlog (:mod:`store_format.index_rocksdb`).

What can be said from the commitlog (``IndexRocksDBStore``, ``MessageRocksDBStorage`` of rocketmq-store 5.5.1):

* every entry the rebuild derives belongs to a record still in the commitlog, which the broker's dispatch
  handed to ``IndexRocksDBStore.buildIndex``: the store's database must hold it with the same value (the store
  time).  Missing ones are counted, with those whose hour the broker's cleanup (``deleteExpiredIndex``: the
  168 hours up to the hour of the earliest commitlog file's creation time less one hour, once files were
  deleted) may have removed counted apart;
* an entry the store holds beyond those, for a record at an offset *inside* the commitlog's range, is one the
  broker did not write from these records: an error;
* entries for offsets below the commitlog's min offset belong to deleted commitlog files, which the database
  keeps until the cleanup timed by a file system date removes them, and entries at or past the commitlog's
  end to records a restart's recovery cut off (nothing deletes those): reported, not errors;
* ``lastOffsetPy``/``lastStoreTimeStamp`` depend on how the broker's batches ended (timing): reported.

Both databases are read in key order (RocksDB's bytewise comparator) side by side, one key at a time.
"""
from __future__ import annotations

import dataclasses
import os

from store_format.index_rocksdb import LAST_OFFSET_PY, LAST_STORE_TIMESTAMP, MILLIS_PER_HOUR, entry_offset
from store_format.message_rocksdb import open_read_only

__all__ = ["RocksDBIndexCheck", "compare_index_databases"]

_SPECIAL = (LAST_OFFSET_PY, LAST_STORE_TIMESTAMP)
_CLEANUP_HOURS = 168     # IndexRocksDBStore.deleteExpiredIndex: deleteRecordsForIndex(..., 168)


@dataclasses.dataclass
class RocksDBIndexCheck:
    """The store's RocksDB message index against the rebuild's; ``status`` ``identical``, ``differs`` or
    ``missing`` (the store has no ``rocksdbstore/``)."""
    status: str
    derived: int = 0              # entries the rebuild derives
    matched: int = 0              # ... held by the store with the same value
    missing: int = 0              # ... not held by the store
    missing_in_cleanup_window: int = 0   # of those, in hours the broker's dated cleanup may have deleted
    differing: int = 0            # held with another value
    unexpected: int = 0           # store entries for offsets inside the commitlog's range the rebuild does not derive
    below_min: int = 0            # store entries for offsets below the commitlog's min offset (deleted files)
    past_end: int = 0             # store entries for offsets at or past the commitlog's end (records cut off)
    other_keys: int = 0           # store keys that are no index key (neither lastOffsetPy nor lastStoreTimeStamp)
    store_last_offset_py: int | None = None
    rebuilt_last_offset_py: int | None = None
    store_last_store_timestamp: int | None = None
    rebuilt_last_store_timestamp: int | None = None
    examples: list[str] = dataclasses.field(default_factory=list)

    def render(self) -> list[str]:
        if self.status == "missing":
            return [f"rocksdb message index: missing: the store has no rocksdbstore/ ({self.derived:,} entries "
                    "derived)"]
        head = (f"rocksdb message index (rocksdbstore/, default family): {self.status}: {self.matched:,} of "
                f"{self.derived:,} derived entries held with the same value")
        bad = [f"{n:,} {what}" for n, what in (
            (self.missing, "missing" + (f" ({self.missing_in_cleanup_window:,} in hours the broker's dated cleanup "
                                         "may have deleted)" if self.missing_in_cleanup_window else "")),
            (self.differing, "with another value"),
            (self.unexpected, "held for offsets inside the commitlog that the rebuild does not derive"),
            (self.other_keys, "keys that are no index key")) if n]
        lines = [head + ("; " + ", ".join(bad) if bad else "")]
        if self.below_min or self.past_end:
            lines.append(f"  also held (not errors): {self.below_min:,} entries for offsets below the commitlog's "
                         f"min offset (deleted files, kept until the broker's dated cleanup), {self.past_end:,} at or "
                         "past its end (records a restart's recovery cut off)")
        lines.append(f"  lastOffsetPy {self.store_last_offset_py} (rebuild: {self.rebuilt_last_offset_py}), "
                     f"lastStoreTimeStamp {self.store_last_store_timestamp} (rebuild: "
                     f"{self.rebuilt_last_store_timestamp})")
        lines.extend(f"  {e}" for e in self.examples)
        return lines


def _long(value: bytes | None) -> int | None:
    return int.from_bytes(value, "big", signed=True) if value is not None and len(value) == 8 else None


def _cleanup_window(first_segment: str | None) -> tuple[int, int] | None:
    """The hours ``deleteExpiredIndex`` deletes given the earliest commitlog file (its modification time, what
    JDKs before 22 report as creation time on Linux): ``(first hour, last hour)``, both included; None when no
    commitlog file was deleted yet (the cleanup has not run)."""
    if first_segment is None:
        return None
    try:
        created = int(os.stat(first_segment).st_mtime * 1000)
    except OSError:
        return None
    end = (created - MILLIS_PER_HOUR) // MILLIS_PER_HOUR * MILLIS_PER_HOUR
    return end - _CLEANUP_HOURS * MILLIS_PER_HOUR, end


def compare_index_databases(store_db: str, rebuilt_db: str, *, commitlog_min: int, commitlog_end: int,
                            first_segment: str | None = None, examples: int = 3) -> RocksDBIndexCheck:
    """The store's ``rocksdbstore/`` (``store_db``, local) against the rebuild's (``rebuilt_db``), both opened
    read-only; ``first_segment``: the path of the earliest commitlog file when earlier ones were deleted (its
    date bounds the broker's cleanup), else None."""
    ref = open_read_only(rebuilt_db)
    try:
        if not os.path.isdir(store_db):
            n = sum(1 for k in ref.keys() if k not in _SPECIAL)
            return RocksDBIndexCheck("missing", derived=n, rebuilt_last_offset_py=_long(ref.get(LAST_OFFSET_PY)),
                                     rebuilt_last_store_timestamp=_long(ref.get(LAST_STORE_TIMESTAMP)))
        db = open_read_only(store_db)
        try:
            check = RocksDBIndexCheck("identical", store_last_offset_py=_long(db.get(LAST_OFFSET_PY)),
                                      rebuilt_last_offset_py=_long(ref.get(LAST_OFFSET_PY)),
                                      store_last_store_timestamp=_long(db.get(LAST_STORE_TIMESTAMP)),
                                      rebuilt_last_store_timestamp=_long(ref.get(LAST_STORE_TIMESTAMP)))
            _merge(check, iter(db.items()), iter(ref.items()), commitlog_min, commitlog_end,
                   _cleanup_window(first_segment), examples)
        finally:
            db.close()
    finally:
        ref.close()
    if check.missing or check.differing or check.unexpected or check.other_keys:
        check.status = "differs"
    return check


def _merge(check: RocksDBIndexCheck, store_items, ref_items, commitlog_min: int, commitlog_end: int,  # noqa: ANN001
           window: tuple[int, int] | None, examples: int) -> None:
    """Walk both sorted key sequences side by side, counting into ``check``."""
    def note(text: str) -> None:
        if len(check.examples) < examples:
            check.examples.append(text)

    def nxt(it):  # noqa: ANN001, ANN202
        for k, v in it:
            if k not in _SPECIAL:
                return k, v
        return None

    s, r = nxt(store_items), nxt(ref_items)
    while s is not None or r is not None:
        if r is not None and (s is None or r[0] < s[0]):
            check.derived += 1
            check.missing += 1
            hour = int.from_bytes(r[0][:8], "big", signed=True)
            if window is not None and window[0] <= hour <= window[1]:
                check.missing_in_cleanup_window += 1
            else:
                note(f"missing {r[0]!r} (offset {entry_offset(r[0])})")
            r = nxt(ref_items)
        elif s is not None and (r is None or s[0] < r[0]):
            at = entry_offset(s[0])
            if at < 0:
                check.other_keys += 1
                note(f"not an index key: {s[0]!r}")
            elif at < commitlog_min:
                check.below_min += 1
            elif at >= commitlog_end:
                check.past_end += 1
            else:
                check.unexpected += 1
                note(f"not derived {s[0]!r} (offset {at})")
            s = nxt(store_items)
        else:
            assert s is not None and r is not None
            check.derived += 1
            if s[1] == r[1]:
                check.matched += 1
            else:
                check.differing += 1
                note(f"value of {r[0]!r}: {s[1].hex()}, derived {r[1].hex()}")
            s, r = nxt(store_items), nxt(ref_items)
