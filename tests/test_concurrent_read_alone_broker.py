"""The records the broker's concurrent reput's batch tasks read alone: inside the damaged bytes, where the
sequential reput reads none (``ConcurrentStop.pieces``), checked against the broker's
``ConcurrentReputMessageService`` (5.x ``enableBuildConsumeQueueConcurrently=true``).  The scenarios and their
cases: :mod:`broker_concurrent_scenarios`; the broker writes them once a session (:mod:`broker_concurrent_runs`).

All with ``CONCURRENT_REPUT_MORE=1`` (the default suite skips them, each saying so): ``skipread``, ``skipreadtwo``,
``skipreadstop``, ``skipreadext``, ``skipreadslave`` (an illegal magic code after a damaged totalSize that lands
the pre-check on a real record further on); ``skipreadhung`` (before a later batch whose task never ends);
``skipreadblank`` (with a blank's empty request from the same task); ``skipreadthen`` (before a later stop).  For
each: the harness itself (where the broker's reput stood, the records its consume queues hold that our rebuild
without the setting does not), ``rebuild`` byte for byte with its summary's row saying it reads those records
alone (and, for ``skipread``, the Delta tables' messages and keys); then ``--engine local`` at small splits, and
``verify`` and ``repair``, on those and on stores with blanks' empty requests and ext files (``blankonext`` in
the default suite, ``blankonmanyext``).

5.5.1 by default; ``CONCURRENT_REPUT_LINES=5.3.3,5.5.1`` adds 5.3.3; ``CONCURRENT_REPUT_ONLY`` (a comma list of
scenario name endings, such as ``skipread,skipreadhung``) writes only those scenarios.
"""
from __future__ import annotations

import json
from pathlib import Path

import broker_concurrent_runs as runs
import broker_harness as bh
import numpy as np
import pytest
from broker_concurrent_runs import damaged_total, files_under, rebuilt_without_the_setting, same_files, summary_json
from broker_concurrent_scenarios import (
    LATER_SEGMENT,
    LINES,
    PIECES_CASES,
    SEGMENT,
    SKIP_READ_CASES,
    SKIPREADBLANK_CASES,
    SKIPREADHUNG_CASES,
    SKIPREADTHEN_CASES,
    VERIFY_CASES,
)

STORES = runs.STORES   # the shared stores: conftest has them written beforehand

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()


@pytest.fixture
def reput(request, tmp_path_factory) -> dict:
    """The scenario as the broker's reput left it, and our rebuild of its store."""
    return runs.run_of(request, tmp_path_factory)


def _cq_offsets(root: Path) -> set[int]:
    """The commitlog offsets of the units in the consume queue files under ``root`` (topic "" queue 0 left out)."""
    unit = np.dtype([("off", ">i8"), ("size", ">i4"), ("tag", ">i8")])
    found: set[int] = set()
    for p in root.rglob("*"):
        if p.is_file() and p.parent != root / "0":
            data = p.read_bytes()
            units = np.frombuffer(data[: len(data) // unit.itemsize * unit.itemsize], dtype=unit)
            found |= {int(o) for o in units["off"][units["size"] > 0]}
    return found


@pytest.mark.parametrize("line,name", SKIP_READ_CASES)
def test_records_read_whole_where_the_sequential_reput_reads_none(reput, line: str, name: str,
                                                                    tmp_path: Path) -> None:
    """``skipread`` and the others: the pre-check's walk lands on a real record past the damaged one, and the task
    parsing the damaged bytes reads records whole there that the sequential reput never reads (it skips the rest of
    the slice at the illegal magic code).  The harness itself: no batch held, the reput at the end (``stop``: at the
    37th put's record, where the pre-check stays), the broker's consume queues holding records of the damaged file
    past the damaged one that our rebuild without the setting (the sequential reput) does not, and none from the
    37th put's record on with ``stop``.  ``rebuild`` writes the broker's files byte for byte (ext files too), its
    summary's row at the damaged record saying it reads those records alone; with the tables (``skipread``, Spark)
    the messages table's units are the broker's."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    what = name.rsplit("-", 1)[-1]
    at, seg = w["damagedRecord"], w["damagedRecord"] - w["damagedRecord"] % SEGMENT
    with open(d / "store" / "commitlog" / f"{seg:020d}", "rb") as f:
        data = f.read()
    ends = [at - seg + w["damagedSize"]]          # the records after the damaged one, by their own totalSizes
    while len(ends) < 6:
        ends.append(ends[-1] + int.from_bytes(data[ends[-1]:ends[-1] + 4], "big"))
    total = int.from_bytes(data[at - seg:at - seg + 4], "big", signed=True)
    assert at - seg + total == ends[2 if what == "skipreadtwo" else 1], (w, total, ends)   # a real record boundary
    stop = what == "skipreadstop"
    assert not w["reputHung"] and w["reputStoodAt"] == (seg + ends[5] if stop else w["maxPhyOffset"]), w
    exp = _cq_offsets(d / "expected" / "consumequeue")
    seq = _cq_offsets(rebuilt_without_the_setting(d, line, tmp_path) / "consumequeue")
    mine = {o for o in exp if at < o < seg + SEGMENT}
    assert mine - seq, (sorted(mine), sorted(seq))
    assert (max(exp) < seg + ends[5]) if stop else (max(exp) > seg + SEGMENT), sorted(exp)
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    if what == "skipreadext":
        ext = d / "expected" / "consumequeue_ext"
        assert files_under(ext) and files_under(d / "ours" / "consumequeue_ext") == files_under(ext)
        for rel in files_under(ext):
            bh.same_bytes((ext / rel).read_bytes(), (d / "ours" / "consumequeue_ext" / rel).read_bytes(), rel)
    rows = json.loads(summary_json(d, tmp_path, line))["anomalies"]
    said = "stops here for good" if stop else "goes past the damaged bytes"
    here = [a for a in rows if said in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in here] == [at] and "alone" in here[0]["detail"], rows
    if what == "skipread" and line == LINES[-1]:
        from pipelines.tables.runs import snapshot
        code, _, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(tmp_path / "t"), "--config",
                               str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[line],
                               "--split-size", "4k", "--tables", str(tmp_path / "tables")])
        assert code == 0, err[-2000:]
        tables = snapshot(str(tmp_path / "tables"))
        table = tables.read_arrow("messages", ["commitlog_offset", "consume_queue"])
        assert {m["commitlog_offset"] for m in table.to_pylist() if m["consume_queue"]} == exp
        same_files(d / "expected", tmp_path / "t", w["indexNamesUnique"])
        keys = tables.read_arrow("message_keys", ["index_file_no", "index_entry", "key_hash", "commitlog_offset"])
        broker = _index_entries(d / "expected" / "index", SCENARIO_SLOTS)
        assert broker and _keys_by_file(keys.to_pylist()) == broker


SCENARIO_SLOTS = 101   # maxHashSlotNum of these scenarios


def _index_entries(index: Path, slots: int) -> list[list[tuple[int, int, int]]]:
    """The entries of the index files under ``index`` (creation order): per file, (entry number, keyHash,
    phyOffset) each, as ``IndexFile.putKey`` writes them from entry 1 after the header and the hash slots."""
    out = []
    for p in sorted(index.iterdir()):
        data = p.read_bytes()
        count = int.from_bytes(data[36:40], "big")
        base = 40 + slots * 4
        out.append([(n, int.from_bytes(data[base + n * 20:base + n * 20 + 4], "big", signed=True),
                     int.from_bytes(data[base + n * 20 + 4:base + n * 20 + 12], "big", signed=True))
                    for n in range(1, count)])
    return [f for f in out if f]


def _keys_by_file(rows: list[dict]) -> list[list[tuple[int, int, int]]]:
    """The ``message_keys`` rows as :func:`_index_entries` gives the broker's entries."""
    files: dict[int, list[tuple[int, int, int]]] = {}
    for r in rows:
        files.setdefault(r["index_file_no"], []).append((r["index_entry"], r["key_hash"], r["commitlog_offset"]))
    return [sorted(files[n]) for n in sorted(files)]


@pytest.mark.parametrize("line,name", SKIPREADBLANK_CASES)
def test_records_read_whole_and_an_empty_request_from_one_task(reput, line: str, name: str, tmp_path: Path) -> None:
    """``skipreadblank``: one task reads records of the damaged bytes whole where the sequential reput reads none and
    then the file's blank's magic code, and ends; the reput goes on at the next file.  The harness itself: no batch
    held, the reput at the end, the broker's consume queues holding records of the damaged file past the damaged one
    that our rebuild without the setting does not, and the empty request's unit of zeros (``consumequeue/0/``).
    ``rebuild`` writes the broker's files byte for byte, its row at the damaged record saying it goes past the damaged
    bytes, reads those records alone and dispatches the empty request."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    at, seg = w["damagedRecord"], w["damagedRecord"] - w["damagedRecord"] % SEGMENT
    assert at + damaged_total(d, at) == seg + SEGMENT, w
    assert not w["reputHung"] and w["reputStoodAt"] == w["maxPhyOffset"], w
    exp = _cq_offsets(d / "expected" / "consumequeue")
    seq = _cq_offsets(rebuilt_without_the_setting(d, line, tmp_path) / "consumequeue")
    assert {o for o in exp if at < o < seg + SEGMENT} - seq and max(exp) > seg + SEGMENT, (sorted(exp), sorted(seq))
    assert (d / "expected" / "consumequeue" / "0" / f"{0:020d}").read_bytes() == bytes(120)
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    rows = [a for a in json.loads(summary_json(d, tmp_path, line))["anomalies"]
            if "goes past the damaged bytes" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in rows] == [at], rows
    assert "alone" in rows[0]["detail"] and "empty request" in rows[0]["detail"], rows


@pytest.mark.parametrize("line,name", SKIPREADTHEN_CASES)
def test_records_read_alone_then_a_later_stop(reput, line: str, name: str, tmp_path: Path) -> None:
    """``skipreadthen``: the reput goes past the damaged bytes (records read alone) to the next file, then stops for
    good at the fifth segment's first record.  The harness itself: no batch held, the reput standing there, the
    broker's consume queues holding records of the damaged file past the damaged one that our rebuild without the
    setting does not, records of the fourth segment, and none from the fifth on.  ``rebuild`` writes the broker's
    files byte for byte, its rows saying it goes past the damaged bytes (reading records alone) and then stops."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    at, seg = w["damagedRecord"], w["damagedRecord"] - w["damagedRecord"] % SEGMENT
    assert not w["reputHung"] and w["reputStoodAt"] == 4 * SEGMENT, w
    exp = _cq_offsets(d / "expected" / "consumequeue")
    seq = _cq_offsets(rebuilt_without_the_setting(d, line, tmp_path) / "consumequeue")
    assert {o for o in exp if at < o < seg + SEGMENT} - seq, (sorted(exp), sorted(seq))
    assert 3 * SEGMENT < max(exp) < 4 * SEGMENT, sorted(exp)
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    rows = json.loads(summary_json(d, tmp_path, line))["anomalies"]
    past = [a for a in rows if "goes past the damaged bytes" in (a["detail"] or "")]
    stop = [a for a in rows if "stops here for good" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in past] == [at] and "alone" in past[0]["detail"], rows
    assert [a["commitlog_offset"] for a in stop] == [4 * SEGMENT], rows


@pytest.mark.parametrize("line,name", PIECES_CASES)
def test_records_read_alone_at_any_split_size_and_engine(reput, line: str, name: str, tmp_path: Path) -> None:
    """The skipread cases and ``skipreadhung`` (the records of the damaged bytes the tasks read alone:
    ``ConcurrentStop.pieces``) rebuilt with ``--engine local`` at 4,096-byte splits and at 5,000-byte ones (splits
    starting inside the pieces and across them, in records the walk resynchronises past): the broker's files byte for
    byte, ext files too."""
    d = Path(reput["scenario"]["dir"])
    for size in ("4096", "5000"):
        out = tmp_path / size
        code, _, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(out), "--config",
                               str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[line], "--no-tables",
                               "--engine", "local", "--split-size", size])
        assert code == 0, err[-2000:]
        same_files(d / "expected", out, reput["written"]["indexNamesUnique"])
        ext = d / "expected" / "consumequeue_ext"
        assert files_under(out / "consumequeue_ext") == files_under(ext)
        for rel in files_under(ext):
            bh.same_bytes((ext / rel).read_bytes(), (out / "consumequeue_ext" / rel).read_bytes(), rel)


@pytest.mark.parametrize("line,name", VERIFY_CASES)
def test_verify_and_repair_where_records_are_read_alone(reput, line: str, name: str, tmp_path: Path) -> None:
    """``verify`` on the store with the broker's own consume queues and index (ext files too): identical (exit 0);
    with the consume queue file of a record the tasks read alone (the last one the broker dispatched) deleted and
    another queue's file cut short (the empty request's, ``consumequeue/0/``, where there is one: ``skipreadblank``,
    ``blankonext``, ``blankonmanyext``),
    ``verify`` names exactly those two (exit 1) and ``repair`` writes them back byte for byte the broker's, after which
    ``verify`` is identical again.  Local engine, 4,096-byte splits."""
    d, w = Path(reput["scenario"]["dir"]), reput["written"]
    areas = ("consumequeue", "consumequeue_ext") if (d / "expected" / "consumequeue_ext").is_dir() else \
        ("consumequeue",)
    store = bh.broker_store(d, tmp_path / "store", areas)
    bh.copy_store(d / ("expected" if w["indexNamesUnique"] else "ours") / "index", store / "index")
    conf = ["--config", str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[line], "--engine", "local",
            "--split-size", "4096"]
    code, out = bh.cli_ok(["verify", "--store", str(store), *conf, "--json"])
    assert code == 0 and json.loads(out)["identical"], out[-3000:]
    unit = np.dtype([("off", ">i8"), ("size", ">i4"), ("tag", ">i8")])
    top, holder = -1, ""
    for rel in files_under(store / "consumequeue"):
        units = np.frombuffer((store / "consumequeue" / rel).read_bytes(), dtype=unit)
        used = units[units["size"] > 0]
        if len(used) and int(used["off"].max()) > top:
            top, holder = int(used["off"].max()), rel
    assert top > w["damagedRecord"], (top, w)
    empty = f"0/{0:020d}"     # the empty request's file (topic "" queue 0), where there is one
    other = empty if (store / "consumequeue" / empty).is_file() else next(
        r for r in files_under(store / "consumequeue") if r.split("/")[:2] != holder.split("/")[:2]
        and (store / "consumequeue" / r).stat().st_size > 20)
    (store / "consumequeue" / holder).unlink()
    data = (store / "consumequeue" / other).read_bytes()
    (store / "consumequeue" / other).write_bytes(data[:20])
    code, out = bh.cli_ok(["verify", "--store", str(store), *conf, "--json"])
    report = json.loads(out)
    assert code == 1 and sorted((r["path"], r["status"]) for r in report["consume_queue"]) == sorted(
        [(holder, "missing"), (other, "differs")]), report["consume_queue"]
    code, out = bh.cli_ok(["repair", "--store", str(store), *conf, "--json"])
    assert code == 0, out[-3000:]
    for rel in (holder, other):
        bh.same_bytes((d / "expected" / "consumequeue" / rel).read_bytes(),
                      (store / "consumequeue" / rel).read_bytes(), rel)
    code, out = bh.cli_ok(["verify", "--store", str(store), *conf, "--json"])
    assert code == 0 and json.loads(out)["identical"], out[-3000:]


def _first_file(d: Path) -> bytes:
    with open(d / "store" / "commitlog" / f"{0:020d}", "rb") as f:
        return f.read()


def _int(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 4], "big", signed=True)


@pytest.mark.parametrize("line,name", SKIPREADHUNG_CASES)
def test_records_read_whole_before_a_later_batch_that_never_ends(reput, line: str, name: str,
                                                                   tmp_path: Path) -> None:
    """``skipreadhung``: the damaged record's batch (past 4 MiB) ends, its task having read records of the damaged
    bytes whole where the sequential reput reads none (skipread's damage), and the next batch's task never ends (its
    last record's totalSize runs past the file).  The harness itself: a batch still held, the pre-check standing at
    that record (the 16th put's); the broker's consume queues hold records past the damaged one that our rebuild
    without the setting does not, up to the last record of the first batch (the 14th put's, read whole), and none from
    the second batch's start (the 15th put's) on.  ``rebuild`` writes the broker's files byte for byte, its row at the
    damaged record saying the reput stops there for good, that the later task never ends and that it reads the
    records alone."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    at, data = w["damagedRecord"], _first_file(d)
    offs = [at + _int(data, at)]      # the 4th put's record (where the damaged totalSize points) to the 16th put's
    while len(offs) < 13:
        offs.append(offs[-1] + _int(data, offs[-1]))
    assert _int(data, at) > w["damagedSize"] and offs[-1] + _int(data, offs[-1]) > LATER_SEGMENT, (w, offs)
    assert w["reputHung"] and w["reputStoodAt"] == offs[-1], (w, offs)
    exp = _cq_offsets(d / "expected" / "consumequeue")
    seq = _cq_offsets(rebuilt_without_the_setting(d, line, tmp_path) / "consumequeue")
    mine = {o for o in exp if o > at}
    assert mine - seq and max(exp) == offs[-3] and offs[-2] > 4 << 20, (sorted(mine), sorted(seq), offs)
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    rows = [a for a in json.loads(summary_json(d, tmp_path, line))["anomalies"]
            if "stops here for good" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in rows] == [at], rows
    assert "never ends" in rows[0]["detail"] and "alone" in rows[0]["detail"], rows
