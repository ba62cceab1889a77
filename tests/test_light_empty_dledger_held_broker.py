"""Multi-dispatch requests naming an empty queue over a DLedger commitlog (tests/test_light_empty_dledger_broker.py's
store: its requests, 64 KiB data files, 120-byte consume queue files) across clean 5.5.1 restarts that find topic
""'s files on disk (``consumequeue/<queueId>/<file>``), or that run without ``recheckReputOffsetFromCq`` (the
default), checked against the broker (5.3.3's the same with ``PIPELINES_FULL_SUITE=1``).

* ``-planted-recheck``: the queue folders deleted, files planted in ``consumequeue/0/`` and ``consumequeue/1/``
  (``plantFiles``: queue 0's shorter than the file size, queue 1's a full file and a second one nothing opens).
  ``loadConsumeQueues`` reads those folders as topics "0" and "1" (no file of theirs: max -1), so
  ``doRecheckReputOffsetFromCq`` starts at the log's min offset and dispatches every record, each empty-name one to a
  topic "" queue ``findOrCreateConsumeQueue`` creates afresh, which puts over the planted bytes
  (``DefaultMappedFile.init``: neither truncated nor zeroed).  ``rebuild --as-restart`` of ``before/``: the broker's
  ``consumequeue/`` and ``index/`` byte for byte.
* ``-planted-norecheck``: the same without the setting (``restartRebuildsNothing``): ``DLedgerCommitLog.
  dledgerRecoverNormally`` dispatches nothing and the start's reput begins at ``getConfirmOffset`` (the committed
  position, the log's end): the broker writes no consume queue or index file, the planted files stay as they are;
  ``rebuild --as-restart`` the same.
* ``-kept-norecheck``: the queues kept, without the setting: nothing dispatched, topic "" as held, as ``verify`` of
  ``before/`` predicts.

Each test first asserts what the broker wrote, then our tool's output.  A crash start over held files stays refused
in one line (the kept store's ``before/`` with an ``abort`` file).
"""
from __future__ import annotations

import base64
import shutil
from pathlib import Path

import broker_dledger_scenarios as dl
import broker_harness as bh
import pytest
from broker_empty_request_held import planted_bytes
from test_light_empty_dledger_broker import _messages, _requests_at, _topic_empty
from test_light_empty_reopen_broker import _units
from test_rocksdb_light_empty_broker import EMPTY_UNITS

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
CQ_FILE = 120   # dl.config's mappedFileSizeConsumeQueue
PLANTED = {f"0/{0:020d}": planted_bytes(60, 1), f"1/{0:020d}": planted_bytes(CQ_FILE, 2),
           f"1/{CQ_FILE:020d}": planted_bytes(40, 3)}


def scenarios(line: str = LINE) -> list[dict]:
    """``-planted-recheck``, ``-planted-norecheck`` and ``-kept-norecheck`` (module docstring)."""
    conf = {**dl.config(line), "enableMultiDispatch": "true", "enableLmq": "false"}
    plain = {k: v for k, v in conf.items() if k != "recheckReputOffsetFromCq"}
    base = {"messages": _messages(), "keepBefore": True}
    plant = {"plantFiles": {f"consumequeue/{rel}": base64.b64encode(b).decode() for rel, b in PLANTED.items()}}
    name = f"{line}-dledger-light-empty"
    return [{**base, **plant, "config": conf, "name": f"{name}-planted-recheck"},
            {**base, **plant, "config": plain, "restartRebuildsNothing": True, "name": f"{name}-planted-norecheck"},
            {**base, "config": plain, "restartRebuildsNothing": True, "keepQueues": True,
             "name": f"{name}-kept-norecheck"}]


SCENARIOS = {LINE: scenarios(), "5.3.3": bh.bounded(scenarios("5.3.3"), full_only=("-recheck", "-norecheck"))}
CASES: dict[str, list] = {}
for _sc in (sc for scs in SCENARIOS.values() for sc in scs):
    CASES.setdefault(_sc["name"].split("-light-empty-")[1], []).append(pytest.param(_sc["name"], id=_sc["name"]))
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "5.x DLedger store(s) with held topic \"\" files or without the recheck", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and left it (``expected/``), with our ``verify``
    (queues kept) or ``rebuild --as-restart`` (queues deleted) of ``before/``."""
    return bh.restart_run(request, _RUNS, STORES)


def _clean_dledger(d: Path, w: dict, recheck: bool) -> None:
    """The broker's store: DLedger (no ``commitlog/``), a clean restart at the committed end, the setting as asked."""
    assert (d / "before" / "dledger-n0").is_dir() and not (d / "before" / "commitlog").exists()
    assert not (d / "before" / "abort").exists() and w["dledgerCommittedPos"] == w["maxPhyOffset"]
    conf = (d / "broker.conf").read_text()
    assert ("recheckReputOffsetFromCq=true" in conf) == recheck, conf


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes; none: an empty dict)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()} if root.is_dir() else {}


@pytest.mark.parametrize("name", CASES["planted-recheck"])
def test_the_broker_puts_fresh_queues_over_planted_files(written, name):
    """What the broker wrote: every request's topic "" unit, put by a new queue's rule (queue 0's 4 and 5 after
    ``fillPreBlank`` units, queue 1's 0 then 9 appended), over the planted bytes: queue 0's file grown to the file
    size, all of it written; queue 1's first file its two units then the planted bytes from 40 on; queue 1's second
    file, which nothing opened, as planted."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    _clean_dledger(d, w, recheck=True)
    at = _requests_at(d)
    asked = {(q, o): at[i] for i, us in EMPTY_UNITS.items() for q, o in us}
    before, after = _topic_empty(d / "before"), _topic_empty(d / "expected")
    assert before == PLANTED and set(after) == set(PLANTED), sorted(after)
    q0, q1 = f"0/{0:020d}", f"1/{0:020d}"
    assert len(after[q0]) == CQ_FILE and _units(d / "expected" / "consumequeue" / q0) == {
        4: asked[(0, 4)], 5: asked[(0, 5)]}, _units(d / "expected" / "consumequeue" / q0)
    assert [u[0] for u in bh.cq_units(d / "expected" / "consumequeue" / q1)[:2]] == [asked[(1, 0)], asked[(1, 9)]]
    assert after[q1][40:] == PLANTED[q1][40:] and after[q1][:40] != PLANTED[q1][:40]
    assert after[f"1/{CQ_FILE:020d}"] == PLANTED[f"1/{CQ_FILE:020d}"]


@pytest.mark.parametrize("name", CASES["planted-recheck"])
def test_as_restart_writes_over_planted_files(written, name):
    """``rebuild --as-restart`` of ``before/`` (queues deleted, topic "" files held): the broker's ``consumequeue/``
    (topic "" over the planted bytes) and ``index/``, byte for byte."""
    bh.restart_files_are_the_broker_s(written)


@pytest.mark.parametrize("name", CASES["planted-norecheck"])
def test_without_the_recheck_the_start_writes_nothing(written, name):
    """What the broker wrote without ``recheckReputOffsetFromCq``: no consume queue or index file, the planted files
    as they were (the reput starts at the committed position, the log's end); then ``rebuild --as-restart`` of
    ``before/``: the same files, byte for byte."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    _clean_dledger(d, w, recheck=False)
    assert _files(d / "expected" / "consumequeue") == {rel: b for rel, b in PLANTED.items()}
    assert not _files(d / "expected" / "index")
    reb = written["rebuild"]
    assert reb["code"] == 0, reb["stderr"][-2000:]
    assert _files(d / "ours" / "consumequeue") == _files(d / "expected" / "consumequeue")
    assert not _files(d / "ours" / "index")


@pytest.mark.parametrize("name", CASES["kept-norecheck"])
def test_verify_predicts_topic_empty_as_held_without_the_recheck(written, name):
    """What the broker wrote (queues kept, no recheck): topic "" as before the start, no queue changed by it;
    ``verify`` of ``before/``: a restart whose reput starts at the log's end, topic "" said to stay byte for byte."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    _clean_dledger(d, w, recheck=False)
    assert _topic_empty(d / "before") and _topic_empty(d / "before") == _topic_empty(d / "expected")
    assert w["queuesAfterLoad"] == w["queuesAfterDispatch"], "the start's reput dispatched something"
    v = written["verify"]
    assert v["report"] is not None and v["code"] in (0, 1), v["stderr"]
    p = v["report"]["restart"]
    assert p is not None and p["dledger"], v["report"]["restart_note"]
    assert p["reput_from"] == w["maxPhyOffset"] == p["commitlog_end"], p["reput_from"]
    notes = [n for n in p["notes"] if n.startswith('topic "" queues')]
    assert len(notes) == 1 and "not predicted" not in notes[0] \
        and "dispatches no such record: they stay byte for byte" in notes[0], notes
    assert (p["units_dispatched_again"], p["units_lost"]) == (0, 0), p


@pytest.mark.parametrize("name", CASES["kept-norecheck"])
def test_a_crash_start_over_held_files_is_refused(written, name, tmp_path):
    """``rebuild --as-restart`` of the kept store's ``before/`` with an ``abort`` file (a crash start:
    ``dledgerRecoverAbnormally``'s walk, not checked with topic "" files): exit 2, one line naming the DLedger
    commitlog."""
    d, version = Path(written["scenario"]["dir"]), bh.BROKER_VERSION_ARG[written["line"]]
    store = tmp_path / "store"
    shutil.copytree(d / "before", store, copy_function=bh.sparse_copy)
    (store / "abort").write_bytes(b"")
    code, _, err = bh.cli(["rebuild", "--store", str(store), "--out", str(tmp_path / "ours"), "--as-restart",
                           "--config", str(d / "broker.conf"), "--broker-version", version,
                           "--split-size", "4k", "--no-tables"])
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(lines) == 1 and "over a DLedger commitlog" in lines[0], err[-2000:]
