"""delta-spark and delta-rs write the same tables: one store published through each writer (a full
run, then an incremental one after the broker appended messages: delta-spark's ``replaceWhere``),
compared table by table (schema, partitioning, properties, rows, file statistics and layout), each
writer's tables read by the other, and ``lookup``, ``audit`` and ``validate`` printing the same on
both.  Then delta-spark's own reading: time travel and one commit per table per run in its history.

Needs delta-spark's jars in the test session (``make delta-jars``; the conftest's one session gets
them when they are cached): skipped otherwise."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import tables_store as ts

from pipelines.cli import main as cli_main
from pipelines.delta import live_files, open_table, read_arrow, read_spark, run_id_of, writer_choice
from pipelines.delta_jars import WRITER_CONF
from pipelines.tables import MESSAGE_KEYS_SCHEMA, MESSAGES_SCHEMA, TABLE_NAMES, run_tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WRITERS = ("delta-spark", "delta-rs")
FIRST, SECOND = 300, 420          # messages before and after the broker appended (the segments: 32 KiB)
# columns that differ between two runs of the same store whatever writes them (ids, clocks)
RUN_COLUMNS = {"run_id", "first_run", "last_run", "deleted_run", "as_of", "expires_at", "deleted_at",
               "at_next_cleanup", "reference_time", "started_at", "finished_at", "versions", "timings",
               "tables", "reason"}
SORT_KEYS = {"messages": ["commitlog_offset"], "message_keys": ["segment", "key_hash", "commitlog_offset", "key"],
             "segments": ["segment"], "anomalies": ["segment", "commitlog_offset", "kind"],
             "expiry_audit": ["kind", "name", "consumer_group"], "runs": ["command", "mode", "records_scanned"]}


@pytest.fixture(scope="module")
def published(spark, tmp_path_factory) -> dict:
    """The same store published by each writer, twice (full, then incremental): per writer its
    tables root and both runs' summaries."""
    default = spark.conf.get(WRITER_CONF, None)   # the suite's writer (conftest: delta-rs, the faster)
    spark.conf.set(WRITER_CONF, "auto")
    try:
        if writer_choice(spark)[0] != "delta-spark":
            pytest.skip(f"no delta-spark in the test session ({writer_choice(spark)[1]})")
    finally:
        spark.conf.set(WRITER_CONF, default) if default else spark.conf.unset(WRITER_CONF)
    base = tmp_path_factory.mktemp("delta-spark")
    cfg = ts.config()
    store = base / "store"
    out: dict = {w: {"tables": base / f"tables-{w}", "summaries": []} for w in WRITERS}
    for n in (FIRST, SECOND):
        ts.write_store(store, n, cfg)   # the same first messages: the broker appended to its store
        for w in WRITERS:
            spark.conf.set(WRITER_CONF, w)
            try:
                out[w]["summaries"].append(run_tables(str(store), str(out[w]["tables"]), cfg, spark=spark,
                                                      split_size=16384, key_buckets=4))
            finally:
                spark.conf.set(WRITER_CONF, default) if default else spark.conf.unset(WRITER_CONF)
    out["store"], out["config"] = store, cfg
    return out


def _rows(root: Path, name: str) -> list[dict]:
    t = read_arrow(str(root), name)
    assert t is not None, name
    keep = [c for c in t.column_names if c not in RUN_COLUMNS]
    return t.select(keep).sort_by([(k, "ascending") for k in SORT_KEYS[name]]).to_pylist()


def test_each_run_used_the_writer_asked_for(published) -> None:
    for w in WRITERS:
        assert [s["writer"] for s in published[w]["summaries"]] == [w, w]
        assert [s["messages"] for s in published[w]["summaries"]][0] == FIRST


def test_same_tables_from_both_writers(published) -> None:
    spark_root, rs_root = (published[w]["tables"] for w in WRITERS)
    for name in TABLE_NAMES:
        a, b = open_table(str(spark_root), name), open_table(str(rs_root), name)
        assert json.loads(a.schema().to_json()) == json.loads(b.schema().to_json()), name   # column metadata too
        ma, mb = a.metadata(), b.metadata()
        assert ma.partition_columns == mb.partition_columns, name
        assert ma.configuration == mb.configuration, name
        assert ma.description == mb.description and ma.description, name
        pa_, pb = a.protocol(), b.protocol()
        assert (pa_.min_reader_version, pa_.min_writer_version) == (pb.min_reader_version, pb.min_writer_version) \
            == (1, 2), name
        assert not pa_.reader_features and not pa_.writer_features, name
        assert _rows(spark_root, name) == _rows(rs_root, name), name
    # the rows are the store's: every message written, once
    msgs = read_arrow(str(spark_root), "messages", ["commitlog_offset"])
    assert msgs.num_rows == SECOND
    assert pc.count_distinct(msgs["commitlog_offset"]).as_py() == SECOND


def test_statistics_and_layout_for_the_lookups(published) -> None:
    """delta-spark's files carry min/max of the lookup columns and are laid out as delta-rs's: one
    file per partition, each sorted (key_hash; commitlog offset)."""
    root = str(published["delta-spark"]["tables"])
    for name, cols, order in (("messages", ["commitlog_offset", "store_timestamp"], "commitlog_offset"),
                              ("message_keys", ["key_hash", "commitlog_offset", "store_timestamp"], "key_hash")):
        adds = live_files(root, name)
        assert adds.num_rows > 1
        for c in cols:
            assert adds[f"min.{c}"].null_count == 0 and adds[f"max.{c}"].null_count == 0, (name, c)
        parts = [tuple(r.values()) for r in adds.select([c for c in adds.column_names
                                                         if c.startswith("partition.")]).to_pylist()]
        assert len(parts) == len(set(parts)), f"{name}: one file per partition"
        for path in adds["path"].to_pylist():
            values = pq.read_table(f"{root}/{name}/{path}", columns=[order])[order].to_pylist()
            assert values == sorted(values), (name, path)


def test_each_writer_reads_the_others_tables(published, spark) -> None:
    spark_root, rs_root = (str(published[w]["tables"]) for w in WRITERS)
    # delta-rs read delta-spark's tables above (_rows); delta-spark reads delta-rs's
    for name, schema in (("messages", MESSAGES_SCHEMA), ("message_keys", MESSAGE_KEYS_SCHEMA)):
        a, b = (read_spark(spark, root, name, schema).drop("run_id").toArrow() for root in (spark_root, rs_root))
        order = [(k, "ascending") for k in SORT_KEYS[name]]
        assert a.num_rows == b.num_rows > 0
        assert a.sort_by(order).to_pylist() == b.sort_by(order).to_pylist(), name


def _cli(args: list[str], capsys) -> tuple[int, str]:
    code = cli_main(args)
    return code, capsys.readouterr().out


def test_lookup_audit_validate_print_the_same(published, capsys) -> None:
    roots = [str(published[w]["tables"]) for w in WRITERS]
    runs = [f"{s['run_id']}" for w in WRITERS for s in published[w]["summaries"]]

    def same(args: list[str]) -> str:
        outs = [_cli([args[0], "--tables", r, *args[1:]], capsys) for r in roots]
        texts = [(code, _scrub(text, runs + roots)) for code, text in outs]
        assert texts[0] == texts[1], args
        return texts[0][1]

    assert "Aa" in same(["lookup", "--topic", "TopicA", "--key", "Aa"])
    # the file statistics prune as on delta-rs's tables: one key bucket file of each segment
    segments = read_arrow(roots[0], "segments").num_rows
    code, text = _cli(["lookup", "--tables", roots[0], "--topic", "TopicA", "--key", "Aa"], capsys)
    assert f"message_keys: read {segments} of {segments * 4} file(s)" in text
    assert same(["lookup", "--msg-id", f"{0xA0000000 + 5:032X}"]).count(f"{0xA0000000 + 5:032X}") == 1
    same(["audit", "--as-of", "2024-03-02T00:00:00Z"])
    report = json.loads(same(["validate", "--json"]))
    assert report["success"] and report["expectations"] > 0


def _scrub(text: str, words: list[str]) -> str:
    """Output without the run ids, table roots and timings that differ between two publications."""
    import re
    for w in sorted(words, key=len, reverse=True):
        text = text.replace(w, "<x>")
    # how many files a lookup read: the writers lay the rows out in different numbers of files
    text = re.sub(r"read \d+ of \d+ file\(s\)", "read <n> file(s)", text)
    text = re.sub(r'"page": "[^"]*"', '"page": "<p>"', text)   # Data Docs pages are named by time
    text = re.sub(r'"seconds": [0-9.]+', '"seconds": 0', text)
    return re.sub(r"[0-9.]+ s\b", "<t> s", text)


def test_time_travel_and_history(published, spark) -> None:
    root = str(published["delta-spark"]["tables"])
    first, second = (s["run_id"] for s in published["delta-spark"]["summaries"])
    # one commit per table per run, the run id in userMetadata
    for name in TABLE_NAMES:
        hist = spark.sql(f"DESCRIBE HISTORY delta.`{root}/{name}`").orderBy("version").collect()
        assert [run_id_of({"userMetadata": h["userMetadata"]}) for h in hist] == [first, second], name
    at_first = json.loads(read_arrow(root, "runs").sort_by("finished_at").to_pylist()[0]["versions"])["tables"]
    v = at_first["messages"]
    old = read_spark(spark, root, "messages", MESSAGES_SCHEMA, version=v)
    assert old.count() == FIRST and read_spark(spark, root, "messages", MESSAGES_SCHEMA).count() == SECOND
    # by time: as the tables were when the first run finished (its commits done, the second's to come)
    when = read_arrow(root, "runs").sort_by("finished_at").to_pylist()[0]["finished_at"]
    assert read_spark(spark, root, "messages", MESSAGES_SCHEMA, timestamp=when).count() == FIRST
    # the same through delta-rs's file list (no Delta classes needed)
    files = open_table(root, "messages", v).file_uris()
    assert read_spark(spark, root, "messages", MESSAGES_SCHEMA, files=files).count() == FIRST
