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
    every segment)."""
    out, summary = golden_rebuilt(case)
    cq, index = _read_output(out)
    _assert_matches(_manifest(golden_dir, case), cq, index)
    oracle = _manifest(golden_dir, case).get("oracle", {})
    if "dispatchedMessages" in oracle:
        assert summary.dispatched == oracle["dispatchedMessages"]
    assert not list(out.glob(".rebuild-*")), "staging left behind"
