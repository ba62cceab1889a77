"""Checks made before a rebuild does any work: the output location, and whether its free space can
hold what the rebuild writes.

The broker settings themselves are checked when they are read (:mod:`store_format.config`: every
broker.conf line, values a broker cannot use such as index files over 2 GiB), the command line
options by their argparse types (:mod:`pipelines.cli`); this module adds what needs the store and
the output together.

Space.  A rebuild writes, under ``OUT/.rebuild-staging-<run>/``, every consume queue file and index
file in full (as the broker's ``MappedFile`` does) plus intermediate work files, before moving them
into place; previous outputs (``--overwrite``) stay until then.  Two figures come from a short
sample of the store (the first 4 MiB of up to four segments, walked like the reput does):

* ``minimum`` — what the rebuild certainly writes: the reput starts at the first segment's first
  record, so every queue seen in that sample gets at least one consume queue file of
  ``cq_file_size`` bytes, and the first dispatched record creates an index file of
  ``index_file_size(maxHashSlotNum, maxIndexNum)`` bytes (``IndexService.buildIndex`` →
  ``getAndCreateLastIndexFile``), one more for each ``maxIndexNum - 1`` keys seen.  More than the free
  space: refused (exit 2) with both numbers.
* ``estimate`` — the sample's consume queue units and index keys per byte, extrapolated to the
  store's data (the last segment up to where its data ends), spread over the queues seen, in whole
  files, plus work files.  More than the free space: a warning (an extrapolation may be wrong).

Free space is read with ``shutil.disk_usage`` on the nearest existing folder of a local ``OUT``;
for ``hdfs://``/``s3://`` outputs the check is skipped with a log line.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import shutil
import uuid

import numpy as np
import pyarrow.fs as pafs

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.errors import StoreError, StoreLayoutError
from store_format.layout import (
    CQ_UNIT_SIZE,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_COMMIT,
    TRANSACTION_NOT,
    TRANSACTION_ROLLBACK,
    index_file_size,
)
from store_format.store import StoreLocation, resolve

__all__ = ["preflight", "SpaceEstimate", "estimate_output", "InsufficientSpaceError"]

log = logging.getLogger(__name__)

SAMPLE_BYTES = 4 << 20
SAMPLE_SEGMENTS = 4
# intermediate work files per consume queue unit and per index key (measured: ~35 bytes per item
# on the 4 GiB bench); they live beside the outputs until the build stage ends
WORK_BYTES_PER_ITEM = 48
ROCKSDB_BYTES_PER_UNIT = 80   # a unit's key and value in a RocksDB consume queue's table files, and overhead
# an index key of the 5.5 RocksDB message index (store_format.index_rocksdb: 16 bytes of integers, the topic,
# the key and a 32-character unique key, an 8-byte value) in its work file and in the database's table files
ROCKSDB_INDEX_BYTES_PER_KEY = 240


class InsufficientSpaceError(StoreLayoutError):
    """The output's file system cannot hold what the rebuild certainly writes."""


@dataclasses.dataclass(frozen=True)
class SpaceEstimate:
    """Bytes a rebuild writes under ``OUT`` (see the module docstring)."""
    minimum: int               # certainly written (if the store's first record is readable)
    estimate: int | None       # extrapolated from the sample (None: nothing readable sampled)
    minimum_detail: str
    estimate_detail: str
    records: float = 0.0       # records dispatched, extrapolated (rows of the messages table)
    keys: float = 0.0          # index keys, extrapolated (rows of message_keys)
    data: int = 0              # bytes of commitlog data


@dataclasses.dataclass
class _Sample:
    bytes: int = 0
    units: int = 0
    keys: int = 0
    dispatched: int = 0
    queues: set = dataclasses.field(default_factory=set)


def _walk_sample(store: StoreLocation, seg_index: int, config: BrokerConfig) -> _Sample:
    """Walk the first :data:`SAMPLE_BYTES` of a segment from its start (where a record begins)."""
    seg = store.segments[seg_index]
    window = min(SAMPLE_BYTES, seg.size)
    with store.reader(seg) as read:
        res = cl.walk_range(read, seg.base, seg.size, cl.WalkState.at_slice_start(0, seg.size), window, config,
                            window=window, dledger=seg.dledger)
    rec = res.rec
    sample = _Sample(bytes=max(int(res.state.bufpos), 1))
    ok = rec[:, cl.R_STATUS] == cl.Status.DISPATCHED
    tx = rec[:, cl.R_SYSFLAG] & SYSFLAG_TRANSACTION_MASK
    to_cq = ok & ((tx == TRANSACTION_NOT) | (tx == TRANSACTION_COMMIT))
    indexed = ok & (tx != TRANSACTION_ROLLBACK)
    sample.dispatched = int(ok.sum())
    sample.units = int(to_cq.sum())
    keys = getattr(res, "key", None)
    if keys is not None and len(keys):
        # keys of records the index takes: not rolled back, and at or above the highest commitlog
        # offset of an earlier record with keys (IndexService.buildIndex's endPhyOffset check)
        key_rec = keys[:, cl.K_REC].astype(np.int64)
        with_keys = np.unique(key_rec)
        with_keys = with_keys[indexed[with_keys]]
        phys = rec[with_keys, cl.R_PHYS]
        running = np.maximum.accumulate(np.concatenate([[0], phys[:-1]]))
        taken = with_keys[phys >= running]
        sample.keys = int(np.isin(key_rec, taken).sum())
    text = np.asarray(res.text, dtype=np.uint8)
    for i in np.nonzero(to_cq)[0]:
        start = int(rec[i, cl.R_TOPIC_START]) - res.text_origin
        topic = text[start:start + int(rec[i, cl.R_TOPIC_LEN])].tobytes()
        sample.queues.add((topic, int(rec[i, cl.R_QID])))
    return sample


def _data_end(store: StoreLocation, seg_index: int, probe: int = 4096) -> int:
    """Where the data of a segment ends, assuming (as the broker writes) data then zeros: a binary
    search for the first all-zero probe.  An estimate: a long run of zeros inside a body misleads it."""
    seg = store.segments[seg_index]
    lo, hi = 0, seg.size
    with store.reader(seg) as read:
        while hi - lo > probe:
            mid = (lo + hi) // 2 // probe * probe
            if mid <= lo:
                break
            if any(bytes(read(mid, probe))):
                lo = mid
            else:
                hi = mid
    return hi


def estimate_output(store: StoreLocation, config: BrokerConfig) -> SpaceEstimate:
    """Bytes the rebuild of ``store`` writes under the output (see the module docstring)."""
    n = len(store.segments)
    data = sum(seg.size for seg in store.segments[:-1]) + _data_end(store, n - 1)
    picks = sorted({0, *np.linspace(0, n - 1, min(SAMPLE_SEGMENTS, n)).round().astype(int).tolist()})
    samples = {i: _walk_sample(store, i, config) for i in picks}
    idx_size = index_file_size(config.maxHashSlotNum, config.maxIndexNum)
    cap = config.index_entries_per_file
    cq_size = config.cq_file_size
    first = samples[0]
    min_index_files = (max(1, -(-first.keys // cap)) if config.writes_index_files and first.dispatched else 0)
    # a RocksDB consume queue has no files of a fixed size: its entries are counted below, not here
    cq_minimum = 0 if config.rocksdb_cq else len(first.queues) * cq_size
    minimum = cq_minimum + min_index_files * idx_size
    minimum_detail = (f"{len(first.queues)} consume queue file(s) of {cq_size:,} bytes for the queues of the first "
                      f"records, " if cq_minimum else "") + f"{min_index_files} index file(s) of {idx_size:,} bytes"
    sampled = sum(s.bytes for s in samples.values())
    if not any(s.dispatched for s in samples.values()):
        return SpaceEstimate(minimum, None, minimum_detail, "no readable record in the sample")
    units = sum(s.units for s in samples.values()) / sampled * data
    keys = sum(s.keys for s in samples.values()) / sampled * data
    queues = max(len(set().union(*(s.queues for s in samples.values()))), 1)
    files_per_queue = max(1, -(-int(units / queues * CQ_UNIT_SIZE) // cq_size))
    index_files = max(1, -(-int(keys) // cap)) if config.writes_index_files else 0
    work = int((units + keys) * WORK_BYTES_PER_ITEM)
    # RocksDB: a key of about 40 bytes and a 28-byte value per unit (store_format.rocksdb_cq), uncompressed
    cq_bytes = int(units * ROCKSDB_BYTES_PER_UNIT) if config.rocksdb_cq else queues * files_per_queue * cq_size
    rocks_index = int(keys * ROCKSDB_INDEX_BYTES_PER_KEY) if config.index_rocksdb else 0
    estimate = cq_bytes + index_files * idx_size + work + rocks_index
    estimate_detail = (f"about {units:,.0f} consume queue units in {queues} queue(s) of {files_per_queue} file(s) of "
                       f"{cq_size:,} bytes, {index_files} index file(s) of {idx_size:,} bytes for about {keys:,.0f} "
                       f"keys, {work:,} bytes of work files"
                       + (f", {rocks_index:,} bytes for rocksdbstore/" if rocks_index else "")
                       + f"; from {sampled:,} sampled bytes of {data:,}")
    records = sum(s.dispatched for s in samples.values()) / sampled * data
    return SpaceEstimate(max(minimum, 0), max(estimate, minimum), minimum_detail, estimate_detail, records, keys, data)


def _nearest_existing(path: str) -> str:
    path = os.path.abspath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _check_out(store: StoreLocation, out_uri: str) -> None:
    """The output must be a folder (or not exist yet), writable, and not inside ``commitlog/``."""
    fs, out = resolve(out_uri)
    out = out.rstrip("/")
    if out == store.commitlog_dir or out.startswith(store.commitlog_dir + "/"):
        raise StoreLayoutError(f"--out {out_uri} is inside the store's commitlog/ folder; use the store root (with "
                               "--overwrite) or another folder")
    check_writable_folder(out_uri, "--out", "it receives consumequeue/ and index/")


def check_writable_folder(uri: str, option: str, what: str) -> None:
    """An output folder (``--out``, ``--tables``, ``--docs``) must be a folder or not exist yet, and
    on a local file system the nearest existing folder must be writable: checked by creating and
    removing a file there (which also catches a read-only file system and ACLs, even for root).

    Raises:
        StoreLayoutError: one line naming the path and the cause.
    """
    fs, path = resolve(uri)
    path = path.rstrip("/") or "/"
    if fs.get_file_info(path).type == pafs.FileType.File:
        raise StoreLayoutError(f"{option} {uri} is a file; give a folder ({what})")
    if not isinstance(fs, pafs.LocalFileSystem):
        return
    existing = _nearest_existing(path)
    if not os.path.isdir(existing):
        raise StoreLayoutError(f"{option} {uri}: {existing} is a file, so the folder cannot be created")
    probe = os.path.join(existing, f".preflight-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as e:
        raise StoreLayoutError(f"{option} {uri}: {existing} is not writable ({e.strerror}); choose another "
                               f"{option}") from None


# rough bytes per row of the tables (Parquet, compressed), plus the Delta logs and small tables: an
# estimate for a warning, on the high side
TABLE_BYTES_PER_MESSAGE = 64
TABLE_BYTES_PER_KEY = 32
TABLE_FIXED_BYTES = 1 << 20


def tables_estimate(need: SpaceEstimate, with_body: bool) -> int:
    """Bytes the Delta tables of a rebuild take, estimated from the store's sample: rows of
    ``messages`` and ``message_keys``, and with bodies the commitlog data itself (an upper bound:
    Parquet compresses them)."""
    return int(need.records * TABLE_BYTES_PER_MESSAGE + need.keys * TABLE_BYTES_PER_KEY + TABLE_FIXED_BYTES
               + (need.data if with_body else 0))


def _check_tables_space(tables_uri: str, need: SpaceEstimate, with_body: bool, out_where: str,
                        out_free: int) -> None:
    """Warn when the estimated size of the tables, with the rebuild's own files when both share a file
    system, is more than the free space."""
    fs, tables = resolve(tables_uri)
    if not isinstance(fs, pafs.LocalFileSystem) or need.estimate is None:
        return
    where = _nearest_existing(tables)
    free = shutil.disk_usage(where).free
    size = tables_estimate(need, with_body)
    shared = os.stat(where).st_dev == os.stat(out_where).st_dev
    total = size + (need.estimate if shared else 0)
    if total > free:
        log.warning("--tables %s: the tables will probably need about %s bytes%s, more than the %s bytes free on %s; "
                    "if space runs out the files are still committed and the tables are not published",
                    tables_uri, f"{size:,}", f" (and the rebuilt files about {need.estimate:,} on the same file system)"
                    if shared else "", f"{free:,}", where)


def preflight(store: StoreLocation, config: BrokerConfig, out_uri: str, tables_uri: str | None = None,
              with_body: bool = False) -> None:
    """Refuse, before any work, a rebuild whose output cannot be written or cannot fit.

    Call it after ``StagedOutput.check_target()`` (which completes interrupted commits and removes
    stale staging folders, freeing their space) and before the scan.

    Args:
        store: the opened store (:func:`store_format.store.open_store`).
        config: the broker settings (already checked when read).
        out_uri: the rebuild's output root.
        tables_uri: where the Delta tables go (None: no tables); checked like ``--out``, and its space
            estimated (:func:`tables_estimate`; a warning only, as for ``--out``'s estimate).
        with_body: the tables hold the message bodies.
    Raises:
        StoreLayoutError: ``--out`` or ``--tables`` is a file or not writable, or ``--out`` is inside
            ``commitlog/``.
        InsufficientSpaceError: the output's free space is below what the rebuild certainly writes.
    """
    _check_out(store, out_uri)
    if tables_uri is not None:
        check_writable_folder(tables_uri, "--tables", "it receives the Delta tables")
    fs, out = resolve(out_uri)
    if config.rocksdb_cq and importlib.util.find_spec("rocksdict") is None:
        raise StoreLayoutError("storeType=defaultRocksDB: the RocksDB consume queue is written with the rocksdict "
                               "binding, which is not installed: pip install 'rocketmq-offline-index[rocksdb]'")
    if config.rocksdb_cq and not isinstance(fs, pafs.LocalFileSystem):
        raise StoreLayoutError(f"--out {out_uri}: the RocksDB consume queue (storeType=defaultRocksDB) is written "
                               "with a local RocksDB: give a local --out")
    if config.index_rocksdb and importlib.util.find_spec("rocksdict") is None:
        raise StoreLayoutError("indexRocksDBEnable=true: rocksdbstore/ (the RocksDB message index) is written with "
                               "the rocksdict binding, which is not installed: pip install "
                               "'rocketmq-offline-index[rocksdb]'")
    if config.index_rocksdb and not isinstance(fs, pafs.LocalFileSystem):
        raise StoreLayoutError(f"--out {out_uri}: rocksdbstore/ (indexRocksDBEnable=true) is written with a local "
                               "RocksDB: give a local --out")
    if not isinstance(fs, pafs.LocalFileSystem):
        log.info("free space of %s not checked (not a local file system)", out_uri)
        return
    try:
        need = estimate_output(store, config)
    except StoreError:
        raise
    except Exception as e:  # an estimate must never stop a rebuild the scan would handle
        log.info("free space of %s not checked: the store could not be sampled (%s)", out_uri, e)
        return
    where = _nearest_existing(out)
    free = shutil.disk_usage(where).free
    if tables_uri is not None:
        _check_tables_space(tables_uri, need, with_body, where, free)
    if need.minimum > free:
        raise InsufficientSpaceError(
            f"--out {out_uri}: the rebuild needs at least {need.minimum:,} bytes ({need.minimum_detail}) but only "
            f"{free:,} bytes are free on {where}; free space, choose another --out, or check maxHashSlotNum, "
            "maxIndexNum and mappedFileSizeConsumeQueue in broker.conf")
    if need.estimate is not None and need.estimate > free:
        log.warning("--out %s: the rebuild will probably need about %s bytes (%s), more than the %s bytes free on %s; "
                    "if space runs out it stops and leaves %s as it was", out_uri, f"{need.estimate:,}",
                    need.estimate_detail, f"{free:,}", where, out_uri)
    else:
        log.info("--out %s: about %s bytes needed (at least %s), %s free", out_uri,
                 f"{need.estimate or need.minimum:,}", f"{need.minimum:,}", f"{free:,}")
