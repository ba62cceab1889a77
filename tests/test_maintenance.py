"""OPTIMIZE and VACUUM of the published tables (pipelines.tables.maintenance): readers see the same
rows and find the same keys afterwards, and VACUUM never removes a file a reader may open."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import tables_store as ts

from pipelines.cli import TABLE_CHOICES
from pipelines.cli import main as cli_main
from pipelines.delta import live_files, open_table, open_writer
from pipelines.lookup import lookup_keys
from pipelines.outlock import OutputInUseError, OutputLock
from pipelines.session import delta_classes_available
from pipelines.tables import TABLE_NAMES, run_tables
from pipelines.tables.maintenance import DEFAULT_RETAIN_HOURS, optimize_tables, vacuum_tables
from pipelines.tables.runs import snapshot
from pipelines.tables.schema import DESCRIPTIONS, EXPIRY_AUDIT_SCHEMA

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def published(spark, tmp_path_factory) -> Path:
    """Tables of two runs (300 messages, then the same store grown to 600): the second replaced the
    partitions of the segment the first ended in, and ``runs`` has one small file per run."""
    root = tmp_path_factory.mktemp("maintenance")
    cfg = ts.config()
    ts.write_store(root / "store", 300, cfg)
    run_tables(str(root / "store"), str(root / "tables"), cfg, spark=spark, split_size=16384)
    ts.write_store(root / "store", 600, cfg)
    run_tables(str(root / "store"), str(root / "tables"), cfg, spark=spark, split_size=16384)
    return root / "tables"


@pytest.fixture()
def tables(published: Path, tmp_path: Path) -> str:
    """A copy of the published tables this test may change."""
    shutil.copytree(published, tmp_path / "tables")
    return str(tmp_path / "tables")


def _rows(tables: str) -> dict[str, list[str]]:
    """Every row of every table as the snapshot reads it, order-free."""
    snap = snapshot(tables)
    out = {}
    for name in TABLE_NAMES:
        t = snap.read_arrow(name)
        out[name] = sorted(repr(sorted(r.items())) for r in (t.to_pylist() if t is not None else []))
    return out


def _sample_keys(tables: str) -> list[tuple[str, str]]:
    keys = snapshot(tables).read_arrow("message_keys", ["topic", "key", "kind"])
    pairs = sorted({(t, k) for t, k, kind in zip(*(keys[c].to_pylist() for c in ("topic", "key", "kind")))
                    if kind != "tag"})
    return pairs[::7]


def _answers(tables: str, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], list[int]]:
    return {p: [r["commitlog_offset"] for r in res.rows] for p, res in lookup_keys(tables, pairs).items()}


def _files_on_disk(tables: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), tables) for d, _, fs in os.walk(tables) for f in fs
            if f.endswith(".parquet")}


def _live(tables: str, name: str, version: int | None = None) -> set[str]:
    return {f"{name}/{p}" for p in live_files(tables, name, version)["path"].to_pylist()}


def test_optimize_keeps_the_rows_the_keys_and_validate(tables: str, capsys) -> None:
    from pipelines.validate import validate_tables
    pairs = _sample_keys(tables)
    rows, answers = _rows(tables), _answers(tables, pairs)
    assert sum(map(len, answers.values())) >= len(pairs)
    files = {n: len(_live(tables, n)) for n in TABLE_NAMES}
    assert cli_main(["optimize", "--tables", tables, "--json"]) == 0
    report = {r["table"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(report) == set(TABLE_NAMES)
    after = {n: len(_live(tables, n)) for n in TABLE_NAMES}
    assert all(after[n] <= files[n] for n in TABLE_NAMES), (files, after)
    assert after["runs"] == 1 < files["runs"] and report["runs"]["version"] == open_table(tables, "runs").version()
    # the compaction is a commit of no run: readers take it in, and read the same rows
    snap = snapshot(tables)
    assert snap.version("runs") == report["runs"]["version"]
    assert _rows(tables) == rows
    assert _answers(tables, pairs) == answers
    assert validate_tables(tables, write_docs=False).success


def test_optimize_through_delta_spark_is_a_commit_of_no_run(spark, tables: str) -> None:
    if not delta_classes_available(spark):
        pytest.skip("delta-spark's jars are not cached (make delta-jars)")
    rows = _rows(tables)
    [result] = optimize_tables(tables, ["runs"], spark=spark)
    assert result.files_after == 1 < result.files_before and result.version is not None
    commit = open_table(tables, "runs").history(limit=1)[0]
    assert commit["operation"] == "OPTIMIZE" and "run_id" not in json.loads(commit["userMetadata"])
    assert snapshot(tables).version("runs") == result.version
    assert _rows(tables) == rows


def test_vacuum_at_zero_hours_removes_replaced_files_and_keeps_the_snapshot(tables: str, capsys) -> None:
    pairs = _sample_keys(tables)
    rows, answers = _rows(tables), _answers(tables, pairs)
    readable = set().union(*(_live(tables, n, snapshot(tables).version(n)) for n in TABLE_NAMES))
    replaced = _live(tables, "messages", 0) - _live(tables, "messages")
    assert replaced   # the second run replaced the partition of the segment the first ended in
    assert cli_main(["vacuum", "--tables", tables, "--retain-hours", "0"]) == 0
    out = capsys.readouterr().out
    assert f"messages: removed {len(replaced)} files; kept every file of version 1 and later (what run" in out
    on_disk = _files_on_disk(tables)
    assert not replaced & on_disk
    assert readable <= on_disk
    assert _rows(tables) == rows and _answers(tables, pairs) == answers


def test_vacuum_keeps_the_recorded_version_under_later_commits(tables: str) -> None:
    """A standalone commit after the run (here a rewrite of expiry_audit, as ``audit --write`` makes)
    replaces the files the run recorded; a reader may still open the recorded version, so they stay."""
    recorded = snapshot(tables).recorded_version("expiry_audit")
    assert recorded is not None
    kept = _live(tables, "expiry_audit", recorded)
    same = snapshot(tables).read_arrow("expiry_audit")
    open_writer(None, tables, "test-audit", standalone=True).write("expiry_audit", same, EXPIRY_AUDIT_SCHEMA,
                                                                   description=DESCRIPTIONS["expiry_audit"])
    assert open_table(tables, "expiry_audit").version() == recorded + 1 and not kept & _live(tables, "expiry_audit")
    [result] = vacuum_tables(tables, ["expiry_audit"], retain_hours=0)
    assert result.kept_from == recorded and result.retention_hours == 0
    assert kept <= _files_on_disk(tables)
    assert not set(result.files) & kept and result.files   # the first run's file went


def test_vacuum_dry_run_removes_nothing(tables: str) -> None:
    before = _files_on_disk(tables)
    results = vacuum_tables(tables, retain_hours=0, dry_run=True)
    assert any(r.files for r in results)
    assert _files_on_disk(tables) == before
    assert cli_main(["vacuum", "--tables", tables, "--dry-run"]) == 0   # the default retention: a week
    assert _files_on_disk(tables) == before


def test_user_errors_exit_2_in_one_line(tables: str, tmp_path: Path, capsys) -> None:
    assert set(TABLE_CHOICES) == set(TABLE_NAMES) and DEFAULT_RETAIN_HOURS == 168
    assert cli_main(["optimize", "--tables", str(tmp_path / "none")]) == 2
    assert cli_main(["vacuum", "--tables", tables, "--retain-hours", "-1"]) == 2
    with pytest.raises(SystemExit) as exited:
        cli_main(["vacuum", "--tables", tables, "--table", "nope"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("error: ") for line in err), err
    with OutputLock(tables, "--tables", "another run"), pytest.raises(OutputInUseError):
        optimize_tables(tables)
