"""Where the broker's reput stops on a damaged commitlog, 5.x ``enableBuildConsumeQueueConcurrently=true``
(``ConcurrentReputMessageService``) against the sequential ``ReputMessageService``, and what ``rebuild`` writes
and reports there.  The scenarios and their cases: :mod:`broker_concurrent_scenarios`; the broker writes them once
a session (:mod:`broker_concurrent_runs`).

* The damages (``magic``, ``negsize``, ``bigsize``, ``segstart``): the broker's concurrent reput stood still AT the
  damaged record, the sequential one went on to the end; ``rebuild`` with the store's broker.conf writes the
  broker's consume queue and index files byte for byte, with and without the setting, its summary (``--json``,
  and the anomalies table of a run with the Delta tables) saying where the concurrent reput stops for good; the
  broker's files with the setting differ from those without it, and so do our rebuilds of the same store: the
  comparison can fail; ``--as-restart`` cuts at the damaged record instead.
* Records the pre-check accepts (``sizeplus``: the batch task's parse of the next record's first bytes leaves 4
  bytes and never ends, so nothing from the batch's start, the third segment's, on is dispatched; ``reach12``:
  the task reads the next record whole, then never ends on 5.5.1, while on 5.3.3 it ends and the next record is
  dispatched, and nothing after it; ``reach20``: the task ends on both lines, the next record dispatched;
  ``toend``: the pre-check's walk goes on into the next file, but the task reads the blank's magic code and then
  never ends; ``CONCURRENT_REPUT_MORE=1``: ``sizeminus``, ``size12``) and a DLedger store converted in place
  (``dledger-converted``, and ``dledger-plain`` with ``CONCURRENT_REPUT_MORE=1``: the old commitlog is dispatched,
  the DLedger entries never): where the broker stood, and ``rebuild`` byte for byte with its row there.
* On a slave (``slaveblank``, and ``slavezero`` with ``CONCURRENT_REPUT_MORE=1``): the sequential reput stays at
  the record for good, the concurrent one rolls to the next file and goes on, each rebuilt byte for byte.
* ``lastblank``: the concurrent reput stood AT the damaged blank, and nothing after it is dispatched by either reput
  or by ``rebuild``, whose row there says so (its sequential control with ``CONCURRENT_REPUT_MORE=1``).
* ``laterhung`` (``CONCURRENT_REPUT_MORE=1``): the damaged record's batch, past 4 MiB, ends with a blank's magic
  code read and the next batch's task never ends: the first batch's requests, its empty request among them, are
  dispatched, nothing after.

5.5.1 by default; ``CONCURRENT_REPUT_LINES=5.3.3,5.5.1`` adds 5.3.3; ``CONCURRENT_REPUT_ONLY`` (a comma list of
scenario name endings) writes only those scenarios.
"""
from __future__ import annotations

import json
from pathlib import Path

import broker_concurrent_runs as runs
import broker_harness as bh
import pytest
from broker_concurrent_runs import (
    cq_max_offset,
    damaged_total,
    differ,
    files_under,
    rebuilt_without_the_setting,
    same_files,
    summary_json,
)
from broker_concurrent_scenarios import (
    ACCEPTED_CASES,
    DAMAGE_CASES,
    DAMAGES,
    LASTBLANK_CASES,
    LATER_BODY,
    LATERHUNG_CASES,
    LINES,
    SEGMENT,
    SLAVE_CASES,
)

STORES = runs.STORES   # the shared stores: conftest has them written beforehand

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

# the accepted records where the batch task reads the next record whole and then ends, so that the broker
# dispatches it: ``reach20`` (the junk after it read 8 bytes at a time up to the batch's end: a queueId read as a
# small totalSize, its flag as a magic code), and ``reach12`` on 5.3.3
READ_WHOLE = {("5.3.3", "reach12"), ("5.3.3", "reach20"), ("5.5.1", "reach20")}


# where the broker's batch task never ends: ``sizeplus`` always; ``reach12`` on 5.5.1 (after the next record, read
# whole, the next one's magic code read as a negative totalSize, 4 bytes left); ``toend``: the blank's magic code
# read, then the zeros after it 8 bytes at a time, which in this store's third segment leaves fewer than 8 at the
# end; ``sizeminus`` as its record's bytes fall (5.3.3 and 5.5.1 alike here)
HUNG = {"5.3.3": ("sizeplus", "toend", "sizeminus"), "5.5.1": ("sizeplus", "reach12", "toend", "sizeminus", "size12")}


@pytest.fixture
def reput(request, tmp_path_factory) -> dict:
    """The scenario as the broker's reput left it, and our rebuild of its store."""
    return runs.run_of(request, tmp_path_factory)


@pytest.fixture
def written(request, tmp_path_factory) -> dict[str, dict]:
    """Every scenario's run (writer failures fail the test)."""
    return runs.every_run(request, tmp_path_factory)


@pytest.mark.parametrize("line,name", DAMAGE_CASES)
def test_where_the_broker_reput_stood_still(reput, line: str, name: str) -> None:
    """The harness itself: the concurrent reput stood still at the damaged record for good, the sequential one
    at the end (``bigsize`` too: checkMessageAndReturnSize gives -1 for a totalSize past the buffer, 5.3.3 and
    5.5.1, and the master skips the rest of the slice)."""
    w = reput["written"]
    stops = "-creput-" in name
    assert w["reputStoodAt"] == (w["damagedRecord"] if stops else w["maxPhyOffset"]), w
    assert w["damagedRecord"] < w["maxPhyOffset"] - SEGMENT, "the damage is not in the middle of the commitlog"


@pytest.mark.parametrize("line,name", DAMAGE_CASES)
def test_rebuild_matches_the_broker_reput(reput, line: str, name: str) -> None:
    """``rebuild`` of the damaged store (its broker.conf) writes the broker's files byte for byte; with the
    setting its summary says where the concurrent reput stops for good."""
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    d = Path(reput["scenario"]["dir"])
    same_files(d / "expected", d / "ours", reput["written"]["indexNamesUnique"])


@pytest.mark.parametrize("line,name", [c for c in DAMAGE_CASES if "-creput-" in c.values[1]])
def test_the_concurrent_stop_is_reported(reput, line: str, name: str, tmp_path: Path) -> None:
    """The rebuild's summary (``--json``) has the walk's finding at the damaged record, saying the concurrent
    reput stops there for good."""
    d = Path(reput["scenario"]["dir"])
    out = summary_json(d, tmp_path, line)
    summary = json.loads(out)
    at = [a for a in summary["anomalies"] if a["commitlog_offset"] == reput["written"]["damagedRecord"]]
    assert len(at) == 1 and "stops here for good" in at[0]["detail"], summary["anomalies"]
    assert not any(a["commitlog_offset"] > reput["written"]["damagedRecord"] for a in summary["anomalies"])


@pytest.mark.parametrize("line,what", [(ln, w) for ln in LINES for w in DAMAGES])
def test_the_two_reputs_write_different_files(written, line: str, what: str, tmp_path: Path) -> None:
    """What makes the comparison above able to fail: the broker's concurrent reput wrote other files than its
    sequential one on the same puts and damage, and so does our rebuild of the concurrent store without the
    setting."""
    conc, seq = (Path(written[f"{line}-{r}-{what}"]["scenario"]["dir"]) for r in ("creput", "sreput"))
    assert (conc / "store" / "commitlog").is_dir() and (seq / "store" / "commitlog").is_dir()
    assert differ(conc / "expected", seq / "expected")
    ours = rebuilt_without_the_setting(conc, line, tmp_path)
    assert differ(conc / "expected", ours)
    # ... and what it wrote is the broker's sequential reput's on the other store (the same puts): its consume
    # queues byte for byte (the index files hold the store times, which differ between the two stores)
    exp = seq / "expected" / "consumequeue"
    assert files_under(ours / "consumequeue") == files_under(exp)
    for rel in files_under(exp):
        bh.same_bytes((exp / rel).read_bytes(), (ours / "consumequeue" / rel).read_bytes(), rel)


@pytest.mark.parametrize("line", LINES)
def test_as_restart(written, line: str, tmp_path: Path) -> None:
    """``--as-restart`` of the damaged store: the 5.x restart's recovery checks what it dispatches and cuts at
    the damaged record, so the reput never meets it (no row about the concurrent reput; the broker's
    concurrent reput wrote the same consume queues, having stopped there)."""
    r = written[f"{line}-creput-magic"]
    d, at = Path(r["scenario"]["dir"]), r["written"]["damagedRecord"]
    code, out, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(tmp_path / "r"), "--as-restart",
                             "--json", "--config", str(d / "broker.conf"), "--broker-version",
                             bh.BROKER_VERSION_ARG[line], "--no-tables", "--engine", "local"])
    assert code == 0, err[-2000:]
    rows = json.loads(out)["anomalies"]
    assert [(a["kind"], a["commitlog_offset"]) for a in rows] == [("restart_discards", at)], rows
    exp = d / "expected" / "consumequeue"
    assert files_under(tmp_path / "r" / "consumequeue") == files_under(exp)
    for rel in files_under(exp):
        bh.same_bytes((exp / rel).read_bytes(), (tmp_path / "r" / "consumequeue" / rel).read_bytes(), rel)


def _dledger_start(d: Path) -> int:
    """Where the DLedger data starts in the scenario's store (its first data file's name)."""
    return min(int(p.name) for p in (d / "store").glob("dledger-*/data/*") if p.name.isdigit())


@pytest.mark.parametrize("line,name", ACCEPTED_CASES)
def test_where_the_broker_stood_on_accepted_records(reput, line: str, name: str) -> None:
    """The harness itself: the pre-check stood where the damaged totalSize points; where the batch task never
    ended (a page still held: ``sizeplus`` always, ``sizeminus`` as its record's bytes fall) the broker's consume
    queues hold nothing from the damaged record's segment on (the batch started there), else nothing from the
    damaged record on; DLedger: every task ended, the reput stood at the first DLedger entry, and the
    consume queues hold the old commitlog's records only (none for ``plain``)."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    top = cq_max_offset(d / "expected" / "consumequeue")
    if "-dledger-" in name:
        start = _dledger_start(d)
        assert not w["reputHung"] and w["reputStoodAt"] == start, w
        assert top < start and (top >= 0) == name.endswith("converted"), top
    else:
        what = name.rsplit("-", 1)[-1]
        assert w["reputHung"] == (what in HUNG.get(line, ())), w
        assert w["reputStoodAt"] == w["damagedRecord"] + damaged_total(d, w["damagedRecord"]), w
        if (line, what) in READ_WHOLE:   # the next record, read whole by the task, and nothing after it
            assert not w["reputHung"] and top == w["damagedRecord"] + w["damagedSize"], (w, top)
        else:
            assert 0 <= top < (w["damagedRecord"] - w["damagedRecord"] % SEGMENT if w["reputHung"]
                               else w["damagedRecord"])

@pytest.mark.parametrize("line,name", ACCEPTED_CASES)
def test_rebuild_matches_the_broker_on_accepted_records(reput, line: str, name: str, tmp_path: Path) -> None:
    """``rebuild`` writes the broker's files byte for byte, and its summary's row at the damaged record (the
    first DLedger entry) says where the concurrent reput stops for good."""
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    d = Path(reput["scenario"]["dir"])
    if (d / "expected" / "consumequeue").is_dir() and files_under(d / "expected" / "consumequeue"):
        same_files(d / "expected", d / "ours", reput["written"]["indexNamesUnique"])
    else:
        assert not files_under(d / "ours" / "consumequeue")
        assert [p.read_bytes() for p in sorted((d / "expected" / "index").iterdir())] == \
            [p.read_bytes() for p in sorted((d / "ours" / "index").iterdir())]
    out = summary_json(d, tmp_path, line)
    at = _dledger_start(d) if "-dledger-" in name else reput["written"]["damagedRecord"]
    found = json.loads(out)["anomalies"]
    rows = [a for a in found if "stops here for good" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in rows] == [at], rows
    assert [a["commitlog_offset"] for a in found].count(at) == 1, found
    assert ("never ends" in rows[0]["detail"]) == reput["written"]["reputHung"], rows
    assert ("of the damaged bytes whole" in rows[0]["detail"]) == ((line, name.rsplit("-", 1)[-1]) in READ_WHOLE), rows


@pytest.mark.parametrize("line", LINES)
def test_an_accepted_record_without_the_setting(written, line: str, tmp_path: Path) -> None:
    """What makes the comparison above able to fail on ``sizeplus``: the same store rebuilt without the setting
    (the sequential reput skips the damaged record and the rest of its segment, and goes on) is not what the
    broker's concurrent reput wrote."""
    d = Path(written[f"{line}-creput-sizeplus"]["scenario"]["dir"])
    assert differ(d / "expected", rebuilt_without_the_setting(d, line, tmp_path))


def test_the_tables_hold_the_same_findings(written, tmp_path: Path) -> None:
    """With the Delta tables (Spark): the run's findings, the concurrent stop's row included, are the
    anomalies table's, and the files are those of the run without tables."""
    from pipelines.tables.runs import snapshot
    line = LINES[-1]
    r = written[f"{line}-creput-magic"]
    d = Path(r["scenario"]["dir"])
    code, out, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(tmp_path / "o"), "--config",
                             str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[line], "--split-size",
                             "4k", "--tables", str(tmp_path / "tables"), "--json"])
    assert code == 0, err[-2000:]
    rows = json.loads(out)["anomalies"]
    assert any("stops here for good" in a["detail"] for a in rows)
    table = snapshot(str(tmp_path / "tables")).read_arrow("anomalies").to_pylist()
    assert sorted((a["kind"], a["commitlog_offset"], a["detail"]) for a in table) == \
        sorted((a["kind"], a["commitlog_offset"], a["detail"]) for a in rows)
    same_files(d / "expected", tmp_path / "o", r["written"]["indexNamesUnique"])


@pytest.mark.parametrize("line,name", SLAVE_CASES)
def test_a_slave_at_a_record_the_pre_check_reads_as_zero(reput, line: str, name: str, tmp_path: Path) -> None:
    """On a slave, at a record the sequential ``checkMessageAndReturnSize`` cannot read and the pre-check reads
    as 0 (``rollNextFile``): the broker's sequential reput stood AT it for good, its concurrent one went on in
    the next file to the end (the harness itself); ``rebuild`` writes the broker's files byte for byte either
    way, with no row saying the concurrent reput stops; and the concurrent store rebuilt without the setting
    is not what the broker's concurrent reput wrote (the comparison can fail)."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    concurrent = "-creput-" in name
    assert not w["reputHung"] and w["reputStoodAt"] == (w["maxPhyOffset"] if concurrent else w["damagedRecord"]), w
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    out = summary_json(d, tmp_path, line)
    rows = json.loads(out)["anomalies"]
    assert [a["commitlog_offset"] for a in rows][:1] == [w["damagedRecord"]], rows
    assert not any("stops here for good" in (a["detail"] or "") for a in rows), rows
    if concurrent:
        assert cq_max_offset(d / "expected" / "consumequeue") > w["damagedRecord"] + SEGMENT
        assert differ(d / "expected", rebuilt_without_the_setting(d, line, tmp_path))


@pytest.mark.parametrize("line,name", LASTBLANK_CASES)
def test_a_damaged_blank_in_the_last_segment(reput, line: str, name: str, tmp_path: Path) -> None:
    """A blank in the last segment whose totalSize runs past the data but not past its file: the broker's
    concurrent reput stood AT it for good (its pre-check gives -1 past the write position), the sequential one
    at the data's end (it cannot read it: the master skips the rest of the slice); neither dispatched anything
    after it, nor does ``rebuild`` (the broker's files byte for byte), whose walk takes it as the end of the
    file; with the setting the summary's row at the blank says the concurrent reput stops there."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    concurrent = "-creput-" in name
    assert w["damagedRecord"] == 5 * SEGMENT and w["maxPhyOffset"] < 6 * SEGMENT - 16, w
    assert not w["reputHung"] and w["reputStoodAt"] == (w["damagedRecord"] if concurrent else w["maxPhyOffset"]), w
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    assert cq_max_offset(d / "expected" / "consumequeue") < w["damagedRecord"]
    out = summary_json(d, tmp_path, line)
    rows = [a for a in json.loads(out)["anomalies"] if "stops here for good" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in rows] == ([w["damagedRecord"]] if concurrent else []), rows


@pytest.mark.parametrize("line,name", LATERHUNG_CASES)
def test_a_later_batch_never_ends_after_an_empty_request(reput, line: str, name: str, tmp_path: Path) -> None:
    """``laterhung``: the damaged record's batch (past 4 MiB) ends, its task having read the records of the damaged
    bytes whole and a blank's header in a body, and the next batch's task never ends.  The harness itself: a batch
    still held, the pre-check stood past the 10-byte "record" the damaged totalSize points at, and the broker's
    consume queues hold the records the first task read whole (the damaged totalSize alone passes 4 MiB),
    nothing from the record cut by that batch's end on, and the empty request's unit (``consumequeue/0/``:
    ``DispatchService`` dispatches the batches before the one not put).  ``rebuild`` writes the broker's files
    byte for byte, its row at the damaged record saying the reput stops there for good and that the tasks before
    the hung one dispatched an empty request; the store rebuilt without the setting differs."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    at = w["damagedRecord"]
    with open(d / "store" / "commitlog" / f"{0:020d}", "rb") as f:
        data = f.read()
    total = int.from_bytes(data[at:at + 4], "big", signed=True)
    cut = at + total - 96          # the 8th put's record, cut by the first batch's end
    assert data[cut + 88:cut + 104] == LATER_BODY[:16], "the body is not where the damage points"
    assert w["reputHung"] and w["reputStoodAt"] == at + total + 10, w
    exp = d / "expected" / "consumequeue"
    top = cq_max_offset(exp)   # the last record the first task read whole: the one before the cut record
    assert total > 4 << 20 and at < top and top + int.from_bytes(data[top:top + 4], "big") == cut, (top, cut)
    assert (exp / "0" / f"{0:020d}").read_bytes() == bytes(120)
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    rows = [a for a in json.loads(summary_json(d, tmp_path, line))["anomalies"]
            if "stops here for good" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in rows] == [at], rows
    assert "never ends" in rows[0]["detail"] and "1 blank's empty request" in rows[0]["detail"], rows
    assert differ(d / "expected", rebuilt_without_the_setting(d, line, tmp_path))
