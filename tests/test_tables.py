"""The Delta tables against the ground truth of stores written with the commitlog writer: every
column of ``messages`` and ``message_keys`` (read back with delta-rs and with Spark's Parquet
reader), the rebuilt consume queue and index files, the Delta protocol, incremental runs, deleted
segments, and the anomalies of a broker-written corrupted store."""
from __future__ import annotations

import json
import os
import shutil
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import tables_store as ts

from pipelines.cli import main as cli_main
from pipelines.delta import open_table, read_arrow, read_spark
from pipelines.tables import (
    ANOMALIES_SCHEMA,
    MESSAGE_KEYS_SCHEMA,
    MESSAGES_SCHEMA,
    RUNS_SCHEMA,
    SEGMENTS_SCHEMA,
    TABLE_NAMES,
    run_tables,
)
from store_format.layout import CQ_UNIT_DTYPE, INDEX_ENTRY_DTYPE, INDEX_HEADER_SIZE, INDEX_SLOT_SIZE
from store_format.reput import rebuild_in_memory
from store_format.store import open_store

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def main(spark, tmp_path_factory) -> dict:
    return ts.main_tables(spark, tmp_path_factory.getbasetemp() / "tables-main")


def _normalized(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        r = dict(r)
        r.pop("run_id", None)
        r["properties"] = sorted(r["properties"] or [])
        out.append(r)
    return out


def _assert_rows_equal(actual: list[dict], expected: list[dict], key: str) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        diffs = {c: (a.get(c), e[c]) for c in e if a.get(c) != e[c]}
        assert not diffs, f"{key}={e[key]}: {diffs}"


def test_messages_match_the_writers_ground_truth(main, spark) -> None:
    expected = ts.expected_messages(main["messages"], main["config"], with_body=True)
    via_delta_rs = read_arrow(str(main["tables"]), "messages").sort_by("commitlog_offset")
    assert via_delta_rs.schema.names == MESSAGES_SCHEMA.names
    _assert_rows_equal(_normalized(via_delta_rs.to_pylist()), expected, "commitlog_offset")
    # Spark's Parquet reader over the files of the current version (partition column from the paths)
    dt = open_table(str(main["tables"]), "messages")
    df = read_spark(spark, str(main["tables"]), "messages", MESSAGES_SCHEMA, files=dt.file_uris())
    via_spark = df.orderBy("commitlog_offset").toArrow()
    _assert_rows_equal(_normalized(via_spark.to_pylist()), expected, "commitlog_offset")
    assert set(via_delta_rs["run_id"].to_pylist()) == {main["summary"]["run_id"]}


def test_message_keys_match_the_ground_truth_and_the_rebuilt_index(main, spark) -> None:
    cfg = main["config"]
    expected = ts.expected_keys(main["messages"], cfg, ts.MAIN_KEY_BUCKETS)
    keys = read_arrow(str(main["tables"]), "message_keys").sort_by([("index_file_no", "ascending"),
                                                                   ("index_entry", "ascending")])
    _assert_rows_equal(keys.to_pylist(), expected, "key")
    df = read_spark(spark, str(main["tables"]), "message_keys", MESSAGE_KEYS_SCHEMA,
                    files=open_table(str(main["tables"]), "message_keys").file_uris())
    assert df.count() == len(expected)
    # the index files the broker's reput writes: same names, and each row's entry holds its hash and offset
    rebuilt = rebuild_in_memory(open_store(str(main["store"]), cfg), cfg)
    names = sorted(set(keys["index_file"].to_pylist()))
    assert names == [n for n, _ in rebuilt.index]
    entries_at = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * cfg.maxHashSlotNum
    files = [np.frombuffer(data[entries_at:], dtype=INDEX_ENTRY_DTYPE) for _, data in rebuilt.index]
    for r in keys.to_pylist():
        entry = files[r["index_file_no"]][r["index_entry"]]
        assert (int(entry["keyHash"]), int(entry["commitlogOffset"])) == (r["key_hash"], r["commitlog_offset"])
        assert r["index_file"] == rebuilt.index[r["index_file_no"]][0]
    # consume queue units at each message's consume_queue_offset
    msgs = read_arrow(str(main["tables"]), "messages", ["topic", "queue_id", "consume_queue_offset", "commitlog_offset",
                                                         "size", "tags_code", "consume_queue"])
    per_file = cfg.cq_file_size // 20
    n_units = 0
    for r in msgs.filter(msgs["consume_queue"]).to_pylist():
        file_start = r["consume_queue_offset"] // per_file * cfg.cq_file_size
        data = rebuilt.consumequeue[f"{r['topic']}/{r['queue_id']}/{file_start:020d}"]
        unit = np.frombuffer(data, dtype=CQ_UNIT_DTYPE)[r["consume_queue_offset"] % per_file]
        assert (int(unit["commitlogOffset"]), int(unit["size"]), int(unit["tagsCode"])) == \
            (r["commitlog_offset"], r["size"], r["tags_code"])
        n_units += 1
    assert n_units == sum(int((np.frombuffer(d, dtype=CQ_UNIT_DTYPE)["size"] > 0).sum())
                          for d in rebuilt.consumequeue.values())


def test_delta_protocol_and_layout(main) -> None:
    root = str(main["tables"])
    for name in TABLE_NAMES:
        dt = open_table(root, name)
        proto = dt.protocol()
        assert (proto.min_reader_version, proto.min_writer_version) == (1, 2), name
        assert not proto.reader_features and not proto.writer_features, name
        assert not any(k.startswith(("delta.enableDeletionVectors", "delta.columnMapping"))
                       for k in dt.metadata().configuration), name
        assert dt.version() == 0, f"{name}: one commit per table per run"
        schema = json.loads(dt.schema().to_json())
        types = {f["name"]: f["type"] for f in schema["fields"]}
        for f in schema["fields"]:
            if f["name"].endswith(("_timestamp", "_time", "_at")) or f["name"] in ("as_of", "file_mtime"):
                assert f["type"] == "timestamp", (name, f)  # UTC instants (not timestamp_ntz)
        assert "timestamp_ntz" not in json.dumps(types)
    assert open_table(root, "messages").metadata().partition_columns == ["segment"]
    assert open_table(root, "message_keys").metadata().partition_columns == ["segment", "key_bucket"]
    bucket = next(f for f in open_table(root, "message_keys").schema().fields if f.name == "key_bucket")
    assert bucket.metadata["rocketmq.keyBuckets"] == "8"
    segs = read_arrow(root, "segments").to_pylist()
    assert [s["segment"] for s in segs] == sorted(os.listdir(main["store"] / "commitlog"))
    assert sum(s["records"] for s in segs) == len(main["messages"])
    assert all(s["status"] == "live" for s in segs)
    assert segs[0]["bytes_written"] == segs[0]["file_size"] and segs[-1]["bytes_written"] < segs[-1]["file_size"]
    run = read_arrow(root, "runs").to_pylist()
    assert len(run) == 1 and run[0]["mode"] == "full" and run[0]["watermark_segment"] == segs[-1]["segment"]
    assert run[0]["watermark_offset"] == max(m["commitlog_offset"] + m["size"] for m in main["messages"])
    assert read_arrow(root, "anomalies").num_rows == 0


def test_incremental_runs_add_exactly_the_new_rows_and_drop_deleted_segments(spark, tmp_path: Path, capsys) -> None:
    cfg = ts.config()
    store, tables = tmp_path / "store", str(tmp_path / "tables")
    ts.write_store(store, 300, cfg)
    first = run_tables(str(store), tables, cfg, spark=spark, split_size=16384)
    before = read_arrow(tables, "messages")
    # the broker appends: the same commitlog, grown by 300 records; refreshed by the command
    msgs = ts.write_store(store, 600, cfg)
    (tmp_path / "broker.conf").write_text(ts.CONFIG_TEXT)
    assert cli_main(["tables", "--store", str(store), "--tables", tables, "--config", str(tmp_path / "broker.conf"),
                     "--split-size", "16k", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    runs = sorted(read_arrow(tables, "runs").to_pylist(), key=lambda r: r["started_at"])
    assert [r["mode"] for r in runs] == ["full", "incremental"]
    resume = runs[1]["resume_segment"]
    assert resume == runs[0]["watermark_segment"] and resume > "0" * 20
    assert runs[1]["segments_scanned"] < len(os.listdir(store / "commitlog"))
    after = read_arrow(tables, "messages")
    # every column as a fresh full run would have it, no duplicates
    _assert_rows_equal(_normalized(after.sort_by("commitlog_offset").to_pylist()),
                       ts.expected_messages(msgs, cfg, with_body=False), "commitlog_offset")
    keys = read_arrow(tables, "message_keys").sort_by([("index_file_no", "ascending"), ("index_entry", "ascending")])
    _assert_rows_equal(keys.to_pylist(), ts.expected_keys(msgs, cfg), "key")
    names = sorted(set(keys["index_file"].to_pylist()))
    assert names == [n for n, _ in rebuild_in_memory(open_store(str(store), cfg), cfg).index]
    # rows before the resume segment were kept as written, the rest rewritten by the second run
    new = after.filter(pc.equal(after["run_id"], second["run_id"]))
    assert set(new["segment"].to_pylist()) == {s for s in after["segment"].to_pylist() if s >= resume}
    old_kept = before.filter(pc.less(before["segment"], resume))
    assert sorted(old_kept["commitlog_offset"].to_pylist()) == sorted(
        after.filter(pc.equal(after["run_id"], first["run_id"]))["commitlog_offset"].to_pylist())
    assert new.num_rows == sum(1 for m in msgs if m["commitlog_offset"] >= int(resume))
    # the broker deletes the oldest segment: its rows go, its segments row says so
    oldest = sorted(os.listdir(store / "commitlog"))[0]
    os.remove(store / "commitlog" / oldest)
    third = run_tables(str(store), tables, cfg, spark=spark, split_size=16384)
    assert third["segments_deleted"] == [oldest]
    after = read_arrow(tables, "messages")
    assert oldest not in set(after["segment"].to_pylist())
    assert after.num_rows == sum(1 for m in msgs if m["commitlog_offset"] >= cfg.mappedFileSizeCommitLog)
    assert oldest not in set(read_arrow(tables, "message_keys")["segment"].to_pylist())
    segs = {r["segment"]: r for r in read_arrow(tables, "segments").to_pylist()}
    assert segs[oldest]["status"] == "deleted" and segs[oldest]["deleted_run"] == third["run_id"]
    assert all(r["status"] == "live" for n, r in segs.items() if n != oldest)
    for name in ("messages", "message_keys", "segments", "anomalies", "expiry_audit"):
        assert open_table(tables, name).version() == 2, name  # one commit per run
    assert len(open_table(tables, "runs").history()) == 3
    assert sorted(os.listdir(tables)) == sorted(TABLE_NAMES)   # the refreshes' work folders are gone


@pytest.mark.golden
def test_rebuild_publishes_the_anomalies_of_a_corrupted_store(spark, golden_dir: Path, tmp_path: Path) -> None:
    from pipelines.rebuild import run_rebuild
    from store_format.store import load_config_for
    case = golden_dir / "corrupt-4.9.8"
    cfg = load_config_for(str(case / "broker.conf"))
    tables = str(tmp_path / "tables")
    summary = run_rebuild(str(case / "store"), str(tmp_path / "out"), cfg, spark=spark, tables=tables, with_body=True)
    assert summary.tables == tables
    anomalies = read_arrow(tables, "anomalies")
    assert anomalies.schema == ANOMALIES_SCHEMA
    rows = anomalies.to_pylist()
    by_kind: dict[str, list[dict]] = {}
    for r in rows:
        by_kind.setdefault(r["kind"], []).append(r)
    seg = 1 << 20
    # file 0 message 10: a body byte flipped; dispatched anyway
    (crc,) = by_kind["crc_mismatch"]
    assert crc["segment"] == f"{0:020d}"
    msg = read_arrow(tables, "messages", filter=pc.field("commitlog_offset") == crc["commitlog_offset"]).to_pylist()[0]
    assert msg["body_crc_ok"] is False and msg["consume_queue"] and msg["indexed"]
    assert len(msg["body"]) == msg["body_size"] and (zlib.crc32(msg["body"]) & 0x7FFFFFFF) != msg["body_crc"]
    # file 1 message 50: magic 0xDEADBEEF, the rest of the segment skipped
    (magic,) = by_kind["bad_magic"]
    assert magic["segment"] == f"{seg:020d}" and magic["found"] == 0xDEADBEEF
    assert magic["length"] == seg - magic["position"]
    # files 3 and 5: totalSize + 8, the record skipped
    sizes = sorted(by_kind["size_mismatch"], key=lambda r: r["commitlog_offset"])
    assert [r["segment"] for r in sizes] == [f"{3 * seg:020d}", f"{5 * seg:020d}"]
    assert all(r["found"] == r["expected"] + 8 for r in sizes)
    # the same records the sequential reference reports
    ref = rebuild_in_memory(open_store(str(case / "store"), cfg), cfg)
    ref_sizes = sorted((int(a["segment"]), a["position"]) for a in ref.anomalies if a["kind"] == "size_mismatch")
    assert [(int(r["segment"]), r["position"]) for r in sizes] == ref_sizes
    ref_bad = [(int(a["segment"]), a["position"]) for a in ref.anomalies if a["kind"] == "unreadable_record"]
    assert (int(magic["segment"]), magic["position"]) in ref_bad
    # skipped records leave queue offset gaps behind
    assert by_kind.get("queue_offset_gap")
    assert all(r["found"] > r["expected"] for r in by_kind["queue_offset_gap"])
    msgs = read_arrow(tables, "messages", ["dispatch", "consume_queue"])
    assert msgs.num_rows == summary.records
    skipped = pc.sum(pc.starts_with(msgs["dispatch"], "not dispatched: totalSize")).as_py()
    assert skipped == 2
    units = pc.sum(msgs["consume_queue"].cast(pa.int64())).as_py()
    assert units == summary.consume_queue_units
    runs = read_arrow(tables, "runs").to_pylist()
    assert runs[0]["command"] == "rebuild" and runs[0]["anomalies"] == len(rows)
    assert read_arrow(tables, "segments").schema == SEGMENTS_SCHEMA
    assert read_arrow(tables, "runs").schema == RUNS_SCHEMA


def _table_rows(tables: str, name: str, order: list[str], drop: tuple[str, ...] = ("run_id",)) -> list[dict]:
    t = read_arrow(tables, name)
    t = t.drop_columns([c for c in drop if c in t.column_names])
    return t.sort_by([(c, "ascending") for c in order]).to_pylist()


@pytest.mark.golden
@pytest.mark.parametrize("case", ["corrupt-4.9.8", "lmq-4.9.8", "features-4.9.8"])
def test_a_refresh_after_appends_equals_a_full_rebuild(spark, golden_dir: Path, tmp_path: Path, case: str) -> None:
    """The broker appends after a rebuild published the tables; the incremental refresh rescans
    from the watermark's segment, seeded with the queue states, index ordinals and names the first
    run's tables hold.  Every row of ``messages``, ``message_keys`` and ``anomalies``, the segment
    figures and the file inventory of ``expiry_audit`` equal those of one rebuild of the grown store
    (with other split sizes)."""
    from pipelines.rebuild import run_rebuild
    from store_format.store import load_config_for
    store = golden_dir / case / "store"
    cfg = load_config_for(str(golden_dir / case / "broker.conf"))
    by_rebuild, by_refresh = str(tmp_path / "a"), str(tmp_path / "b")
    summary = run_rebuild(str(store), str(tmp_path / "out-a"), cfg, spark=spark, tables=by_rebuild,
                          split_size=196608)
    assert summary.tables == by_rebuild and summary.tables_error is None
    # the store as it was before the last appends: cut at the middle record of a middle segment
    names = sorted(os.listdir(store / "commitlog"))
    msgs = read_arrow(by_rebuild, "messages", ["segment", "position"])
    cut_segment = next(n for n in names[len(names) // 2:] + names if n in set(msgs["segment"].to_pylist()))
    positions = sorted(msgs.filter(pc.equal(msgs["segment"], cut_segment))["position"].to_pylist())
    cut_position = positions[len(positions) // 2]
    grown = tmp_path / "store"
    ts.earlier_store(store, grown, cut_segment, cut_position)
    first = run_rebuild(str(grown), str(tmp_path / "out-b"), cfg, spark=spark, tables=by_refresh, split_size=262144)
    assert first.tables == by_refresh and first.tables_error is None
    # the broker appends: the store grows to its full contents; the refresh publishes the new rows
    for name in names:
        shutil.copyfile(store / "commitlog" / name, grown / "commitlog" / name)
    refreshed = run_tables(str(grown), by_refresh, cfg, spark=spark, split_size=131072)
    runs = sorted(read_arrow(by_refresh, "runs").to_pylist(), key=lambda r: r["started_at"])
    assert [(r["command"], r["mode"]) for r in runs] == [("rebuild", "full"), ("tables", "incremental")]
    assert runs[1]["resume_segment"] == cut_segment == refreshed["resume_segment"]
    kept = read_arrow(by_refresh, "messages", ["segment", "run_id"])
    assert set(kept.filter(pc.less(kept["segment"], cut_segment))["run_id"].to_pylist()) <= {first.run_id}
    assert set(kept.filter(pc.greater_equal(kept["segment"], cut_segment))["run_id"].to_pylist()) == \
        {refreshed["run_id"]}
    for name, order in (("messages", ["commitlog_offset"]), ("message_keys", ["index_file_no", "index_entry"])):
        a, b = _table_rows(by_rebuild, name, order), _table_rows(by_refresh, name, order)
        assert len(a) == len(b) > 0, name
        _assert_rows_equal(b, a, order[0])
    kinds = ["kind", "segment", "commitlog_offset", "topic", "queue_id"]
    assert _table_rows(by_rebuild, "anomalies", kinds) == _table_rows(by_refresh, "anomalies", kinds)
    figures = ["segment", "records", "dispatched", "index_keys", "first_store_time", "last_store_time", "topics",
               "bytes_written"]
    assert (read_arrow(by_rebuild, "segments").select(figures).sort_by("segment").to_pylist()
            == read_arrow(by_refresh, "segments").select(figures).sort_by("segment").to_pylist())
    assert ts.file_inventory(by_refresh) == ts.file_inventory(by_rebuild)


@pytest.mark.golden
def test_index_file_names_in_the_tables_follow_the_time_zone(spark, golden_dir: Path, tmp_path: Path) -> None:
    """With --tz other than UTC, the tables name the index files the rebuild wrote, and the audit's
    inventory names files that are on disk."""
    from pipelines.rebuild import run_rebuild
    from store_format.store import load_config_for
    case = golden_dir / "index-rollover-4.9.8"
    cfg = load_config_for(str(case / "broker.conf"))
    tables, out = str(tmp_path / "tables"), tmp_path / "out"
    run_rebuild(str(case / "store"), str(out), cfg, spark=spark, tables=tables, tz="Asia/Shanghai")
    on_disk = sorted(os.listdir(out / "index"))
    keys = read_arrow(tables, "message_keys", ["index_file"])
    assert sorted(set(keys["index_file"].to_pylist())) == on_disk
    audit = read_arrow(tables, "expiry_audit", ["kind", "name"])
    names = {r["name"] for r in audit.to_pylist() if r["kind"] == "index_file"}
    assert names and names <= set(on_disk)
