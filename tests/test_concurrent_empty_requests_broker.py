"""Blanks' empty requests the broker's concurrent reput dispatches, and the reput going on past damaged bytes,
checked against the broker's ``ConcurrentReputMessageService`` (5.x ``enableBuildConsumeQueueConcurrently=true``).
The scenarios and their cases: :mod:`broker_concurrent_scenarios`; the broker writes them once a session
(:mod:`broker_concurrent_runs`).  The unit tests of the empty requests: :mod:`test_concurrent_empty_requests`.

* Every task holding the damaged bytes ends and the pre-check's walk goes on into the next file (``blankon``: the
  task reads the blank's magic code, whose empty request the broker dispatches into the consume queue of topic ""
  queue 0, ``consumequeue/0/``; ``blankonext``, the same with consume queue ext files: the empty request's ext unit
  in ``consumequeue_ext/0/``, its address the unit's tagsCode): the reput goes on there to the end, and
  ``rebuild`` writes the broker's files byte for byte.  ``CONCURRENT_REPUT_MORE=1`` adds ``rollon`` (no blank read
  by the task), ``blankonrdbidx`` (5.5: the RocksDB index, which takes nothing from the empty request) and
  ``blankonfirst`` (the only record before it in its slice put its keys at offset 0).
* With ``CONCURRENT_REPUT_MORE=1`` (the default suite skips them, each saying so): ``blankononly`` (a blank's
  empty request is all the store dispatches: the index file it creates), ``blankontwo`` (two damaged spots: two
  stops), ``blankonrdbcq`` (a RocksDB consume queue: the empty request's unit and max entry), and the empty-request
  endings ``blankonmanyext`` (more than one ext file holds), ``blankonfirstreq`` (the store's first dispatched
  request, records following) and ``blankonidxfull`` (dispatched last after the key that filled an index file
  exactly).

5.5.1 by default; ``CONCURRENT_REPUT_LINES=5.3.3,5.5.1`` adds 5.3.3; ``CONCURRENT_REPUT_ONLY`` (a comma list of
scenario name endings) writes only those scenarios.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import broker_concurrent_runs as runs
import broker_harness as bh
import pytest
from broker_concurrent_runs import (
    cq_max_offset,
    differ,
    files_under,
    rebuilt_without_the_setting,
    same_files,
    summary_json,
)
from broker_concurrent_scenarios import (
    BLANKONONLY_CASES,
    BLANKONTWO_CASES,
    EMPTY_ENDING_CASES,
    IDX_FULL,
    ONWARD_CASES,
    RDBCQ_CASES,
    SEGMENT,
)

STORES = runs.STORES   # the shared stores: conftest has them written beforehand

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()


@pytest.fixture
def reput(request, tmp_path_factory) -> dict:
    """The scenario as the broker's reput left it, and our rebuild of its store."""
    return runs.run_of(request, tmp_path_factory)


@pytest.mark.parametrize("line,name", ONWARD_CASES)
def test_the_reput_goes_on_past_damaged_bytes(reput, line: str, name: str, tmp_path: Path) -> None:
    """Every batch task holding the damaged bytes ends and the pre-check's walk goes on into the next file: the
    broker's concurrent reput went on there to the end (the harness itself: no batch held, reputFromOffset at
    the end, queues holding records past the damaged segment); ``rebuild`` writes the broker's files byte for
    byte, the consume queue of topic "" queue 0 (``consumequeue/0/``, the blank's empty request) included where
    the task read the blank (``blankon``; not ``rollon``), and its summary's row at the damaged record says the
    reput goes past it, none that it stops; the store rebuilt without the setting is not what the broker wrote
    (the comparison can fail)."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    what = name.rsplit("-", 1)[-1]
    at, seg = w["damagedRecord"], w["damagedRecord"] - w["damagedRecord"] % SEGMENT
    with open(d / "store" / "commitlog" / f"{seg:020d}", "rb") as f:
        data = f.read()
    total = int.from_bytes(data[at - seg:at - seg + 4], "big", signed=True)
    if what.startswith("blankon"):   # as it says: it reaches the file's end; the blank after the record(s)
        blank = at - seg + w["damagedSize"]
        while data[blank + 4:blank + 8] != bytes.fromhex("cbd43194"):
            blank += int.from_bytes(data[blank:blank + 4], "big")
        assert at - seg + total == SEGMENT and (SEGMENT - blank) % 8 == 0, (w, total)
        assert (what == "blankonfirst") == (at == 225 and blank != at - seg + w["damagedSize"]), (w, blank)
    else:                   # it reaches the blank
        assert data[at - seg + total + 4:at - seg + total + 8] == bytes.fromhex("cbd43194"), (w, total)
    assert not w["reputHung"] and w["reputStoodAt"] == w["maxPhyOffset"], w
    assert cq_max_offset(d / "expected" / "consumequeue") >= seg + 2 * SEGMENT
    assert (d / "expected" / "consumequeue" / "0" / f"{0:020d}").is_file() == what.startswith("blankon")
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    if what == "blankonext":   # the ext files byte for byte, the empty request's (topic "" queue 0) among them
        exp = d / "expected" / "consumequeue_ext"
        assert (exp / "0" / f"{0:020d}").is_file() and files_under(d / "ours" / "consumequeue_ext") == files_under(exp)
        for rel in files_under(exp):
            bh.same_bytes((exp / rel).read_bytes(), (d / "ours" / "consumequeue_ext" / rel).read_bytes(), rel)
    if what == "blankonrdbidx":   # the RocksDB index: the broker's key/value set in every family
        from pipelines.index_rocksdb import read_message_rocksdb
        dbs = []
        for which in ("expected", "ours"):   # copies: a read-only opening may still write a LOG
            shutil.copytree(d / which / "rocksdbstore", tmp_path / which)
            dbs.append(read_message_rocksdb(tmp_path / which))
        assert dbs[0]["default"] and dbs[0] == dbs[1]
    out = summary_json(d, tmp_path, line)
    rows = json.loads(out)["anomalies"]
    assert not any("stops here for good" in (a["detail"] or "") for a in rows), rows
    past = [a for a in rows if "goes past the damaged bytes" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in past] == [at], rows
    assert ("empty request" in past[0]["detail"]) == what.startswith("blankon"), past
    assert differ(d / "expected", rebuilt_without_the_setting(d, line, tmp_path))


@pytest.mark.parametrize("line,name", BLANKONONLY_CASES)
def test_empty_requests_that_are_all_the_store_dispatches(reput, line: str, name: str, tmp_path: Path) -> None:
    """``blankononly``: the task parsing the damaged first record goes on at its end and reads the blank's magic
    code at the first segment's end, nothing else, and ends; the pre-check's walk goes on into the second segment,
    whose first record's magic code is illegal: the broker dispatched the blank's empty request alone
    (``consumequeue/0/`` and no other queue) and its ``IndexService`` created the first index file for it, with
    no key; ``rebuild`` writes the broker's files byte for byte (the index file's too), its summary saying where
    the reput goes past the damaged bytes and where it stops for good."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    assert not w["reputHung"] and w["damagedRecord"] == 0 and w["damagedSize"] == SEGMENT - 136, w
    assert sorted(p.name for p in (d / "expected" / "consumequeue").iterdir()) == ["0"]
    assert len(list((d / "expected" / "index").iterdir())) == 1
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(d / "expected", d / "ours", True)
    rows = json.loads(summary_json(d, tmp_path, line))["anomalies"]
    assert [a["commitlog_offset"] for a in rows if "stops here for good" in (a["detail"] or "")] == [SEGMENT], rows
    assert [a["commitlog_offset"] for a in rows if "goes past the damaged bytes" in (a["detail"] or "")] == [0], rows


@pytest.mark.parametrize("line,name", BLANKONTWO_CASES)
def test_two_damaged_spots(reput, line: str, name: str, tmp_path: Path) -> None:
    """``blankontwo``: the store's first record made to reach the first segment's end (the task reads the records
    after it whole, and the blank's magic code there), the second segment's first record's magic code illegal: two
    stops, the reput going past the first and stopping for good at the second; ``rebuild`` writes the broker's
    files byte for byte, the records read whole and the empty request's ``consumequeue/0/`` among them."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    assert not w["reputHung"] and w["damagedRecord"] == 0, w
    assert (d / "expected" / "consumequeue" / "0" / f"{0:020d}").is_file()
    assert len([p for p in (d / "expected" / "consumequeue").iterdir()]) > 1   # records read whole, dispatched
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    rows = json.loads(summary_json(d, tmp_path, line))["anomalies"]
    assert [a["commitlog_offset"] for a in rows if "stops here for good" in (a["detail"] or "")] == [SEGMENT], rows


def _rocksdb_cq(db: Path, copy: Path) -> dict[str, dict[bytes, bytes]]:
    """A RocksDB consume queue's families (read from a copy: a read-only opening may still write a LOG)."""
    from pipelines.rocksdb_cq import read_rocksdb_cq
    shutil.copytree(db, copy)
    return {family: dict(kv) for family, kv in read_rocksdb_cq(copy).items()}


@pytest.mark.parametrize("line,name", RDBCQ_CASES)
def test_the_empty_request_in_a_rocksdb_consume_queue(reput, line: str, name: str, tmp_path: Path) -> None:
    """``blankon`` with a RocksDB consume queue: the broker's reput went on past the damaged bytes to the end (the
    harness itself) and its database holds the empty request's unit (topic "", queue 0, queue offset 0: (0, 0, 0,
    0)) and max entry (0, 0); ours holds the broker's key/value set but for the unit of the record at commitlog
    offset 0, which the broker's reput here dispatched from offset 0 and a rebuild into an empty database never
    does (``rocksdb_cq.undispatch_first_record``); the store rebuilt without the setting has no such unit."""
    from store_format.rocksdb_cq import cq_key, cq_value, offset_key, offset_value
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    assert not w["reputHung"] and w["reputStoodAt"] == w["maxPhyOffset"], w
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    exp, ours = (_rocksdb_cq(d / which / "consumequeue", tmp_path / which) for which in ("expected", "ours"))
    empty, empty_max = cq_key("", 0, 0), offset_key("", 0)
    assert exp["default"][empty] == cq_value(0, 0, 0, 0) and exp["offset"][empty_max] == offset_value(0, 0)
    assert max(int.from_bytes(v[:8], "big") for v in exp["default"].values()) > w["damagedRecord"] + 2 * SEGMENT
    only = {k: v for k, v in exp["default"].items() if k not in ours["default"]}
    assert len(only) == 1 and next(iter(only.values()))[:8] == bytes(8), only
    assert ours["default"].get(empty) == cq_value(0, 0, 0, 0)   # the one left out is the record's, not this
    assert {k: v for k, v in exp["default"].items() if k not in only} == ours["default"]
    assert exp["offset"] == ours["offset"]
    out = summary_json(d, tmp_path, line)
    past = [a for a in json.loads(out)["anomalies"] if "goes past the damaged bytes" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in past] == [w["damagedRecord"]] and "empty request" in past[0]["detail"]
    seq = _rocksdb_cq(rebuilt_without_the_setting(d, line, tmp_path) / "consumequeue", tmp_path / "seq-read")
    assert empty not in seq["default"] and seq["default"] != ours["default"]



def _index_count(p: Path) -> int:
    """An index file's header's indexCount (1 in a file with no entry)."""
    return int.from_bytes(p.read_bytes()[36:40], "big")


@pytest.mark.parametrize("line,name", EMPTY_ENDING_CASES)
def test_the_empty_request_endings(reput, line: str, name: str, tmp_path: Path) -> None:
    """Blanks' empty requests where they end otherwise: ``blankonmanyext`` (two of them, one ext unit a file: the
    broker wrote two ext files in ``consumequeue_ext/0/``), ``blankonfirstreq`` (the store's first dispatched
    request, records following: the broker's reput went on to the end, ``consumequeue/0/`` and the later records'
    queues written, one index file), ``blankonidxfull`` (dispatched last, after the key that filled the first index
    file: the broker wrote a second index file with no entry).  The harness itself for each, then ``rebuild``: the
    broker's files byte for byte (ext files and index files included)."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    what = name.rsplit("-", 1)[-1]
    exp = d / "expected"
    assert not w["reputHung"] and (exp / "consumequeue" / "0" / f"{0:020d}").is_file(), w
    index = sorted((exp / "index").iterdir())
    if what == "blankonmanyext":
        assert w["reputStoodAt"] == w["maxPhyOffset"], w
        assert files_under(exp / "consumequeue_ext" / "0") == [f"{0:020d}", f"{24:020d}"]
    elif what == "blankonfirstreq":
        assert w["damagedRecord"] == 0 and w["reputStoodAt"] == w["maxPhyOffset"], w
        assert len(index) == 1 and cq_max_offset(exp / "consumequeue") > 2 * SEGMENT
    else:
        assert w["reputStoodAt"] == 2 * SEGMENT, w
        assert [_index_count(p) for p in index] == [int(IDX_FULL[line]), 1]
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(exp, d / "ours", w["indexNamesUnique"])
    ext = exp / "consumequeue_ext"
    assert files_under(d / "ours" / "consumequeue_ext") == files_under(ext)
    for rel in files_under(ext):
        bh.same_bytes((ext / rel).read_bytes(), (d / "ours" / "consumequeue_ext" / rel).read_bytes(), rel)
