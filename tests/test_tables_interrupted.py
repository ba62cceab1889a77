"""The tables of a run, all or none: a publication stopped after some tables stays invisible to the
readers (lookup, audit, validation figures), which keep answering from the previous complete run; the
next run completes it and says so.

The stop is a writer that raises before a given table (what a killed driver leaves: the tables
committed before it, no ``runs`` row), for the incremental refresh (``python -m pipelines tables``,
stopped before ``segments``) and for a rebuild publishing its tables (stopped before
``expiry_audit``).  The store grows between the runs (300, then 600 messages), so the rows of the
stopped run differ from the previous run's.
"""
from __future__ import annotations

import logging
from pathlib import Path

import pyarrow.compute as pc
import pytest
import tables_store as ts

from pipelines.audit import run_audit
from pipelines.cli import main as cli_main
from pipelines.delta import DeltaRsWriter, DeltaSparkWriter, open_table, read_arrow, run_id_of
from pipelines.lookup import lookup_key
from pipelines.tables import TABLE_NAMES, run_tables
from pipelines.tables.runs import PUBLICATION_ORDER, snapshot
from pipelines.validate import compute_figures

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LATE = 450     # a message of the grown store only: TopicA, keys k450 and shared2
EARLY = 100    # a message of both stores: TopicA, keys k100 and shared2


class _Stop(RuntimeError):
    """The driver dies here."""


def _stop_before(monkeypatch, table: str) -> None:
    """Make the writer (delta-rs, or delta-spark when the session has its jars) raise when the run
    comes to ``table``."""
    for cls in (DeltaRsWriter, DeltaSparkWriter):
        def stopping(self, name, *args, _write=cls.write, **kwargs):
            if name == table:
                raise _Stop(f"stopped before {name}")
            return _write(self, name, *args, **kwargs)
        monkeypatch.setattr(cls, "write", stopping)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _newest(tables: str) -> dict[str, int | None]:
    return {n: (dt.version() if (dt := open_table(tables, n)) is not None else None) for n in TABLE_NAMES}


def _offset_of(msgs: list[dict], i: int) -> int:
    uniq = ts.message(i)["properties"]["UNIQ_KEY"]
    return next(m["commitlog_offset"] for m in msgs if m["properties"]["UNIQ_KEY"] == uniq)


def _offsets(res) -> list[int]:
    return [r["commitlog_offset"] for r in res.rows]


def test_the_publication_order_names_every_table() -> None:
    assert sorted(PUBLICATION_ORDER) == sorted(TABLE_NAMES) and PUBLICATION_ORDER[-1] == "runs"


def test_an_interrupted_refresh_stays_invisible_and_the_next_run_completes_it(spark, tmp_path: Path, monkeypatch,
                                                                               capsys) -> None:
    cfg = ts.config()
    store, tables = tmp_path / "store", str(tmp_path / "tables")
    early = ts.write_store(store, 300, cfg)
    first = run_tables(str(store), tables, cfg, spark=spark, split_size=16384)
    published = _newest(tables)
    figures_before = compute_figures(tables).tables.set_index("table")["rows"].to_dict()

    msgs = ts.write_store(store, 600, cfg)
    _stop_before(monkeypatch, "segments")
    with pytest.raises(_Stop):
        run_tables(str(store), tables, cfg, spark=spark, split_size=16384)
    monkeypatch.undo()

    # the stopped run committed messages and message_keys, nothing else
    newest = _newest(tables)
    assert [n for n in TABLE_NAMES if newest[n] != published[n]] == ["messages", "message_keys"]
    assert read_arrow(tables, "messages").num_rows == 600   # its rows are there, in the newest version
    stopped = run_id_of(open_table(tables, "messages").history(1)[0])
    assert stopped and stopped != first["run_id"]

    # readers: the previous complete run, every table at the version it recorded
    snap = snapshot(tables)
    assert snap.run["run_id"] == first["run_id"]
    assert {n: snap.version(n) for n in TABLE_NAMES} == published
    (it,) = snap.interrupted()
    assert (it.run_id, it.committed, it.missing) == (stopped, ("messages", "message_keys"),
                                                     ("segments", "anomalies", "expiry_audit", "runs"))
    assert not lookup_key(tables, "TopicA", f"k{LATE}").rows
    res = lookup_key(tables, "TopicA", "shared2")
    assert _offsets(res) == sorted(m["commitlog_offset"] for m in early if m["topic"] == "TopicA"
                                   and "shared2" in m["properties"]["KEYS"].split(" ") and m["sys_flag"] & 0xC != 12)
    assert res.files_total["messages"] == len(open_table(tables, "messages", published["messages"]).file_uris())
    rows, _ = run_audit(tables, ts.T0)
    assert set(rows["run_id"].to_pylist()) == {first["run_id"]}
    assert compute_figures(tables).tables.set_index("table")["rows"].to_dict() == figures_before

    # the next run completes it, and says so in its summary and in the log
    conf = tmp_path / "broker.conf"
    conf.write_text(ts.CONFIG_TEXT)
    assert cli_main(["tables", "--store", str(store), "--tables", tables, "--config", str(conf),
                     "--split-size", "16k"]) == 0
    out, err = capsys.readouterr()
    note = (f"completed the interrupted publish of run {stopped}: messages, message_keys were committed, "
            "segments, anomalies, expiry_audit, runs were missing")
    assert note in out
    assert f"completing the interrupted publish of run {stopped}" in err
    snap = snapshot(tables)
    assert not snap.interrupted()
    runs = sorted(read_arrow(tables, "runs").to_pylist(), key=lambda r: r["finished_at"])
    assert [r["run_id"] for r in runs] == [first["run_id"], snap.run["run_id"]] and snap.run["run_id"] != stopped
    assert snap.run["mode"] == "incremental"
    assert {n: snap.version(n) for n in TABLE_NAMES} == _newest(tables)
    assert _offsets(lookup_key(tables, "TopicA", f"k{LATE}")) == [_offset_of(msgs, LATE)]
    assert _offsets(lookup_key(tables, "TopicA", f"k{EARLY}")) == [_offset_of(msgs, EARLY)]
    got = snap.read_arrow("messages").sort_by("commitlog_offset")
    assert got["commitlog_offset"].to_pylist() == [m["commitlog_offset"] for m in msgs]
    keys = snap.read_arrow("message_keys")
    assert keys.num_rows == len(ts.expected_keys(msgs, cfg))
    assert sum(r["records"] for r in snap.read_arrow("segments").to_pylist()) == 600

    # a standalone commit (audit --write) is seen on top of the complete run
    assert cli_main(["audit", "--tables", tables, "--as-of", "2024-03-10T02:00:00Z", "--write"]) == 0
    capsys.readouterr()
    snap = snapshot(tables)
    assert snap.version("expiry_audit") == _newest(tables)["expiry_audit"] and not snap.interrupted()
    as_of = snap.read_arrow("expiry_audit")["as_of"]
    assert {t.isoformat() for t in as_of.to_pylist()} == {"2024-03-10T02:00:00+00:00"}


def test_an_interrupted_rebuild_publish_is_completed_by_the_next_rebuild(spark, tmp_path: Path, monkeypatch) -> None:
    from pipelines.rebuild import run_rebuild
    cfg = ts.config()
    store, out, tables = tmp_path / "store", str(tmp_path / "out"), str(tmp_path / "tables")
    early = ts.write_store(store, 300, cfg)
    first = run_rebuild(str(store), out, cfg, spark=spark, tables=tables, split_size=16384)
    assert first.tables == tables and first.tables_error is None
    published = _newest(tables)
    audit_before, _ = run_audit(tables, ts.T0)

    msgs = ts.write_store(store, 600, cfg)
    _stop_before(monkeypatch, "expiry_audit")
    stopped = run_rebuild(str(store), out, cfg, spark=spark, tables=tables, split_size=16384, overwrite=True)
    monkeypatch.undo()
    assert stopped.tables is None and "stopped before expiry_audit" in (stopped.tables_error or "")
    newest = _newest(tables)
    assert [n for n in TABLE_NAMES if newest[n] != published[n]] == ["messages", "message_keys", "segments",
                                                                     "anomalies"]

    snap = snapshot(tables)
    assert snap.run["run_id"] == first.run_id
    (it,) = snap.interrupted()
    assert it.run_id == stopped.run_id and it.missing == ("expiry_audit", "runs")
    # the newest segments table is the stopped run's; readers keep the complete run's
    assert sum(read_arrow(tables, "segments")["records"].to_pylist()) == 600
    assert sum(snap.read_arrow("segments")["records"].to_pylist()) == 300
    audit_now, _ = run_audit(tables, ts.T0)
    assert audit_now.to_pylist() == audit_before.to_pylist()
    assert not lookup_key(tables, "TopicA", f"k{LATE}").rows
    assert _offsets(lookup_key(tables, "TopicA", f"k{EARLY}")) == [_offset_of(early, EARLY)]

    log = _Collect()
    logging.getLogger("pipelines.tables.runs").addHandler(log)
    try:
        done = run_rebuild(str(store), out, cfg, spark=spark, tables=tables, split_size=16384, overwrite=True)
    finally:
        logging.getLogger("pipelines.tables.runs").removeHandler(log)
    assert done.tables == tables and done.tables_error is None
    assert any(f"completing the interrupted publish of run {stopped.run_id}: messages, message_keys, segments, "
               "anomalies were committed, expiry_audit, runs were missing" in line for line in log.lines)
    # and the rebuild's own summary says so
    assert [r["run_id"] for r in done.tables_recovered] == [stopped.run_id]
    assert (f"completed the interrupted publish of run {stopped.run_id}: messages, message_keys, segments, "
            "anomalies were committed, expiry_audit, runs were missing") in done.render()
    snap = snapshot(tables)
    assert snap.run["run_id"] == done.run_id and not snap.interrupted()
    runs = read_arrow(tables, "runs")
    assert sorted(runs["run_id"].to_pylist()) == sorted([first.run_id, done.run_id])
    assert sum(snap.read_arrow("segments")["records"].to_pylist()) == 600
    assert _offsets(lookup_key(tables, "TopicA", f"k{LATE}")) == [_offset_of(msgs, LATE)]
    audit = snap.read_arrow("expiry_audit")
    assert set(audit["run_id"].to_pylist()) == {done.run_id}
    live = audit.filter(pc.equal(audit["kind"], "segment"))
    assert live.num_rows == len(list((store / "commitlog").iterdir()))
