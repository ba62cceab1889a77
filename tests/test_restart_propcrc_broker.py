"""``forceVerifyPropCRC=true`` (5.x): ``rebuild --as-restart`` and ``verify``'s next-start prediction checked
against the broker's own restart.

5.3.3/5.5.1 ``CommitLog.checkMessageAndReturnSize`` with ``checkCRC`` (``checkCRCOnRecover``, default true) and
``forceVerifyPropCRC=true`` checks no body CRC, but the record's ``__CRC32#`` property: a CRC of the whole record
but its last 20 bytes, which the writer appends with ``enabledAppendPropCRC=true`` (:mod:`store_format.propcrc`);
a record without it fails.  The JVM harness (:mod:`broker_harness`, ``tests/broker/``) writes the ``mixed`` store
of :mod:`broker_layout_scenarios` (single messages, batches, delayed messages, transactions; plain consume queues,
32 KiB segments) with both settings, damages it, keeps it in ``<dir>/before/`` and restarts the broker on it with
``consumequeue/`` and ``index/`` deleted:

* ``-head``: the lowest byte of the bornTimestamp of the record six puts before the end flipped (``damageHead``):
  its body CRC holds, its CRC property fails, and the recovery ends the commitlog there; ``-head-crash`` and
  ``-head-kept``: the same on the record three puts before the end (in the last segment, where the walk may start),
  restarted after a crash (an ``abort`` file: ``recoverAbnormally``) and keeping the queues and the index, which
  reach past the cut (``truncateDirtyLogicFiles``; ``verify``'s queue by queue prediction);
* ``-body``: a body byte of that record flipped and its CRC property written again over the damaged bytes
  (``damageMessage`` + ``refreshPropCrc``): the body CRC fails, the property holds, the broker keeps everything;
* ``-absent``: written without ``enabledAppendPropCRC``: no record has the property, the recovery's walk ends at
  its first record.

``rebuild --as-restart`` on each ``before/`` must write the broker's files byte for byte, and ``verify`` on it
must predict where the broker's recovery ended the commitlog.  5.3.3 by default; ``PROPCRC_LINES=5.3.3,5.5.1``
adds 5.5.1 (whose start-segment test, ``isMappedFileMatchedRecover``, runs the same check on each segment's first
record).  4.9.8 has neither setting (:mod:`test_restart_settings`).

``PROPCRC_DLEDGER=1`` adds, on each line, the ``plain`` DLedger store of :mod:`broker_dledger_scenarios` restarted
after a crash without ``recheckReputOffsetFromCq`` (``dledgerRecoverAbnormally``'s walk is then all that dispatches),
with both settings (``-dledger-abort``) and without them (``-dledger-abort-off``): ``DLedgerCommitLog``'s encoder
writes no CRC property, so with the setting the walk fails at its first entry and the broker writes no unit, and
neither may ``rebuild --as-restart``.  ``-dledger-abort-recheck`` is the same with ``recheckReputOffsetFromCq=true``
and DLedger's checkpoint three entries behind the log's end: the start's reput over the empty queues walks the log
from its min offset to its end, which ``--as-restart`` must write byte for byte; ``-dledger-abort-back`` is the
first with that checkpoint: the reput from the committed position, inside the log, puts the last three messages
into queues the walk left empty (each starting with ``fillPreBlank`` units), which ``--as-restart`` must write
byte for byte too.
"""
from __future__ import annotations

import os
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_scenarios import dledger_scenarios
from broker_layout_scenarios import layout_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = bh.lines_from_env("PROPCRC_LINES", "5.3.3")
PROP = {"enabledAppendPropCRC": "true", "forceVerifyPropCRC": "true"}
UNIT = 20


def _base(line: str) -> dict:
    conf = {"mappedFileSizeCommitLog": str(32 * 1024), "mappedFileSizeConsumeQueue": "120", "maxHashSlotNum": "101",
            "maxIndexNum": "400"}
    confs = {"plain": conf, "mixed": conf, "lmq": conf}
    return next(sc for sc in layout_scenarios(line, "propcrc", 17, ["T0", "T1", "%RETRY%cg1"], confs)
                if sc["name"].endswith("-mixed"))


def _scenarios(line: str) -> list[dict]:
    sc = _base(line)
    name = sc["name"]
    puts = sum(1 for m in sc["messages"] if "sleepMs" not in m)
    prop = {**sc["config"], **PROP}
    head = {**sc, "name": f"{name}-head", "config": prop, "damageHead": puts - 6}
    # the damage in the last segment, where a recovery may start (the normal one when the queues cover it; an
    # abnormal one as the checkpoint the flushes left says, which varies from run to run)
    last = {**head, "damageHead": puts - 3}
    return [
        head,
        {**last, "name": f"{name}-head-crash", "abort": True},
        {**last, "name": f"{name}-head-kept", "keepQueues": True},
        {**sc, "name": f"{name}-body", "config": prop, "damageMessage": puts - 6, "refreshPropCrc": True},
        {**sc, "name": f"{name}-absent", "config": {**sc["config"], "forceVerifyPropCRC": "true"}, "keepBefore": True},
    ] + (_dledger(line) if os.environ.get("PROPCRC_DLEDGER") else [])


def _dledger(line: str) -> list[dict]:
    plain = dledger_scenarios(line)[0]
    conf = {k: v for k, v in plain["config"].items() if k != "recheckReputOffsetFromCq"}
    crash = {**plain, "abort": True, "name": f"{line}-propcrc-dledger-abort-off", "config": conf}
    on = {**crash, "name": f"{line}-propcrc-dledger-abort", "config": {**conf, **PROP}}
    return [on, crash, {**on, "name": f"{line}-propcrc-dledger-abort-recheck", "dledgerCommittedBack": 3,
                        "config": {**plain["config"], **PROP}},
            {**on, "name": f"{line}-propcrc-dledger-abort-back", "dledgerCommittedBack": 3}]


SCENARIOS = {line: _scenarios(line) for line in LINES}
ALL = [(line, sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
NAMES = [(line, n) for line, n in ALL if "-dledger-" not in n]
DLEDGER = [line for line, n in ALL if n.endswith("-dledger-abort")]
REBUILT = [(line, n) for line, n in ALL if not n.endswith("-kept")]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store(s) with forceVerifyPropCRC, each restarted")


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it, our ``--as-restart`` rebuilds and ``verify`` reports
    (once)."""
    def then(r: dict) -> None:
        d, case = Path(r["scenario"]["dir"]), (r["line"], r["scenario"]["name"])
        if case in REBUILT:
            r["rebuild"] = bh.rebuild_as_restart(d, bh.BROKER_VERSION_ARG[r["line"]])
        if case in NAMES:
            r["verify"] = _verify(d, r["line"])
    return bh.written_once(request, _RUNS, STORES, then=then, every=True)


def _verify(d: Path, line: str) -> dict:
    return bh.verified(d / "before", d / "broker.conf", bh.BROKER_VERSION_ARG[line])


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def _record_end(d: Path, size: int, at: int) -> int:
    data = (d / "before" / "commitlog" / f"{at - at % size:020d}").read_bytes()
    return at + int.from_bytes(data[at % size:at % size + 4], "big")


@pytest.mark.parametrize("line,name", NAMES)
def test_the_broker_ends_the_commitlog_where_the_property_says(runs, line: str, name: str) -> None:
    """The harness itself: a damaged head cuts at the damaged record although its body CRC holds; a damaged body
    whose property holds cuts nothing; a store without the property is cut at its first record."""
    r = runs[name]
    w, d = r["written"], Path(r["scenario"]["dir"])
    size = int(r["scenario"]["config"]["mappedFileSizeCommitLog"])
    if "-head" in name:
        bh.check_cut_at_damaged_record(r)
    elif name.endswith("-body"):
        assert w["maxPhyOffset"] > _record_end(d, size, w["damagedRecord"])
    else:
        assert w["maxPhyOffset"] == 0
        assert not _files(d / "expected" / "consumequeue")   # nothing dispatched


@pytest.mark.parametrize("line,name", [(ln, n) for ln, n in REBUILT if (ln, n) in NAMES])
def test_as_restart_matches_the_broker(runs, line: str, name: str) -> None:
    """consumequeue/ and index/: the files the broker's restart wrote, byte for byte."""
    r = runs[name]
    reb = r["rebuild"]
    if reb["code"] != 0:
        why = [ln for ln in reb["stderr"].splitlines() if ln.startswith("error:")] or [reb["stderr"][-1000:]]
        pytest.fail(f"rebuild --as-restart exited {reb['code']}: {' | '.join(why)}")
    d = Path(r["scenario"]["dir"])
    exp, ours = d / "expected" / "consumequeue", d / "ours" / "consumequeue"
    assert _files(ours) == _files(exp), "consumequeue file set differs"
    for rel in _files(exp):
        bh.same_bytes((exp / rel).read_bytes(), (ours / rel).read_bytes(), f"consumequeue/{rel}")
    exp_idx, our_idx = _files(d / "expected" / "index"), _files(d / "ours" / "index")   # named by creation time
    assert len(our_idx) == len(exp_idx), f"index file count {len(our_idx)} != broker's {len(exp_idx)}"
    for e, o in zip(exp_idx, our_idx):
        bh.same_bytes((d / "expected" / "index" / e).read_bytes(), (d / "ours" / "index" / o).read_bytes(),
                      f"index file {o} vs broker's {e}")


@pytest.mark.parametrize("line,name", NAMES)
def test_verify_predicts_where_the_broker_recovery_ends(runs, line: str, name: str) -> None:
    r = runs[name]
    report, w = r["verify"], r["written"]
    p = report["restart"]
    assert p is not None and not report["restart_note"], report.get("restart_note")
    assert p["recovery_cut"] == w["maxPhyOffset"]
    if "-head" in name:
        assert "CRC property mismatch" in p["recovery_reason"], p["recovery_reason"]
    if name.endswith("-absent"):
        assert "no __CRC32# property" in p["recovery_reason"], p["recovery_reason"]


@pytest.mark.parametrize("line,name", [(ln, n) for ln, n in NAMES if n.endswith("-kept")])
def test_verify_predicts_the_queue_truncation(runs, line: str, name: str) -> None:
    """The restart on the store's own queues, which reach past the cut: ``truncateDirtyLogicFiles`` at the cut,
    queue by queue as the broker left them after ``load()``, and what its dispatch then writes again."""
    r = runs[name]
    w, p = r["written"], r["verify"]["restart"]
    assert p["truncate_dirty_logic_files"] == (w["truncateDirtyLogicFilesAt"] >= 0)
    listed = {q["queue"]: q for q in p["queues"] if q["layout"] == "consumequeue"}
    cut = 0
    for queue, s in sorted(w["queuesAfterLoad"].items()):
        q = listed.get(queue)
        if q is None:
            continue
        assert q["write_position"] == s["maxOffset"], f"{queue}: where its files end"
        assert q["max_physic_offset"] == s["maxPhysicOffset"], f"{queue}: max physical offset"
        cut += q["units_truncated"] + q["units_dropped_by_recover"]
    assert cut > 0, "the restart cut no unit: the damage did not reach the queues"
    again = sum((w["queuesAfterDispatch"][q]["maxOffset"] - s["maxOffset"]) // UNIT
                for q, s in w["queuesAfterLoad"].items())
    assert p["units_dispatched_again"] == again


@pytest.mark.parametrize("line", bh.params_or_skip(DLEDGER, "the DLedger stores: PROPCRC_DLEDGER=1"))
def test_a_dledger_crash_restart_whose_walk_fails_at_the_first_entry(runs, line: str) -> None:
    """dledgerRecoverAbnormally's message check fails at the first entry (no CRC property), so it dispatches
    nothing: without recheckReputOffsetFromCq the start's reput begins at the committed position, the log's end,
    and the broker writes no unit (nor may --as-restart); with it the reput begins at the min offset over the empty
    queues and dispatches the whole log, committed or not, which --as-restart writes byte for byte and verify
    predicts; a committed position inside the log without it: the reput dispatches from there, the queues starting
    with fillPreBlank units, --as-restart byte for byte."""
    on, off = runs[f"{line}-propcrc-dledger-abort"], runs[f"{line}-propcrc-dledger-abort-off"]
    recheck, back = runs[f"{line}-propcrc-dledger-abort-recheck"], runs[f"{line}-propcrc-dledger-abort-back"]
    d_on, d_off, d_re, d_back = (Path(r["scenario"]["dir"]) for r in (on, off, recheck, back))
    assert not _files(d_on / "expected" / "consumequeue"), "the broker's walk dispatched with forceVerifyPropCRC"
    assert _files(d_off / "expected" / "consumequeue"), "the broker's walk dispatched nothing without it"
    for d, r in ((d_on, on), (d_re, recheck), (d_back, back)):
        reb = r["rebuild"]
        assert reb["code"] == 0 and "fails at the first entry" in reb["stderr"], reb["stderr"][-2000:]
        for sub in ("consumequeue", "index"):
            exp_files, our_files = _files(d / "expected" / sub), _files(d / "ours" / sub)
            assert len(our_files) == len(exp_files), f"{d.name}: {sub}/ {our_files} != the broker's {exp_files}"
            if sub == "consumequeue":
                assert our_files == exp_files
            for e, o in zip(exp_files, our_files):
                bh.same_bytes((d / "expected" / sub / e).read_bytes(), (d / "ours" / sub / o).read_bytes(),
                              f"{d.name}: {sub}/{o}")
    units = sum(1 for f in _files(d_re / "expected" / "consumequeue")
                for i in range(0, (d_re / "expected" / "consumequeue" / f).stat().st_size, UNIT)
                if (d_re / "expected" / "consumequeue" / f).read_bytes()[i + 8:i + 12] != bytes(4))
    assert units == len(recheck["scenario"]["messages"]), "the reput over the empty queues missed messages"
    assert off["rebuild"]["code"] == 0, off["rebuild"]["stderr"][-2000:]
    assert _files(d_off / "ours" / "consumequeue") == _files(d_off / "expected" / "consumequeue")
    blank = bytes(8) + (2**31 - 1).to_bytes(4, "big") + bytes(8)   # ConsumeQueue.fillPreBlank
    back_units = [f for f in _files(d_back / "expected" / "consumequeue")
                  if (d_back / "expected" / "consumequeue" / f).read_bytes()[:20] == blank]
    assert back_units, "the reput from the committed position wrote no queue starting with fillPreBlank units"
    report = _verify(d_re, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("no_prediction")
    assert (p["units_dispatched_again"], p["units_lost"]) == (units - 3, 0), p
