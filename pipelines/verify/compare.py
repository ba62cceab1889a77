"""Comparing one consume queue file (``consumequeue/``, ``consumequeue_ext/``, ``batchconsumequeue/``)
or one index file of a store with its rebuilt counterpart: first differing unit, differing header
fields, slots and entries, and the ``(keyHash, commitlogOffset)`` pairs a lookup no longer reaches
through the store's slot chains (named from the records in the commitlog)."""
from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable

import numpy as np

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.errors import StoreError
from store_format.indexfile import reachable_entries, read_header
from store_format.javahash import index_key, index_key_hash, java_utf8_decode
from store_format.layout import (
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
from store_format.store import StoreLocation

from .report import ConsumeQueueFileResult, IndexFileResult, KeyExample, QueueFileResult, Unit, UnitDifference
from .storefiles import CQ_DIR, REPAIR_TMP_RE, cq_units


def _unit(u: np.ndarray, k: int) -> Unit | None:
    if k >= len(u):
        return None
    return Unit(int(u["commitlogOffset"][k]), int(u["size"][k]), int(u["tagsCode"][k]))


def compare_cq_file(rel: str, expected: bytes | None, found: bytes | None) -> ConsumeQueueFileResult:
    """Compare one consume queue file; units are compared field by field with numpy."""
    if expected is None:
        assert found is not None
        return ConsumeQueueFileResult(rel, "extra", found_size=len(found), note=extra_note(rel))
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
                       _unit(cq_units(expected), first), _unit(cq_units(found), first))
    note = ""
    if len(found) != len(expected):
        note = (f"{len(found):,} bytes instead of {len(expected):,}: MappedFileQueue.doLoad refuses a file of another "
                "size, the broker does not start")
    return ConsumeQueueFileResult(rel, "differs", len(expected), len(found), int(diff.sum()), d, note)


def _padded_units(data: bytes, n_units: int, dtype: np.dtype) -> np.ndarray:
    buf = np.zeros(n_units * dtype.itemsize, dtype=np.uint8)
    buf[:len(data)] = np.frombuffer(data, dtype=np.uint8)
    return buf.view(dtype)


def compare_queue_file(rel: str, expected: bytes | None, found: bytes | None, dtype: np.dtype,
                       folder: str) -> QueueFileResult:
    """Compare one file of ``folder`` (``consumequeue_ext/``: ``ConsumeQueueExt.CqExtUnit`` units of
    20 bytes, no filter bitmap; ``batchconsumequeue/``: ``BatchConsumeQueue``'s 46-byte units), cut
    into units of ``dtype`` and compared field by field; the bytes after the last whole unit (an ext
    file's end marker and its free tail) count as one more unit, padded with zeros."""
    if expected is None:
        assert found is not None
        return QueueFileResult(rel, "extra", found_size=len(found), note=extra_note(rel, folder))
    if found is None:
        return QueueFileResult(rel, "missing", expected_size=len(expected))
    if expected == found:
        return QueueFileResult(rel, "identical", len(expected), len(found))
    size = dtype.itemsize
    n_units = -(-max(len(expected), len(found)) // size)
    ua, ub = _padded_units(expected, n_units, dtype), _padded_units(found, n_units, dtype)
    diff = np.zeros(n_units, dtype=bool)
    for field in dtype.names or ():
        diff |= ua[field] != ub[field]
    idx = np.flatnonzero(diff)
    first = int(idx[0]) if len(idx) else min(len(expected), len(found)) // size

    def fields(data: bytes, units: np.ndarray) -> dict | None:
        if first * size >= len(data):
            return None
        return {k: int(units[k][first]) for k in dtype.names or ()}

    note = ""
    if len(found) != len(expected):
        note = (f"{len(found):,} bytes instead of {len(expected):,}: MappedFileQueue.doLoad refuses a file of another "
                "size, the broker does not start")
    return QueueFileResult(rel, "differs", len(expected), len(found), int(diff.sum()), first, first * size,
                           fields(expected, ua), fields(found, ub), note)


def extra_note(rel: str, folder: str = CQ_DIR) -> str:
    """Why a file of a queue folder (``folder``) only the store has matters to the broker ("" when it
    is an ordinary file)."""
    parts = rel.split("/")
    name = parts[-1]
    if REPAIR_TMP_RE.match(name):
        return "left by an interrupted repair: run repair again before starting the broker"
    if len(parts) != 3:
        return f"not at {folder}/<topic>/<queueId>/<file>"
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


@dataclasses.dataclass
class IndexView:
    """An index file's header, slots and entries as the broker maps them."""

    header: dict
    slots: np.ndarray
    entries: np.ndarray      # structured INDEX_ENTRY_DTYPE, entry 0 included
    size: int

    @classmethod
    def parse(cls, data: bytes, slot_num: int, index_num: int) -> IndexView:
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
        n = reachable_entries(self.slots.astype(np.int32), self.entries["keyHash"].astype(np.int32),
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
    (:func:`store_format.indexfile.reachable_entries`) and the ``(keyHash, commitlogOffset)``
    pairs each reaches are compared: an expected pair the store's file does not reach is a key a
    broker lookup no longer finds there; a few of them are named with ``name_key`` (the record
    read from the commitlog)."""
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
    e = IndexView.parse(expected, slot_num, index_num)
    f = IndexView.parse(found, slot_num, index_num)
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


class KeyNamer:
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
                                    self.config, window=1 << 16, dledger=seg.dledger)
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


def align_index(store_names: list[str], ref_names: list[str], store_digest: list[str],
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
