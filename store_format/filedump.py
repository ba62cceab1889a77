"""Decode any store file of a broker, read-only, into items (plain dicts), in bounded memory.

What a file is comes from its path, size and first bytes (:func:`detect_kind`):

=================  ============================================  =============================================
kind               path                                          items
=================  ============================================  =============================================
``commitlog``      ``commitlog/<20-digit base offset>``          records, walked as the reput walks them
``consume_queue``  ``consumequeue/<topic>/<queueId>/<20 digits>``  units ``(commitlogOffset, size, tagsCode)``
``index``          ``index/<yyyyMMddHHmmssSSS>``                 entries, then the non-empty slots and chains
``checkpoint``     ``checkpoint``                                the ``StoreCheckpoint`` fields
``config``         ``config/*.json`` (and ``*.json.bak``)          one field per leaf of the JSON document
=================  ============================================  =============================================

Every iterator yields a ``{"type": "file", ...}`` header first, then items (``record``, ``unit``,
``entry``, ``slot``, ``field``, ``checkpoint``), ``event`` objects where the file says something
about itself (a blank record, the end of the data, an unreadable record), and a ``summary`` last.
``start``/``count`` select items by their number (from 0, in file order); events are yielded while
the selection is open.

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

Long module: decoders of five kinds of store files and their text and JSON forms.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from . import commitlog as cl
from .config import BrokerConfig
from .crc import body_crc_spans
from .dispatch import gather_strings
from .errors import StoreLayoutError
from .layout import (
    CHECKPOINT_SIZE,
    CQ_BLANK_SIZE,
    CQ_UNIT_DTYPE,
    CQ_UNIT_SIZE,
    END_FILE_MIN_BLANK_LENGTH,
    INDEX_ENTRY_DTYPE,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_DTYPE,
    INDEX_HEADER_SIZE,
    INDEX_SLOT_SIZE,
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
    index_file_size,
)
from .records import detail_columns, properties_map
from .store import Reader, Segment, StoreLocation, resolve
from .timeutil import iso_ms

__all__ = [
    "KINDS", "DEFAULT_WINDOW", "Item", "FileDump", "open_dump", "detect_kind", "iter_commitlog",
    "iter_consume_queue", "iter_index", "iter_checkpoint", "iter_config_json", "Checkpoint", "parse_checkpoint",
    "parse_broker_json", "classify_unreadable", "Unreadable",
]

log = logging.getLogger(__name__)

Item = dict[str, Any]

KIND_COMMITLOG = "commitlog"
KIND_CONSUME_QUEUE = "consume_queue"
KIND_INDEX = "index"
KIND_CHECKPOINT = "checkpoint"
KIND_CONFIG = "config"
KINDS = (KIND_COMMITLOG, KIND_CONSUME_QUEUE, KIND_INDEX, KIND_CHECKPOINT, KIND_CONFIG)

DEFAULT_WINDOW = 16 << 20  # measured on a 1 GiB segment: ~190 MB resident at 16 MiB, ~350 MB at 64 MiB
# bytes read past a window's end, so that the record straddling it is decoded without growing the
# buffer (records up to this size; larger ones make walk_range double its buffer once)
_WINDOW_MARGIN = 1 << 20
_SCAN_WINDOW = 4 << 20  # zero scans and table reads

_DIGITS17 = re.compile(r"^\d{17}$")

_TRANSACTION_NAMES = {TRANSACTION_NOT: "none", TRANSACTION_PREPARED: "prepared", TRANSACTION_COMMIT: "commit",
                      TRANSACTION_ROLLBACK: "rollback"}


# ---------------------------------------------------------------------------------------------
# selection of items


class _Selection:
    """Items ``start .. start + count - 1`` of a stream numbered from 0."""

    def __init__(self, start: int, count: int | None) -> None:
        if start < 0:
            raise ValueError(f"start must be >= 0, got {start}")
        if count is not None and count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        self.start = start
        self.count = count
        self.seen = 0      # items passed so far
        self.emitted = 0   # items selected so far

    @property
    def done(self) -> bool:
        return self.count is not None and self.emitted >= self.count

    @property
    def open(self) -> bool:
        """Events are shown while the selection is open: from item ``start`` on, until it is full."""
        return self.seen >= self.start and not self.done

    def take(self, n: int) -> tuple[int, int]:
        """Of the next ``n`` items, the selected ones as a range ``[lo, hi)`` of batch indices."""
        lo = min(max(self.start - self.seen, 0), n)
        hi = n if self.count is None else min(n, lo + max(self.count - self.emitted, 0))
        hi = max(hi, lo)
        self.seen += n
        self.emitted += hi - lo
        return lo, hi

    def take_one(self) -> bool:
        lo, hi = self.take(1)
        return hi > lo

    def summary(self) -> dict[str, Any]:
        return {"from": self.start, "count": self.count, "items_shown": self.emitted}


# ---------------------------------------------------------------------------------------------
# opening a file and deciding what it is


@dataclasses.dataclass
class FileDump:
    """One file to decode: where it is and what it is (see :func:`open_dump`)."""
    uri: str
    fs: pafs.FileSystem
    path: str
    kind: str
    size: int
    config: BrokerConfig
    window: int = DEFAULT_WINDOW

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def items(self, start: int = 0, count: int | None = None) -> Iterator[Item]:
        """Header, the selected items, events and a summary (see the module docstring)."""
        with Reader(self.fs, self.path) as read:
            if self.kind == KIND_COMMITLOG:
                config = resolve_version_of_segment(self.fs, self.path, self.name, self.size, self.config, self.uri)
                yield from iter_commitlog(WindowReader(read), name=self.name, size=self.size, config=config,
                                          path=self.uri,
                                          start=start, count=count, window=self.window)
            elif self.kind == KIND_CONSUME_QUEUE:
                topic, queue_id = _cq_topic_queue(self.path)
                yield from iter_consume_queue(read, name=self.name, size=self.size, config=self.config,
                                              path=self.uri, topic=topic, queue_id=queue_id, start=start,
                                              count=count, window=self.window)
            elif self.kind == KIND_INDEX:
                yield from iter_index(read, name=self.name, size=self.size, config=self.config, path=self.uri,
                                      start=start, count=count, window=self.window)
            elif self.kind == KIND_CHECKPOINT:
                yield from iter_checkpoint(bytes(read(0, min(self.size, CHECKPOINT_SIZE))), size=self.size,
                                           path=self.uri)
            else:
                data = bytes(read(0, self.size))
                yield from iter_config_json(data, path=self.uri, start=start, count=count)


def open_dump(uri: str, config: BrokerConfig, *, window: int = DEFAULT_WINDOW) -> FileDump:
    """Check that ``uri`` is a readable store file and decide what it is.

    Raises:
        StoreLayoutError: the file does not exist, is a folder, cannot be read, or is none of the
            kinds this module decodes.
    """
    fs, path = resolve(uri)
    try:
        info = fs.get_file_info(path)
    except OSError as e:
        raise StoreLayoutError(f"{uri}: cannot be read ({e})") from None
    if info.type == pafs.FileType.NotFound:
        raise StoreLayoutError(f"{uri}: no such file")
    if info.type == pafs.FileType.Directory:
        raise StoreLayoutError(f"{uri} is a folder: pass the files in it (e.g. {uri.rstrip('/')}/*)")
    size = int(info.size or 0)
    try:
        with Reader(fs, path) as read:
            head = bytes(read(0, min(size, 64))) if size else b""
    except OSError as e:
        raise StoreLayoutError(f"{uri}: cannot be read ({e})") from None
    kind = detect_kind(path, size, head, config)
    return FileDump(uri, fs, path, kind, size, config, window)


def detect_kind(path: str, size: int, head: bytes, config: BrokerConfig) -> str:
    """What a store file is, from its name, its folder, its size and its first bytes.

    Raises:
        StoreLayoutError: not a file this module decodes, or a 20-digit file that could be either a
            commitlog segment or a consume queue file.
    """
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    name = parts[-1] if parts else path
    parent = parts[-2] if len(parts) >= 2 else ""
    if name == "checkpoint":
        return KIND_CHECKPOINT
    if name.endswith(".json") or name.endswith(".json.bak"):
        return KIND_CONFIG
    if _DIGITS17.match(name):
        return KIND_INDEX
    if SEGMENT_NAME_RE.match(name):
        if len(parts) >= 4 and parts[-4] in ("batchconsumequeue", "consumequeue_ext"):
            layout = "a BatchCQ consume queue" if parts[-4] == "batchconsumequeue" else "a ConsumeQueueExt"
            raise StoreLayoutError(f"{path}: {layout} file ({parts[-4]}/, topic {parts[-3]}): this tool does not "
                                   "decode that layout (see store_format.store_layouts)")
        if parent == "commitlog":
            return KIND_COMMITLOG
        if len(parts) >= 4 and parts[-4] == "consumequeue":
            return KIND_CONSUME_QUEUE
        if size == config.mappedFileSizeCommitLog and size != config.cq_file_size:
            return KIND_COMMITLOG
        if size == config.cq_file_size and size != config.mappedFileSizeCommitLog:
            return KIND_CONSUME_QUEUE
        if len(head) >= OFF_MAGIC + 4:
            magic = int.from_bytes(head[OFF_MAGIC:OFF_MAGIC + 4], "big", signed=True)
            if magic in (MAGIC_V1, MAGIC_V2):
                return KIND_COMMITLOG
        raise StoreLayoutError(
            f"{path}: cannot tell whether this is a commitlog segment or a consume queue file; dump it from "
            "its place in the store (commitlog/NAME or consumequeue/TOPIC/QUEUE_ID/NAME) or pass --config with "
            "the store's file sizes")
    raise StoreLayoutError(
        f"{path}: not a store file this tool decodes: expected commitlog/<20 digits>, "
        "consumequeue/<topic>/<queueId>/<20 digits>, index/<17 digits>, checkpoint or config/*.json")


def _cq_topic_queue(path: str) -> tuple[str | None, int | None]:
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if len(parts) >= 4 and parts[-4] == "consumequeue":
        try:
            return parts[-3], int(parts[-2])
        except ValueError:
            return parts[-3], None
    return None, None


class WindowReader:
    """A :class:`store_format.store.Reader` without its ``view``: walks then copy one window at a time
    into reused memory instead of walking a map of the whole file, so the dump's resident memory
    stays proportional to its window (the pages of a mapped 1 GiB segment count as resident as the
    walk touches them)."""

    def __init__(self, read: Reader) -> None:
        self._read = read

    def __call__(self, pos: int, length: int):
        return self._read(pos, length)

    def read_into(self, pos: int, out) -> int:
        return self._read.read_into(pos, out)


def _read_exact(read: cl.Reader, pos: int, length: int) -> bytes:
    return bytes(read(pos, length)) if length > 0 else b""


def _first_nonzero(read: cl.Reader, start: int, end: int, window: int = _SCAN_WINDOW) -> int:
    """Position of the first non-zero byte in ``[start, end)``, or -1; reads ``window`` bytes at a time."""
    pos = start
    window = max(window, 1 << 16)
    while pos < end:
        n = min(window, end - pos)
        buf = np.frombuffer(_read_exact(read, pos, n), dtype=np.uint8)
        if len(buf) == 0:
            return -1
        nz = np.flatnonzero(buf)
        if len(nz):
            return pos + int(nz[0])
        pos += len(buf)
    return -1


# ---------------------------------------------------------------------------------------------
# commitlog segments


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
    head = _read_exact(read, pos, min(max(remaining, 0), 8))
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


def _segment_base(name: str) -> int:
    return int(name) if SEGMENT_NAME_RE.match(name) else 0


def resolve_version_of_segment(fs: pafs.FileSystem, path: str, name: str, size: int, config: BrokerConfig,
                               uri: str | None = None) -> BrokerConfig:
    """The config with ``brokerVersion`` decided from this one segment when it is ``auto``
    (:func:`store_format.reput.detect_broker_version`)."""
    if config.brokerVersion != "auto":
        return config
    from .reput import resolve_broker_version
    root = path.rsplit("/", 1)[0] if "/" in path else "."
    store = StoreLocation(uri or path, fs, root, [Segment(0, name, _segment_base(name), size, path, None)])
    return resolve_broker_version(store, config)


def iter_commitlog(read: cl.Reader, *, name: str, size: int, config: BrokerConfig, path: str | None = None,
                   start: int = 0, count: int | None = None, window: int = DEFAULT_WINDOW) -> Iterator[Item]:
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
    Yields:
        ``file`` header, ``record`` items, ``event`` items and a ``summary``.
    """
    base = _segment_base(name)
    sel = _Selection(start, count)
    is_5x = config.is_5x
    yield {"type": "file", "kind": KIND_COMMITLOG, "path": path or name, "name": name, "base_offset": base,
           "file_size": size, "size_ok": size == config.mappedFileSizeCommitLog,
           "broker_version": "5" if is_5x else "4", "window": window}
    if size != config.mappedFileSizeCommitLog:
        yield {"type": "event", "event": "file_size", "position": 0, "offset": base,
               "detail": f"the file is {size} bytes but mappedFileSizeCommitLog is {config.mappedFileSizeCommitLog}: "
                         "a broker refuses to load it (pass --config with the store's broker.conf if it differs)"}
    stats = {"records": 0, "dispatched": 0, "size_mismatch": 0, "crc_failed": 0, "physical_offset_wrong": 0,
             "not_read_by_reput": 0, "bytes": 0}
    scratch = cl.Scratch()
    state = cl.WalkState.at_slice_start(0, size)
    not_read_after: int | None = None  # position of the unreadable record the reput stops at
    end: dict[str, Any] | None = None
    while True:
        split_end = min(state.bufpos + window, size + 1)
        res = cl.walk_range(read, base, size, state, split_end, config, window=window + _WINDOW_MARGIN,
                            keep_text=True, scratch=scratch)
        n = len(res.rec)
        if n:
            rec = res.rec
            text = np.asarray(res.text, dtype=np.uint8)
            computed = body_crc_spans(text, res.text_origin, rec[:, cl.R_BODY_START], rec[:, cl.R_BODY_LEN])
            crc_ok = computed == rec[:, cl.R_CRC].astype(np.int32)
            ok = rec[:, cl.R_STATUS] == cl.Status.DISPATCHED
            stats["records"] += n
            stats["dispatched"] += int(ok.sum()) if not_read_after is None else 0
            stats["size_mismatch"] += int((~ok).sum())
            stats["crc_failed"] += int((~crc_ok).sum())
            stats["physical_offset_wrong"] += int((rec[:, cl.R_PHYS] != base + rec[:, cl.R_POS]).sum())
            stats["bytes"] += int(rec[:, cl.R_STRUCT].sum())
            if not_read_after is not None:
                stats["not_read_by_reput"] += n
            first_no = sel.seen
            lo, hi = sel.take(n)
            if hi > lo:
                yield from _record_items(res, lo, hi, first_no, name, base, computed, crc_ok, not_read_after)
            if sel.done:
                end = {"event": "stopped", "detail": f"--count {count} reached"}
                break
        state = res.state
        stop = res.stop
        if stop == cl.Stop.SPLIT_END:
            continue
        pos = state.bufpos
        if stop == cl.Stop.BLANK:
            blank = _read_exact(read, pos, 4)
            declared = int.from_bytes(blank, "big", signed=True) if len(blank) == 4 else None
            item: Item = {
                "type": "event", "event": "blank", "position": pos, "offset": base + pos, "size": declared,
                "expected_size": size - pos,
                "detail": "blank record: end of the segment's data; the reput continues at the next segment"}
            if not_read_after is None:
                from .reput import next_reput_offset
                seg = Segment(0, name, base, size, path or name, None)
                nxt = next_reput_offset(seg, state, stop, size, config.is_master)
                item["reput_next_offset"] = nxt
                if nxt is not None and nxt > base + size:
                    item["detail"] += (f"; totalSize mismatches moved the reput's offset past the segment end: it "
                                       f"continues at {nxt}, skipping the segment at {base + size}")
            if declared is not None and declared < END_FILE_MIN_BLANK_LENGTH:
                item["detail"] += f"; its size {declared} is below the minimum {END_FILE_MIN_BLANK_LENGTH}"
            if sel.open:
                yield item
            end = {"event": "blank", "position": pos}
            break
        if stop == cl.Stop.SLICE_END or pos >= size:
            if sel.open:
                yield {"type": "event", "event": "segment_end", "position": pos, "offset": base + pos,
                       "detail": "the records fill the segment to its last byte (no blank record)"}
            end = {"event": "segment_end", "position": pos}
            break
        # an unreadable record, a bad magic code, or zeros
        why = classify_unreadable(read, size, pos, accept_v2=bool(getattr(config, "accepts_v2_records", True)))
        after = _first_nonzero(read, pos, size, min(window, _SCAN_WINDOW)) if why.kind == "end_of_data" else pos
        if why.kind == "end_of_data" and after < 0:
            if sel.open:
                yield {"type": "event", "event": "end_of_data", "position": pos, "offset": base + pos,
                       "detail": "end of data: the rest of the segment is zero"}
            end = {"event": "end_of_data", "position": pos}
            break
        reput_note = ("a master's reput skips the rest of the segment" if config.is_master
                      else "a slave's reput stops here for good")
        item = {"type": "event", "event": why.kind, "position": pos, "offset": base + pos, **_prefixed(why),
                "detail": why.detail + ("; non-zero bytes follow at position " + str(after)
                                        if why.kind == "end_of_data" else "")
                + f"; {reput_note} (CommitLog.checkMessageAndReturnSize returns -1)"}
        if sel.open:
            yield item
        if not_read_after is None:
            not_read_after = pos
        found = cl.resync(read, base, max(pos + 1, after - OFF_MAGIC if after > pos else pos + 1), size, size)
        if found < 0:
            if sel.open:
                yield {"type": "event", "event": "no_more_records", "position": pos, "offset": base + pos,
                       "detail": "no record start found after it (a known magic code with its own physicalOffset)"}
            end = {"event": why.kind, "position": pos}
            break
        if sel.open:
            yield {"type": "event", "event": "resync", "position": found, "offset": base + found,
                   "skipped_bytes": found - pos,
                   "detail": f"next record found by content at position {found}; the records from here on are "
                             "not read by the broker's reput (\"reput\": \"not_read\")"}
        state = cl.WalkState.at_slice_start(found, size)
    yield {"type": "summary", "kind": KIND_COMMITLOG, "name": name, **stats, "end": end,
           "reput_stops_at": not_read_after, **sel.summary()}


def _prefixed(why: Unreadable) -> dict[str, Any]:
    d = why.as_dict()
    return {"total_size": d["total_size"], "magic": d["magic"]}


def _record_items(res: cl.WalkResult, lo: int, hi: int, first_no: int, segment: str, base: int,
                  computed_crc: np.ndarray, crc_ok: np.ndarray, not_read_after: int | None) -> Iterator[Item]:
    """Records ``lo .. hi - 1`` of one walk as dicts (the fields of :func:`store_format.records.detail_columns`)."""
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
        if not_read_after is not None:
            reput = "not_read"
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
        yield item


# ---------------------------------------------------------------------------------------------
# consume queue files


def iter_consume_queue(read: cl.Reader, *, name: str, size: int, config: BrokerConfig, path: str | None = None,
                       topic: str | None = None, queue_id: int | None = None, start: int = 0,
                       count: int | None = None, window: int = DEFAULT_WINDOW) -> Iterator[Item]:
    """Units of one consume queue file up to its first all-zero unit.

    A unit ``(0, 0x7FFFFFFF, 0)`` is a blank written by ``ConsumeQueue.fillPreBlank`` before a queue's
    first real unit (``blank``); a unit with ``commitlogOffset < 0`` or ``size <= 0`` is where
    ``ConsumeQueue.recover`` stops reading (``valid`` false).  The file name is the byte offset of the
    file in the queue's logical space, so unit ``i`` has queue offset ``name / 20 + i``.
    """
    file_start = int(name) if SEGMENT_NAME_RE.match(name) else 0
    first_offset = file_start // CQ_UNIT_SIZE
    sel = _Selection(start, count)
    yield {"type": "file", "kind": KIND_CONSUME_QUEUE, "path": path or name, "name": name, "topic": topic,
           "queue_id": queue_id, "file_start": file_start, "first_queue_offset": first_offset, "file_size": size,
           "units_capacity": size // CQ_UNIT_SIZE, "size_ok": size == config.cq_file_size}
    if file_start % CQ_UNIT_SIZE:
        yield {"type": "event", "event": "file_name", "detail": f"the name {name} is not a multiple of "
               f"{CQ_UNIT_SIZE}: a broker names consume queue files by their first unit's byte offset"}
    stats = {"units": 0, "blank_units": 0, "invalid_units": 0}
    end: dict[str, Any] | None = None
    step = max(window // CQ_UNIT_SIZE, 1) * CQ_UNIT_SIZE
    pos = 0
    whole = size - size % CQ_UNIT_SIZE
    while pos < whole and end is None:
        raw = _read_exact(read, pos, min(step, whole - pos))
        units = np.frombuffer(raw[:len(raw) - len(raw) % CQ_UNIT_SIZE], dtype=CQ_UNIT_DTYPE)
        if len(units) == 0:
            break
        off = units["commitlogOffset"].astype(np.int64)
        usize = units["size"].astype(np.int64)
        tags = units["tagsCode"].astype(np.int64)
        zero = (off == 0) & (usize == 0) & (tags == 0)
        n = int(np.argmax(zero)) if zero.any() else len(units)
        first_index = pos // CQ_UNIT_SIZE
        blank = (off[:n] == 0) & (usize[:n] == CQ_BLANK_SIZE) & (tags[:n] == 0)
        valid = (off[:n] >= 0) & (usize[:n] > 0)
        stats["units"] += n
        stats["blank_units"] += int(blank.sum())
        stats["invalid_units"] += int((~valid).sum())
        lo, hi = sel.take(n)
        for i in range(lo, hi):
            k = first_index + i
            yield {"type": "unit", "no": k, "index": k, "position": k * CQ_UNIT_SIZE, "queue_offset": first_offset + k,
                   "commitlog_offset": int(off[i]), "size": int(usize[i]), "tags_code": int(tags[i]),
                   "blank": bool(blank[i]), "valid": bool(valid[i])}
        if sel.done:
            end = {"event": "stopped", "detail": f"--count {count} reached"}
            break
        if n < len(units):
            k = first_index + n
            after = _first_nonzero(read, k * CQ_UNIT_SIZE, size, min(window, _SCAN_WINDOW))
            item: Item = {"type": "event", "event": "end_of_data", "unit": k, "position": k * CQ_UNIT_SIZE,
                    "queue_offset": first_offset + k,
                    "detail": f"unit {k} is all zero: the queue's data in this file ends here"}
            if after >= 0:
                item["detail"] += f"; non-zero bytes follow at position {after}"
                item["non_zero_after"] = after
            else:
                item["detail"] += " (the rest of the file is zero)"
            if sel.open:
                yield item
            end = {"event": "end_of_data", "unit": k, "position": k * CQ_UNIT_SIZE}
        pos += len(units) * CQ_UNIT_SIZE
    if end is None:
        end = {"event": "file_end", "unit": whole // CQ_UNIT_SIZE, "position": whole}
        if size % CQ_UNIT_SIZE and sel.open:
            yield {"type": "event", "event": "partial_unit", "position": whole,
                   "detail": f"the file ends with {size % CQ_UNIT_SIZE} bytes that are not a whole unit"}
    yield {"type": "summary", "kind": KIND_CONSUME_QUEUE, "name": name, **stats, "end": end, **sel.summary()}


# ---------------------------------------------------------------------------------------------
# index files


def _index_layout(size: int, config: BrokerConfig) -> tuple[int, int, str]:
    """(maxHashSlotNum, maxIndexNum, where they come from) for an index file of ``size`` bytes."""
    if size == index_file_size(config.maxHashSlotNum, config.maxIndexNum):
        return config.maxHashSlotNum, config.maxIndexNum, "config"
    rest = size - INDEX_HEADER_SIZE
    # the broker's default keeps maxIndexNum = 4 * maxHashSlotNum: 4 slot bytes + 4 * 20 entry bytes per slot
    per_slot = INDEX_SLOT_SIZE + 4 * INDEX_ENTRY_SIZE
    if rest > 0 and rest % per_slot == 0:
        slots = rest // per_slot
        return slots, 4 * slots, "assumed maxIndexNum = 4 x maxHashSlotNum (the defaults' ratio)"
    raise StoreLayoutError(
        f"an index file of {size} bytes does not match maxHashSlotNum={config.maxHashSlotNum} and "
        f"maxIndexNum={config.maxIndexNum} (40 + 4 x slots + 20 x entries = "
        f"{index_file_size(config.maxHashSlotNum, config.maxIndexNum)} bytes): pass --config with the store's "
        "broker.conf")


def _java_rem(a: np.ndarray, b: int) -> np.ndarray:
    """Java's ``%`` (the sign of the dividend)."""
    return np.fmod(a, b)


def iter_index(read: cl.Reader, *, name: str, size: int, config: BrokerConfig, path: str | None = None,
               start: int = 0, count: int | None = None, window: int = DEFAULT_WINDOW) -> Iterator[Item]:
    """Header, entries and non-empty slots (with their chains) of one index file.

    Layout [IndexHeader, IndexFile]: a 40-byte header, ``maxHashSlotNum`` 4-byte slots (number of the
    latest entry whose ``keyHash % maxHashSlotNum`` is the slot), then entries of 20 bytes numbered
    from 1 (entry 0 is never used): ``keyHash · commitlogOffset · timeDiff · prevIndex``.  The entries on
    disk are ``1 .. indexCount - 1``.  A slot's chain follows ``prevIndex`` from the slot's entry down
    to 0, as ``IndexFile.selectPhyOffset`` does; an entry of a chain is ``chain_ok`` when its
    ``prevIndex`` is smaller than its own number and belongs to the same slot.

    ``start``/``count`` page the entries (item 0 is entry 1) and, after them, the non-empty slots alike.
    Memory: the slot table is read ``window`` bytes at a time; the ``prevIndex`` column (4 bytes per
    entry) and the non-empty slots are held to follow the chains.
    """
    slots_n, entries_max, layout_from = _index_layout(size, config)
    header = np.frombuffer(_read_exact(read, 0, INDEX_HEADER_SIZE), dtype=INDEX_HEADER_DTYPE)[0]
    h = {k: int(header[k]) for k in INDEX_HEADER_DTYPE.names}  # type: ignore[union-attr]
    index_count = h["indexCount"]
    entries_n = min(max(index_count - 1, 0), entries_max - 1)
    begin_ts = h["beginTimestamp"]
    yield {"type": "file", "kind": KIND_INDEX, "path": path or name, "name": name, "file_size": size,
           "max_hash_slot_num": slots_n, "max_index_num": entries_max, "layout_from": layout_from,
           "begin_timestamp": begin_ts, "begin_time": iso_ms(begin_ts), "end_timestamp": h["endTimestamp"],
           "end_time": iso_ms(h["endTimestamp"]), "begin_phy_offset": h["beginPhyOffset"],
           "end_phy_offset": h["endPhyOffset"], "hash_slot_count": h["hashSlotCount"], "index_count": index_count,
           "entries": entries_n}
    if index_count - 1 > entries_max - 1:
        yield {"type": "event", "event": "index_count", "detail": f"indexCount {index_count} is above maxIndexNum "
               f"{entries_max}: only the {entries_max - 1} entries the file can hold are read"}
    slots_at = INDEX_HEADER_SIZE
    entries_at = INDEX_HEADER_SIZE + slots_n * INDEX_SLOT_SIZE
    # non-empty slots, read a window at a time
    slot_no: list[np.ndarray] = []
    slot_head: list[np.ndarray] = []
    step = max(window // INDEX_SLOT_SIZE, 1)
    for first in range(0, slots_n, step):
        n = min(step, slots_n - first)
        vals = np.frombuffer(_read_exact(read, slots_at + first * INDEX_SLOT_SIZE, n * INDEX_SLOT_SIZE), dtype=">i4")
        nz = np.flatnonzero(vals)
        slot_no.append(nz.astype(np.int64) + first)
        slot_head.append(vals[nz].astype(np.int64))
    slots = np.concatenate(slot_no) if slot_no else np.zeros(0, np.int64)
    heads = np.concatenate(slot_head) if slot_head else np.zeros(0, np.int64)
    # entries, a window at a time; keep prevIndex and keyHash's slot for the chains
    prev = np.zeros(entries_n + 1, dtype=np.int32)
    slot_of = np.full(entries_n + 1, -1, dtype=np.int64)
    is_head = np.zeros(entries_n + 1, dtype=bool)
    valid_heads = heads[(heads >= 1) & (heads <= entries_n)]
    is_head[valid_heads] = True
    sel = _Selection(start, count)
    stats = {"entries": entries_n, "non_empty_slots": int(len(slots)), "chain_errors": 0, "unreachable_entries": 0,
             "slots_out_of_range": int(((heads < 1) | (heads > entries_n)).sum())}
    estep = max(window // INDEX_ENTRY_SIZE, 1)
    for first in range(1, entries_n + 1, estep):
        n = min(estep, entries_n + 1 - first)
        e = np.frombuffer(_read_exact(read, entries_at + first * INDEX_ENTRY_SIZE, n * INDEX_ENTRY_SIZE),
                          dtype=INDEX_ENTRY_DTYPE)
        n = len(e)
        if n == 0:
            break
        key_hash = e["keyHash"].astype(np.int64)
        p = e["prevIndex"].astype(np.int64)
        prev[first:first + n] = p
        slot_of[first:first + n] = _java_rem(key_hash, slots_n)
        lo, hi = sel.take(n)
        for i in range(lo, hi):
            no = first + i
            pi = int(p[i])
            ok = 0 <= pi < no and (pi == 0 or slot_of[pi] == slot_of[no])
            td = int(e["timeDiff"][i])
            yield {"type": "entry", "no": no - 1, "entry": no, "key_hash": int(key_hash[i]), "slot": int(slot_of[no]),
                   "commitlog_offset": int(e["commitlogOffset"][i]), "time_diff": td,
                   "time": iso_ms(begin_ts + td * 1000) if begin_ts > 0 else None, "prev_index": pi,
                   "slot_head": bool(is_head[no]), "chain_ok": ok}
    # chains: every entry but a chain's head is some entry's prevIndex
    refs = prev[1:][(prev[1:] > 0) & (prev[1:] <= entries_n)]
    reached = is_head.copy()
    reached[refs] = True
    stats["unreachable_entries"] = int((~reached[1:]).sum())
    slot_sel = _Selection(start, count)
    lo, hi = slot_sel.take(len(slots))
    chain_errors = 0
    for k in range(len(slots)):
        s, head = int(slots[k]), int(heads[k])
        chain, ok = _follow_chain(prev, slot_of, s, head, entries_n)
        chain_errors += 0 if ok else 1
        if lo <= k < hi:
            yield {"type": "slot", "no": k, "slot": s, "entry": head, "chain": chain, "chain_length": len(chain),
                   "chain_ok": ok}
    stats["chain_errors"] = chain_errors
    if stats["non_empty_slots"] != h["hashSlotCount"] and entries_n:
        yield {"type": "event", "event": "hash_slot_count",
               "detail": f"hashSlotCount {h['hashSlotCount']} differs from the {stats['non_empty_slots']} non-empty "
                         "slots (a broker since 4.7.1 counts the puts that found their slot empty)"}
    yield {"type": "summary", "kind": KIND_INDEX, "name": name, **stats, **sel.summary(),
           "slots_shown": slot_sel.emitted}


def _follow_chain(prev: np.ndarray, slot_of: np.ndarray, slot: int, head: int, n: int) -> tuple[list[int], bool]:
    """Entries from ``head`` along ``prevIndex`` (``IndexFile.selectPhyOffset``'s walk); ok when every
    link goes to a smaller entry of the same slot and the chain ends at 0."""
    chain: list[int] = []
    cur = head
    ok = True
    while cur != 0:
        if cur < 0 or cur > n:
            return chain, False
        chain.append(cur)
        if slot_of[cur] != slot:
            ok = False
        nxt = int(prev[cur])
        if nxt >= cur or nxt < 0:
            return chain, False
        cur = nxt
    return chain, ok


# ---------------------------------------------------------------------------------------------
# checkpoint


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """The ``checkpoint`` file [StoreCheckpoint]: longs at 0 physicMsgTimestamp, 8 logicsMsgTimestamp,
    16 indexMsgTimestamp; 5.x adds 24 masterFlushedOffset and 32 confirmPhyOffset, 5.5.1 40
    logicsPhysicalOffset.  A missing file reads as zeros (``StoreCheckpoint`` maps a fresh zero page)."""
    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0
    master_flushed_offset: int = 0
    confirm_phy_offset: int = 0
    logics_physical_offset: int = 0

    @property
    def min_timestamp(self) -> int:
        """``StoreCheckpoint.getMinTimestamp``: min(physic, logics) - 3 s, at least 0."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)

    @property
    def min_timestamp_index(self) -> int:
        """``StoreCheckpoint.getMinTimestampIndex``: min(getMinTimestamp(), indexMsgTimestamp)."""
        return min(self.min_timestamp, self.index_msg_timestamp)


_CHECKPOINT_FIELDS = ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp", "master_flushed_offset",
                      "confirm_phy_offset", "logics_physical_offset")


def parse_checkpoint(data: bytes | None) -> Checkpoint:
    """A :class:`Checkpoint` from the file's bytes (None or short: the missing longs are 0)."""
    raw = (data or b"")[:8 * len(_CHECKPOINT_FIELDS)].ljust(8 * len(_CHECKPOINT_FIELDS), b"\0")
    values = [int.from_bytes(raw[8 * i:8 * i + 8], "big", signed=True) for i in range(len(_CHECKPOINT_FIELDS))]
    return Checkpoint(*values)


def iter_checkpoint(data: bytes, *, size: int, path: str = "checkpoint") -> Iterator[Item]:
    """The checkpoint's fields, with the minimum timestamps abnormal recovery compares with."""
    cp = parse_checkpoint(data)
    yield {"type": "file", "kind": KIND_CHECKPOINT, "path": path, "name": "checkpoint", "file_size": size,
           "size_ok": size == CHECKPOINT_SIZE}
    item: Item = {"type": "checkpoint", "no": 0}
    for f in ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp"):
        v = getattr(cp, f)
        item[f] = v
        item[f.replace("_timestamp", "_time")] = iso_ms(v) if v > 0 else None
    item["master_flushed_offset"] = cp.master_flushed_offset
    item["confirm_phy_offset"] = cp.confirm_phy_offset
    item["min_timestamp"] = cp.min_timestamp
    item["min_time"] = iso_ms(cp.min_timestamp) if cp.min_timestamp > 0 else None
    item["min_timestamp_index"] = cp.min_timestamp_index
    item["note"] = ("masterFlushedOffset and confirmPhyOffset are written by 5.x brokers only; abnormal recovery "
                    "starts at the last segment whose first record's store time <= min_timestamp "
                    "(min_timestamp_index with messageIndexSafe=true)")
    yield item
    yield {"type": "summary", "kind": KIND_CHECKPOINT, "name": "checkpoint"}


# ---------------------------------------------------------------------------------------------
# config/*.json


def _quote_bare_keys(text: str) -> str:
    """fastjson writes integer map keys without quotes (``{0:12,1:3}``): quote keys that are not
    strings, outside string literals and only in key position."""
    out: list[str] = []
    stack: list[str] = []
    expect_key = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
            expect_key = False
            continue
        if c in "{[":
            stack.append(c)
            expect_key = c == "{"
        elif c in "}]":
            if stack:
                stack.pop()
            expect_key = False
        elif c == ",":
            expect_key = bool(stack) and stack[-1] == "{"
        elif expect_key and not c.isspace():
            j = text.find(":", i)
            if j < 0:
                break
            out.append(json.dumps(text[i:j].strip()))
            i = j
            expect_key = False
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_broker_json(text: str) -> Any:
    """A broker config file (``consumerOffset.json``, ``delayOffset.json``, ``topics.json``, ...) as Python
    values; accepts fastjson's unquoted integer keys.

    Raises:
        StoreLayoutError: not JSON even with the keys quoted.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return json.loads(_quote_bare_keys(text))
    except json.JSONDecodeError as e:
        raise StoreLayoutError(f"not a JSON document: {e}") from None


def _flatten(value: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from _flatten(v, path + [str(k)])
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            yield from _flatten(v, path + [str(i)])
    else:
        yield path, value


def iter_config_json(data: bytes, *, path: str = "config.json", start: int = 0, count: int | None = None
                     ) -> Iterator[Item]:
    """One ``field`` item per leaf of a broker config JSON file, with its key path."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise StoreLayoutError(f"{path}: not UTF-8 text ({e})") from None
    try:
        doc = parse_broker_json(text)
    except StoreLayoutError as e:
        raise StoreLayoutError(f"{path}: {e}") from None
    name = path.rstrip("/").rsplit("/", 1)[-1]
    top = sorted(doc) if isinstance(doc, dict) else []
    yield {"type": "file", "kind": KIND_CONFIG, "path": path, "name": name, "file_size": len(data),
           "top_level_keys": top, "data_version": doc.get("dataVersion") if isinstance(doc, dict) else None}
    sel = _Selection(start, count)
    fields = 0
    for key_path, value in _flatten(doc, []):
        fields += 1
        if sel.take_one():
            yield {"type": "field", "no": fields - 1, "key": ".".join(key_path), "path": key_path,
                   "value": value}
        if sel.done:
            break
    yield {"type": "summary", "kind": KIND_CONFIG, "name": name, "fields_read": fields, **sel.summary()}
