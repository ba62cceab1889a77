"""The summary (text and JSON), the runs row and the tables tell the same counts: records, dispatched,
anomalies by kind (issue 8: they disagreed on a corrupt store)."""
from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from pipelines.rebuild import run_rebuild
from pipelines.tables.runs import snapshot
from store_format.store import load_config_for


@pytest.mark.golden
def test_summary_runs_and_tables_agree_on_a_corrupt_store(spark, golden_dir: Path, tmp_path: Path) -> None:
    case = golden_dir / "corrupt-4.9.8"
    tables = str(tmp_path / "tables")
    summary = run_rebuild(str(case / "store"), str(tmp_path / "out"), load_config_for(str(case / "broker.conf")),
                          spark=spark, tables=tables)
    assert summary.tables == tables
    snap = snapshot(tables)
    run = snap.run
    anomalies = snap.read_arrow("anomalies")
    segments = snap.read_arrow("segments")
    messages = snap.read_arrow("messages", ["dispatch"])
    by_kind = dict(collections.Counter(anomalies["kind"].to_pylist()))
    # anomalies: the summary's text, its JSON, the runs row and the table
    assert summary.anomaly_kinds == by_kind and len(by_kind) >= 3   # the store holds several kinds of damage
    assert summary.anomaly_count == run["anomalies"] == anomalies.num_rows
    as_json = json.loads(json.dumps(summary.as_dict(), default=str))
    assert as_json["anomaly_count"] == anomalies.num_rows and as_json["anomaly_kinds"] == by_kind
    assert "end_of_data" not in {a["kind"] for a in as_json["anomalies"]}
    text = summary.render()
    assert f"anomalies          {anomalies.num_rows} (" in text
    for kind, n in by_kind.items():
        assert f"{kind} {n}" in text
    # records and dispatched
    dispatched = sum(1 for d in messages["dispatch"].to_pylist() if not d.startswith("not dispatched"))
    assert summary.records == run["messages_written"] == messages.num_rows == sum(segments["records"].to_pylist())
    assert summary.dispatched == dispatched == sum(segments["dispatched"].to_pylist())


@pytest.mark.golden
def test_a_clean_store_has_no_anomaly_in_text_or_json(golden_dir: Path, tmp_path: Path) -> None:
    case = golden_dir / "basic-4.9.8"
    summary = run_rebuild(str(case / "store"), str(tmp_path / "out"), load_config_for(str(case / "broker.conf")),
                          engine="local")
    assert summary.anomalies == [] and summary.as_dict()["anomaly_count"] == 0
    assert "anomalies          0\n" in summary.render()
