"""One set of anomalies in every mode: the same store gives the same findings (kind, segment,
position, detail and the rest of the row) on Spark and ``--engine local``, with and without the
Delta tables, whatever the split size; ``--as-restart`` gives those of the part a restart keeps plus
its own.  Every finding names its segment and position.

Expected findings of the corrupted golden store come from its manifest (what was damaged where),
found by walking the segments record by record with ``totalSize`` alone (the records before each
damage are intact), not from this project's walk.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from pipelines.rebuild import run_rebuild
from pipelines.stages import Progress
from pipelines.tables.runs import snapshot
from store_format.anomalies import REPORTED_KINDS, AnomalyKind
from store_format.store import load_config_for

pytestmark = [pytest.mark.spark]

QUIET = Progress(lambda line: None)
FIELDS = ("kind", "segment", "position", "commitlog_offset", "length", "topic", "queue_id", "expected", "found",
          "detail")


def _rows(anomalies) -> set[tuple]:
    return {tuple(a.get(f) for f in FIELDS) for a in anomalies}


def _nth_record(segment: Path, n: int) -> int:
    """Position of record ``n`` (from 0) of a segment, stepping by totalSize."""
    data = segment.read_bytes()
    pos = 0
    for _ in range(n):
        pos += struct.unpack(">i", data[pos:pos + 4])[0]
    return pos


def _local(case: Path, out: Path, **kw):
    cfg = load_config_for(str(case / "broker.conf"))
    return run_rebuild(str(case / "store"), str(out), cfg, engine="local", processes=1, progress=QUIET, **kw)


def test_corrupted_store_gives_one_set_of_anomalies_in_every_mode(spark, golden_dir: Path, tmp_path: Path) -> None:
    case = golden_dir / "corrupt-4.9.8"
    cfg = load_config_for(str(case / "broker.conf"))
    local = _local(case, tmp_path / "local", split_size=96 * 1024)
    tables = str(tmp_path / "tables")
    with_tables = run_rebuild(str(case / "store"), str(tmp_path / "spark"), cfg, spark=spark, tables=tables,
                              progress=QUIET)
    assert with_tables.tables == tables, with_tables.tables_error
    table_rows = snapshot(tables).read_arrow("anomalies").to_pylist()

    expected = _rows(local.anomalies)
    assert _rows(with_tables.anomalies) == expected                 # Spark, whole segments per split
    assert _rows(table_rows) == expected                            # the anomalies table
    assert with_tables.anomaly_kinds == local.anomaly_kinds
    assert all(a["segment"] is not None and a["position"] is not None for a in local.anomalies)
    assert {a["kind"] for a in local.anomalies} <= set(REPORTED_KINDS)

    # what the manifest says was damaged, where
    seg = case / "store" / "commitlog"
    names = sorted(p.name for p in seg.iterdir())
    at = {(a["kind"], a["segment"], a["position"]): a for a in local.anomalies}
    crc = at[(AnomalyKind.CRC_MISMATCH, names[0], _nth_record(seg / names[0], 10))]
    assert crc["found"] != crc["expected"]
    magic = at[(AnomalyKind.BAD_MAGIC, names[1], _nth_record(seg / names[1], 50))]
    assert magic["found"] == 0xDEADBEEF
    for file_no, n in ((3, 30), (5, 7)):
        size = at[(AnomalyKind.SIZE_MISMATCH, names[file_no], _nth_record(seg / names[file_no], n))]
        assert size["found"] == size["expected"] + 8
    kinds = {a["kind"] for a in local.anomalies}
    assert kinds == {"crc_mismatch", "bad_magic", "size_mismatch", "queue_offset_gap"}
    # each queue loses the rest of segment 1 (16 queues), and each skipped record its queue offset
    gaps = [a for a in local.anomalies if a["kind"] == AnomalyKind.QUEUE_OFFSET_GAP]
    assert len(gaps) == 16 + 2 and all(a["found"] > a["expected"] for a in gaps)

    # --as-restart: the corruption lies before the part a normal recovery checks, so a restart keeps
    # it all: the same findings, and nothing discarded
    restart = _local(case, tmp_path / "restart", as_restart=True)
    assert _rows(restart.anomalies) == expected


@pytest.mark.parametrize("case", ["basic-5.3.3", "lmq-4.9.8"])
def test_clean_stores_have_no_anomaly_in_any_mode(golden_dir: Path, tmp_path: Path, case: str) -> None:
    plain = _local(golden_dir / case, tmp_path / "a", split_size=64 * 1024)
    restart = _local(golden_dir / case, tmp_path / "b", as_restart=True)
    assert plain.anomalies == [] and restart.anomalies == []


def test_as_restart_keeps_the_findings_of_the_part_it_keeps(tmp_path: Path) -> None:
    """A size mismatch in the first segment (outside the last three a normal recovery checks) and a
    flipped body byte in the last: the restart cuts at the latter; the findings before the cut are
    the plain run's, and the restart adds its own, at the cut."""
    from store_format.config import BrokerConfig
    from store_format.corruption import flip_body_byte, set_total_size
    from store_format.writer import CommitLogWriter
    config = BrokerConfig(mappedFileSizeCommitLog=4096, mappedFileSizeConsumeQueue=400, maxHashSlotNum=16,
                          maxIndexNum=64, brokerVersion="4")
    store = tmp_path / "store"
    with CommitLogWriter(str(store), config) as w:
        offsets = [w.append("T", i % 2, body=f"body-{i}".encode(), store_timestamp=1_700_000_000_000 + i)[0]
                   for i in range(400)]
    set_total_size(str(store), offsets[5], delta=8)
    cut = offsets[-20]
    flip_body_byte(str(store), cut)
    plain = run_rebuild(str(store), str(tmp_path / "plain"), config, engine="local", progress=QUIET)
    restart = run_rebuild(str(store), str(tmp_path / "restart"), config, engine="local", as_restart=True,
                          progress=QUIET)
    before = {r for r in _rows(plain.anomalies) if r[3] < cut}
    own = [a for a in restart.anomalies if a["kind"] == AnomalyKind.RESTART_DISCARDS]
    assert len(own) == 1 and own[0]["commitlog_offset"] == cut and own[0]["segment"] is not None
    assert _rows(restart.anomalies) - _rows(own) == before
    assert any(a["kind"] == AnomalyKind.CRC_MISMATCH and a["commitlog_offset"] == cut for a in plain.anomalies)
    json.dumps(restart.as_dict())   # the summary's JSON form holds plain values
