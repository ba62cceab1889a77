"""Every store in ../shared/golden rebuilt from its commitlog alone must match the files a real
broker wrote, byte for byte (consume queue paths and bytes; index files in name order)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from store_format.config import load_broker_config
from store_format.reput import rebuild_in_memory
from store_format.store import open_store

pytestmark = pytest.mark.golden


def _cases() -> list[str]:
    from conftest import GOLDEN_DIR
    if not GOLDEN_DIR.is_dir():
        return []
    return sorted(p.name for p in GOLDEN_DIR.iterdir() if (p / "manifest.json").is_file())


CASES = _cases()
DAMAGED = {"corrupt-4.9.8"}   # cases whose manifest says the store was damaged after the broker wrote it


def _manifest(golden_dir: Path, case: str) -> dict:
    return json.loads((golden_dir / case / "manifest.json").read_text())


def _config(golden_dir: Path, case: str):
    manifest = _manifest(golden_dir, case)
    version = "5" if str(manifest["broker_version"]).startswith("5") else "4"
    return load_broker_config((golden_dir / case / "broker.conf").read_text(), brokerVersion=version)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _assert_matches(manifest: dict, consumequeue: dict[str, bytes], index: list[tuple[str, bytes]]) -> None:
    expected_cq = manifest["consumequeue"]
    assert sorted(consumequeue) == sorted(expected_cq), "consume queue file set differs"
    for path, meta in expected_cq.items():
        data = consumequeue[path]
        assert len(data) == meta["size"], path
        assert _sha(data) == meta["sha256"], f"consumequeue/{path} differs"
    names = [n for n, _ in index]
    assert names == sorted(names) and len(set(names)) == len(names), "index names must be unique and sorted"
    assert len(index) == len(manifest["index"]), "index file count differs"
    for i, ((name, data), meta) in enumerate(zip(index, manifest["index"])):
        assert len(data) == meta["size"], f"index file #{i} ({name}) size"
        assert _sha(data) == meta["sha256"], f"index file #{i} ({name}) differs from broker's {meta['name']}"


def _read_output(out: Path) -> tuple[dict[str, bytes], list[tuple[str, bytes]]]:
    cq = {str(p.relative_to(out / "consumequeue")): p.read_bytes()
          for p in (out / "consumequeue").rglob("*") if p.is_file()}
    index = [(p.name, p.read_bytes()) for p in sorted((out / "index").iterdir()) if p.is_file()]
    return cq, index


def test_golden_cases_present(golden_dir):
    assert len(CASES) >= 9, f"expected the nine shared golden cases, found {CASES}"


@pytest.mark.parametrize("case", CASES)
def test_sequential_reference_matches_broker(golden_dir, case):
    config = _config(golden_dir, case)
    result = rebuild_in_memory(open_store(str(golden_dir / case / "store"), config), config)
    _assert_matches(_manifest(golden_dir, case), result.consumequeue, result.index)


@pytest.mark.parametrize("case", CASES)
def test_spark_rebuild_matches_broker(golden_rebuilt, golden_dir, case):
    """As an operator runs it: broker.conf alone (the broker line is detected from the records), with
    the tables published (:func:`conftest.golden_rebuilt`; split sizes that resynchronize inside
    every segment).  The tables validate green, but for the corrupted store, whose tables fail on
    its anomalies alone (the manifest's damage)."""
    from pipelines.validate import validate_tables
    out, summary = golden_rebuilt(case)
    cq, index = _read_output(out)
    _assert_matches(_manifest(golden_dir, case), cq, index)
    oracle = _manifest(golden_dir, case).get("oracle", {})
    if "dispatchedMessages" in oracle:
        assert summary.dispatched == oracle["dispatchedMessages"]
    assert not list(out.glob(".rebuild-*")), "staging left behind"
    tables = str(out / "tables")
    assert summary.tables == tables, summary.tables_error
    report = validate_tables(tables, write_docs=False)
    if case in DAMAGED:
        assert not report.success
        assert {f.suite.rsplit(".", 1)[1] for f in report.failures} == {"anomalies"}, \
            [f.line() for f in report.failures]
    else:
        assert report.success, [f.line() for f in report.failures]


def test_validate_goes_red_when_a_key_file_leaves_the_delta_log(spark, golden_dir, tmp_path):
    """A clean store's tables, then one message_keys file removed from the Delta log (a partition
    delete): the keys of the index files it held are gone, and validate says so."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from pipelines.rebuild import run_rebuild
    from pipelines.validate import validate_tables
    case = "index-rollover-4.9.8"
    config = load_broker_config((golden_dir / case / "broker.conf").read_text())
    tables = str(tmp_path / "tables")
    run_rebuild(str(golden_dir / case / "store"), str(tmp_path / "out"), config, spark=spark, tables=tables)
    assert validate_tables(tables, write_docs=False).success
    keys = DeltaTable(f"{tables}/message_keys")
    added = pa.table(keys.get_add_actions(flatten=True)).to_pylist()
    assert len(added) > 1
    seg, bucket = added[0]["partition.segment"], added[0]["partition.key_bucket"]
    assert keys.delete(f"segment = '{seg}' AND key_bucket = {bucket}")["num_removed_files"] == 1
    report = validate_tables(tables, write_docs=False)
    assert not report.success
    failed = {(f.suite.rsplit(".", 1)[1], f.column) for f in report.failures}
    assert ("segments", "index_keys,key_rows") in failed and ("runs", "keys_written,key_rows") in failed
    assert any(seg in f.observed for f in report.failures)
