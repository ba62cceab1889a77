"""The delta-rs writer without Spark: partial overwrites whose remove actions delta-rs derives (from
a predicate for Arrow rows, from partition filters for Parquet files the tasks wrote), one commit
each, tagged with the run (or marked standalone), on the plain Delta protocol."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake.exceptions import DeltaError

from pipelines.delta import (
    STAGING,
    DeltaRsWriter,
    Where,
    commit_parquet_files,
    commits_after,
    live_files,
    open_table,
    read_arrow,
    run_id_of,
)

TS = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema([("segment", pa.string()), ("offset", pa.int64()), ("at", TS), ("note", pa.string())])


def _rows(segment: str, offsets: list[int], note: str) -> pa.Table:
    at = [dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=o) for o in offsets]
    return pa.table({"segment": [segment] * len(offsets), "offset": offsets, "at": pa.array(at, TS),
                     "note": [note] * len(offsets)}, schema=SCHEMA)


def _content(root: str) -> list[tuple[str, int, str]]:
    t = read_arrow(root, "t").sort_by([("segment", "ascending"), ("offset", "ascending")])
    return [(r["segment"], r["offset"], r["note"]) for r in t.to_pylist()]


def _first(root: str, run: str) -> DeltaRsWriter:
    w = DeltaRsWriter(None, root, run)
    w.write("t", pa.concat_tables([_rows(s, [i * 10, i * 10 + 1], "old") for i, s in enumerate("abcd")]), SCHEMA,
            partition_by=["segment"], description="test table")
    return w


def test_where_as_sql_and_as_deltalake_filters() -> None:
    w = Where((("segment", ">=", "c"), ("segment", "in", ()), ("segment", "in", ("a", "x'y"))))
    assert w.sql() == "`segment` >= 'c' OR `segment` IN ('a', 'x''y')"
    assert w.filters() == [[("segment", ">=", "c")], [("segment", "in", ["a", "x'y"])]]
    assert Where(()).sql() == "false" and Where(()).filters() == []
    with pytest.raises(ValueError):
        Where((("segment", "=", "a"), ("key_bucket", "=", 1)))


def test_arrow_rows_replace_the_partitions_a_where_selects(tmp_path: Path) -> None:
    root = str(tmp_path)
    _first(root, "run-1")
    w = DeltaRsWriter(None, root, "run-2")
    version = w.write("t", pa.concat_tables([_rows("c", [99], "new"), _rows("e", [50], "new")]), SCHEMA,
                      partition_by=["segment"], where=Where((("segment", ">=", "c"), ("segment", "in", ("a",)))))
    assert version == 1
    assert _content(root) == [("b", 10, "old"), ("b", 11, "old"), ("c", 99, "new"), ("e", 50, "new")]
    (commit,) = commits_after(open_table(root, "t"), 0)
    assert run_id_of(commit) == "run-2" and commit["version"] == 1
    assert open_table(root, "t").metadata().description == "test table"
    # a new partition only: an overwrite that removes nothing
    DeltaRsWriter(None, root, "run-3").write("t", _rows("f", [1], "new"), SCHEMA, partition_by=["segment"],
                                             where=Where((("segment", "in", ("f",)),)))
    assert [r[0] for r in _content(root)] == ["b", "b", "c", "e", "f"]
    # rows outside the partitions the where selects are refused (as delta-spark's replaceWhere does)
    with pytest.raises(DeltaError, match="failed validation check"):
        DeltaRsWriter(None, root, "run-4").write("t", _rows("a", [1], "new"), SCHEMA, partition_by=["segment"],
                                                 where=Where((("segment", "=", "b"),)))
    assert open_table(root, "t").version() == 2


def _stage(root: str, run: str, parts: dict[str, pa.Table]) -> list[str]:
    """Parquet files as the tables tasks write them: hive folders under the table's staging folder."""
    paths = []
    for seg, rows in parts.items():
        d = Path(root) / "t" / STAGING / run / f"segment={seg}"
        d.mkdir(parents=True)
        pq.write_table(rows.drop_columns(["segment"]), d / "part-0.parquet", coerce_timestamps="us")
        paths.append(str(d / "part-0.parquet"))
    return paths


def test_staged_files_commit_with_removes_delta_rs_derives(tmp_path: Path) -> None:
    root = str(tmp_path)
    _first(root, "run-1")
    before = {p for p, s in zip(live_files(root, "t")["path"].to_pylist(),
                                live_files(root, "t")["partition.segment"].to_pylist()) if s in ("a", "b")}
    paths = _stage(root, "run-2", {"c": _rows("c", [7, 8, 9], "new"), "d": _rows("d", [5], "new")})
    version = commit_parquet_files(DeltaRsWriter(None, root, "run-2"), "t", SCHEMA, paths, partition_by=["segment"],
                                   where=Where((("segment", ">=", "c"),)))
    assert version == 1
    assert _content(root) == [("a", 0, "old"), ("a", 1, "old"), ("b", 10, "old"), ("b", 11, "old"),
                              ("c", 7, "new"), ("c", 8, "new"), ("c", 9, "new"), ("d", 5, "new")]
    files = live_files(root, "t")
    kept = {p for p, s in zip(files["path"].to_pylist(), files["partition.segment"].to_pylist()) if s in ("a", "b")}
    assert kept == before   # the files of the other partitions stay as they were
    new = files.filter(pa.compute.equal(files["partition.segment"], "c")).to_pylist()
    assert len(new) == 1 and new[0]["num_records"] == 3
    assert (new[0]["min.offset"], new[0]["max.offset"]) == (7, 9)   # statistics from the footer
    assert not (tmp_path / "t" / STAGING).exists()
    (commit,) = commits_after(open_table(root, "t"), 0)
    assert run_id_of(commit) == "run-2"
    assert commit["operationParameters"]["mode"] == "Overwrite"
    proto = open_table(root, "t").protocol()
    assert (proto.min_reader_version, proto.min_writer_version) == (1, 2)
    # the whole table, without a where
    paths = _stage(root, "run-3", {"z": _rows("z", [1], "last")})
    commit_parquet_files(DeltaRsWriter(None, root, "run-3"), "t", SCHEMA, paths, partition_by=["segment"])
    assert _content(root) == [("z", 1, "last")]
    assert open_table(root, "t", 1).version() == 1 and read_arrow(root, "t", version=1).num_rows == 8


def test_standalone_commits_belong_to_no_run(tmp_path: Path) -> None:
    root = str(tmp_path)
    _first(root, "run-1")
    w = DeltaRsWriter(None, root, "audit-1", standalone=True)
    w.write("t", _rows("a", [1], "audit"), SCHEMA, partition_by=["segment"])
    (commit,) = commits_after(open_table(root, "t"), 0)
    assert run_id_of(commit) is None and commit["standalone"] == "audit-1"
    assert run_id_of({"userMetadata": '{"run_id": "spark-run"}'}) == "spark-run"   # delta-spark's form
