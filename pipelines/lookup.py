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

``python -m pipelines lookup --index DIR --store STORE [--config broker.conf] --topic T --key K`` reads a
store's index files as the broker does (``IndexService.queryOffset`` → ``IndexFile.selectPhyOffset``:
newest file first, slot chain, time range) and then reads each offset's record from the commitlog to
keep only records whose topic and keys really match: the broker compares hashes only, so ``Aa`` and
``BB`` (equal ``String.hashCode``) return each other's messages; here they do not.

``--body`` prints bodies: from the table when published with ``--with-body``, else from the commitlog.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import mmap
from collections.abc import Sequence
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.errors import StoreError, StoreLayoutError
from store_format.indexfile import read_header, select_phy_offsets
from store_format.javahash import index_key, index_key_hash
from store_format.layout import SCHEDULE_TOPIC
from store_format.msgid import decode_offset_msg_id
from store_format.records import detail_columns, lean_columns
from store_format.store import StoreLocation, load_config_for, open_store, resolve
from store_format.timeutil import ms_to_datetime

from .delta import arrow_dataset
from .tables.runs import Snapshot, snapshot

__all__ = ["LookupResult", "lookup_key", "lookup_msg_id", "lookup_offset_msg_id", "lookup_index", "read_records",
           "demo_lookup", "render"]

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


def _scan(snap: Snapshot, name: str, prune: list, where: ds.Expression) -> tuple[pa.Table | None, int, int]:
    """Rows of table ``name`` (at the snapshot's version) that ``where`` selects; the files opened and
    the files of the version.  delta-rs keeps the files whose partition values and statistics may
    match ``prune`` (tuple filters, OR of AND groups: cheap, before any fragment is made); pyarrow
    then skips the fragments ``where`` rules out by the statistics attached to them, and filters the
    rows of the others."""
    dt = snap.open(name)
    if dt is None:
        return None, 0, 0
    total = len(dt.file_uris())
    if not prune:
        return None, 0, total
    dataset = arrow_dataset(snap.tables, name, dt, file_pruning_predicate=prune)
    fragments = list(dataset.get_fragments(filter=where))
    if not fragments:
        return None, 0, total
    chosen = ds.FileSystemDataset(fragments, dataset.schema, dataset.format, dataset.filesystem)
    rows = chosen.to_table(filter=where)
    return (rows if rows.num_rows else None), len(fragments), total


def _any(exprs: list[ds.Expression]) -> ds.Expression:
    out = exprs[0]
    for e in exprs[1:]:
        out = out | e
    return out


def _time_range(begin: int | None, end: int | None) -> tuple[list[tuple], ds.Expression]:
    """``store_timestamp`` within [begin, end] (ms): as tuple filters and as an expression."""
    from .tables.schema import TS
    t = ds.field("store_timestamp")
    filters: list[tuple] = []
    cond = ds.scalar(True)
    if begin is not None:
        filters.append(("store_timestamp", ">=", ms_to_datetime(begin)))
        cond = cond & (t >= pa.scalar(begin * 1000, TS))
    if end is not None:
        filters.append(("store_timestamp", "<=", ms_to_datetime(end)))
        cond = cond & (t <= pa.scalar(end * 1000, TS))
    return filters, cond


def _key_candidates(snap: Snapshot, pairs: list[tuple[str, str]], kind: str | None, begin: int | None,
                    end: int | None) -> tuple[pa.Table | None, int, int]:
    """Index entries of the exact ``(topic, key)`` pairs: only their buckets' files are opened, and
    of those only the ones whose key_hash (and store_timestamp) statistics may match."""
    from .tables.schema import table_key_buckets
    dt = snap.open("message_keys")
    n_buckets = table_key_buckets(dt) if dt is not None else 1
    when, in_time = _time_range(begin, end)
    prune, exact = [], []
    for t, k in sorted(set(pairs)):
        h = index_key_hash(index_key(t, k))
        prune.append([("key_bucket", "=", h % n_buckets), ("key_hash", "=", h), ("topic", "=", t), ("key", "=", k)]
                     + when)
        # the exact key: equal hashes are not enough
        exact.append((ds.field("key_bucket") == h % n_buckets) & (ds.field("key_hash") == h)
                     & (ds.field("topic") == t) & (ds.field("key") == k))
    where = (_any(exact) & in_time) if exact else ds.scalar(False)
    if kind is not None:
        where = where & (ds.field("kind") == kind)
    return _scan(snap, "message_keys", prune, where)


def _messages_at(snap: Snapshot, offsets_by_segment: dict[str, set[int]]) -> tuple[pa.Table | None, int, int]:
    """Rows of ``messages`` at the given commitlog offsets: only files whose offset range covers one."""
    prune = [[("segment", "=", seg), ("commitlog_offset", "in", sorted(offs))]
             for seg, offs in sorted(offsets_by_segment.items()) if offs]
    every = sorted(set().union(*offsets_by_segment.values())) if offsets_by_segment else []
    where = ds.field("segment").isin(sorted(offsets_by_segment)) & ds.field("commitlog_offset").isin(every)
    return _scan(snap, "messages", prune, where)


def _finish(snap: Snapshot, keys: pa.Table | None, files_read: dict, files_total: dict, body: bool,
            store: str | None, config: BrokerConfig | None) -> LookupResult:
    if keys is None or not keys.num_rows:
        return LookupResult([], files_read, files_total)
    by_seg: dict[str, set[int]] = {}
    for seg, off in zip(keys["segment"].to_pylist(), keys["commitlog_offset"].to_pylist()):
        by_seg.setdefault(seg, set()).add(off)
    msgs, n_read, n_total = _messages_at(snap, by_seg)
    files_read["messages"], files_total["messages"] = n_read, n_total
    return _rows(snap, msgs, body, store, config, files_read, files_total)


def _rows(snap: Snapshot, msgs: pa.Table | None, body: bool, store: str | None, config: BrokerConfig | None,
          files_read: dict, files_total: dict) -> LookupResult:
    if msgs is None or not msgs.num_rows:
        return LookupResult([], files_read, files_total)
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
    return LookupResult(rows, files_read, files_total)


def _store_for(snap: Snapshot, store: str | None, config: BrokerConfig | None) -> tuple[StoreLocation, BrokerConfig]:
    last = snap.run
    if config is None:
        config = BrokerConfig.from_properties(json.loads(last["config"])) if last else BrokerConfig()
    uri = store or (last["store"] if last else None)
    if uri is None:
        raise StoreLayoutError("no store to read bodies from: pass --store")
    return open_store(uri, config), config


def lookup_key(tables: str, topic: str, key: str, *, begin_ms: int | None = None, end_ms: int | None = None,
               body: bool = False, store: str | None = None, config: BrokerConfig | None = None) -> LookupResult:
    """Messages of ``topic`` with ``key`` among their KEYS (or as UNIQ_KEY), from the tables."""
    snap = snapshot(tables)
    keys, n_read, n_total = _key_candidates(snap, [(topic, key)], None, begin_ms, end_ms)
    return _finish(snap, keys, {"message_keys": n_read}, {"message_keys": n_total}, body, store, config)


def lookup_msg_id(tables: str, msg_id: str, *, topic: str | None = None, begin_ms: int | None = None,
                  end_ms: int | None = None, body: bool = False, store: str | None = None,
                  config: BrokerConfig | None = None) -> LookupResult:
    """Messages whose UNIQ_KEY (the client's msgId) is ``msg_id``; every topic the tables know
    when no topic is given (one bucket per topic)."""
    snap = snapshot(tables)
    if topic:
        topics = [topic]
    else:
        segs = snap.read_arrow("segments", ["topics", "status"])
        topics = sorted({t for ts, s in zip(segs["topics"].to_pylist(), segs["status"].to_pylist())
                         if s == "live" for t in (ts or [])}) if segs is not None else []
    keys, n_read, n_total = _key_candidates(snap, [(t, msg_id) for t in topics], "uniq_key", begin_ms, end_ms)
    return _finish(snap, keys, {"message_keys": n_read}, {"message_keys": n_total}, body, store, config)


def lookup_offset_msg_id(tables: str, offset_msg_id: str, *, body: bool = False, store: str | None = None,
                         config: BrokerConfig | None = None) -> LookupResult:
    """The message an offset msgId names (``MessageDecoder.decodeMessageId``: store host + offset)."""
    try:
        _host, _port, offset = decode_offset_msg_id(offset_msg_id.strip().upper())
    except ValueError as e:
        raise StoreError(f"--offset-msg-id: {e}") from None
    snap = snapshot(tables)
    segs = snap.read_arrow("segments", ["segment", "base_offset", "file_size", "status"])
    seg = None
    if segs is not None:
        for name, base, size, status in zip(*(segs[c].to_pylist() for c in ("segment", "base_offset", "file_size",
                                                                            "status"))):
            if base <= offset < base + size and status == "live":
                seg = name
    if seg is None:
        return LookupResult([], {"messages": 0}, {"messages": _messages_at(snap, {})[2]})
    msgs, n_read, n_total = _messages_at(snap, {seg: {offset}})
    res = _rows(snap, msgs, body, store, config, {"messages": n_read}, {"messages": n_total})
    # the id also names the store host: a record at that offset written by another broker is not it
    res.rows = [r for r in res.rows if r.get("msg_id") == offset_msg_id.strip().upper()]
    return res


# ---------------------------------------------------------------------------------------------
# straight from a store: the broker's index walk, then an exact check against the commitlog


def read_records(store: StoreLocation, config: BrokerConfig, offsets: Sequence[int], *, with_body: bool = False
                 ) -> list[dict]:
    """Decode the records at the given commitlog offsets, as the reput reads them (one walk step each)."""
    out = []
    for off in sorted(set(int(o) for o in offsets)):
        seg = store.segment_at(off)
        if seg is None:
            continue
        pos = off - seg.base
        with store.reader(seg) as read:
            res = cl.walk_range(read, seg.base, seg.size, cl.WalkState.at_slice_start(pos, seg.size), pos + 1, config,
                                window=1 << 16)
        if not len(res.rec) or int(res.rec[0, cl.R_POS]) != pos:
            continue
        lean = lean_columns(res)
        det = detail_columns(res, with_body=with_body)
        keys = det["keys"].to_pylist()[0] or []
        kinds = det["key_kinds"].to_pylist()[0] or []
        row = {
            "commitlog_offset": int(res.rec[0, cl.R_PHYS]), "segment": seg.name, "topic": lean["topic"][0].as_py(),
            "queue_id": int(res.rec[0, cl.R_QID]), "queue_offset": int(res.rec[0, cl.R_QOFF]),
            "store_timestamp": ms_to_datetime(int(res.rec[0, cl.R_STORE_TS])), "tags": det["tags"][0].as_py(),
            "keys": [k for k, kind in zip(keys, kinds) if kind == cl.KEY_KIND_KEY],
            "uniq_key": det["uniq_key"][0].as_py(), "msg_id": det["msg_id"][0].as_py(),
            "size": int(res.rec[0, cl.R_TOTAL]), "body_crc_ok": det["body_crc_ok"][0].as_py(),
            "dispatch": None,
        }
        if with_body:
            row["body"] = det["body"][0].as_py()
        out.append(row)
    return out


def lookup_index(index_dir: str, store: str, config: BrokerConfig, topic: str, key: str, *,
                 begin_ms: int = 0, end_ms: int = 2**63 - 1, max_num: int = MAX_MSGS_NUM_BATCH,
                 body: bool = False) -> LookupResult:
    """``IndexService.queryOffset`` over the index files in ``index_dir`` (newest first; a file is
    searched when its time range matches; stop at a file that begins before ``begin_ms`` or once
    ``max_num`` offsets are found), then keep the records whose topic and keys match exactly."""
    fs, root = resolve(index_dir)
    names = sorted(e.base_name for e in fs.get_file_info(pafs.FileSelector(root))
                   if e.type == pafs.FileType.File and e.base_name.isdigit())
    full_key = index_key(topic, key)
    found: list[int] = []
    for name in reversed(names):
        path = f"{root}/{name}"
        with _open_index(fs, path) as data:
            h = read_header(data)
            if _time_matched(h.begin_timestamp, h.end_timestamp, begin_ms, end_ms):
                found += select_phy_offsets(data, full_key, max_hash_slot_num=config.maxHashSlotNum,
                                            max_num=max_num - len(found), begin=begin_ms, end=end_ms)
        if h.begin_timestamp < begin_ms or len(found) >= max_num:
            break
    st = open_store(store, config)
    records = read_records(st, config, found, with_body=body)
    rows, discarded = [], []
    for r in records:
        if r["topic"] == topic and (key in r["keys"] or key == r["uniq_key"]):
            rows.append(r)
        else:
            discarded.append(r["commitlog_offset"])
    missing = sorted(set(found) - {r["commitlog_offset"] for r in records})
    return LookupResult(sorted(rows, key=lambda r: r["commitlog_offset"]), {"index": len(names)},
                        {"index": len(names)}, sorted(discarded) + missing, source="index")


def _time_matched(begin_ts: int, end_ts: int, begin: int, end: int) -> bool:
    """``IndexFile.isTimeMatched``."""
    return (begin < begin_ts and end > end_ts) or (begin_ts <= begin <= end_ts) or (begin_ts <= end <= end_ts)


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


def _json_default(v):
    if isinstance(v, _dt.datetime):
        return _cell(v)
    if isinstance(v, bytes):
        return _body_text(v)
    return str(v)


def demo_lookup(tables_path: str) -> None:
    """Print one example lookup from freshly published tables: the first key of the first bucket file."""
    keys = snapshot(tables_path).read_arrow("message_keys", ["topic", "key", "kind"])
    if keys is None or not keys.num_rows:
        print("no index keys in the tables: nothing to look up")
        return
    plain = pc.and_(pc.match_substring_regex(keys["key"], r"^[\w.-]+$"),
                    pc.not_equal(keys["topic"], SCHEDULE_TOPIC))
    sel = keys.filter(pc.and_(pc.equal(keys["kind"], "key"), plain))
    row = (sel if sel.num_rows else keys).slice(0, 1).to_pylist()[0]
    res = lookup_key(tables_path, row["topic"], row["key"])
    print(f"\nexample lookup: python -m pipelines lookup --tables {tables_path} --topic {row['topic']} "
          f"--key {row['key']}")
    print(render(res))


def run_lookup(*, tables: str | None, topic: str | None, key: str | None, msg_id: str | None,
               offset_msg_id: str | None, begin_ms: int | None, end_ms: int | None, body: bool, index: str | None,
               store: str | None, config_path: str | None, max_messages: int | None, as_json: bool) -> int:
    """``python -m pipelines lookup``: print the matches; like grep, exit 1 when nothing is found."""
    config = load_config_for(config_path) if config_path else None
    if index:
        if not (store and topic and (key or msg_id)):
            raise StoreError("--index needs --store, --topic and --key (or --msg-id)")
        res = lookup_index(index, store, config or BrokerConfig(), topic, key or msg_id,  # type: ignore[arg-type]
                           begin_ms=begin_ms or 0, end_ms=end_ms if end_ms is not None else 2**63 - 1,
                           max_num=max_messages or MAX_MSGS_NUM_BATCH, body=body)
    else:
        if not tables:
            raise StoreError("pass --tables PATH (or --index DIR --store STORE)")
        if snapshot(tables).run is None:
            raise StoreLayoutError(f"{tables}: no published tables there (no runs table); publish them with "
                                   "'python -m pipelines rebuild' or 'python -m pipelines tables'")
        if offset_msg_id:
            res = lookup_offset_msg_id(tables, offset_msg_id, body=body, store=store, config=config)
        elif msg_id:
            res = lookup_msg_id(tables, msg_id, topic=topic, begin_ms=begin_ms, end_ms=end_ms, body=body, store=store,
                                config=config)
        elif topic and key:
            res = lookup_key(tables, topic, key, begin_ms=begin_ms, end_ms=end_ms, body=body, store=store,
                             config=config)
        else:
            raise StoreError("give --topic T --key K, --msg-id ID or --offset-msg-id ID")
        if max_messages is not None and len(res.rows) > max_messages:
            res = dataclasses.replace(res, rows=res.rows[:max_messages], cut=len(res.rows))
    if as_json:
        print(json.dumps({"messages": res.rows, "files_read": res.files_read, "files_total": res.files_total,
                          "discarded": res.discarded, "source": res.source, "cut_from": res.cut}, indent=2,
                         default=_json_default))
    else:
        print(render(res, body=body))
    return 0 if res.rows else 1
