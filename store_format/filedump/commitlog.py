"""Records of one commitlog segment, decoded as the reput reads them.

A commitlog segment is decoded with the project's one record walk
(:func:`store_format.commitlog.walk_range`, mirroring ``CommitLog.checkMessageAndReturnSize`` in
``DefaultMessageStore.ReputMessageService.doReput``) in windows of ``window`` bytes, so a 1 GiB segment
never sits in memory. Where the reput would stop reading, the dump says so and goes on:

* totalSize differs from what the record's fields add up to: the record is shown with status
  ``size_mismatch`` (the reput skips it and goes on at the record's structural end, and so does the dump);
* an unreadable record (a bad magic code, fields running past the end, a ``DELAY`` level that does not
  parse) or zeros in the middle of a segment: an ``event`` says where and what the broker does (a
  master's reput skips the rest of the segment, a slave's stops there for good). The dump then
  **resynchronizes**: it looks for the next position holding a known magic code and a physicalOffset
  equal to the segment base plus that position (:func:`store_format.commitlog.resync`) and goes on
  from there; those records carry ``"reput": "not_read"``, because the broker never dispatches them;
* a blank record ends the segment (the reput continues at the next segment); zeros with nothing
  after them are the end of the data.

A DLedger data file (``dledger-<selfId>/data/<20 digits>``, :mod:`store_format.dledger`) is walked the
same way with ``dledger=True``, as ``DLedgerCommitLog.checkMessageAndReturnSize`` reads it: each record
behind its 48-byte entry header, whose fields (index, term, pos, size, ...) each record item carries as
``entry_*``; a DLedger blank (magic -1, ``MmapFileList.preAppend``) ends the file's data; the resync
looks for the next entry start (:func:`store_format.commitlog.resync`).  Where the file's log has its
``checkpoint`` and ``index/`` beside it, the records at or past the committed position (the end of
entry ``committedIndex``) carry ``"reput": "not_committed"``: ``DLedgerCommitLog.getData`` hands the
reput nothing there.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Generator, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from .. import commitlog as cl
from ..config import BrokerConfig
from ..crc import body_crc_spans
from ..dispatch import gather_strings
from ..dledger import (
    ENTRY_FIELD_NAMES,
    ENTRY_HEADER_SIZE,
    ENTRY_MAGIC,
    blank_length,
    entry_header,
    entry_headers,
    is_blank,
)
from ..layout import (
    END_FILE_MIN_BLANK_LENGTH,
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
    OFF_MAGIC,
    OFF_TOTAL_SIZE,
    SEGMENT_NAME_RE,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_COMMIT,
    TRANSACTION_NOT,
    TRANSACTION_PREPARED,
    TRANSACTION_ROLLBACK,
)
from ..records import detail_columns, properties_map
from ..store import Segment, StoreLocation
from ..timeutil import iso_ms
from .items import KIND_COMMITLOG, KIND_DLEDGER, Item, Selection
from .reading import DEFAULT_WINDOW, SCAN_WINDOW, first_nonzero, read_exact

__all__ = ["Unreadable", "classify_unreadable", "classify_unreadable_entry", "resolve_version_of_segment",
           "iter_commitlog"]


# bytes read past a window's end, so that the record straddling it is decoded without growing the
# buffer (records up to this size; larger ones make walk_range double its buffer once)
_WINDOW_MARGIN = 1 << 20

_TRANSACTION_NAMES = {TRANSACTION_NOT: "none", TRANSACTION_PREPARED: "prepared", TRANSACTION_COMMIT: "commit",
                      TRANSACTION_ROLLBACK: "rollback"}


@dataclasses.dataclass(frozen=True)
class Unreadable:
    """What stands where a record walk stopped on bytes it cannot read."""
    kind: str           # end_of_data | bad_magic | unreadable | segment_end
    position: int       # segment position
    total_size: int | None
    magic: int | None
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "position": self.position, "total_size": self.total_size,
                "magic": None if self.magic is None else f"0x{self.magic & 0xFFFFFFFF:08X}", "detail": self.detail}


def classify_unreadable(read: cl.Reader, size: int, pos: int, *, accept_v2: bool = True) -> Unreadable:
    """Why ``CommitLog.checkMessageAndReturnSize`` returns ``-1`` (not success) at segment position ``pos``.

    ``end_of_data``: totalSize and magic code are zero (a segment is zero after its last record);
    ``bad_magic``: a magic code that is neither a record's nor a blank's (``found a illegal magic code``);
    ``segment_end``: fewer than 8 bytes left; ``unreadable``: a known magic code whose fields do not
    fit (a length running past the segment end or past totalSize, a ``DELAY`` level that does not parse).
    """
    remaining = size - pos
    head = read_exact(read, pos, min(max(remaining, 0), 8))
    if remaining < OFF_MAGIC + 4 or len(head) < OFF_MAGIC + 4:
        zero = not any(head)
        return Unreadable("end_of_data" if zero else "segment_end", pos, None, None,
                          f"{remaining} bytes left in the segment" + (" (zeros)" if zero and remaining > 0 else ""))
    total = int.from_bytes(head[OFF_TOTAL_SIZE:OFF_TOTAL_SIZE + 4], "big", signed=True)
    magic = int.from_bytes(head[OFF_MAGIC:OFF_MAGIC + 4], "big", signed=True)
    if total == 0 and magic == 0:
        return Unreadable("end_of_data", pos, 0, 0, "zeros: no record here")
    known = (MAGIC_V1, MAGIC_V2) if accept_v2 else (MAGIC_V1,)
    if magic not in known and magic != MAGIC_BLANK:
        what = "a V2 record, which a 4.9 broker cannot read" if magic == MAGIC_V2 else "neither a record nor a blank"
        return Unreadable("bad_magic", pos, total, magic, f"magic code 0x{magic & 0xFFFFFFFF:08X}: {what}")
    if total < 0 or total > remaining:
        return Unreadable("unreadable", pos, total, magic,
                          f"totalSize {total} does not fit the {remaining} bytes left in the segment")
    return Unreadable("unreadable", pos, total, magic,
                      "a field of the record does not fit (bodyLength, topic length or propertiesLength past "
                      "totalSize or the segment end), or a DELAY/INNER_NUM/INNER_BASE property does not parse")


def classify_unreadable_entry(read: cl.Reader, size: int, pos: int, *, accept_v2: bool = True) -> Unreadable:
    """Why ``DLedgerCommitLog.checkMessageAndReturnSize`` does not succeed at the entry starting at
    ``pos`` of a DLedger data file: zeros (``end_of_data``), an entry header running past the file end
    (``unreadable``), or what :func:`classify_unreadable` says of the record after the header (its
    positions still the entry's).  A plain record there (the int after the first is a commitlog magic
    code) is read as the plain commitlog reads it."""
    head = read_exact(read, pos, min(max(size - pos, 0), ENTRY_HEADER_SIZE))
    second = int.from_bytes(head[OFF_MAGIC:OFF_MAGIC + 4], "big", signed=True) if len(head) >= 8 else None
    if len(head) < 8 or second in (MAGIC_V1, MAGIC_V2, MAGIC_BLANK) or not any(head[:8]):
        return classify_unreadable(read, size, pos, accept_v2=accept_v2)
    if len(head) < ENTRY_HEADER_SIZE:
        return Unreadable("unreadable", pos, None, None,
                          f"an entry header needs {ENTRY_HEADER_SIZE} bytes, {len(head)} are left in the file")
    h = entry_header(head)
    magic_note = "" if h.magic == ENTRY_MAGIC else f" (entry magic {h.magic}: not a DLedger entry's)"

    def after_header(p: int, n: int):
        return read(p + ENTRY_HEADER_SIZE, n)

    inner = classify_unreadable(after_header, size - ENTRY_HEADER_SIZE, pos, accept_v2=accept_v2)
    kind = "unreadable" if inner.kind in ("end_of_data", "segment_end") else inner.kind
    return Unreadable(kind, pos, inner.total_size, inner.magic,
                      f"the record after the entry header at {pos}: {inner.detail}{magic_note}")


def _segment_base(name: str) -> int:
    return int(name) if SEGMENT_NAME_RE.match(name) else 0


def resolve_version_of_segment(fs: pafs.FileSystem, path: str, name: str, size: int, config: BrokerConfig,
                               uri: str | None = None, *, dledger: bool = False) -> BrokerConfig:
    """The config with ``brokerVersion`` decided from this one segment (a DLedger data file with
    ``dledger``) when it is ``auto`` (:func:`store_format.reput.detect_broker_version`)."""
    if config.brokerVersion != "auto":
        return config
    from ..reput import resolve_broker_version
    root = path.rsplit("/", 1)[0] if "/" in path else "."
    store = StoreLocation(uri or path, fs, root, [Segment(0, name, _segment_base(name), size, path, None,
                                                          dledger=dledger)])
    return resolve_broker_version(store, config)


@dataclasses.dataclass(frozen=True)
class DLedgerFile:
    """What a dump of a DLedger data file knows of its log (:func:`iter_commitlog` with ``dledger``):
    the ``dledger-<selfId>`` folder, and the committed entry and position read from the log's
    ``checkpoint`` and ``index/`` (None when they could not be read: ``note`` says why)."""
    log: str | None = None
    committed_index: int | None = None
    committed_pos: int | None = None     # -1: nothing committed
    note: str = ""


def iter_commitlog(read: cl.Reader, *, name: str, size: int, config: BrokerConfig, path: str | None = None,
                   start: int = 0, count: int | None = None, window: int = DEFAULT_WINDOW,
                   dledger: DLedgerFile | None = None) -> Iterator[Item]:
    """Records of one commitlog segment, in order, with the reput's view of each (module docstring).

    Args:
        read: ``read(pos, length)`` on the segment (a :class:`store_format.store.Reader`).
        name: the file name (its 20 digits are the segment's base offset).
        size: the file size: where the readable data of the segment ends.
        config: broker settings (``brokerVersion`` 4 or 5 decides the walk's 5.x checks; ``auto`` reads as 4
            unless the caller resolved it, see :func:`resolve_version_of_segment`; ``brokerId`` says what
            the reput does at an unreadable record).
        path: shown in the header.
        start, count: which records (numbered from 0) to yield.
        window: segment bytes decoded at a time; memory stays proportional to it, not to the segment.
        dledger: a DLedger data file (its records behind entry headers), with what is known of its log.
    Yields:
        ``file`` header, ``record`` items, ``event`` items and a ``summary``.
    """
    dump = _SegmentDump(read, name, size, config, path, window, dledger, Selection(start, count))
    yield dump.header()
    if size != config.mappedFileSizeCommitLog:
        yield {"type": "event", "event": "file_size", "position": 0, "offset": dump.base,
               "detail": f"the file is {size} bytes but mappedFileSizeCommitLog is {config.mappedFileSizeCommitLog}: "
                         "a broker refuses to load it (pass --config with the store's broker.conf if it differs)"}
    if dump.uncommitted and dump.sel.open:
        yield _committed_event(0, dump.base, dledger, before=True)
    scratch = cl.Scratch()
    state = cl.WalkState.at_slice_start(0, size)
    end: dict[str, Any] | None = None
    while True:
        split_end = min(state.bufpos + window, size + 1)
        if dump.cut is not None:
            split_end = min(split_end, dump.cut)
        res = cl.walk_range(read, dump.base, size, state, split_end, config, window=window + _WINDOW_MARGIN,
                            keep_text=True, scratch=scratch, dledger=dledger is not None)
        if len(res.rec):
            yield from dump.records(res)
            if dump.sel.done:
                end = {"event": "stopped", "detail": f"--count {count} reached"}
                break
        state = res.state
        stop = res.stop
        if stop == cl.Stop.SPLIT_END:
            if dump.cut is not None and state.bufpos >= dump.cut:
                yield from dump.past_committed(state.bufpos)
            continue
        pos = state.bufpos
        if stop == cl.Stop.BLANK:
            yield from _blank_event(read, pos, name, dump.base, size, state, stop, config, path, dump.not_read_after,
                                    dledger is not None, dump.sel)
            end = {"event": "blank", "position": pos}
            break
        if stop == cl.Stop.SLICE_END or pos >= size:
            if dump.sel.open:
                yield {"type": "event", "event": "segment_end", "position": pos, "offset": dump.base + pos,
                       "detail": "the records fill the segment to its last byte (no blank record)"}
            end = {"event": "segment_end", "position": pos}
            break
        found, end = yield from dump.unreadable(pos)
        if found < 0:
            break
        state = cl.WalkState.at_slice_start(found, size)
    yield {"type": "summary", "kind": dump.kind, "name": name, **dump.stats, "end": end,
           "reput_stops_at": dump.not_read_after, **dump.sel.summary()}


class _SegmentDump:
    """:func:`iter_commitlog`'s walk of one segment: its figures so far, where the reput stops reading
    (``not_read_after``) and, on a DLedger data file, where the committed data ends in it (``cut``) and whether the
    records are past it (``uncommitted``)."""

    def __init__(self, read: cl.Reader, name: str, size: int, config: BrokerConfig, path: str | None, window: int,
                 dledger: DLedgerFile | None, sel: Selection) -> None:
        self.read, self.name, self.size, self.config, self.path, self.window = read, name, size, config, path, window
        self.dledger, self.sel = dledger, sel
        self.base = _segment_base(name)
        self.kind = KIND_COMMITLOG if dledger is None else KIND_DLEDGER
        self.stats = {"records": 0, "dispatched": 0, "size_mismatch": 0, "crc_failed": 0, "physical_offset_wrong": 0,
                      "not_read_by_reput": 0, "bytes": 0}
        # DLedger: the file position where the committed data ends, when it lies in this file (None: no cut)
        self.cut: int | None = None
        self.uncommitted = False
        self.not_read_after: int | None = None  # position of the unreadable record the reput stops at
        if dledger is not None:
            self.stats.update(not_committed=0, entries_bad=0)
            if dledger.committed_pos is not None:
                base = self.base
                self.uncommitted = dledger.committed_pos <= base
                self.cut = dledger.committed_pos - base if base < dledger.committed_pos < base + size else None

    def header(self) -> Item:
        """The ``file`` item (on a DLedger data file with its log's committed index and offset)."""
        base, size, dledger = self.base, self.size, self.dledger
        header: Item = {"type": "file", "kind": self.kind, "path": self.path or self.name, "name": self.name,
                        "base_offset": base, "file_size": size, "size_ok": size == self.config.mappedFileSizeCommitLog,
                        "broker_version": "5" if self.config.is_5x else "4", "window": self.window}
        if dledger is not None:
            header.update(log=dledger.log, committed_index=dledger.committed_index,
                          committed_offset=dledger.committed_pos, committed_note=dledger.note)
        return header

    def records(self, res: cl.WalkResult) -> Iterator[Item]:
        """Count a window's records and yield the selected ones' items."""
        stats, base, n = self.stats, self.base, len(res.rec)
        rec = res.rec
        text = np.asarray(res.text, dtype=np.uint8)
        computed = body_crc_spans(text, res.text_origin, rec[:, cl.R_BODY_START], rec[:, cl.R_BODY_LEN])
        crc_ok = computed == rec[:, cl.R_CRC].astype(np.int32)
        ok = rec[:, cl.R_STATUS] == cl.Status.DISPATCHED
        entries = _entry_columns(res, base) if self.dledger is not None else None
        stats["records"] += n
        stats["dispatched"] += int(ok.sum()) if self.not_read_after is None and not self.uncommitted else 0
        stats["size_mismatch"] += int((~ok).sum())
        stats["crc_failed"] += int((~crc_ok).sum())
        stats["physical_offset_wrong"] += int((rec[:, cl.R_PHYS] != base + rec[:, cl.R_POS]).sum())
        stats["bytes"] += int(rec[:, cl.R_STRUCT].sum())
        if self.uncommitted:
            stats["not_committed"] += n
        elif self.not_read_after is not None:
            stats["not_read_by_reput"] += n
        if entries is not None:
            stats["entries_bad"] += int((~entries["ok"]).sum())
        first_no = self.sel.seen
        lo, hi = self.sel.take(n)
        if hi > lo:
            gone = "not_committed" if self.uncommitted else "not_read" if self.not_read_after is not None else None
            yield from _record_items(res, lo, hi, first_no, self.name, base, computed, crc_ok, gone, entries)

    def past_committed(self, pos: int) -> Iterator[Item]:
        """The walk passed the committed data's end: the records from here on are not committed."""
        if self.sel.open:
            yield _committed_event(pos, self.base, self.dledger, before=False)
        self.cut, self.uncommitted = None, True

    def unreadable(self, pos: int) -> Generator[Item, None, tuple[int, dict[str, Any] | None]]:
        """An unreadable record, a bad magic code, or zeros at ``pos``: its event, then where the walk goes on
        (:func:`store_format.commitlog.resync`; -1: nowhere) and, when nowhere, the summary's ``end``."""
        read, size, base, config, dledger, sel = self.read, self.size, self.base, self.config, self.dledger, self.sel
        accept_v2 = bool(getattr(config, "accepts_v2_records", True))
        why = (classify_unreadable(read, size, pos, accept_v2=accept_v2) if dledger is None
               else classify_unreadable_entry(read, size, pos, accept_v2=accept_v2))
        after = first_nonzero(read, pos, size, min(self.window, SCAN_WINDOW)) if why.kind == "end_of_data" else pos
        if why.kind == "end_of_data" and after < 0:
            if sel.open:
                yield {"type": "event", "event": "end_of_data", "position": pos, "offset": base + pos,
                       "detail": "end of data: the rest of the segment is zero"}
            return -1, {"event": "end_of_data", "position": pos}
        reput_note = ("a master's reput skips the rest of the segment" if config.is_master
                      else "a slave's reput stops here for good")
        checker = "DLedgerCommitLog" if dledger is not None else "CommitLog"
        if sel.open:
            yield {"type": "event", "event": why.kind, "position": pos, "offset": base + pos, **_prefixed(why),
                   "detail": why.detail + ("; non-zero bytes follow at position " + str(after)
                                           if why.kind == "end_of_data" else "")
                   + f"; {reput_note} ({checker}.checkMessageAndReturnSize returns -1)"}
        if self.not_read_after is None:
            self.not_read_after = pos
        found = cl.resync(read, base, max(pos + 1, after - OFF_MAGIC if after > pos else pos + 1), size, size,
                          dledger=dledger is not None)
        if self.cut is not None and found >= self.cut:
            yield from self.past_committed(self.cut)
        if found < 0:
            what = "an entry start (its magic, its own pos, size = body size + 48)" if dledger is not None \
                else "a record start (a known magic code with its own physicalOffset)"
            if sel.open:
                yield {"type": "event", "event": "no_more_records", "position": pos, "offset": base + pos,
                       "detail": f"no {what} found after it"}
            return -1, {"event": why.kind, "position": pos}
        if sel.open:
            yield {"type": "event", "event": "resync", "position": found, "offset": base + found,
                   "skipped_bytes": found - pos,
                   "detail": f"next record found by content at position {found}; the records from here on are "
                             "not read by the broker's reput (\"reput\": \"not_read\")"}
        return found, None


def _committed_event(pos: int, base: int, dledger: DLedgerFile | None, *, before: bool) -> Item:
    """Where the committed data of a DLedger log ends (``DLedgerCommitLog.getData`` hands the reput
    nothing at or past it)."""
    assert dledger is not None
    where = (f"the log's committed position {dledger.committed_pos} (end of entry {dledger.committed_index}) is "
             "at or before this file" if before else
             f"the committed data ends here (entry {dledger.committed_index}, committedIndex of the log's checkpoint)")
    return {"type": "event", "event": "committed_end", "position": pos, "offset": base + pos,
            "detail": f"{where}: the reput reads nothing from here on (\"reput\": \"not_committed\")"}


def _blank_event(read: cl.Reader, pos: int, name: str, base: int, size: int, state: cl.WalkState, stop: int,
                 config: BrokerConfig, path: str | None, not_read_after: int | None, dledger: bool,
                 sel: Selection) -> Iterator[Item]:
    """The blank that ends a segment's data: a commitlog blank record (its totalSize first), or a
    DLedger blank (magic -1, then its length)."""
    if dledger:
        head = read_exact(read, pos, 8)
        declared = blank_length(head) if is_blank(head) else None
        detail = "DLedger blank (MmapFileList.preAppend): end of the file's data; the reput continues at the next file"
    else:
        blank = read_exact(read, pos, 4)
        declared = int.from_bytes(blank, "big", signed=True) if len(blank) == 4 else None
        detail = "blank record: end of the segment's data; the reput continues at the next segment"
    item: Item = {"type": "event", "event": "blank", "position": pos, "offset": base + pos, "size": declared,
                  "expected_size": size - pos, "detail": detail}
    if not_read_after is None:
        from ..reput import next_reput_offset
        seg = Segment(0, name, base, size, path or name, None, dledger=dledger)
        nxt = next_reput_offset(seg, state, stop, size, config.is_master)
        item["reput_next_offset"] = nxt
        if nxt is not None and nxt > base + size:
            item["detail"] += (f"; totalSize mismatches moved the reput's offset past the segment end: it "
                               f"continues at {nxt}, skipping the segment at {base + size}")
    if not dledger and declared is not None and declared < END_FILE_MIN_BLANK_LENGTH:
        item["detail"] += f"; its size {declared} is below the minimum {END_FILE_MIN_BLANK_LENGTH}"
    if sel.open:
        yield item


def _entry_columns(res: cl.WalkResult, base: int) -> dict[str, np.ndarray]:
    """The entry header before each record of a DLedger walk (:func:`store_format.dledger.entry_headers`)
    and whether it agrees with the record behind it: the known magic, its own position as ``pos``, its
    size the body size plus the header, the body the record (``ok``).  ``present`` is false for a record
    read without a header (a plain record at an entry's place)."""
    rec = res.rec
    text = np.asarray(res.text, dtype=np.uint8)
    starts = rec[:, cl.R_POS] - ENTRY_HEADER_SIZE - res.text_origin
    present = starts >= 0
    hdr = entry_headers(text, np.where(present, starts, 0))
    cols = {f: hdr[f].astype(np.int64) for f in hdr.dtype.names or ()}
    ok = (present & (cols["magic"] == ENTRY_MAGIC) & (cols["pos"] == base + rec[:, cl.R_POS] - ENTRY_HEADER_SIZE)
          & (cols["size"] == cols["body_size"] + ENTRY_HEADER_SIZE) & (cols["body_size"] == rec[:, cl.R_TOTAL]))
    return {**cols, "present": present, "ok": ok}


def _prefixed(why: Unreadable) -> dict[str, Any]:
    d = why.as_dict()
    return {"total_size": d["total_size"], "magic": d["magic"]}


def _record_items(res: cl.WalkResult, lo: int, hi: int, first_no: int, segment: str, base: int,
                  computed_crc: np.ndarray, crc_ok: np.ndarray, gone: str | None,
                  entries: dict[str, np.ndarray] | None = None) -> Iterator[Item]:
    """Records ``lo .. hi - 1`` of one walk as dicts (the fields of :func:`store_format.records.detail_columns`),
    each with its DLedger entry header's fields (``entry_*``) when ``entries`` has them (:func:`_entry_columns`).
    ``gone``: the reput reads none of them (``not_read``, ``not_committed``)."""
    rec = res.rec
    text = np.asarray(res.text, dtype=np.uint8)
    detail = detail_columns(res)
    n = hi - lo

    def col(arr: pa.Array) -> list:
        return arr.slice(lo, n).to_pylist()

    topic = gather_strings(text, res.text_origin, rec[lo:hi, cl.R_TOPIC_START],
                           np.maximum(rec[lo:hi, cl.R_TOPIC_LEN], 0)).to_pylist()
    props = properties_map(detail["properties"].slice(lo, n)).to_pylist()
    born_host, store_host, msg_id = col(detail["born_host"]), col(detail["store_host"]), col(detail["msg_id"])
    tags, keys, uniq = col(detail["tags"]), col(detail["keys"]), col(detail["uniq_key"])
    # the topic length field lies between the body's end and the topic: 1 byte in V1 records, 2 in V2
    body_end = rec[lo:hi, cl.R_BODY_START] + np.maximum(rec[lo:hi, cl.R_BODY_LEN], 0)
    topic_len_size = rec[lo:hi, cl.R_TOPIC_START] - body_end
    for j in range(n):
        i = lo + j
        r = rec[i]
        pos = int(r[cl.R_POS])
        status_ok = int(r[cl.R_STATUS]) == cl.Status.DISPATCHED
        flags = int(r[cl.R_FLAGS]) if status_ok else 0
        if gone is not None:
            reput = gone
        elif status_ok:
            reput = "dispatched"
        else:
            reput = "skipped_size_mismatch"
        sysflag = int(r[cl.R_SYSFLAG])
        item: Item = {
            "type": "record", "no": first_no + i, "segment": segment, "position": pos, "offset": base + pos,
            "size": int(r[cl.R_TOTAL]), "structural_size": int(r[cl.R_STRUCT]),
            "status": "ok" if status_ok else "size_mismatch",
            "magic": "V2" if int(topic_len_size[j]) == 2 else "V1",
            "topic": topic[j], "queue_id": int(r[cl.R_QID]), "queue_offset": int(r[cl.R_QOFF]),
            "physical_offset": int(r[cl.R_PHYS]), "physical_offset_ok": int(r[cl.R_PHYS]) == base + pos,
            "sys_flag": sysflag, "transaction": _TRANSACTION_NAMES[sysflag & SYSFLAG_TRANSACTION_MASK],
            "born_timestamp": int(r[cl.R_BORN_TS]), "born_time": iso_ms(int(r[cl.R_BORN_TS])),
            "born_host": born_host[j],
            "store_timestamp": int(r[cl.R_STORE_TS]), "store_time": iso_ms(int(r[cl.R_STORE_TS])),
            "store_host": store_host[j],
            "flag": int(r[cl.R_FLAG]), "reconsume_times": int(r[cl.R_RECONSUME]),
            "prepared_transaction_offset": int(r[cl.R_PREP_TX]),
            "body_length": int(r[cl.R_BODY_LEN]), "body_crc": int(r[cl.R_CRC]),
            "body_crc_ok": bool(crc_ok[i]),
            "properties": dict(props[j] or []), "tags": tags[j], "uniq_key": uniq[j], "index_keys": keys[j],
            "tags_code": int(r[cl.R_TAGS_CODE]) if status_ok else None, "msg_id": msg_id[j],
            "reput": reput, "consume_queue": reput == "dispatched" and bool(flags & cl.F_CQ),
            "indexed": reput == "dispatched" and bool(flags & cl.F_INDEX),
        }
        if not crc_ok[i]:
            item["body_crc_computed"] = int(computed_crc[i])
        if entries is not None:
            present = bool(entries["present"][i])
            item["entry_position"] = pos - ENTRY_HEADER_SIZE if present else None
            for f in ENTRY_FIELD_NAMES:
                item[f"entry_{f}"] = int(entries[f][i]) if present else None
            item["entry_ok"] = bool(entries["ok"][i])
        yield item
