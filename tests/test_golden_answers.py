"""Lookups through the Delta tables of every golden store answer like the broker's own index files.

Each golden store is rebuilt with tables once per run (``golden_rebuilt``, shared with the golden
test).  The questions come from the commitlog, decoded without the tables (:mod:`golden_truth`):
every (topic, KEYS token) and (topic, UNIQ_KEY).  The answers to compare with come from the index
files the broker wrote (``expected/index``), walked as ``IndexService.queryOffset`` walks them, with
the broker's hash collisions dropped.  All through the public lookup functions the CLI calls,
batched in one call per question kind.  Also: every add action against its file, statistics a reader
cannot use, and the rows of messages / message_keys / segments against the files of the same rebuild.
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import golden_truth as gt
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from test_golden import CASES

from pipelines.delta_stats import STRING_PREFIX_LENGTH
from pipelines.lookup import lookup_index_keys, lookup_keys, lookup_msg_ids, lookup_offset_msg_ids
from store_format.indexfile import read_header
from store_format.layout import INDEX_ENTRY_DTYPE, INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE, INDEX_SLOT_SIZE

pytestmark = [pytest.mark.golden, pytest.mark.spark]

UNLIMITED = 1 << 30   # no cap on offsets per key on either side (the broker's default is 64)
_truth: dict[str, tuple[list[gt.Record], list[tuple[str, str]]]] = {}
_broker_answers: dict[tuple, dict] = {}


def _commitlog(golden_dir: Path, case: str) -> tuple[list[gt.Record], list[tuple[str, str]]]:
    if case not in _truth:
        recs = gt.records(golden_dir / case)
        _truth[case] = (recs, gt.pairs(recs))
    return _truth[case]


def _broker(golden_dir: Path, case: str, pairs, begin: int = 0, end: int = 2**63 - 1) -> dict:
    d = golden_dir / case
    if (begin, end) == (0, 2**63 - 1):   # the whole store: asked by several tests, walked once
        key = (case, tuple(pairs))
        if key not in _broker_answers:
            _broker_answers[key] = lookup_index_keys(str(d / "expected" / "index"), str(d / "store"),
                                                     gt.golden_config(d), pairs, max_num=UNLIMITED)
        return _broker_answers[key]
    return lookup_index_keys(str(d / "expected" / "index"), str(d / "store"), gt.golden_config(d), pairs,
                             begin_ms=begin, end_ms=end, max_num=UNLIMITED)


def _offsets(result) -> list[int]:
    return [r["commitlog_offset"] for r in result.rows]


def _index_times(golden_dir: Path, case: str, recs: list[gt.Record]) -> tuple[np.ndarray, np.ndarray]:
    """For every entry of the broker's index files: the store time of its record and the time the
    broker's walk compares (the file's begin time plus the entry's timeDiff in whole seconds)."""
    by_offset = {r.offset: r.store_timestamp for r in recs}
    slots = gt.golden_config(golden_dir / case).maxHashSlotNum
    store_ts, walk_ts = [], []
    for f in sorted((golden_dir / case / "expected" / "index").iterdir()):
        data = f.read_bytes()
        h = read_header(data)
        at = INDEX_HEADER_SIZE + slots * INDEX_SLOT_SIZE
        entries = np.frombuffer(data, INDEX_ENTRY_DTYPE, count=max(h.index_count - 1, 0), offset=at + INDEX_ENTRY_SIZE)
        for off, diff in zip(entries["commitlogOffset"].tolist(), entries["timeDiff"].tolist()):
            if off in by_offset:
                store_ts.append(by_offset[off])
                walk_ts.append(h.begin_timestamp + max(diff, 0) * 1000)
    return np.array(store_ts, dtype=np.int64), np.array(walk_ts, dtype=np.int64)


def _window(golden_dir: Path, case: str, recs: list[gt.Record]) -> tuple[int, int] | None:
    """A time window on whose edges the broker's walk (times in whole seconds after each index file's
    begin time) and the tables (exact store times) agree about every entry: from about a third to
    about two thirds of the store's time span.  None when the store has no such edges."""
    ts, walk = _index_times(golden_dir, case, recs)
    if len(ts) < 3:
        return None
    # an edge may lie anywhere but between an entry's two times
    candidates = np.unique(np.concatenate([ts, walk, ts - 1, walk - 1, ts + 1, walk + 1]))
    lo, hi = int(ts.min()), int(ts.max())

    def edge(target: int, ok) -> int | None:
        order = np.argsort(np.abs(candidates - target))[:400]
        return next((int(candidates[i]) for i in order if ok(int(candidates[i]))), None)

    begin = edge(lo + (hi - lo) // 3, lambda f: bool(np.all((ts >= f) == (walk >= f))))
    end = edge(lo + 2 * (hi - lo) // 3, lambda t: bool(np.all((ts <= t) == (walk <= t))))
    return (begin, end) if begin is not None and end is not None and begin <= end else None


@pytest.mark.parametrize("case", CASES)
def test_key_lookups_answer_like_the_brokers_index(golden_rebuilt, golden_dir, case) -> None:
    out, _ = golden_rebuilt(case)
    recs, pairs = _commitlog(golden_dir, case)
    assert pairs, "the store holds keys"
    window = _window(golden_dir, case, recs)
    assert window, "no time window on whose edges the broker's walk and the store times agree"
    windows = [(None, None), window]
    for begin, end in windows:
        ours = lookup_keys(str(out / "tables"), pairs, begin_ms=begin, end_ms=end)
        theirs = _broker(golden_dir, case, pairs, 0 if begin is None else begin, 2**63 - 1 if end is None else end)
        differ = [p for p in pairs if _offsets(ours[p]) != _offsets(theirs[p])]
        assert not differ, (f"{len(differ)} of {len(pairs)} keys answer differently (window {begin}..{end}), e.g. "
                            f"{[(p[0][:40], p[1][:40], _offsets(ours[p]), _offsets(theirs[p])) for p in differ[:3]]}")
        if begin is None:
            assert sum(1 for p in pairs if theirs[p].rows) >= len(pairs) * 0.9, "the broker's index knows the keys"
            # the rows are the records: topic and key as asked
            by_offset = {r.offset: r for r in recs}
            for p in pairs:
                for off in _offsets(ours[p]):
                    r = by_offset[off]
                    assert r.topic == p[0] and (p[1] in r.keys or p[1] == r.uniq_key)


@pytest.mark.parametrize("case", CASES)
def test_every_message_is_found_by_its_msg_ids(golden_rebuilt, golden_dir, case) -> None:
    out, _ = golden_rebuilt(case)
    recs, _ = _commitlog(golden_dir, case)
    tables = str(out / "tables")
    dispatched = [r for r in recs if r.dispatched]
    # offset msgId (store host + offset): every dispatched record, exactly it
    by_offset_id = lookup_offset_msg_ids(tables, [r.msg_id for r in dispatched])
    lost = [r.offset for r in dispatched if _offsets(by_offset_id[r.msg_id]) != [r.offset]]
    assert not lost, f"{len(lost)} of {len(dispatched)} messages not found by offset msgId: {lost[:5]}"
    # client msgId (UNIQ_KEY, no topic given): the records the broker's index finds under it
    with_id = [r for r in dispatched if r.uniq_key]
    theirs = _broker(golden_dir, case, _commitlog(golden_dir, case)[1])
    ours = lookup_msg_ids(tables, sorted({r.uniq_key for r in with_id}))
    missing = [r.offset for r in with_id
               if (r.offset in _offsets(theirs[(r.topic, r.uniq_key)])) != (r.offset in _offsets(ours[r.uniq_key]))]
    assert not missing, f"{len(missing)} messages answer differently by msgId: {missing[:5]}"
    assert sum(1 for r in with_id if r.offset in _offsets(ours[r.uniq_key])) >= len(with_id) * 0.9
    uniq_of = {r.offset: r.uniq_key for r in recs}
    assert all(uniq_of[o] == i for i, res in ours.items() for o in _offsets(res))


# ---------------------------------------------------------------------------------------------
# statistics of every add action against the files


def _live_adds(table: Path) -> list[dict]:
    """Add actions of the table's newest version, replayed from its JSON commits."""
    log = table / "_delta_log"
    assert not list(log.glob("*.checkpoint*.parquet")), "replay below reads JSON commits only"
    live: dict[str, dict] = {}
    for commit in sorted(log.glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    return list(live.values())


def _ms(iso: str) -> int:
    """A stats timestamp (RFC 3339, UTC): the fraction is left out by some writers when it is zero."""
    t = _dt.datetime.fromisoformat(iso)
    return (t - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) // _dt.timedelta(milliseconds=1)


@pytest.mark.parametrize("case", CASES)
def test_every_add_action_bounds_its_file(golden_rebuilt, case) -> None:
    """Delta protocol, Per-file Statistics: min <= every value <= max, long strings cut to a prefix
    (min: the prefix; max: a prefix and a greater character), null counts exact, no null bound."""
    out, _ = golden_rebuilt(case)
    import urllib.parse
    checked = 0
    for table in sorted(p for p in (out / "tables").iterdir() if (p / "_delta_log").is_dir()):
        for add in _live_adds(table):
            stats = json.loads(add["stats"])
            data = pq.read_table(table / urllib.parse.unquote(add["path"]))
            assert stats["numRecords"] == data.num_rows
            for side in ("minValues", "maxValues", "nullCount"):
                assert all(v is not None for v in stats.get(side, {}).values()), f"{table.name}: null in {side}"
            for name in data.column_names:
                col = data[name]
                if name in stats.get("nullCount", {}):
                    assert stats["nullCount"][name] == col.null_count, f"{table.name}.{name} null count"
                lo_stat, hi_stat = stats.get("minValues", {}).get(name), stats.get("maxValues", {}).get(name)
                if col.null_count == len(col) or pa.types.is_binary(col.type) or pa.types.is_nested(col.type):
                    continue
                mm = pc.min_max(col)
                lo, hi = mm["min"].as_py(), mm["max"].as_py()
                assert lo_stat is not None and hi_stat is not None, f"{table.name}.{name}: no bounds"
                if isinstance(lo, _dt.datetime):
                    assert _ms(lo_stat) * 1000 <= int(mm["min"].cast("int64").as_py())
                    assert _ms(hi_stat) * 1000 >= int(mm["max"].cast("int64").as_py())
                elif isinstance(lo, str):
                    # the value itself, or (long strings) its prefix; our own writer cuts at the Delta default
                    assert lo_stat == lo[:len(lo_stat)] and (lo_stat == lo or len(lo_stat) < len(lo))
                    assert hi_stat == hi or (hi.startswith(hi_stat[:-1]) and hi_stat[-1] > hi[len(hi_stat) - 1]), \
                        f"{table.name}.{name} max"
                    if table.name in ("messages", "message_keys"):
                        assert lo_stat == lo[:STRING_PREFIX_LENGTH], f"{table.name}.{name} min"
                        assert len(hi_stat) <= 2 * STRING_PREFIX_LENGTH + 1
                else:
                    assert lo_stat <= lo and hi_stat >= hi, f"{table.name}.{name}"
                checked += 1
    assert checked


# ---------------------------------------------------------------------------------------------
# statistics a reader cannot use never lose a file

_BAD_STATS = {
    "null bounds": lambda st: {**st, "minValues": dict.fromkeys(st["minValues"]),
                               "maxValues": dict.fromkeys(st["maxValues"])},
    "no bounds for the strings": lambda st: {**st, "minValues": {k: v for k, v in st["minValues"].items()
                                                                 if not isinstance(v, str)},
                                             "maxValues": {k: v for k, v in st["maxValues"].items()
                                                           if not isinstance(v, str)}},
    "only a record count": lambda st: {"numRecords": st["numRecords"]},
    "min above max": lambda st: {**st, "minValues": {**st["minValues"], "topic": "~", "key_hash": 2**31 - 1,
                                                     "commitlog_offset": 2**62},
                                 "maxValues": {**st["maxValues"], "topic": "!", "key_hash": -1,
                                               "commitlog_offset": -1}},
}
# (statistics that are not JSON, or values of the wrong type, make delta-rs refuse to open the table:
# an error, nothing lost silently)


@pytest.mark.parametrize("bad", sorted(_BAD_STATS))
def test_unusable_statistics_keep_their_files(golden_rebuilt, golden_dir, tmp_path, bad) -> None:
    """Every add action of messages and message_keys rewritten with statistics that are null,
    missing or inconsistent: every key and offset msgId is still found."""
    import shutil
    case = "features-4.9.8"
    out, _ = golden_rebuilt(case)
    recs, pairs = _commitlog(golden_dir, case)
    tables = tmp_path / "tables"
    shutil.copytree(out / "tables", tables)
    change = _BAD_STATS[bad]
    for name in ("messages", "message_keys"):
        for commit in sorted((tables / name / "_delta_log").glob("*.json")):
            lines = []
            for line in commit.read_text().splitlines():
                action = json.loads(line)
                if "add" in action and action["add"].get("stats"):
                    st = json.loads(action["add"]["stats"])
                    action["add"]["stats"] = json.dumps(change(st))
                lines.append(json.dumps(action))
            commit.write_text("\n".join(lines) + "\n")
    theirs = _broker(golden_dir, case, pairs)
    ours = lookup_keys(str(tables), pairs)
    differ = [p for p in pairs if _offsets(ours[p]) != _offsets(theirs[p])]
    assert not differ, f"{bad}: {len(differ)} of {len(pairs)} keys answer differently"
    dispatched = [r for r in recs if r.dispatched]
    by_id = lookup_offset_msg_ids(str(tables), [r.msg_id for r in dispatched])
    assert all(_offsets(by_id[r.msg_id]) == [r.offset] for r in dispatched), bad


# ---------------------------------------------------------------------------------------------
# rows against the files the same rebuild wrote

_CQ_UNIT = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tags_code", ">i8")])
_BLANK_SIZE = 2**31 - 1   # ConsumeQueue.fillPreBlank: offset 0, size Integer.MAX_VALUE, tags code 0


def _cq_units(out: Path) -> set[tuple]:
    """(topic, queue id, queue offset, commitlog offset, size, tags code) of every written unit of the
    rebuilt consume queue files (blank fill and the zeros after the last unit left out)."""
    units = set()
    for f in (out / "consumequeue").rglob("*"):
        if not f.is_file():
            continue
        topic, qid = f.parent.parent.name, int(f.parent.name)
        arr = np.frombuffer(f.read_bytes(), _CQ_UNIT)
        first = int(f.name) // _CQ_UNIT.itemsize
        for i, (off, size, code) in enumerate(zip(arr["offset"].tolist(), arr["size"].tolist(),
                                                  arr["tags_code"].tolist())):
            if size == _BLANK_SIZE or (off == 0 and size == 0 and code == 0):
                continue
            units.add((topic, qid, first + i, off, size, code))
    return units


@pytest.mark.parametrize("case", CASES)
def test_table_rows_are_the_files(golden_rebuilt, golden_dir, case) -> None:
    from pipelines.tables.runs import snapshot
    out, summary = golden_rebuilt(case)
    snap = snapshot(str(out / "tables"))
    msgs = snap.read_arrow("messages", ["topic", "queue_id", "consume_queue_offset", "commitlog_offset", "size",
                                        "tags_code", "consume_queue", "lmq_queues"])
    queued = msgs.filter(pc.equal(msgs["consume_queue"], True))
    rows = list(zip(*(queued[c].to_pylist() for c in ("topic", "queue_id", "consume_queue_offset", "commitlog_offset",
                                                       "size", "tags_code"))))
    assert len(rows) == len(set(rows)), "a unit claimed by two rows"
    units = _cq_units(out)
    # light queues (multi-dispatch) hold units of records whose row is in the message's own queue
    plain = {u for u in units if not u[0].startswith("%LMQ%")}
    assert set(rows) == plain, (f"{len(set(rows) - plain)} queued rows without their unit, "
                                f"{len(plain - set(rows))} units without their row")
    lmq = sum(len(q or []) for q in msgs["lmq_queues"].to_pylist())
    assert lmq == len(units) - len(plain)
    # message_keys: the entries of the rebuilt index files, in name order
    keys = snap.read_arrow("message_keys", ["key_hash", "commitlog_offset", "index_file", "index_file_no",
                                            "index_entry", "slot"])
    slots = gt.golden_config(golden_dir / case).maxHashSlotNum
    entries = set()
    for no, f in enumerate(sorted((out / "index").iterdir())):
        data = f.read_bytes()
        h = read_header(data)
        e = np.frombuffer(data, INDEX_ENTRY_DTYPE, count=max(h.index_count - 1, 0),
                          offset=INDEX_HEADER_SIZE + slots * INDEX_SLOT_SIZE + INDEX_ENTRY_SIZE)
        entries.update((int(k), int(o), f.name, no, i + 1, int(k) % slots)
                       for i, (k, o) in enumerate(zip(e["keyHash"].tolist(), e["commitlogOffset"].tolist())))
    table_entries = list(zip(*(keys[c].to_pylist() for c in ("key_hash", "commitlog_offset", "index_file",
                                                               "index_file_no", "index_entry", "slot"))))
    assert len(table_entries) == len(set(table_entries)) == summary.index_keys
    assert set(table_entries) == entries
    # segments: the records of the commitlog, the run's dispatched records and index keys
    segs = snap.read_arrow("segments", ["records", "dispatched", "index_keys", "status"])
    live = segs.filter(pc.equal(segs["status"], "live"))
    assert pc.sum(live["records"]).as_py() == len(_commitlog(golden_dir, case)[0]) == summary.records
    assert pc.sum(live["dispatched"]).as_py() == summary.dispatched
    assert pc.sum(live["index_keys"]).as_py() == summary.index_keys
    assert len(plain) + lmq == summary.consume_queue_units
