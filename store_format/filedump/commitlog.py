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
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from .. import commitlog as cl
from ..config import BrokerConfig
from ..crc import body_crc_spans
from ..dispatch import gather_strings
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
from .items import KIND_COMMITLOG, Item, Selection
from .reading import DEFAULT_WINDOW, SCAN_WINDOW, first_nonzero, read_exact

__all__ = ["Unreadable", "classify_unreadable", "resolve_version_of_segment", "iter_commitlog"]


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


def _segment_base(name: str) -> int:
    return int(name) if SEGMENT_NAME_RE.match(name) else 0


def resolve_version_of_segment(fs: pafs.FileSystem, path: str, name: str, size: int, config: BrokerConfig,
                               uri: str | None = None) -> BrokerConfig:
    """The config with ``brokerVersion`` decided from this one segment when it is ``auto``
    (:func:`store_format.reput.detect_broker_version`)."""
    if config.brokerVersion != "auto":
        return config
    from ..reput import resolve_broker_version
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
    sel = Selection(start, count)
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
            blank = read_exact(read, pos, 4)
            declared = int.from_bytes(blank, "big", signed=True) if len(blank) == 4 else None
            item: Item = {
                "type": "event", "event": "blank", "position": pos, "offset": base + pos, "size": declared,
                "expected_size": size - pos,
                "detail": "blank record: end of the segment's data; the reput continues at the next segment"}
            if not_read_after is None:
                from ..reput import next_reput_offset
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
        after = first_nonzero(read, pos, size, min(window, SCAN_WINDOW)) if why.kind == "end_of_data" else pos
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
