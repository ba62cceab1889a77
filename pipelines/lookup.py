"""Find messages by key, by client msgId (``UNIQ_KEY``) or by offset msgId.

``python -m pipelines lookup --tables PATH (--topic T --key K | --msg-id ID [--topic T] | --offset-msg-id ID)
[--from TIME --to TIME] [--body] [--json]`` reads the Delta tables as the latest complete run published
them (:mod:`pipelines.tables.runs`): ``message_keys`` is partitioned by segment and ``key_bucket =
key_hash % B`` (the table property ``rocketmq.keyBuckets``), so a key lookup opens at most one bucket
file per segment (fewer with a time range, or where the file's key_hash statistics exclude it); the
messages found are read from the ``messages`` files whose commitlog offset statistics cover them.
The pruning is pyarrow's: delta-rs gives each file of the table version a dataset fragment carrying
its partition values and min/max statistics, and a filter skips the fragments it cannot match.  Keys
are compared exactly, not by hash.

``python -m pipelines lookup --index DIR --store STORE [--config broker.conf] --topic T --key K`` (settings:
``--config``, else ``STORE/broker.conf`` when there is one, else the broker's defaults) reads a
store's index files as the broker does (``IndexService.queryOffset`` → ``IndexFile.selectPhyOffset``:
newest file first, slot chain, time range) and then reads each offset's record from the commitlog to
keep only records whose topic and keys really match: the broker compares hashes only, so ``Aa`` and
``BB`` (equal ``String.hashCode``) return each other's messages; here they do not.

``--body`` prints bodies: from the table when published with ``--with-body``, else from the commitlog.

Every lookup has a batched form (``lookup_keys``, ``lookup_msg_ids``, ``lookup_offset_msg_ids``,
``lookup_index_keys``: many questions, one read) behind the single one the CLI calls.

The three lookups through the tables and the broker's walk over the index files share the record
reading and the output.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import mmap
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.errors import StoreError, StoreLayoutError
from store_format.indexfile import read_header, select_phy_offsets_of_hashes
from store_format.javahash import index_key, index_key_hashes
from store_format.layout import index_file_size
from store_format.msgid import decode_offset_msg_id
from store_format.records import detail_columns, lean_columns
from store_format.store import Segment, StoreLocation, load_config_for, open_store, resolve
from store_format.timeutil import ms_to_datetime

from .delta import arrow_dataset
from .file_pruning import Probes, add_actions, file_path, may_match, partition_expression
from .tables.runs import Snapshot, run_config, snapshot

__all__ = ["LookupResult", "lookup_key", "lookup_keys", "lookup_msg_id", "lookup_msg_ids", "lookup_offset_msg_id",
           "lookup_offset_msg_ids", "lookup_index", "lookup_index_keys", "read_records", "render", "json_default"]

OUTPUT_COLUMNS = ["commitlog_offset", "segment", "topic", "queue_id", "queue_offset", "store_timestamp", "tags",
                  "keys", "uniq_key", "msg_id", "size", "body_crc_ok", "dispatch"]
MAX_MSGS_NUM_BATCH = 64  # MessageStoreConfig.maxMsgsNumBatch: the broker's cap per query


@dataclasses.dataclass
class LookupResult:
    """Messages found, and what it took: files opened per table against the files the table has."""
    rows: list[dict]
    files_read: dict[str, int] = dataclasses.field(default_factory=dict)
    files_total: dict[str, int] = dataclasses.field(default_factory=dict)
    discarded: list[int] = dataclasses.field(default_factory=list)  # --index: offsets whose record did not match
    source: str = "tables"
    cut: int | None = None  # the number of matches before --max cut them


def _scan(snap: Snapshot, name: str, probes: Probes, where: ds.Expression) -> tuple[pa.Table | None, int, int]:
    """Rows of table ``name`` (at the snapshot's version) that ``where`` selects, read from the files
    :func:`~pipelines.file_pruning.may_match` keeps for ``probes``; the files opened and the files
    of the version.  Each file read is a fragment carrying its partition values only (pyarrow fills
    the partition columns from them); no statistic takes part in the read itself."""
    dt = snap.open(name)
    if dt is None:
        return None, 0, 0
    actions = add_actions(dt)
    total = actions.num_rows
    if not total or not probes.values.num_rows:
        return None, 0, total
    base = arrow_dataset(snap.tables, name, dt)
    parts = list(dt.metadata().partition_columns)
    values = probes.values.cast(pa.schema([base.schema.field(c) for c in probes.values.column_names]))
    keep = np.flatnonzero(may_match(actions, Probes(values, probes.ranges), set(parts)))
    if not len(keep):
        return None, 0, total
    fragments = [base.format.make_fragment(file_path(actions, int(i)), base.filesystem,
                                           partition_expression=partition_expression(actions, int(i), base.schema,
                                                                                     parts))
                 for i in keep]
    chosen = ds.FileSystemDataset(fragments, base.schema, base.format, base.filesystem)
    rows = chosen.to_table(filter=where)
    return (rows if rows.num_rows else None), len(fragments), total


def _time_range(begin: int | None, end: int | None) -> tuple[tuple, ds.Expression]:
    """``store_timestamp`` within [begin, end] (ms): as probe ranges and as an expression."""
    from .tables.schema import TS
    t = ds.field("store_timestamp")
    ranges: list[tuple] = []
    cond = ds.scalar(True)
    if begin is not None:
        ranges.append(("store_timestamp", ">=", ms_to_datetime(begin)))
        cond = cond & (t >= pa.scalar(begin * 1000, TS))
    if end is not None:
        ranges.append(("store_timestamp", "<=", ms_to_datetime(end)))
        cond = cond & (t <= pa.scalar(end * 1000, TS))
    return tuple(ranges), cond


def _key_candidates(snap: Snapshot, pairs: Sequence[tuple[str, str]], kind: str | None, begin: int | None,
                    end: int | None) -> tuple[pa.Table | None, int, int]:
    """Index entries of the exact ``(topic, key)`` pairs: only the files of their buckets whose
    key_hash, topic, key (and store_timestamp) statistics may hold one are opened."""
    from .tables.schema import table_key_buckets
    dt = snap.open("message_keys")
    n_buckets = table_key_buckets(dt) if dt is not None else 1
    ranges, in_time = _time_range(begin, end)
    wanted = sorted(set(pairs))
    hashes = index_key_hashes([index_key(t, k) for t, k in wanted]).tolist()
    probes = pa.table({"key_bucket": pa.array([h % n_buckets for h in hashes], pa.int64()),
                       "key_hash": pa.array(hashes, pa.int64()),
                       "topic": pa.array([t for t, _ in wanted], pa.string()),
                       "key": pa.array([k for _, k in wanted], pa.string())})
    where = ds.field("key_hash").isin(pa.array(sorted(set(hashes)), pa.int32())) & in_time
    # a tag entry (5.4+: topic#T#tags) answers no key lookup, even when its hash is equal
    where = where & ((ds.field("kind") == kind) if kind is not None else (ds.field("kind") != "tag"))
    rows, n_read, n_total = _scan(snap, "message_keys", Probes(probes, ranges), where)
    if rows is None:
        return None, n_read, n_total
    # the exact key: equal hashes are not enough
    exact = set(wanted)
    mask = [(t, k) in exact for t, k in zip(rows["topic"].to_pylist(), rows["key"].to_pylist())]
    rows = rows.filter(pa.array(mask, pa.bool_()))
    return (rows if rows.num_rows else None), n_read, n_total


def _messages_at(snap: Snapshot, offsets_by_segment: dict[str, set[int]]) -> tuple[pa.Table | None, int, int]:
    """Rows of ``messages`` at the given commitlog offsets: only files whose offset range covers one."""
    segs, offs = [], []
    for seg, seg_offsets in sorted(offsets_by_segment.items()):
        for off in sorted(seg_offsets):
            segs.append(seg)
            offs.append(off)
    probes = pa.table({"segment": pa.array(segs, pa.string()), "commitlog_offset": pa.array(offs, pa.int64())})
    where = ds.field("segment").isin(sorted(offsets_by_segment)) & \
        ds.field("commitlog_offset").isin(pa.array(sorted(set(offs)), pa.int64()))
    return _scan(snap, "messages", Probes(probes), where)


def _answers(snap: Snapshot, keys: pa.Table | None, askers: dict, files_read: dict, files_total: dict, body: bool,
             store: str | None, config: BrokerConfig | None) -> dict:
    """One :class:`LookupResult` per asker: the messages at the offsets of its ``keys`` rows.
    ``askers``: asker -> the ``(topic, key)`` pairs it asked for."""
    offsets_of: dict[tuple[str, str], set[int]] = {}
    by_seg: dict[str, set[int]] = {}
    if keys is not None:
        for t, k, seg, off in zip(*(keys[c].to_pylist() for c in ("topic", "key", "segment", "commitlog_offset"))):
            offsets_of.setdefault((t, k), set()).add(off)
            by_seg.setdefault(seg, set()).add(off)
    msgs, n_read, n_total = _messages_at(snap, by_seg) if by_seg else (None, 0, 0)
    if by_seg:
        files_read["messages"], files_total["messages"] = n_read, n_total
    at = {r["commitlog_offset"]: r for r in _rows(snap, msgs, body, store, config)}
    out = {}
    for asker, pairs in askers.items():
        offs = set().union(*(offsets_of[p] for p in pairs if p in offsets_of))
        out[asker] = LookupResult([at[o] for o in sorted(offs) if o in at], files_read, files_total)
    return out


def _rows(snap: Snapshot, msgs: pa.Table | None, body: bool, store: str | None,
          config: BrokerConfig | None) -> list[dict]:
    """Output rows of ``messages`` rows, by commitlog offset; bodies from the table or the commitlog."""
    if msgs is None or not msgs.num_rows:
        return []
    msgs = msgs.sort_by("commitlog_offset")
    rows = msgs.select([c for c in OUTPUT_COLUMNS + ["body"] if c in msgs.column_names]).to_pylist()
    if body:
        missing = [r["commitlog_offset"] for r in rows if r.get("body") is None]
        if missing:
            st, cfg = _store_for(snap, store, config)
            got = {r["commitlog_offset"]: r["body"] for r in read_records(st, cfg, missing, with_body=True)}
            for r in rows:
                if r.get("body") is None:
                    r["body"] = got.get(r["commitlog_offset"])
    else:
        for r in rows:
            r.pop("body", None)
    return rows


def _store_for(snap: Snapshot, store: str | None, config: BrokerConfig | None) -> tuple[StoreLocation, BrokerConfig]:
    last = snap.run
    if config is None:
        config = run_config(last)
    uri = store or (last["store"] if last else None)
    if uri is None:
        raise StoreLayoutError("no store to read bodies from: pass --store")
    return open_store(uri, config), config


def lookup_keys(tables: str, pairs: Sequence[tuple[str, str]], *, begin_ms: int | None = None,
                end_ms: int | None = None, body: bool = False, store: str | None = None,
                config: BrokerConfig | None = None) -> dict[tuple[str, str], LookupResult]:
    """For each ``(topic, key)``: the messages of ``topic`` with ``key`` among their KEYS (or as
    UNIQ_KEY), from the tables, all pairs in one read.  The files counted are those of the whole read."""
    snap = snapshot(tables)
    wanted = sorted(set(pairs))
    keys, n_read, n_total = _key_candidates(snap, wanted, None, begin_ms, end_ms)
    return _answers(snap, keys, {p: [p] for p in wanted}, {"message_keys": n_read}, {"message_keys": n_total},
                    body, store, config)


def lookup_key(tables: str, topic: str, key: str, *, begin_ms: int | None = None, end_ms: int | None = None,
               body: bool = False, store: str | None = None, config: BrokerConfig | None = None) -> LookupResult:
    """Messages of ``topic`` with ``key`` among their KEYS (or as UNIQ_KEY), from the tables."""
    return lookup_keys(tables, [(topic, key)], begin_ms=begin_ms, end_ms=end_ms, body=body, store=store,
                       config=config)[(topic, key)]


def lookup_msg_ids(tables: str, msg_ids: Sequence[str], *, topic: str | None = None, begin_ms: int | None = None,
                   end_ms: int | None = None, body: bool = False, store: str | None = None,
                   config: BrokerConfig | None = None) -> dict[str, LookupResult]:
    """For each msgId: the messages whose UNIQ_KEY (the client's msgId) it is; in every topic the
    tables know when no topic is given (one bucket per topic), all in one read."""
    snap = snapshot(tables)
    if topic:
        topics = [topic]
    else:
        segs = snap.read_arrow("segments", ["topics", "status"])
        topics = sorted({t for ts, s in zip(segs["topics"].to_pylist(), segs["status"].to_pylist())
                         if s == "live" for t in (ts or [])}) if segs is not None else []
    ids = sorted(set(msg_ids))
    askers = {i: [(t, i) for t in topics] for i in ids}
    pairs = [p for ps in askers.values() for p in ps]
    keys, n_read, n_total = _key_candidates(snap, pairs, "uniq_key", begin_ms, end_ms)
    return _answers(snap, keys, askers, {"message_keys": n_read}, {"message_keys": n_total}, body, store, config)


def lookup_msg_id(tables: str, msg_id: str, *, topic: str | None = None, begin_ms: int | None = None,
                  end_ms: int | None = None, body: bool = False, store: str | None = None,
                  config: BrokerConfig | None = None) -> LookupResult:
    """Messages whose UNIQ_KEY (the client's msgId) is ``msg_id``; every topic the tables know
    when no topic is given (one bucket per topic)."""
    return lookup_msg_ids(tables, [msg_id], topic=topic, begin_ms=begin_ms, end_ms=end_ms, body=body, store=store,
                          config=config)[msg_id]


def lookup_offset_msg_ids(tables: str, offset_msg_ids: Sequence[str], *, body: bool = False,
                          store: str | None = None, config: BrokerConfig | None = None) -> dict[str, LookupResult]:
    """For each offset msgId: the message it names (``MessageDecoder.decodeMessageId``: store host +
    offset), all in one read."""
    wanted: dict[str, int] = {}
    for given in offset_msg_ids:
        try:
            _host, _port, offset = decode_offset_msg_id(given.strip().upper())
        except ValueError as e:
            raise StoreError(f"--offset-msg-id: {e}") from None
        wanted[given] = offset
    snap = snapshot(tables)
    segs = snap.read_arrow("segments", ["segment", "base_offset", "file_size", "status"])
    live = []
    if segs is not None:
        live = sorted((base, size, name) for name, base, size, status in
                      zip(*(segs[c].to_pylist() for c in ("segment", "base_offset", "file_size", "status")))
                      if status == "live")
    seg_of: dict[str, str] = {}
    for given, offset in wanted.items():
        for base, size, name in live:
            if base <= offset < base + size:
                seg_of[given] = name
    by_seg: dict[str, set[int]] = {}
    for given, seg in seg_of.items():
        by_seg.setdefault(seg, set()).add(wanted[given])
    msgs, n_read, n_total = _messages_at(snap, by_seg) if by_seg else (None, 0, _messages_at(snap, {})[2])
    at = {r["commitlog_offset"]: r for r in _rows(snap, msgs, body, store, config)}
    out = {}
    for given, offset in wanted.items():
        row = at.get(offset) if given in seg_of else None
        # the id also names the store host: a record at that offset written by another broker is not it
        rows = [dict(row)] if row is not None and row.get("msg_id") == given.strip().upper() else []
        out[given] = LookupResult(rows, {"messages": n_read}, {"messages": n_total})
    return out


def lookup_offset_msg_id(tables: str, offset_msg_id: str, *, body: bool = False, store: str | None = None,
                         config: BrokerConfig | None = None) -> LookupResult:
    """The message an offset msgId names (``MessageDecoder.decodeMessageId``: store host + offset)."""
    return lookup_offset_msg_ids(tables, [offset_msg_id], body=body, store=store, config=config)[offset_msg_id]


# ---------------------------------------------------------------------------------------------
# straight from a store: the broker's index walk, then an exact check against the commitlog


def read_records(store: StoreLocation, config: BrokerConfig, offsets: Sequence[int], *, with_body: bool = False
                 ) -> list[dict]:
    """Decode the records at the given commitlog offsets, as the reput reads them: one walk step each,
    or, for many offsets in one segment, one walk from the first to the last of them (a record that
    walk does not reach on its own is read by itself)."""
    by_segment: dict[str, tuple[Segment, list[int]]] = {}
    for off in sorted(set(int(o) for o in offsets)):
        at = store.segment_at(off)
        if at is not None:
            by_segment.setdefault(at.name, (at, []))[1].append(off - at.base)
    out = []
    for seg, positions in by_segment.values():
        got: dict[int, dict] = {}
        if len(positions) > _ONE_WALK_FROM and positions[-1] - positions[0] <= len(positions) * _STEP_WINDOW:
            got = _walk_records(store, config, seg, positions[0], positions[-1] + 1, set(positions), with_body)
        for pos in positions:
            if pos not in got:
                got.update(_walk_records(store, config, seg, pos, pos + 1, {pos}, with_body))
        out += [got[p] for p in positions if p in got]
    return out


_ONE_WALK_FROM = 16   # offsets in a segment from which one walk over their span is cheaper (when no longer
_STEP_WINDOW = 1 << 16   # than the windows of the single steps together)


def _walk_records(store: StoreLocation, config: BrokerConfig, seg: Segment, start: int, stop: int, wanted: set[int],
                  with_body: bool) -> dict[int, dict]:
    """The records at the positions ``wanted`` of a walk of ``seg`` from ``start`` up to ``stop``."""
    with store.reader(seg) as read:
        res = cl.walk_range(read, seg.base, seg.size, cl.WalkState.at_slice_start(start, seg.size), stop, config,
                            window=stop - start + _STEP_WINDOW, dledger=seg.dledger)
    if not len(res.rec):
        return {}
    lean = lean_columns(res)
    det = detail_columns(res, with_body=with_body)
    out = {}
    for i, pos in enumerate(res.rec[:, cl.R_POS].tolist()):
        if pos not in wanted:
            continue
        keys = det["keys"][i].as_py() or []
        kinds = det["key_kinds"][i].as_py() or []
        row = {
            "commitlog_offset": int(res.rec[i, cl.R_PHYS]), "segment": seg.name, "topic": lean["topic"][i].as_py(),
            "queue_id": int(res.rec[i, cl.R_QID]), "queue_offset": int(res.rec[i, cl.R_QOFF]),
            "store_timestamp": ms_to_datetime(int(res.rec[i, cl.R_STORE_TS])), "tags": det["tags"][i].as_py(),
            "keys": [k for k, kind in zip(keys, kinds) if kind == cl.KEY_KIND_KEY],
            "uniq_key": det["uniq_key"][i].as_py(), "msg_id": det["msg_id"][i].as_py(),
            "size": int(res.rec[i, cl.R_TOTAL]), "body_crc_ok": det["body_crc_ok"][i].as_py(),
            "dispatch": None,
        }
        if with_body:
            row["body"] = det["body"][i].as_py()
        out[pos] = row
    return out


def lookup_index_keys(index_dir: str, store: str, config: BrokerConfig, pairs: Sequence[tuple[str, str]], *,
                      begin_ms: int = 0, end_ms: int = 2**63 - 1, max_num: int = MAX_MSGS_NUM_BATCH,
                      body: bool = False) -> dict[tuple[str, str], LookupResult]:
    """For each ``(topic, key)``: ``IndexService.queryOffset`` over the index files in ``index_dir``
    (newest first; a file is searched when its time range matches; stop at a file that begins before
    ``begin_ms`` or once ``max_num`` offsets are found), then the records whose topic and keys match
    exactly.  The index files are opened once and the records read once for all pairs."""
    fs, root = resolve(index_dir)
    names = sorted(e.base_name for e in fs.get_file_info(pafs.FileSelector(root))
                   if e.type == pafs.FileType.File and e.base_name.isdigit())
    wanted = sorted(set(pairs))
    key_hashes = index_key_hashes([index_key(t, k) for t, k in wanted]).astype(np.int64)
    counts = np.zeros(len(wanted), dtype=np.int64)
    active = np.arange(len(wanted))   # pairs still searched: fewer than max_num offsets so far
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for name in reversed(names):
        if not len(active):
            break
        with _open_index(fs, f"{root}/{name}") as data:
            _check_index_size(f"{index_dir.rstrip('/')}/{name}", len(data), config)
            h = read_header(data)
            if _time_matched(h.begin_timestamp, h.end_timestamp, begin_ms, end_ms):
                offs, owner = select_phy_offsets_of_hashes(data, key_hashes[active],
                                                           max_hash_slot_num=config.maxHashSlotNum,
                                                           max_num=max_num - counts[active], begin=begin_ms,
                                                           end=end_ms)
                parts.append((offs, active[owner]))
                np.add.at(counts, active[owner], 1)
        if h.begin_timestamp < begin_ms:
            break
        active = active[counts[active] < max_num]
    found: dict[tuple[str, str], list[int]] = {p: [] for p in wanted}
    for offs, owner in parts:
        for i, off in zip(owner.tolist(), offs.tolist()):
            found[wanted[i]].append(off)
    st = open_store(store, config)
    every = sorted(set().union(*found.values())) if found else []
    records = {r["commitlog_offset"]: r for r in read_records(st, config, every, with_body=body)}
    out = {}
    for (topic, key), offsets in found.items():
        rows, discarded = [], []
        for off in sorted(set(offsets)):
            r = records.get(off)
            if r is not None and r["topic"] == topic and (key in r["keys"] or key == r["uniq_key"]):
                rows.append(dict(r))
            else:   # another key with the same hash, or no record there
                discarded.append(off)
        out[(topic, key)] = LookupResult(rows, {"index": len(names)}, {"index": len(names)}, discarded,
                                         source="index")
    return out


def lookup_index(index_dir: str, store: str, config: BrokerConfig, topic: str, key: str, *,
                 begin_ms: int = 0, end_ms: int = 2**63 - 1, max_num: int = MAX_MSGS_NUM_BATCH,
                 body: bool = False) -> LookupResult:
    """:func:`lookup_index_keys` of one key."""
    return lookup_index_keys(index_dir, store, config, [(topic, key)], begin_ms=begin_ms, end_ms=end_ms,
                             max_num=max_num, body=body)[(topic, key)]


def _check_index_size(path: str, size: int, config: BrokerConfig) -> None:
    """The broker maps an index file with the size its settings give (``IndexFile`` constructor); a
    file of another size was written with other settings and would be read at the wrong places."""
    want = index_file_size(config.maxHashSlotNum, config.maxIndexNum)
    if size != want:
        raise StoreLayoutError(
            f"{path} is {size} bytes, but maxHashSlotNum={config.maxHashSlotNum} and maxIndexNum="
            f"{config.maxIndexNum} make index files of {want} bytes: pass --config with the broker.conf "
            "that wrote them")


def _time_matched(begin_ts: int, end_ts: int, begin: int, end: int) -> bool:
    """``IndexFile.isTimeMatched``."""
    return (begin < begin_ts and end > end_ts) or (begin_ts <= begin <= end_ts) or (begin_ts <= end <= end_ts)


def store_config(store: str) -> BrokerConfig:
    """The settings in ``STORE/broker.conf`` when the store has one (as ``python -m pipelines sample``
    writes it), else the broker's defaults."""
    fs, root = resolve(store)
    if fs.get_file_info(f"{root.rstrip('/')}/broker.conf").type == pafs.FileType.File:
        return load_config_for(f"{store.rstrip('/')}/broker.conf")
    return BrokerConfig()


class _open_index:
    """An index file mapped read-only (local files) or read whole (other filesystems)."""

    def __init__(self, fs, path: str) -> None:
        self.fs, self.path = fs, path
        self._f: BinaryIO | None = None
        self._m: mmap.mmap | None = None

    def __enter__(self):
        if isinstance(self.fs, pafs.LocalFileSystem):
            f = self._f = open(self.path, "rb")
            self._m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            return self._m
        with self.fs.open_input_file(self.path) as f:
            return f.read()

    def __exit__(self, *exc) -> None:
        if self._m is not None:
            self._m.close()
        if self._f is not None:
            self._f.close()


# ---------------------------------------------------------------------------------------------
# output


def render(result: LookupResult, *, body: bool = False) -> str:
    """A readable table of the messages found and what the lookup read."""
    lines = []
    cols = ["commitlog_offset", "topic", "queue_id", "queue_offset", "store_timestamp", "tags", "keys", "uniq_key",
            "msg_id"]
    if result.rows:
        cells = [[_cell(r.get(c)) for c in cols] for r in result.rows]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
        lines.append("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
        for row in cells:
            lines.append("  ".join(v.ljust(w) for v, w in zip(row, widths)))
        if body:
            for r in result.rows:
                lines.append(f"body of {r['commitlog_offset']}: {_body_text(r.get('body'))}")
    lines.append(f"{len(result.rows)} message(s)" + (f" shown, cut from {result.cut} by --max" if result.cut else ""))
    for table, n in result.files_read.items():
        lines.append(f"{table}: read {n} of {result.files_total.get(table, n)} file(s)")
    if result.discarded:
        lines.append(f"{len(result.discarded)} offset(s) the broker's hash-only lookup returns were dropped: "
                     f"their records do not carry this topic and key ({', '.join(map(str, result.discarded))})")
    return "\n".join(lines)


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, _dt.datetime):
        return v.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    if isinstance(v, list):
        return ",".join(map(str, v))
    return str(v)


def _body_text(b: bytes | None) -> str:
    if b is None:
        return "(not available)"
    try:
        text = b.decode("utf-8")
        return text if len(text) <= 200 else text[:200] + "..."
    except UnicodeDecodeError:
        return b[:100].hex() + ("..." if len(b) > 100 else "")


def json_default(v):
    """JSON form of a lookup row's values: times as printed, bodies as text where they are text."""
    if isinstance(v, _dt.datetime):
        return _cell(v)
    if isinstance(v, bytes):
        return _body_text(v)
    return str(v)
