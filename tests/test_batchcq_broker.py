"""BatchCQ stores (``queue.type=BatchCQ`` topics, 5.x) written by the published RocketMQ store through
the JVM harness in ``tests/broker/`` (scenarios in :mod:`broker_batchcq_scenarios`).

What is checked today: the harness itself (the broker kept ``config/topics.json``, rebuilt every
BatchCQ queue into ``batchconsumequeue/`` with the 46-byte units the scenario implies, and no such
queue into ``consumequeue/``), and that ``python -m pipelines rebuild`` refuses the store with one
line and exit code 2 (``store_format.store_layouts``), writing nothing.
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import broker_harness as bh
import pytest
from broker_batchcq_scenarios import UNIT_SIZE, batchcq_scenarios, expected_units

from store_format.store_layouts import batch_cq_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow]

if bh.missing_tools():
    pytest.skip(f"broker harness not available: {bh.missing_tools()} (it needs a JDK and Maven)",
                allow_module_level=True)

LINES = ("5.3.3", "5.5.1")
REPO = Path(__file__).resolve().parent.parent
# phy offset, size, tags code, store time, base offset, batch size, compact offset, reserved (big-endian)
UNIT = struct.Struct(">qiqqqhii")
assert UNIT.size == UNIT_SIZE
_WRITTEN: dict[str, tuple[dict, dict]] = {}


@pytest.fixture
def written(request, tmp_path_factory) -> tuple[dict, dict, Path]:
    """(scenario, the writer's report, its folder); each line's scenarios written once, in one JVM."""
    line, name = request.node.callspec.params["line"], request.node.callspec.params["name"]
    if line not in _WRITTEN:
        try:
            bh.build()
        except bh.HarnessUnavailable as e:
            pytest.skip(f"broker harness not available: {e}")
        work = tmp_path_factory.mktemp(f"batchcq-{line}")
        scs = [{**sc, "dir": str(work / sc["name"])} for sc in batchcq_scenarios(line)]
        reports = bh.write_stores(line, scs, work, threads=2)
        _WRITTEN[line] = ({sc["name"]: sc for sc in scs}, reports)
    scs, reports = _WRITTEN[line]
    sc = scs[name]
    report = reports.get(name, {"ok": False, "error": "no report"})
    assert report.get("ok"), f"{name}: the broker's writer failed: {report.get('error')}"
    return sc, report, Path(sc["dir"])


CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line in LINES for sc in batchcq_scenarios(line)]


@pytest.mark.parametrize("line,name", CASES)
def test_broker_writes_batch_consume_queues(written, line: str, name: str) -> None:
    sc, report, d = written
    assert set(report["putStatuses"]) == {"PUT_OK"}, report["putStatuses"]
    topics_json = d / "store" / "config" / "topics.json"
    assert sorted(batch_cq_topics(topics_json.read_text())) == [f"{t} (queue.type=BatchCQ)" for t in sc["batchTopics"]]
    file_size = int(sc["config"]["mapperFileSizeBatchConsumeQueue"])
    want = expected_units(sc)
    expected = d / "expected"
    assert want and all(q for q in want.values())
    # no BatchCQ topic in consumequeue/, and no other topic in batchconsumequeue/
    assert not any((expected / "consumequeue" / t).exists() for t in sc["batchTopics"])
    bcq = expected / "batchconsumequeue"
    found = {(t.name, int(q.name)) for t in bcq.iterdir() for q in t.iterdir()}
    assert found == set(want), (sorted(found), sorted(want))
    for (topic, qid), units in want.items():
        files = sorted((bcq / topic / str(qid)).iterdir())
        # files named by their byte position in the queue (20 digits), from 0, each of full size
        assert [f.name for f in files] == [f"{i * file_size:020d}" for i in range(len(files))]
        assert all(f.stat().st_size == file_size for f in files)
        data = b"".join(f.read_bytes() for f in files)
        got = [UNIT.unpack_from(data, p) for p in range(0, len(data) - UNIT_SIZE + 1, UNIT_SIZE)]
        got = [u for u in got if u[1] > 0]   # the zeros after the last unit of the last file
        assert len(got) == len(units), (topic, qid, len(got), len(units))
        assert len(files) == -(-len(units) // (file_size // UNIT_SIZE))
        assert [(u[4], u[5], u[2]) for u in got] == units, (topic, qid)
        assert all(u[6] == -1 and u[7] == 0 for u in got)             # compact offset INVALID_POS, reserved 0
        assert [u[0] for u in got] == sorted(u[0] for u in got)         # commitlog order
        last = units[-1]
        assert report["batchQueueMaxOffsets"][f"{topic}/{qid}"] == last[0] + last[1]


@pytest.mark.parametrize("line,name", CASES)
def test_rebuild_refuses_a_batchcq_store(written, line: str, name: str, tmp_path: Path) -> None:
    """Not rebuilt yet (issue 22 item 2): refused with one line naming BatchCQ, exit code 2, nothing written.
    The byte-for-byte comparison of batchconsumequeue/ comes with the implementation."""
    sc, _report, d = written
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, "-m", "pipelines", "rebuild", "--store", str(d / "store"), "--out", str(out),
                           "--config", str(d / "broker.conf")], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=300)
    errors = [s for s in proc.stderr.splitlines() if s.startswith("error:")]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    assert len(errors) == 1 and "BatchCQ" in errors[0], proc.stderr
    assert all(t in errors[0] for t in sc["batchTopics"]), errors[0]
    assert not (out / "consumequeue").exists() and not (out / "batchconsumequeue").exists()
