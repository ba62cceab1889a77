"""BatchCQ stores (``queue.type=BatchCQ`` topics, 5.x) written by the published RocketMQ store through
the JVM harness in ``tests/broker/`` (scenarios in :mod:`broker_batchcq_scenarios`).

``test_broker_writes_batch_consume_queues`` checks the harness itself: the broker kept
``config/topics.json`` and rebuilt every BatchCQ queue into ``batchconsumequeue/`` with the 46-byte
units the scenario implies (inner batches, single messages, outer batches, transactions), and no
such queue into ``consumequeue/``.  The other tests rebuild each store with ``python -m pipelines
rebuild`` at a 4 KiB split size and compare every file of ``batchconsumequeue/``, ``consumequeue/`` and
``index/`` byte for byte with the broker's.
"""
from __future__ import annotations

import contextlib
import io
import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_batchcq_scenarios import UNIT_SIZE, batchcq_scenarios, expected_units

from store_format.store_layouts import batch_cq_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

# 5.5.1 by default; BATCHCQ_LINES=5.3.3,5.5.1 adds the 5.3.3 stores (some 15 s more on 2 cores)
LINES = bh.lines_from_env("BATCHCQ_LINES", "5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
# phy offset, size, tags code, store time, base offset, batch size, compact offset, reserved (big-endian)
UNIT = struct.Struct(">qiqqqhii")
assert UNIT.size == UNIT_SIZE
_WRITTEN: dict[str, dict] = {}   # scenario name -> its run (bh.write_lines)
_REBUILT: dict[Path, tuple[int, str]] = {}
STORES = bh.Stores({line: batchcq_scenarios(line) for line in LINES}, "batch consume queue store(s)", threads=2)


@pytest.fixture
def written(request, tmp_path_factory) -> tuple[dict, dict, Path]:
    """(scenario, the writer's report, its folder); every line's scenarios written once (beforehand: STORES)."""
    name = request.node.callspec.params["name"]
    if not _WRITTEN:
        _WRITTEN.update(bh.write_lines(request, STORES, tmp_path_factory.mktemp("batchcq")))
    run = _WRITTEN[name]
    sc, report = run["scenario"], run["written"]
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


def _rebuilt(written: tuple[dict, dict, Path], line: str) -> Path:
    """The scenario rebuilt once by ``python -m pipelines rebuild`` (in this process, on the test session's
    Spark context) at the smallest split size, so that most splits start inside a record; the test fails
    with the error line if the rebuild did not exit 0."""
    _sc, _report, d = written
    if d not in _REBUILT:
        from pipelines.cli import main
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["rebuild", "--store", str(d / "store"), "--out", str(d / "ours"),
                         "--config", str(d / "broker.conf"), "--broker-version", BROKER_LINE[line],
                         "--split-size", "4k", "--no-tables"])
        _REBUILT[d] = (code, err.getvalue())
    code, stderr = _REBUILT[d]
    if code != 0:
        why = [ln for ln in stderr.splitlines() if ln.startswith("error:")] or [stderr[-1000:]]
        pytest.fail(f"rebuild exited {code}: {' | '.join(why)}")
    return d


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("line,name", CASES)
@pytest.mark.parametrize("folder", ["batchconsumequeue", "consumequeue"])
def test_queues_match_broker(written, spark, line: str, name: str, folder: str) -> None:
    """Every file of batchconsumequeue/ (several files per queue: 4 or 3 units a file) and of the
    ordinary consumequeue/ beside it, byte for byte."""
    d = _rebuilt(written, line)
    exp, ours = d / "expected" / folder, d / "ours" / folder
    exp_files = _files(exp)
    assert exp_files, f"the broker wrote no {folder}/"
    assert _files(ours) == exp_files, f"{folder} file set differs"
    for rel in exp_files:
        bh.same_bytes((exp / rel).read_bytes(), (ours / rel).read_bytes(), f"{folder}/{rel}")


@pytest.mark.parametrize("line,name", CASES)
def test_index_files_match_broker(written, spark, line: str, name: str) -> None:
    """index/: the outer record's UNIQ_KEY and KEYS only (IndexService.buildIndex), never the keys of the
    messages inside an inner batch's body."""
    d = _rebuilt(written, line)
    exp_idx = sorted((d / "expected" / "index").iterdir())
    our_idx = sorted((d / "ours" / "index").iterdir())
    assert exp_idx and len(our_idx) == len(exp_idx)
    for i, (e, o) in enumerate(zip(exp_idx, our_idx)):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i} ({o.name} vs broker's {e.name})")


@pytest.mark.parametrize("line,name", CASES[:1])
def test_verify_and_repair_batch_consume_queues(written, spark, line: str, name: str, tmp_path: Path) -> None:
    """verify finds the broker's own batchconsumequeue/, consumequeue/ and index/ identical and predicts a
    next start that changes nothing; with one batch queue file truncated, one with flipped bytes and one
    deleted, verify names exactly those files (exit 1) and predicts that the start fails (doLoad refuses
    the truncated file) and that the deleted file's units are dispatched again or lost; repair takes them
    from the rebuild, byte for byte the broker's, and verify is clean again."""
    import json
    import shutil
    _sc, _report, d = written
    store = shutil.copytree(d / "store", tmp_path / "store")
    for area in ("batchconsumequeue", "consumequeue", "index"):
        shutil.copytree(d / "expected" / area, store / area)
    conf = ["--config", str(d / "broker.conf"), "--broker-version", BROKER_LINE[line], "--split-size", "4k"]
    code, text = bh.cli_ok(["verify", "--store", str(store), *conf])
    assert code == 0, text[-3000:]
    assert "verify: identical" in text and "batch consume queue files" in text
    assert "not predicted" not in text and "at the broker's next start (" in text and "START FAILS" not in text
    assert "units missing from their queues that the restart does not write back: 0" in text

    bcq = store / "batchconsumequeue"
    files = _files(bcq)
    queues = sorted({str(Path(f).parent) for f in files}, key=lambda q: -len(list((bcq / q).iterdir())))
    first, second = _files(bcq / queues[0])[:2]
    truncated, flipped = f"{queues[0]}/{first}", f"{queues[0]}/{second}"
    deleted = f"{queues[1]}/{_files(bcq / queues[1])[-1]}"
    gone = sum(1 for p in range(0, (bcq / deleted).stat().st_size, UNIT_SIZE)
               if UNIT.unpack_from((bcq / deleted).read_bytes(), p)[1] > 0)
    data = (bcq / truncated).read_bytes()
    (bcq / truncated).write_bytes(data[:UNIT_SIZE + 10])
    data = bytearray((bcq / flipped).read_bytes())
    data[UNIT_SIZE + 7] ^= 0xFF                  # the second unit's commitlog offset
    (bcq / flipped).write_bytes(bytes(data))
    (bcq / deleted).unlink()

    code, out = bh.cli_ok(["verify", "--store", str(store), *conf, "--json"])
    report = json.loads(out)
    assert code == 1 and not report["identical"]
    got = {(r["path"], r["status"]) for r in report["batch_consume_queue"]}
    assert got == {(truncated, "differs"), (flipped, "differs"), (deleted, "missing")}, got
    assert not report["consume_queue"] and not report["index"]
    flip = next(r for r in report["batch_consume_queue"] if r["path"] == flipped)
    assert flip["differing_units"] == 1 and flip["first_unit"] == 1 and flip["first_position"] == UNIT_SIZE
    assert flip["expected_unit"]["commitlogOffset"] != flip["found_unit"]["commitlogOffset"]
    assert "MappedFileQueue.doLoad" in next(r for r in report["batch_consume_queue"] if r["path"] == truncated)["note"]
    p = report["restart"]
    assert p is not None and not report["restart_note"] and p["start_fails"]
    listed = {(q["layout"], q["queue"]): q for q in p["queues"]}
    failing = [k for k, q in listed.items() if q["load_failure"]]
    assert failing == [("batchconsumequeue", queues[0])], failing
    assert "mapperFileSizeBatchConsumeQueue" in listed[failing[0]]["load_failure"]
    q1 = listed[("batchconsumequeue", queues[1])]
    assert gone > 0 and q1["units_lost"] + q1["units_dispatched_again"] == gone, q1

    code, out = bh.cli_ok(["repair", "--store", str(store), *conf, "--json"])
    assert code == 0, out[-3000:]
    assert sorted(a["path"] for a in json.loads(out)["plan"]["actions"]) == sorted(
        f"batchconsumequeue/{rel}" for rel in (truncated, flipped, deleted))
    for rel in (truncated, flipped, deleted):
        bh.same_bytes((d / "expected" / "batchconsumequeue" / rel).read_bytes(), (bcq / rel).read_bytes(),
                      f"batchconsumequeue/{rel}")
    code, text = bh.cli_ok(["verify", "--store", str(store), *conf])
    assert code == 0, text[-3000:]


def _broker_queue_units(d: Path) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """(unit number, commitlog offset) of every unit in the broker's ``batchconsumequeue/`` (46-byte
    units) and ``consumequeue/`` (20-byte units) files, queue by queue; blank units left out."""
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for folder, size, fmt in (("batchconsumequeue", UNIT_SIZE, UNIT), ("consumequeue", 20, struct.Struct(">qiq"))):
        for qdir in sorted(p for p in (d / "expected" / folder).glob("*/*") if p.is_dir()):
            units = out.setdefault((qdir.parent.name, int(qdir.name)), [])
            for f in sorted(qdir.iterdir()):
                data = f.read_bytes()
                for p in range(0, len(data) - size + 1, size):
                    u = fmt.unpack_from(data, p)
                    if u[1] > 0:
                        units.append(((int(f.name) + p) // size, u[0]))
    return out


def _table_queue_units(tables: Path) -> dict[tuple[str, int], list[tuple[int, int]]]:
    from pipelines.tables.runs import snapshot

    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for r in snapshot(str(tables)).read_arrow("messages").to_pylist():
        if r["consume_queue"]:
            out.setdefault((r["topic"], r["queue_id"]), []).append((r["consume_queue_offset"], r["commitlog_offset"]))
    return {q: sorted(units) for q, units in out.items()}


@pytest.mark.parametrize("line,name", CASES)
def test_tables_refresh_places_units_as_the_broker(written, spark, line: str, name: str, tmp_path: Path) -> None:
    """``tables --store --full``, then the incremental refresh after it (rescanning the last segment;
    with several segments, bcq-b, each batch queue continues from the state the first run's rows
    give): the messages rows put every record in the unit the broker's batchconsumequeue/ or
    consumequeue/ files hold it in, and both runs find the same anomalies."""
    from pipelines.cli import main
    from pipelines.tables.runs import snapshot

    _sc, _report, d = written
    segments = sorted(p.name for p in (d / "store" / "commitlog").iterdir())
    tables = tmp_path / "tables"
    broker = _broker_queue_units(d)
    anomalies = []
    for extra, mode in ((["--full"], "full"), ([], "incremental")):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["tables", "--store", str(d / "store"), "--tables", str(tables), "--config",
                         str(d / "broker.conf"), "--broker-version", BROKER_LINE[line], "--split-size", "4k", *extra])
        assert code == 0, err.getvalue()[-1500:]
        snap = snapshot(str(tables))
        assert snap.run["mode"] == mode
        if mode == "incremental" and len(segments) > 1:   # bcq-b: the queues continue from seeds
            assert snap.run["resume_segment"] == segments[-1]
        ours = _table_queue_units(tables)
        assert set(ours) == set(broker)
        for q, units in broker.items():
            assert ours[q] == units, f"{mode} {q}: {ours[q][:4]} vs broker's {units[:4]}"
        rows = snap.read_arrow("anomalies").drop(["run_id"]).to_pylist()
        anomalies.append(sorted(rows, key=lambda r: sorted((k, str(v)) for k, v in r.items())))
    assert anomalies[0] == anomalies[1]
