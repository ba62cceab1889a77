"""``verify`` and ``repair``: compare a store's ``consumequeue/`` and ``index/`` with a rebuild from
its commitlog, say what the broker would do with them at its next start, and replace only the
files that differ.

The story of a verify:

1. **rebuild** into a reference folder with :func:`pipelines.rebuild.run_rebuild` (the same job and
   splits as ``rebuild``; the store is only read);
2. **compare consume queue files** by relative path: identical, differs (first differing 20-byte
   unit), missing, extra;
3. **compare index files** in name order (names are the broker's creation times, never ours): header
   fields, slots, entries, and which expected ``(keyHash, commitlogOffset)`` pairs the store's file
   no longer reaches through its slot chains (``IndexFile.selectPhyOffset``), named by reading the
   record's topic and keys from the commitlog;
4. **predict the next start** of a broker on the store as it is (:class:`RestartPrediction`):
   ``MappedFileQueue.doLoad``'s size check, ``ConsumeQueue.recover``, ``CommitLog.recoverNormally``
   → ``ConsumeQueue.truncateDirtyLogicFiles``, and where the reput (4.9.x
   ``DefaultMessageStore.start``) or the recovery's own dispatch (5.x ``CommitLog.recoverNormally``)
   starts again.

A repair verifies (holding the broker's ``lock`` file the way ``DefaultMessageStore.start`` does),
plans (:func:`plan_repair`), and applies (:func:`apply_repair`): each old file goes to a backup
folder first, each new file is staged under a temporary name in its target folder, fsynced and
renamed into place (``os.replace``), so that an interrupted repair leaves every file old or new,
never half written; a manifest in the backup folder records each change with sha256 before/after.

Long module: verify and repair share the comparison, the plan and the report; repair's file
replacement could move to a module of its own.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numba
import numpy as np
import pyarrow.fs as pafs

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.errors import StoreError
from store_format.indexfile import read_header
from store_format.javahash import index_key, index_key_hash, java_utf8_decode
from store_format.layout import (
    CQ_BLANK_SIZE,
    CQ_UNIT_DTYPE,
    CQ_UNIT_SIZE,
    INDEX_ENTRY_DTYPE,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_SIZE,
    INDEX_SLOT_SIZE,
    SEGMENT_NAME_RE,
    index_file_size,
)
from store_format.records import detail_columns
from store_format.store import StoreLocation, open_store, resolve

from .brokerlock import BrokerCheck, check_broker

__all__ = [
    "BrokerCheck", "ConsumeQueueFileResult", "IndexFileResult", "KeyExample", "QueueRestart", "RepairAction",
    "RepairPlan", "RepairResult", "RestartPrediction", "UnitDifference", "VerifyReport", "apply_repair",
    "check_broker", "plan_repair", "repair_store", "run_repair_command", "run_verify_command", "verify_store",
]

log = logging.getLogger(__name__)

CQ_DIR = "consumequeue"
INDEX_DIR = "index"
MANIFEST = "manifest.json"
JOURNAL = "manifest.journal"
_TMP_RE = re.compile(r"^\..+\.repair-[0-9a-f]{12}\.tmp$")
_RECOVER_FILES = 3  # ConsumeQueue.recover starts at the third file from the end
_HASH_CHUNK = 8 << 20


# ---------------------------------------------------------------------------------------------
# results


@dataclasses.dataclass
class Unit:
    """One consume queue unit [ConsumeQueue.CQ_STORE_UNIT_SIZE]."""
    commitlog_offset: int
    size: int
    tags_code: int


@dataclasses.dataclass
class UnitDifference:
    """The first unit of a consume queue file that differs from the rebuild."""
    queue_offset: int          # logical offset in the queue (file start / 20 + unit number)
    position: int              # byte position in the file
    expected: Unit | None      # None: the rebuilt file ends before it
    found: Unit | None         # None: the store's file ends before it


@dataclasses.dataclass
class ConsumeQueueFileResult:
    path: str                  # topic/queueId/name, relative to consumequeue/
    status: str                # identical | differs | missing | extra
    expected_size: int | None = None
    found_size: int | None = None
    differing_units: int = 0
    first_difference: UnitDifference | None = None
    note: str = ""


@dataclasses.dataclass
class KeyExample:
    """An index key the store's file no longer finds: an expected entry ``(key_hash,
    commitlog_offset)`` that its slot chain does not reach; the key is named from the record."""
    key: str | None            # topic#key as the broker indexes it, None if no key of the record matches
    commitlog_offset: int
    key_hash: int
    note: str = ""


@dataclasses.dataclass
class IndexFileResult:
    number: int                # position in name order (0-based)
    status: str                # identical | differs | missing | extra
    store_name: str | None = None
    reference_name: str | None = None
    expected_size: int | None = None
    found_size: int | None = None
    expected_header: dict | None = None
    found_header: dict | None = None
    differing_header_fields: list[str] = dataclasses.field(default_factory=list)
    differing_slots: int = 0
    differing_entries: int = 0
    unreachable_entries: int = 0   # expected (keyHash, offset) pairs the store's chains do not reach
    spurious_entries: int = 0      # pairs the store's chains reach that the rebuild does not have
    examples: list[KeyExample] = dataclasses.field(default_factory=list)
    note: str = ""


@dataclasses.dataclass
class QueueRestart:
    """One queue at the broker's next start (only queues where something happens are listed)."""
    queue: str                                 # topic/queueId
    load_failure: str | None = None            # why MappedFileQueue.doLoad refuses a file
    recover_stops_at: int | None = None        # logical byte offset where ConsumeQueue.recover stops early
    units_dropped_by_recover: int = 0
    files_deleted_by_recover: list[str] = dataclasses.field(default_factory=list)
    units_truncated: int = 0                   # truncateDirtyLogicFiles: at or past the commitlog end
    files_deleted_by_truncate: list[str] = dataclasses.field(default_factory=list)
    max_physic_offset: int = -1                # ConsumeQueue.getMaxPhysicOffset after recovery
    units_dispatched_again: int = 0
    units_lost: int = 0                        # expected units the queue lacks and the restart does not write


@dataclasses.dataclass
class RestartPrediction:
    """What a broker would do with the store's files at its next start (see
    :func:`predict_restart`)."""
    broker_version: str
    clean_shutdown: bool                       # no ``abort`` file
    commitlog_min_offset: int
    commitlog_end: int
    start_fails: bool = False                  # a consume queue file of the wrong size: load() fails
    max_physic_offset_in_queues: int = -1      # after ConsumeQueue.recover
    truncate_dirty_logic_files: bool = False   # CommitLog.recoverNormally calls it
    reput_from: int = 0                        # first commitlog offset dispatched again
    reput_from_inclusive: bool = True          # 5.x: only records strictly after it
    tail_bytes: int = 0
    units_dropped_by_recover: int = 0
    units_truncated: int = 0
    units_dispatched_again: int = 0
    units_lost: int = 0
    index_keys_put_again: int = 0
    index_files_extended: list[str] = dataclasses.field(default_factory=list)
    index_files_deleted: list[str] = dataclasses.field(default_factory=list)
    queues: list[QueueRestart] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    # the commitlog recovery before all that (store_format.recovery, as rebuild --as-restart applies it)
    recovery_cut: int | None = None
    recovery_reason: str = ""
    recovery_discarded_messages: int = 0
    recovery_discarded_bytes: int = 0
    recovery_deleted_segments: int = 0


@dataclasses.dataclass
class VerifyReport:
    store: str
    reference: str | None          # the rebuild (None once a temporary one is deleted)
    broker_version: str
    consume_queue: list[ConsumeQueueFileResult]
    index: list[IndexFileResult]
    index_files_in_store: int
    index_files_rebuilt: int
    restart: RestartPrediction
    rebuild: dict
    seconds: float = 0.0

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for area, statuses in (("consume_queue", [r.status for r in self.consume_queue]),
                               ("index", [r.status for r in self.index])):
            c = {k: 0 for k in ("identical", "differs", "missing", "extra")}
            for status in statuses:
                c[status] += 1
            out[area] = c
        return out

    @property
    def identical(self) -> bool:
        return (all(r.status == "identical" for r in self.consume_queue)
                and all(r.status == "identical" for r in self.index))

    def summary_line(self) -> str:
        c = self.counts()
        cq, ix = c["consume_queue"], c["index"]
        if self.identical:
            return (f"verify: identical: {cq['identical']} consume queue files and {ix['identical']} index files "
                    f"match a rebuild from the commitlog ({self.store})")
        parts = []
        for area, name in ((cq, "consume queue files"), (ix, "index files")):
            bad = [f"{area[k]} {k}" for k in ("differs", "missing", "extra") if area[k]]
            parts.append(f"{name}: {area['identical']} identical" + (", " + ", ".join(bad) if bad else ""))
        return f"verify: DIFFERENT: {'; '.join(parts)} ({self.store})"

    def as_dict(self) -> dict:
        """JSON-ready: counts, every file that is not identical, the restart prediction."""
        return {
            "store": self.store, "identical": self.identical, "summary": self.summary_line(),
            "broker_version": self.broker_version, "counts": self.counts(),
            "consume_queue": [dataclasses.asdict(r) for r in self.consume_queue if r.status != "identical"],
            "index_files_in_store": self.index_files_in_store, "index_files_rebuilt": self.index_files_rebuilt,
            "index": [dataclasses.asdict(r) for r in self.index if r.status != "identical"],
            "restart": dataclasses.asdict(self.restart), "rebuild": self.rebuild, "reference": self.reference,
            "seconds": self.seconds,
        }

    def render(self) -> str:
        lines = [self.summary_line()]
        c = self.counts()
        lines.append("consume queue files: " + ", ".join(f"{v} {k}" for k, v in c["consume_queue"].items()))
        for r in self.consume_queue:
            if r.status != "identical":
                lines.append("  " + _render_cq(r))
        lines.append("index files: " + ", ".join(f"{v} {k}" for k, v in c["index"].items())
                     + f" ({self.index_files_in_store} in the store, {self.index_files_rebuilt} rebuilt, "
                       "matched in name order)")
        for ix in self.index:
            if ix.status != "identical":
                lines.extend("  " + line for line in _render_index(ix))
        lines.extend(_render_restart(self.restart))
        lines.append(f"time: {self.seconds:.2f}s")
        return "\n".join(lines)


def _unit_text(u: Unit | None) -> str:
    if u is None:
        return "nothing (file ends)"
    return f"commitlogOffset={u.commitlog_offset} size={u.size} tagsCode={u.tags_code}"


def _render_cq(r: ConsumeQueueFileResult) -> str:
    if r.status == "missing":
        text = f"missing  {r.path} ({r.expected_size:,} bytes)"
    elif r.status == "extra":
        text = f"extra    {r.path} ({r.found_size:,} bytes)"
    else:
        d = r.first_difference
        size = "" if r.expected_size == r.found_size else f" [{r.found_size:,} bytes, expected {r.expected_size:,}]"
        text = f"differs  {r.path}: {r.differing_units:,} unit(s){size}"
        if d is not None:
            text += (f"; first at queue offset {d.queue_offset} (byte {d.position}): expected "
                     f"{_unit_text(d.expected)}, found {_unit_text(d.found)}")
    return text + (f" ({r.note})" if r.note else "")


def _render_index(r: IndexFileResult) -> list[str]:
    name = f"#{r.number} {r.store_name or '-'}"
    if r.status == "missing":
        return [f"missing  {name}: the rebuild has {r.reference_name} ({r.expected_size:,} bytes) here"]
    if r.status == "extra":
        return [f"extra    {name} ({r.found_size:,} bytes): the rebuild has no file here"]
    lines = [f"differs  {name} (rebuilt as {r.reference_name}): differing entries {r.differing_entries:,}, slots "
             f"{r.differing_slots:,}; expected entries its slot chains no longer reach {r.unreachable_entries:,}, "
             f"entries they reach that the rebuild does not have {r.spurious_entries:,}"]
    if r.expected_size != r.found_size:
        lines.append(f"         size {r.found_size:,} bytes, expected {r.expected_size:,}")
    for f in r.differing_header_fields:
        assert r.expected_header is not None and r.found_header is not None
        lines.append(f"         header {f}: expected {r.expected_header[f]}, found {r.found_header[f]}")
    for e in r.examples:
        lines.append(f"         not found: {e.key or '?'} (record at commitlog offset {e.commitlog_offset}, "
                     f"keyHash {e.key_hash})" + (f" - {e.note}" if e.note else ""))
    if r.note:
        lines.append(f"         {r.note}")
    return lines


def _render_restart(p: RestartPrediction) -> list[str]:
    rules = ("5.x: ConsumeQueue.recover, CommitLog.recoverNormally (dispatches records after the queues' max "
             "physical offset, then truncateDirtyLogicFiles)" if p.broker_version == "5" else
             "4.9.x: ConsumeQueue.recover, CommitLog.recoverNormally → truncateDirtyLogicFiles, reput from the "
             "queues' max physical offset")
    lines = [f"at the broker's next start ({rules}):",
             f"  commitlog: min offset {p.commitlog_min_offset}, data ends at {p.commitlog_end}"]
    if p.recovery_cut is not None:
        lines.append(f"  commitlog recovery cuts at {p.recovery_cut} ({p.recovery_reason}): a restart discards "
                     f"{p.recovery_discarded_messages:,} record(s), {p.recovery_discarded_bytes:,} bytes, "
                     f"{p.recovery_deleted_segments} segment(s) (as rebuild --as-restart)")
    if p.start_fails:
        bad = [q for q in p.queues if q.load_failure]
        lines.append(f"  START FAILS: {len(bad)} consume queue file(s) of the wrong size "
                     "(MappedFileQueue.doLoad refuses them); figures below assume they were removed")
        for q in bad[:5]:
            lines.append(f"    {q.queue}: {q.load_failure}")
    lines.append(f"  ConsumeQueue.recover drops {p.units_dropped_by_recover:,} unit(s) after a hole")
    lines.append(f"  truncateDirtyLogicFiles: {'called' if p.truncate_dirty_logic_files else 'not called'}; "
                 f"{p.units_truncated:,} unit(s) at or past the commitlog end cut off")
    start = "from" if p.reput_from_inclusive else "after"
    lines.append(f"  dispatched again {start} offset {p.reput_from}: {p.tail_bytes:,} commitlog bytes, "
                 f"{p.units_dispatched_again:,} consume queue unit(s), {p.index_keys_put_again:,} index key(s)")
    lines.append(f"  units missing from their queues that the restart does not write back: {p.units_lost:,}")
    for q in p.queues[:10]:
        bits = [f"{k.replace('_', ' ')} {v}" for k, v in (
            ("recover stops at", q.recover_stops_at), ("dropped by recover", q.units_dropped_by_recover),
            ("truncated", q.units_truncated), ("dispatched again", q.units_dispatched_again),
            ("lost", q.units_lost)) if v]
        if bits:
            lines.append(f"    {q.queue}: " + ", ".join(bits))
    if len(p.queues) > 10:
        lines.append(f"    ... {len(p.queues) - 10} more queues (see --json)")
    if p.index_files_extended:
        lines.append(f"  index files shorter than configured, extended with zeros when mapped: "
                     f"{', '.join(p.index_files_extended)}")
    if p.index_files_deleted:
        lines.append(f"  index files deleted at an abnormal start: {', '.join(p.index_files_deleted)}")
    lines.extend(f"  note: {n}" for n in p.notes)
    return lines


# ---------------------------------------------------------------------------------------------
# reading files


def _read_all(fs: pafs.FileSystem, path: str) -> bytes:
    with fs.open_input_file(path) as f:
        return f.readall()


def _list_tree(fs: pafs.FileSystem, root: str) -> dict[str, int]:
    """Relative path → size of every file under ``root`` (empty if it does not exist)."""
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        return {}
    out = {}
    for e in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        if e.type == pafs.FileType.File:
            out[e.path[len(root):].lstrip("/")] = e.size
    return out


def _list_index(fs: pafs.FileSystem, root: str) -> tuple[list[str], list[str]]:
    """Index file names in name order, and other files of ``index/``.

    ``IndexService.load`` sorts the folder's files and skips names that are not numbers
    (``MappedFile`` parses the name as the file's offset and the NumberFormatException is caught)."""
    names = sorted(_list_tree(fs, root))
    files = [n for n in names if "/" not in n and n.isdigit()]
    return files, [n for n in names if n not in files]


def _units(data: bytes | memoryview) -> np.ndarray:
    n = len(data) // CQ_UNIT_SIZE
    return np.frombuffer(data, dtype=CQ_UNIT_DTYPE, count=n)


def _unit(u: np.ndarray, k: int) -> Unit | None:
    if k >= len(u):
        return None
    return Unit(int(u["commitlogOffset"][k]), int(u["size"][k]), int(u["tagsCode"][k]))


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# consume queues


def compare_cq_file(rel: str, expected: bytes | None, found: bytes | None) -> ConsumeQueueFileResult:
    """Compare one consume queue file; units are compared field by field with numpy."""
    if expected is None:
        assert found is not None
        return ConsumeQueueFileResult(rel, "extra", found_size=len(found), note=_extra_note(rel))
    if found is None:
        return ConsumeQueueFileResult(rel, "missing", expected_size=len(expected))
    if expected == found:
        return ConsumeQueueFileResult(rel, "identical", len(expected), len(found))
    n = max(len(expected), len(found))
    n_units = -(-n // CQ_UNIT_SIZE)
    a = np.zeros(n_units * CQ_UNIT_SIZE, dtype=np.uint8)
    b = np.zeros(n_units * CQ_UNIT_SIZE, dtype=np.uint8)
    a[:len(expected)] = np.frombuffer(expected, dtype=np.uint8)
    b[:len(found)] = np.frombuffer(found, dtype=np.uint8)
    ua, ub = a.view(CQ_UNIT_DTYPE), b.view(CQ_UNIT_DTYPE)
    diff = np.zeros(n_units, dtype=bool)
    for field in CQ_UNIT_DTYPE.names or ():
        diff |= ua[field] != ub[field]
    idx = np.flatnonzero(diff)
    first = int(idx[0]) if len(idx) else min(len(expected), len(found)) // CQ_UNIT_SIZE
    start = int(rel.rsplit("/", 1)[-1]) if SEGMENT_NAME_RE.match(rel.rsplit("/", 1)[-1]) else 0
    d = UnitDifference(start // CQ_UNIT_SIZE + first, first * CQ_UNIT_SIZE,
                       _unit(_units(expected), first), _unit(_units(found), first))
    note = ""
    if len(found) != len(expected):
        note = (f"{len(found):,} bytes instead of {len(expected):,}: MappedFileQueue.doLoad refuses a file of another "
                "size, the broker does not start")
    return ConsumeQueueFileResult(rel, "differs", len(expected), len(found), int(diff.sum()), d, note)


def _extra_note(rel: str) -> str:
    parts = rel.split("/")
    name = parts[-1]
    if _TMP_RE.match(name):
        return "left by an interrupted repair: run repair again before starting the broker"
    if len(parts) != 3:
        return "not at consumequeue/<topic>/<queueId>/<file>"
    try:
        int(parts[1])
    except ValueError:
        return "the broker skips queue folders whose name is not a number"
    if not name.lstrip("-+").isdigit():
        return ("its name is not a number: MappedFile cannot parse it, the consume queue does not load and the "
                "broker does not start")
    return ""


# ---------------------------------------------------------------------------------------------
# index files


@numba.njit(cache=True, nogil=True)
def _reachable_entries(slots, key_hash, time_diff, prev, index_count, out):  # pragma: no cover - numba
    """Entries a lookup can return, walking every slot's chain like ``IndexFile.selectPhyOffset``:
    a slot value outside (0, indexCount] finds nothing (nor does any slot while indexCount <= 1);
    the walk stops at a negative timeDiff and at a prevIndex outside (0, indexCount] or equal to
    the current entry; an entry counts for the slot only if its keyHash maps to that slot (the
    lookup compares the hash it computed).  Cycles are cut where an entry is seen again.  Writes
    entry numbers to ``out`` and returns how many."""
    n_slots = slots.shape[0]
    n_entries = key_hash.shape[0]
    seen = np.full(n_entries, -1, dtype=np.int64)
    n = 0
    if index_count <= 1:
        return 0
    for s in range(n_slots):
        cur = np.int64(slots[s])
        if cur <= 0 or cur > index_count:
            continue
        while cur < n_entries and seen[cur] != s:
            seen[cur] = s
            if time_diff[cur] < 0:
                break
            h = np.int64(key_hash[cur])
            if h >= 0 and h % n_slots == s:
                out[n] = cur
                n += 1
            p = np.int64(prev[cur])
            if p <= 0 or p > index_count or p == cur:
                break
            cur = p
    return n


@dataclasses.dataclass
class _IndexView:
    header: dict
    slots: np.ndarray
    entries: np.ndarray      # structured INDEX_ENTRY_DTYPE, entry 0 included
    size: int

    @classmethod
    def parse(cls, data: bytes, slot_num: int, index_num: int) -> _IndexView:
        """The file as the broker maps it: ``MappedFile`` maps the configured size, which extends
        a shorter file with zeros (``FileChannel.map`` in READ_WRITE mode)."""
        full = index_file_size(slot_num, index_num)
        buf = np.zeros(max(full, len(data)), dtype=np.uint8)
        buf[:len(data)] = np.frombuffer(data, dtype=np.uint8)
        h = read_header(buf[:INDEX_HEADER_SIZE].tobytes())
        slots = buf[INDEX_HEADER_SIZE:INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * slot_num].view(">i4")
        e0 = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * slot_num
        entries = buf[e0:e0 + INDEX_ENTRY_SIZE * index_num].view(INDEX_ENTRY_DTYPE)
        return cls(dataclasses.asdict(h), slots, entries, len(data))

    def reachable(self) -> np.ndarray:
        """Entry numbers a lookup of their own key hash reaches."""
        out = np.empty(len(self.entries), dtype=np.int64)
        n = _reachable_entries(self.slots.astype(np.int32), self.entries["keyHash"].astype(np.int32),
                               self.entries["timeDiff"].astype(np.int32), self.entries["prevIndex"].astype(np.int32),
                               np.int64(self.header["index_count"]), out)
        return out[:n]


def _pairs_not_in(ah: np.ndarray, ao: np.ndarray, bh: np.ndarray, bo: np.ndarray) -> np.ndarray:
    """Mask over the pairs (ah, ao): True where no pair of (bh, bo) is equal."""
    if not len(ah):
        return np.zeros(0, dtype=bool)
    h = np.concatenate([ah, bh]).astype(np.int64)
    o = np.concatenate([ao, bo]).astype(np.int64)
    src = np.concatenate([np.zeros(len(ah), np.int8), np.ones(len(bh), np.int8)])
    order = np.lexsort((src, o, h))
    hs, os_, ss = h[order], o[order], src[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (hs[1:] != hs[:-1]) | (os_[1:] != os_[:-1])
    gid = np.cumsum(new) - 1
    has_b = np.zeros(int(gid[-1]) + 1, dtype=bool)
    has_b[gid[ss == 1]] = True
    result = np.empty(len(ah), dtype=bool)
    a_pos = ss == 0
    result[order[a_pos]] = ~has_b[gid[a_pos]]
    return result


def compare_index_file(number: int, store_name: str | None, reference_name: str | None, expected: bytes | None,
                       found: bytes | None, config: BrokerConfig, *, name_key: Callable[[int, int], KeyExample],
                       examples: int = 3) -> IndexFileResult:
    """Compare one index file with its rebuilt counterpart.

    Slots and entries are compared as arrays; then both files' slot chains are walked
    (:func:`_reachable_entries`) and the ``(keyHash, commitlogOffset)`` pairs each reaches are
    compared: an expected pair the store's file does not reach is a key a broker lookup no longer
    finds there; a few of them are named with ``name_key`` (the record read from the commitlog)."""
    r = IndexFileResult(number, "identical", store_name, reference_name,
                        None if expected is None else len(expected), None if found is None else len(found))
    if expected is None:
        r.status = "extra"
        return r
    if found is None:
        r.status = "missing"
        return r
    if expected == found:
        return r
    r.status = "differs"
    slot_num, index_num = config.maxHashSlotNum, config.maxIndexNum
    e = _IndexView.parse(expected, slot_num, index_num)
    f = _IndexView.parse(found, slot_num, index_num)
    r.expected_header, r.found_header = e.header, f.header
    r.differing_header_fields = [k for k in e.header if e.header[k] != f.header[k]]
    r.differing_slots = int((e.slots != f.slots).sum())
    diff = np.zeros(len(e.entries), dtype=bool)
    for field in INDEX_ENTRY_DTYPE.names or ():
        diff |= e.entries[field] != f.entries[field]
    r.differing_entries = int(diff.sum())
    er, fr = e.reachable(), f.reachable()
    eh, eo = e.entries["keyHash"][er], e.entries["commitlogOffset"][er]
    fh, fo = f.entries["keyHash"][fr], f.entries["commitlogOffset"][fr]
    missing = _pairs_not_in(eh, eo, fh, fo)
    r.unreachable_entries = int(missing.sum())
    r.spurious_entries = int(_pairs_not_in(fh, fo, eh, eo).sum())
    for i in np.flatnonzero(missing)[:examples]:
        r.examples.append(name_key(int(eh[i]), int(eo[i])))
    full = index_file_size(slot_num, index_num)
    if len(found) < full:
        r.note = (f"{full - len(found):,} bytes short: the broker's MappedFile maps {full:,} bytes, which extends it "
                  "with zeros; entries past the cut are lost")
    elif len(found) > full:
        r.note = f"{len(found) - full:,} bytes longer than maxHashSlotNum/maxIndexNum give; the broker maps {full:,}"
    return r


class _KeyNamer:
    """Names index keys from the records they point at (read once each, as the reput reads them)."""

    def __init__(self, st: StoreLocation, config: BrokerConfig) -> None:
        self.st, self.config = st, config

    def __call__(self, key_hash: int, offset: int) -> KeyExample:
        seg = self.st.segment_at(offset)
        if seg is None:
            return KeyExample(None, offset, key_hash, "no commitlog segment holds this offset")
        pos = offset - seg.base
        try:
            with self.st.reader(seg) as read:
                res = cl.walk_range(read, seg.base, seg.size, cl.WalkState.at_slice_start(pos, seg.size), pos + 1,
                                    self.config, window=1 << 16)
        except StoreError as err:
            return KeyExample(None, offset, key_hash, f"record unreadable: {err}")
        if not len(res.rec) or int(res.rec[0, cl.R_POS]) != pos:
            return KeyExample(None, offset, key_hash, "no record starts at this offset")
        text = np.asarray(res.text, dtype=np.uint8)
        t0 = int(res.rec[0, cl.R_TOPIC_START]) - res.text_origin
        topic = java_utf8_decode(text[t0:t0 + int(res.rec[0, cl.R_TOPIC_LEN])])
        keys = detail_columns(res)["keys"].to_pylist()[0] or []
        for k in keys:
            full = index_key(topic, k)
            if index_key_hash(full) == key_hash:
                return KeyExample(full, offset, key_hash)
        return KeyExample(None, offset, key_hash, f"no key of the record in topic {topic!r} has this hash")


def _align_index(store_names: list[str], ref_names: list[str], store_digest: list[str],
                 ref_digest: list[str]) -> list[tuple[str | None, str | None]]:
    """Pairs (store name, rebuilt name).  Equal counts: name order, as the broker loads them.
    Different counts: identical files anchor the pairing (difflib over sha256 digests); between
    anchors files pair in order, the rest are extra (store) or missing (rebuild)."""
    if len(store_names) == len(ref_names):
        return list(zip(store_names, ref_names))
    pairs: list[tuple[str | None, str | None]] = []
    sm = difflib.SequenceMatcher(None, store_digest, ref_digest, autojunk=False)
    for _op, i1, i2, j1, j2 in sm.get_opcodes():
        s, r = store_names[i1:i2], ref_names[j1:j2]
        common = min(len(s), len(r))
        pairs.extend(zip(s[:common], r[:common]))
        pairs.extend((x, None) for x in s[common:])
        pairs.extend((None, y) for y in r[common:])
    return pairs


# ---------------------------------------------------------------------------------------------
# the broker's next start


@dataclasses.dataclass
class _QueueState:
    """One queue after ``ConsumeQueue.recover``, kept for the store-wide steps."""
    restart: QueueRestart
    tail_files: list[tuple[str, np.ndarray, np.ndarray]]   # last remaining files: name, offsets, sizes
    missing_offsets: np.ndarray                             # expected units the recovered queue lacks
    expected_files: list[tuple[str, int, int, int]]         # rebuilt files: name, min offset, max offset, units


def _valid(off: np.ndarray, size: np.ndarray) -> np.ndarray:
    """A unit ``ConsumeQueue.recover`` accepts: ``offset >= 0 && size > 0``."""
    return (off >= 0) & (size > 0)


def _real(off: np.ndarray, size: np.ndarray) -> np.ndarray:
    """A unit that stands for a message (not a ``fillPreBlank`` unit)."""
    return _valid(off, size) & ~((off == 0) & (size == CQ_BLANK_SIZE))


def recover_queue(queue: str, store_files: list[tuple[str, bytes]], expected_files: list[tuple[str, bytes]],
                  config: BrokerConfig) -> _QueueState:
    """One queue through ``MappedFileQueue.doLoad`` and ``ConsumeQueue.recover``.

    * doLoad: every file must be ``mappedFileSizeConsumeQueue`` long, else load() fails (5.x first
      deletes a last file of length 0);
    * recover: from the third file from the end, units are accepted while ``offset >= 0 && size >
      0``; the first other unit ends the queue: ``truncateDirtyFiles`` deletes the files after it.
      maxPhysicOffset = offset + size of the last accepted unit.
    """
    q = QueueRestart(queue)
    file_size = config.cq_file_size
    files = sorted(store_files)
    if config.is_5x and files and len(files[-1][1]) == 0:
        files = files[:-1]
    loadable = []
    for name, data in files:
        if len(data) != file_size:
            q.load_failure = f"{name} is {len(data):,} bytes, mappedFileSizeConsumeQueue gives {file_size:,}"
        else:
            loadable.append((name, data))
    units = [(name, _units(data)) for name, data in loadable]
    present: list[np.ndarray] = []
    start = max(0, len(units) - _RECOVER_FILES)
    for _name, u in units[:start]:
        off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
        present.append(off[_real(off, size)])
    cut_file = len(units)
    for fi in range(start, len(units)):
        name, u = units[fi]
        off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
        ok = _valid(off, size)
        k = len(u) if ok.all() else int(np.argmin(ok))
        if k:
            q.max_physic_offset = int(off[k - 1] + size[k - 1])
        present.append(off[:k][_real(off[:k], size[:k])])
        if k < len(u):
            # the normal end of a queue (zeros after the last unit) also stops here; it is reported
            # only when something written lies after the stop
            cut_file = fi
            raw = np.frombuffer(loadable[fi][1], dtype=np.uint8).reshape(-1, CQ_UNIT_SIZE)
            q.units_dropped_by_recover = int(raw[k:].any(axis=1).sum())
            for later_name, later_data in loadable[fi + 1:]:
                q.units_dropped_by_recover += int(
                    np.frombuffer(later_data, dtype=np.uint8).reshape(-1, CQ_UNIT_SIZE).any(axis=1).sum())
                q.files_deleted_by_recover.append(later_name)
            if q.units_dropped_by_recover or q.files_deleted_by_recover:
                q.recover_stops_at = int(name) + k * CQ_UNIT_SIZE
            break
    remaining = units[:cut_file + 1] if cut_file < len(units) else units
    # the files truncateDirtyLogicFiles may look at; it rescans the last one from its first unit
    tail = [(name, u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64))
            for name, u in remaining[-_RECOVER_FILES:]]
    have = np.concatenate(present) if present else np.zeros(0, np.int64)
    exp_summary = []
    missing = []
    for name, data in sorted(expected_files):
        u = _units(data)
        off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
        off = off[_real(off, size)]
        if len(off):
            exp_summary.append((name, int(off.min()), int(off.max()), len(off)))
            missing.append(off[~np.isin(off, have)])
    miss = np.concatenate(missing) if missing else np.zeros(0, np.int64)
    return _QueueState(q, tail, miss, exp_summary)


def truncate_queue(state: _QueueState, phy_offset: int) -> None:
    """``ConsumeQueue.truncateDirtyLogicFiles(phyOffset)``: maxPhysicOffset starts at phyOffset;
    from the last file backwards, a file whose first unit points at or past phyOffset is deleted;
    otherwise its units are kept up to the first one that is invalid or points at or past it (the
    first unit of a file is kept without the validity check)."""
    q = state.restart
    q.max_physic_offset = phy_offset
    files = state.tail_files
    while files:
        name, off, size = files[-1]
        if not len(off):
            return
        if off[0] >= phy_offset:
            q.units_truncated += int(_valid(off, size).sum())
            q.files_deleted_by_truncate.append(name)
            files.pop()
            continue
        q.max_physic_offset = int(off[0] + size[0])
        rest_ok = _valid(off[1:], size[1:])
        k = len(rest_ok) if rest_ok.all() else int(np.argmin(rest_ok))
        past = np.flatnonzero(off[1:1 + k] >= phy_offset)
        if len(past):
            j = int(past[0])
            q.units_truncated += int(_valid(off[1 + j:1 + k], size[1 + j:1 + k]).sum())
            k = j
        if k:
            q.max_physic_offset = int(off[k] + size[k])
        files[-1] = (name, off[:1 + k], size[:1 + k])
        return


def predict_restart(states: list[_QueueState], *, config: BrokerConfig, commitlog_min: int, commitlog_end: int,
                    clean_shutdown: bool, store_index: list[tuple[str, int, dict]],
                    expected_index: Callable[[], Iterator[bytes]], checkpoint_index_ts: int | None,
                    read_expected_cq: Callable[[str, str], bytes]) -> RestartPrediction:
    """The store-wide steps of a start, after each queue's :func:`recover_queue`.

    * ``CommitLog.recoverNormally``: when the queues' max physical offset is at or past the
      commitlog's end, ``truncateDirtyLogicFiles(end)`` runs on every queue;
    * 4.9.x ``DefaultMessageStore.start``: the reput starts at max(commitlog min offset, max
      physical offset over the queues after truncation) and dispatches everything from there;
    * 5.x ``CommitLog.recoverNormally`` dispatches, while it recovers, the records whose offset is
      strictly greater than the queues' max physical offset (computed before the truncation); the
      reput then starts at the commitlog's end (``recheckReputOffsetFromCq`` defaults to false).
      A record starting exactly at that offset (the one after the last unit) is not dispatched;
    * a dispatched unit is appended unless ``offset + size <= maxPhysicOffset`` of its queue
      (``ConsumeQueue.putMessagePositionInfo``); ``IndexService.buildIndex`` skips records below
      the last index file's endPhyOffset.
    Units a queue lacks (compared by commitlog offset with the rebuild) and that fall before the
    restart point are never written again: they are reported as lost.
    """
    is5 = config.is_5x
    p = RestartPrediction("5" if is5 else "4", clean_shutdown, commitlog_min, commitlog_end)
    p.start_fails = any(s.restart.load_failure for s in states)
    p.max_physic_offset_in_queues = max((s.restart.max_physic_offset for s in states), default=-1)
    p.truncate_dirty_logic_files = p.max_physic_offset_in_queues >= commitlog_end
    if p.truncate_dirty_logic_files:
        for s in states:
            truncate_queue(s, commitlog_end)
    if is5:
        p.reput_from, p.reput_from_inclusive = p.max_physic_offset_in_queues, False
    else:
        after = max((s.restart.max_physic_offset for s in states), default=-1)
        p.reput_from = max(after, commitlog_min, 0)
    first = p.reput_from if p.reput_from_inclusive else p.reput_from + 1
    p.tail_bytes = max(0, commitlog_end - max(first, commitlog_min))

    def in_tail(off: np.ndarray) -> np.ndarray:
        return off >= first

    for s in states:
        q = s.restart
        n_tail = 0
        for name, lo, hi, n in s.expected_files:
            if hi < first:
                continue
            if lo >= first:
                n_tail += n
                continue
            u = _units(read_expected_cq(q.queue, name))
            off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
            n_tail += int(in_tail(off[_real(off, size)]).sum())
        q.units_dispatched_again = n_tail
        q.units_lost = int((~in_tail(s.missing_offsets)).sum())
        p.units_dropped_by_recover += q.units_dropped_by_recover
        p.units_truncated += q.units_truncated
        p.units_dispatched_again += q.units_dispatched_again
        p.units_lost += q.units_lost
        if (q.load_failure or q.units_dropped_by_recover or q.units_truncated or q.units_lost
                or q.files_deleted_by_recover or q.files_deleted_by_truncate or q.recover_stops_at is not None):
            p.queues.append(q)
    # index: IndexService.load maps every file (a short one is extended); an abnormal start deletes
    # the files whose endTimestamp is after the checkpoint's indexMsgTimestamp
    full = index_file_size(config.maxHashSlotNum, config.maxIndexNum)
    last_end = 0
    for name, file_size, header in store_index:
        if file_size < full:
            p.index_files_extended.append(name)
        if not clean_shutdown and checkpoint_index_ts is not None and header["end_timestamp"] > checkpoint_index_ts:
            p.index_files_deleted.append(name)
            continue
        last_end = header["end_phy_offset"]
    threshold = max(first, last_end)
    keys = 0
    for data in expected_index():
        v = _IndexView.parse(data, config.maxHashSlotNum, config.maxIndexNum)
        if v.header["end_phy_offset"] < threshold:
            break  # files newest first: the older ones end even earlier
        n_entries = max(0, min(v.header["index_count"], len(v.entries)) - 1)
        keys += int((v.entries["commitlogOffset"][1:1 + n_entries] >= threshold).sum())
    p.index_keys_put_again = keys
    if is5:
        p.notes.append("5.x CommitLog.recoverNormally dispatches only records with commitLogOffset > the queues' max "
                       "physical offset (offset + size of their last unit), and the reput then starts at the "
                       "commitlog's end (getConfirmOffset), so a record starting exactly there is never dispatched "
                       "again: its units count as lost")
    if not clean_shutdown:
        p.notes.append("abort file present: the broker runs CommitLog.recoverAbnormally, which re-dispatches from the "
                       "segment the checkpoint points at (not modelled here beyond the index files it deletes)")
    p.notes.append("the commitlog end is where the rebuild's walk ended; the broker's own recovery (CRC checks of the "
                   "last segments) is not emulated")
    return p


# ---------------------------------------------------------------------------------------------
# verify


def _end_of_data(st: StoreLocation, data_end: int | None) -> int:
    return data_end if data_end is not None else st.segments[-1].end


def _checkpoint_index_ts(fs: pafs.FileSystem, root: str) -> int | None:
    """``StoreCheckpoint.indexMsgTimestamp``: the long at byte 16 of ``checkpoint``."""
    path = f"{root}/checkpoint"
    if fs.get_file_info(path).type != pafs.FileType.File:
        return None
    data = _read_all(fs, path)
    return int.from_bytes(data[16:24], "big", signed=True) if len(data) >= 24 else None


def verify_store(store: str, config: BrokerConfig, *, work: str | None = None, engine: str = "spark",
                 master: str | None = None, split_size: int | None = None, processes: int | None = None,
                 spark: Any = None, examples: int = 3) -> VerifyReport:
    """Compare ``store``'s ``consumequeue/`` and ``index/`` with a rebuild from its commitlog.

    Only reads the store.  The rebuild goes to ``work`` (kept; it must not hold ``consumequeue/``
    or ``index/`` yet) or to a temporary folder deleted before returning.

    Args:
        store: store root (local path or URI).
        config: the broker settings the store was written with.
        work: folder for the reference rebuild (default: a temporary folder).
        engine, master, split_size, processes, spark: as :func:`pipelines.rebuild.run_rebuild`.
        examples: how many unreachable index keys to name per differing index file.
    Returns:
        A :class:`VerifyReport`.
    Raises:
        StoreError: bad store layout or settings (see ``run_rebuild``).

    Example:
        >>> report = verify_store("/data/store", load_config_for("broker.conf"), engine="local")
        >>> report.identical, report.restart.units_lost
    """
    from store_format.reput import resolve_broker_version

    from .rebuild import run_rebuild
    t0 = time.monotonic()
    st = open_store(store, config)
    config = resolve_broker_version(st, config)
    temporary = work is None
    ref_root = work if work is not None else tempfile.mkdtemp(prefix="rocketmq-verify-")
    try:
        summary = run_rebuild(store, ref_root, config, engine=engine, master=master, split_size=split_size,
                              processes=processes or 1, spark=spark, tables=None,
                              strict=None)   # verify_store's callers check for a live broker
        report = _compare(st, config, ref_root, summary, examples)
    finally:
        if temporary:
            shutil.rmtree(ref_root, ignore_errors=True)
    report.reference = None if temporary else ref_root
    report.seconds = round(time.monotonic() - t0, 3)
    return report


def _compare(st: StoreLocation, config: BrokerConfig, ref_root: str, summary: Any, examples: int) -> VerifyReport:
    fs, root = st.fs, st.root
    ref_fs, ref = resolve(ref_root)
    ref = ref.rstrip("/")
    log.info("comparing %s with the rebuild in %s", root, ref)
    store_cq = _list_tree(fs, f"{root}/{CQ_DIR}")
    ref_cq = _list_tree(ref_fs, f"{ref}/{CQ_DIR}")
    by_queue: dict[str, tuple[list[str], list[str]]] = {}
    cq_results: list[ConsumeQueueFileResult] = []
    for rel in store_cq:
        parts = rel.split("/")
        if len(parts) == 3 and not _TMP_RE.match(parts[2]):
            by_queue.setdefault(f"{parts[0]}/{parts[1]}", ([], []))[0].append(parts[2])
        elif rel not in ref_cq:
            cq_results.append(ConsumeQueueFileResult(rel, "extra", found_size=store_cq[rel], note=_extra_note(rel)))
    for rel in ref_cq:
        parts = rel.split("/")
        by_queue.setdefault(f"{parts[0]}/{parts[1]}", ([], []))[1].append(parts[2])
    states = []
    for queue in sorted(by_queue):
        q_store_names, q_ref_names = by_queue[queue]
        q_store = [(n, _read_all(fs, f"{root}/{CQ_DIR}/{queue}/{n}")) for n in sorted(q_store_names)]
        q_ref = [(n, _read_all(ref_fs, f"{ref}/{CQ_DIR}/{queue}/{n}")) for n in sorted(q_ref_names)]
        s_map, r_map = dict(q_store), dict(q_ref)
        for n in sorted(set(s_map) | set(r_map)):
            cq_results.append(compare_cq_file(f"{queue}/{n}", r_map.get(n), s_map.get(n)))
        if queue.rsplit("/", 1)[1].lstrip("-").isdigit():  # loadConsumeQueue skips other folders
            loadable = [(n, d) for n, d in q_store if SEGMENT_NAME_RE.match(n)]
            states.append(recover_queue(queue, loadable, q_ref, config))
    cq_results.sort(key=lambda r: r.path)

    # index files, in name order
    s_names, s_other = _list_index(fs, f"{root}/{INDEX_DIR}")
    r_names, _ = _list_index(ref_fs, f"{ref}/{INDEX_DIR}")
    store_ix = _list_tree(fs, f"{root}/{INDEX_DIR}")

    def s_data(n: str) -> bytes:
        return _read_all(fs, f"{root}/{INDEX_DIR}/{n}")

    def ref_data(n: str) -> bytes:
        return _read_all(ref_fs, f"{ref}/{INDEX_DIR}/{n}")

    if len(s_names) != len(r_names):  # one file in memory at a time
        s_digest = [hashlib.sha256(s_data(n)).hexdigest() for n in s_names]
        r_digest = [hashlib.sha256(ref_data(n)).hexdigest() for n in r_names]
    else:
        s_digest = r_digest = []
    namer = _KeyNamer(st, config)
    ix_results = []
    for i, (sn, rn) in enumerate(_align_index(s_names, r_names, s_digest, r_digest)):
        ix_results.append(compare_index_file(i, sn, rn, None if rn is None else ref_data(rn),
                                             None if sn is None else s_data(sn), config, name_key=namer,
                                             examples=examples))
    for n in s_other:
        note = ("left by an interrupted repair" if _TMP_RE.match(n.rsplit("/", 1)[-1])
                else "ignored by the broker (IndexService.load skips names that are not numbers)")
        ix_results.append(IndexFileResult(len(ix_results), "extra", n, None, None, store_ix.get(n), note=note))

    clean = not st.broker_may_be_running()
    store_index = []
    for n in s_names:
        with fs.open_input_file(f"{root}/{INDEX_DIR}/{n}") as f:
            head = f.read(INDEX_HEADER_SIZE)
        header = dataclasses.asdict(read_header(head + bytes(INDEX_HEADER_SIZE - len(head))))
        store_index.append((n, store_ix[n], header))
    restart = predict_restart(
        states, config=config, commitlog_min=st.segments[0].base,
        commitlog_end=_end_of_data(st, summary.data_end), clean_shutdown=clean, store_index=store_index,
        expected_index=lambda: (ref_data(n) for n in reversed(r_names)),
        checkpoint_index_ts=None if clean else _checkpoint_index_ts(fs, root),
        read_expected_cq=lambda queue, name: _read_all(ref_fs, f"{ref}/{CQ_DIR}/{queue}/{name}"))
    from store_format.recovery import plan_recovery
    recovery = plan_recovery(st, config, abnormal=not clean,
                             max_phy_offset_of_consume_queue=restart.max_physic_offset_in_queues)
    restart.recovery_cut = recovery.process_offset
    restart.recovery_reason = recovery.reason
    restart.recovery_discarded_messages = recovery.discarded_messages
    restart.recovery_discarded_bytes = recovery.discarded_bytes
    restart.recovery_deleted_segments = recovery.deleted_segments
    rebuild = {"segments": summary.segments, "bytes": summary.bytes, "records": summary.records,
               "dispatched": summary.dispatched, "consume_queue_files": summary.consume_queue_files,
               "index_files": summary.index_files, "anomalies": summary.anomaly_count,
               "seconds": summary.seconds}
    return VerifyReport(st.uri, ref_root, config.brokerVersion, cq_results, ix_results, len(s_names), len(r_names),
                        restart, rebuild)


# ---------------------------------------------------------------------------------------------
# is a broker using the store?


class _StoreLock:
    """Hold the broker's own lock (a POSIX write lock on byte 0 of ``lock``) while repairing, so a
    broker cannot start meanwhile (its ``tryLock`` fails)."""

    def __init__(self, store_root: str) -> None:
        self.path = os.path.join(store_root, "lock")
        self.fd: int | None = None

    def acquire(self) -> bool:
        if not os.path.isfile(self.path):
            return False
        fd = os.open(self.path, os.O_RDWR)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EACCES, errno.EAGAIN):
                return False
            raise
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the POSIX lock
            self.fd = None


# ---------------------------------------------------------------------------------------------
# repair


@dataclasses.dataclass
class RepairAction:
    action: str                # replace | add | remove | drop_leftover
    path: str                  # relative to the store root: consumequeue/... or index/...
    source: str | None         # rebuilt file (replace, add)
    reason: str
    sha256_before: str | None = None
    sha256_after: str | None = None
    backup: str | None = None  # relative to the backup folder
    done: bool = False


@dataclasses.dataclass
class RepairPlan:
    store: str
    reference: str | None
    actions: list[RepairAction]
    index_mode: str            # unchanged | by_name | replace_all
    notes: list[str] = dataclasses.field(default_factory=list)

    def render(self) -> str:
        if not self.actions:
            return "repair plan: nothing to do (the store matches the rebuild)"
        counts: dict[str, int] = {}
        for a in self.actions:
            counts[a.action] = counts.get(a.action, 0) + 1
        lines = ["repair plan: " + ", ".join(f"{n} {k}" for k, n in counts.items())]
        lines += [f"  {a.action:<13} {a.path}  ({a.reason})" for a in self.actions]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def plan_repair(report: VerifyReport) -> RepairPlan:
    """Which files to replace, add or remove so that the store matches the rebuild.

    Consume queue files by path.  Index files: when the store and the rebuild have as many, a
    differing file is replaced keeping the store's name (the broker's creation time); when the
    counts differ, names cannot be kept consistently (the rebuilt names are first-entry store times
    and may not sort after the broker's), so every store index file is replaced by the rebuilt set,
    under the rebuilt names."""
    if report.reference is None:
        raise ValueError("the report's rebuild was deleted: run verify_store with work=... to plan a repair")
    ref = report.reference.rstrip("/")
    actions: list[RepairAction] = []
    for r in report.consume_queue:
        rel = f"{CQ_DIR}/{r.path}"
        if r.status == "differs":
            actions.append(RepairAction("replace", rel, f"{ref}/{rel}", _cq_reason(r)))
        elif r.status == "missing":
            actions.append(RepairAction("add", rel, f"{ref}/{rel}", "missing"))
        elif r.status == "extra":
            leftover = _TMP_RE.match(r.path.rsplit("/", 1)[-1]) is not None
            actions.append(RepairAction("drop_leftover" if leftover else "remove", rel, None,
                                        "left by an interrupted repair" if leftover else "not in the rebuild"))
    notes = []
    index_mode = "unchanged"
    real = [x for x in report.index if x.store_name is None or x.store_name.isdigit()]
    for ix in report.index:
        if ix.store_name is not None and not ix.store_name.isdigit() and _TMP_RE.match(ix.store_name):
            actions.append(RepairAction("drop_leftover", f"{INDEX_DIR}/{ix.store_name}", None,
                                        "left by an interrupted repair"))
    if report.index_files_in_store == report.index_files_rebuilt:
        for ix in real:
            if ix.status == "differs":
                index_mode = "by_name"
                actions.append(RepairAction("replace", f"{INDEX_DIR}/{ix.store_name}",
                                            f"{ref}/{INDEX_DIR}/{ix.reference_name}",
                                            f"differs from rebuilt {ix.reference_name}; the store's name is kept"))
    else:
        index_mode = "replace_all"
        notes.append(f"the store has {report.index_files_in_store} index files and the rebuild "
                     f"{report.index_files_rebuilt}: all store index files are replaced by the rebuilt ones, under "
                     "the rebuilt names (first entry's store time), so that they load in the right order")
        for ix in real:
            if ix.store_name is not None:
                actions.append(RepairAction("remove", f"{INDEX_DIR}/{ix.store_name}", None,
                                            "index files are replaced as a set"))
        for ix in real:
            if ix.reference_name is not None:
                actions.append(RepairAction("add", f"{INDEX_DIR}/{ix.reference_name}",
                                            f"{ref}/{INDEX_DIR}/{ix.reference_name}", "rebuilt index file"))
    return RepairPlan(report.store, report.reference, actions, index_mode, notes)


def _cq_reason(r: ConsumeQueueFileResult) -> str:
    d = r.first_difference
    text = f"{r.differing_units} unit(s) differ"
    if d is not None:
        text += f", first at queue offset {d.queue_offset}"
    if r.expected_size != r.found_size:
        text += f", {r.found_size} bytes instead of {r.expected_size}"
    return text


@dataclasses.dataclass
class RepairResult:
    store: str
    dry_run: bool
    broker_check: BrokerCheck
    verify_summary: str
    plan: RepairPlan
    backup: str | None = None
    manifest: str | None = None
    applied: int = 0
    seconds: float = 0.0
    notes: list[str] = dataclasses.field(default_factory=list)

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["broker_check"]["description"] = self.broker_check.describe()
        return d

    def render(self) -> str:
        lines = [self.verify_summary, f"broker check: {self.broker_check.describe()}", self.plan.render()]
        if self.dry_run:
            lines.append("dry run: nothing was changed")
        elif self.plan.actions:
            lines.append(f"repaired: {self.applied} of {len(self.plan.actions)} actions done; old files and the "
                         f"manifest are in {self.backup}")
        lines += [f"note: {n}" for n in self.notes]
        lines.append(f"time: {self.seconds:.2f}s")
        return "\n".join(lines)


Hook = Callable[[str, int, RepairAction], None]


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_durably(src: str, dst: str) -> str:
    """Copy ``src`` to ``dst`` (new file), fsync it, return its sha256."""
    h = hashlib.sha256()
    with open(src, "rb") as fi, open(dst, "xb") as fo:
        while chunk := fi.read(_HASH_CHUNK):
            h.update(chunk)
            fo.write(chunk)
        fo.flush()
        os.fsync(fo.fileno())
    return h.hexdigest()


def _keep_old(target: str, backup_path: str, move: bool) -> None:
    """Put the old file in the backup folder: a hard link (or a rename, for ``move``) on the same
    filesystem, else a durable copy (then, for ``move``, the original is deleted)."""
    os.makedirs(os.path.dirname(backup_path), exist_ok=True)
    if os.path.lexists(backup_path):
        os.unlink(backup_path)
    try:
        if move:
            os.rename(target, backup_path)
        else:
            os.link(target, backup_path)
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK):
            raise
        _copy_durably(target, backup_path)
        if move:
            os.unlink(target)
    _fsync_dir(os.path.dirname(backup_path))


def _write_json(path: str, value: dict) -> None:
    tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path))


def _manifest(plan: RepairPlan, store_root: str, backup: str, status: str, started: str, removed_dirs: list[str],
              extra: dict | None = None) -> dict:
    actions = []
    for a in plan.actions:
        d = dataclasses.asdict(a)
        if a.source is not None and plan.reference is not None:
            d["source"] = "rebuild:" + os.path.relpath(a.source, plan.reference)
        actions.append(d)
    return {"store": store_root, "backup": backup, "status": status, "started_at": started,
            "finished_at": _utc_now() if status == "complete" else None,
            "new_files_from": "a rebuild of the store's commitlog (deleted after the repair)",
            "index_mode": plan.index_mode, "notes": plan.notes, "actions": actions, "removed_dirs": removed_dirs,
            **(extra or {})}


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def apply_repair(plan: RepairPlan, store_root: str, backup: str, *, hook: Hook | None = None,
                 extra: dict | None = None) -> int:
    """Carry out a plan on a local store; returns the number of actions done.

    For each action, in order: the old file (replace, remove) goes to ``backup`` first (hard link
    or rename on the same filesystem, else a fsynced copy); a new file (replace, add) is copied to
    ``.<name>.repair-<token>.tmp`` in its target folder, fsynced, and renamed over the target with
    ``os.replace``, then the folder is fsynced.  An interruption leaves each file old or new; a
    temporary file may be left, which the next verify reports and the next repair deletes.  The
    manifest (``manifest.json``: the plan, then each action with sha256 before/after) is written
    before the first change and at the end; ``manifest.journal`` gets one JSON line per action done.

    ``hook(event, i, action)`` is called after each step (``backed_up``, ``staged``, ``replaced``,
    ``removed``): tests use it to stop the process between steps.
    """
    started = _utc_now()
    os.makedirs(backup, exist_ok=True)
    manifest_path = os.path.join(backup, MANIFEST)
    if os.path.exists(manifest_path):
        raise StoreError(f"{backup} already holds a repair manifest: choose another --backup folder")
    _write_json(manifest_path, _manifest(plan, store_root, backup, "in_progress", started, [], extra))
    journal = open(os.path.join(backup, JOURNAL), "a", encoding="utf-8")
    removed_dirs: list[str] = []
    done = 0
    try:
        for i, a in enumerate(plan.actions):
            target = os.path.join(store_root, a.path)
            folder = os.path.dirname(target)
            if a.action == "drop_leftover":
                if os.path.exists(target):
                    a.sha256_before = _sha256_file(target)
                    os.unlink(target)
                    _fsync_dir(folder)
                if hook:
                    hook("removed", i, a)
            elif a.action == "remove":
                a.sha256_before = _sha256_file(target)
                a.backup = a.path
                _keep_old(target, os.path.join(backup, a.path), move=True)
                _fsync_dir(folder)
                if hook:
                    hook("removed", i, a)
                for d in (folder, os.path.dirname(folder)):
                    if a.path.startswith(CQ_DIR + "/") and d != os.path.join(store_root, CQ_DIR):
                        try:
                            os.rmdir(d)
                            removed_dirs.append(os.path.relpath(d, store_root))
                        except OSError:
                            break
            else:
                assert a.source is not None
                if a.action == "replace":
                    a.sha256_before = _sha256_file(target)
                    a.backup = a.path
                    _keep_old(target, os.path.join(backup, a.path), move=False)
                    if hook:
                        hook("backed_up", i, a)
                os.makedirs(folder, exist_ok=True)
                tmp = os.path.join(folder, f".{os.path.basename(target)}.repair-{uuid.uuid4().hex[:12]}.tmp")
                a.sha256_after = _copy_durably(a.source, tmp)
                if hook:
                    hook("staged", i, a)
                os.replace(tmp, target)
                _fsync_dir(folder)
                if hook:
                    hook("replaced", i, a)
            a.done = True
            done += 1
            journal.write(json.dumps({k: v for k, v in dataclasses.asdict(a).items() if k != "source"}) + "\n")
            journal.flush()
            os.fsync(journal.fileno())
    finally:
        journal.close()
    _write_json(manifest_path, _manifest(plan, store_root, backup, "complete", started, removed_dirs, extra))
    return done


def _local_root(store: str) -> str:
    if "://" in store and not store.startswith("file://"):
        raise StoreError(f"{store}: repair works on a local store only (it renames files in place); copy the store "
                         "to a local disk, or use verify for a remote one")
    return os.path.abspath(store[len("file://"):] if store.startswith("file://") else store)


def _stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _unique(path: str) -> str:
    out, n = path, 1
    while os.path.exists(out):
        n += 1
        out = f"{path}-{n}"
    return out


def repair_store(store: str, config: BrokerConfig, *, backup: str | None = None, dry_run: bool = False,
                 force: bool = False, engine: str = "spark", master: str | None = None,
                 split_size: int | None = None, processes: int | None = None, spark: Any = None,
                 hook: Hook | None = None) -> RepairResult:
    """Verify a local store, then replace only its damaged, missing or extra files.

    Refuses (``StoreError``) while a broker may be using the store (:func:`check_broker`) unless
    ``force``; holds the broker's lock while it works.  The rebuild goes to
    ``STORE/.repair-work-<time>`` (same disk as the store; deleted at the end), or to a temporary
    folder for a dry run, which changes nothing in the store.

    Args:
        backup: folder for the old files and the manifest (default ``STORE/.repair-backup-<UTC time>``).
        dry_run: plan only.
        force: repair even when the lock is held or ``abort`` exists.
        hook: see :func:`apply_repair`.
    """
    t0 = time.monotonic()
    root = _local_root(store)
    open_store(root, config)  # layout errors before anything else
    check = check_broker(root)
    notes = []
    if check.broker_may_be_running and not dry_run:
        if not force:
            raise StoreError(f"refusing to repair {root}: {check.describe()}. Stop the broker (a clean shutdown "
                             "deletes abort); if none runs and it crashed, start and stop it once, or pass --force")
        notes.append(f"--force: repairing although {check.describe()}")
    lock = _StoreLock(root)
    work = (tempfile.mkdtemp(prefix="rocketmq-repair-") if dry_run
            else _unique(os.path.join(root, f".repair-work-{_stamp()}")))
    try:
        if not dry_run:
            if lock.acquire():
                notes.append("held the broker's lock file while repairing")
            elif check.lock_file:
                if not force:
                    raise StoreError(f"refusing to repair {root}: another process took {root}/lock just now; stop the "
                                     "broker or pass --force")
                notes.append("--force: the lock file is held by another process")
            else:
                notes.append("no lock file: a broker started during the repair would not be kept out")
            for name in os.listdir(root):
                if name.startswith(".repair-work-") and os.path.join(root, name) != work:
                    shutil.rmtree(os.path.join(root, name), ignore_errors=True)
                    notes.append(f"deleted {name}, left by an interrupted repair")
        report = verify_store(root, config, work=os.path.join(work, "reference"), engine=engine, master=master,
                              split_size=split_size, processes=processes, spark=spark)
        plan = plan_repair(report)
        result = RepairResult(root, dry_run, check, report.summary_line(), plan, notes=notes)
        if dry_run or not plan.actions:
            result.seconds = round(time.monotonic() - t0, 3)
            return result
        backup_dir = os.path.abspath(backup) if backup else _unique(os.path.join(root, f".repair-backup-{_stamp()}"))
        result.backup = backup_dir
        result.manifest = os.path.join(backup_dir, MANIFEST)
        log.info("repairing %s: %d actions, old files to %s", root, len(plan.actions), backup_dir)
        result.applied = apply_repair(plan, root, backup_dir, hook=hook,
                                      extra={"verify": report.summary_line(), "broker_check": check.describe()})
        result.plan.reference = None
        result.seconds = round(time.monotonic() - t0, 3)
        return result
    finally:
        lock.release()
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# command line


def _inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def run_verify_command(*, store: str, config: BrokerConfig, work: str | None, engine: str, master: str | None,
                       split_size: int | None, as_json: bool, strict: bool = False) -> int:
    """``verify``: exit 0 identical, 1 differences (StoreError → the CLI prints one line, exit 2).
    A broker that may be running on the store: a warning, or with ``strict`` a refusal
    (:func:`pipelines.brokerlock.warn_if_broker_live`)."""
    from .brokerlock import warn_if_broker_live
    warn_if_broker_live(store, strict=strict,
                        meaning="the broker keeps writing its newest commitlog segment, consume queue and index "
                                "files, so differences in them may be writes in progress rather than damage")
    if work is not None and "://" not in store and _inside(work, store):
        raise StoreError(f"--work {work} is inside the store: verify only reads the store; choose a folder outside it")
    report = verify_store(store, config, work=work, engine=engine, master=master, split_size=split_size,
                          processes=os.cpu_count() or 1)
    print(json.dumps(report.as_dict(), indent=2, default=str) if as_json else report.render())
    return 0 if report.identical else 1


def run_repair_command(*, store: str, config: BrokerConfig, backup: str | None, dry_run: bool, force: bool,
                       engine: str, master: str | None, split_size: int | None, as_json: bool) -> int:
    """``repair``: exit 0 when the store now matches the rebuild (repaired, or nothing to do), 1 for a
    dry run that found differences, 2 for errors and refusals (StoreError)."""
    result = repair_store(store, config, backup=backup, dry_run=dry_run, force=force, engine=engine, master=master,
                          split_size=split_size, processes=os.cpu_count() or 1)
    print(json.dumps(result.as_dict(), indent=2, default=str) if as_json else result.render())
    return 1 if dry_run and result.plan.actions else 0
