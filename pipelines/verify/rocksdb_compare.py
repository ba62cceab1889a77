"""``verify`` for a RocksDB consume queue store (``storeType=defaultRocksDB``): the store's database
against the rebuild's key/value set (:mod:`store_format.rocksdb_cq`), entry by entry, queue by queue.

The store's database is copied and the copy opened read-only (the store's own folder is never
opened by RocksDB: opening a database may write to it).  The entries compared are those the reput
writes (``RocksDBConsumeQueueStore.putMessagePosition0``): every unit of the ``default`` family, each
queue's "max" entry and the checkpoint of the ``offset`` family.  "min" entries
(``RocksDBConsumeQueueOffsetTable.getMinCqOffset``) are written when a reader asks for a queue's
minimum, so they are counted apart and not compared.
"""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable

from store_format.rocksdb_cq import (
    CHECKPOINT_TOPIC,
    CHECKPOINT_VALUE,
    CQ_KEY_TAIL,
    CQ_VALUE,
    OFFSET_FAMILY,
    OFFSET_KEY_TAIL,
    OFFSET_VALUE,
    split_key,
)

from .report import QueueFileResult

__all__ = ["compare_entries", "compare_rocksdb_cq", "read_store_database"]



def _unit_fields(value: bytes) -> dict:
    if len(value) != CQ_VALUE.itemsize:
        return {"value": value.hex()}
    import numpy as np
    v = np.frombuffer(value, dtype=CQ_VALUE)[0]
    return {"commitlogOffset": int(v["offset"]), "size": int(v["size"]), "tagsCode": int(v["tags_code"]),
            "storeTimestamp": int(v["store_timestamp"])}


def _offset_fields(value: bytes) -> dict:
    if len(value) == OFFSET_VALUE.size:
        off, qoff = OFFSET_VALUE.unpack(value)
        return {"commitlogOffset": off, "queueOffset": qoff}
    if len(value) == CHECKPOINT_VALUE.size:
        return {"dispatchedTo": CHECKPOINT_VALUE.unpack(value)[0]}
    return {"value": value.hex()}


def _by_queue(entries: dict[str, list[tuple[bytes, bytes]]]) -> tuple[dict[str, dict], int]:
    """Per ``topic/queueId`` (and ``CHECKPOINT_TOPIC``): ``{(kind, number): (key, value)}`` where kind
    is "unit" (number: queue offset) or "max"; and the count of "min" entries."""
    out: dict[str, dict] = {}
    mins = 0
    unreadable: dict = {}   # keys of neither layout, numbered (only a damaged or foreign database has them)
    for key, value in entries.get("default", []):
        got = split_key(key)
        if got is None or len(got[1]) != CQ_KEY_TAIL.size:
            unreadable[("key", key.hex())] = (key, value)
            continue
        _, qid, _, qoff = CQ_KEY_TAIL.unpack(got[1])
        out.setdefault(f"{got[0]}/{qid}", {})[("unit", qoff)] = (key, value)
    for key, value in entries.get(OFFSET_FAMILY, []):
        got = split_key(key)
        if got is None or len(got[1]) != OFFSET_KEY_TAIL.size:
            unreadable[("key", key.hex())] = (key, value)
            continue
        _, which, _, qid = OFFSET_KEY_TAIL.unpack(got[1])
        if which == b"min":
            mins += 1
            continue
        queue = CHECKPOINT_TOPIC if got[0] == CHECKPOINT_TOPIC else f"{got[0]}/{qid}"
        out.setdefault(queue, {})[("max", 0)] = (key, value)
    if unreadable:
        out["(keys of no queue)"] = unreadable
    return out, mins


def _compare_queue(queue: str, expected: dict | None, found: dict | None) -> QueueFileResult:
    if found is None:
        assert expected is not None
        return QueueFileResult(queue, "missing", expected_size=len(expected), note="entries")
    if expected is None:
        return QueueFileResult(queue, "extra", found_size=len(found), note="entries")
    keys = sorted(set(expected) | set(found), key=lambda k: (k[0] != "unit", str(k[1]) if k[0] == "key" else k[1]))
    bad = [k for k in keys if expected.get(k) != found.get(k)]
    result = QueueFileResult(queue, "identical" if not bad else "differs", expected_size=len(expected),
                             found_size=len(found), differing_units=len(bad))
    if bad:
        kind, number = bad[0]
        fields = _unit_fields if kind == "unit" else _offset_fields
        e, f = expected.get(bad[0]), found.get(bad[0])
        result.first_unit = number if kind == "unit" else None
        result.expected_unit = None if e is None else fields(e[1])
        result.found_unit = None if f is None else fields(f[1])
        missing = sum(1 for k in bad if k not in found)
        extra = sum(1 for k in bad if k not in expected)
        result.note = (f"entries: {missing} missing, {extra} extra, {len(bad) - missing - extra} different; first: "
                       + (f"the unit at queue offset {number}" if kind == "unit" else
                          "the queue's max entry" if kind == "max" else f"key {number}"))
    return result


def read_store_database(db_dir: str) -> dict[str, list[tuple[bytes, bytes]]]:
    """Both families of the store's database, read from a copy (opened read-only); nothing when
    there is no database (every queue is then missing)."""
    import os

    from ..rocksdb_cq import read_rocksdb_cq
    if not os.path.isfile(f"{db_dir}/CURRENT"):
        return {}
    tmp = tempfile.mkdtemp(prefix="rocketmq-verify-rocksdb-")
    try:
        copy = f"{tmp}/consumequeue"
        shutil.copytree(db_dir, copy)
        return read_rocksdb_cq(copy)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def compare_rocksdb_cq(store_db: str, rebuilt_db: str) -> tuple[list[QueueFileResult], int]:
    """Queue by queue, the store's database (``store_db``, a local folder) against the rebuild's;
    and the number of "min" entries in the store (not compared)."""
    return compare_entries(read_store_database(store_db), read_store_database(rebuilt_db))


def compare_entries(store_entries: dict, rebuilt_entries: dict) -> tuple[list[QueueFileResult], int]:
    """:func:`compare_rocksdb_cq` on both databases' entries as :func:`read_store_database` reads them."""
    found, mins = _by_queue(store_entries)
    expected, _ = _by_queue(rebuilt_entries)
    names: Iterable[str] = sorted(set(found) | set(expected))
    return [_compare_queue(q, expected.get(q), found.get(q)) for q in names], mins
