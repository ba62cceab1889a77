"""A clean restart of a file consume queue DLedger store whose checkpoint is behind the log's end (entries past the
committed one, as a crash before the group committed them leaves them), checked against the broker's own restart.

The JVM harness writes :mod:`broker_dledger_scenarios`' ``plain`` store, lowers DLedger's checkpoint
``committedIndex`` by :data:`BACK` entries (``dledgerCommittedBack``), keeps the store in ``<dir>/before/``, deletes
the queues and ``index/`` and restarts the broker without an ``abort`` file, waiting until the node leads, everything
in the log is committed and the reput has caught up (``DLedger.awaitCommitted``, ``Stores.awaitDispatched``):
``-restart-back`` (4.9.8; 5.x with ``recheckReputOffsetFromCq``), ``-restart-back-norecheck`` (5.x without it), and on
4.9.8 ``-restart-back-abort`` (an ``abort`` file: its ``DLedgerCommitLog.recover`` is the same, and so is the start).

Each case first asserts what the broker wrote (units up to the log's end: a group of one commits the entries its
checkpoint was behind once it leads, and ``DLedgerCommitLog.getData`` serves the reput up to the committed position,
so it goes on to them), then that ``rebuild --as-restart`` of ``before/`` writes its ``consumequeue/`` and ``index/``
byte for byte, and that ``verify`` on ``before/`` (no queue) counts the units the broker's restart wrote as dispatched
again (the uncommitted entries' too: its reference rebuild reads to the log's end,
``pipelines.restart.led_dledger_store``) and the others lost.  With the queues kept (``-restart-back-kept``): ``verify``
on ``before/`` predicts no unit lost.

4.9.8, 5.3.3 and 5.5.1 by default (``UNCOMMITTED_LINES``).
"""
from __future__ import annotations

from pathlib import Path

import broker_dledger_scenarios as dl
import broker_harness as bh
import pytest
from broker_dledger_runs import _PRINTED, _as_restart, _committed_pos, _same_tree, _units, _verify

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = bh.lines_from_env("UNCOMMITTED_LINES", "4.9.8,5.3.3,5.5.1")
BACK = 5   # entries DLedger's checkpoint is behind the log's end


def _scenarios(line: str) -> list[dict]:
    plain = dl.dledger_scenarios(line)[0]

    def one(what: str, *, recheck: bool = True, **knobs: object) -> dict:
        conf = dict(plain["config"])
        if not recheck:
            conf.pop("recheckReputOffsetFromCq", None)
        return {**plain, "keepBefore": True, "dledgerCommittedBack": BACK, **knobs, "config": conf,
                "name": f"{line}-dledger-{what}"}

    out = [one("restart-back"), one("restart-back-kept", keepQueues=True)]
    if line.startswith("4"):   # 4.9.8 DLedgerCommitLog.recover is the same after a crash: the reput from the min offset
        out.append(one("restart-back-abort", abort=True))
    else:
        out.append(one("restart-back-norecheck", recheck=False, restartRebuildsNothing=True))
    return out


SCENARIOS = {line: _scenarios(line) for line in LINES}
ALL = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
CASES = [c for c in ALL if not c.values[1].endswith("-kept")]
KEPT = [c for c in ALL if c.values[1].endswith("-kept")]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "DLedger store(s) restarted with entries uncommitted")


@pytest.fixture
def restarted(request) -> dict:
    """The scenario as the broker wrote and restarted it (every scenario written once)."""
    return bh.written_once(request, _RUNS, STORES)


def _log_end(store: Path) -> int:
    """DLedger's log end in ``store``: the end of the last entry its ``index/`` holds."""
    units = b"".join(p.read_bytes() for p in sorted((store / "dledger-n0" / "index").iterdir()))
    last = max(i for i in range(len(units) // 32) if int.from_bytes(units[32 * i:32 * i + 4], "big") != 0)
    return int.from_bytes(units[32 * last + 4:32 * last + 12], "big") \
        + int.from_bytes(units[32 * last + 12:32 * last + 16], "big")


@pytest.mark.parametrize("line,name", CASES)
def test_the_broker_restart_dispatched_the_uncommitted_entries(restarted, line: str, name: str) -> None:
    """What the broker's clean restart wrote: the checkpoint was :data:`BACK` entries behind, no ``abort`` file, and
    its queues hold units up to DLedger's log end (the uncommitted entries' too, once the node leads); from the first
    record (at 48) but for 5.x without ``recheckReputOffsetFromCq``, where only the records at or past the committed
    position are there."""
    sc, d = restarted["scenario"], Path(restarted["scenario"]["dir"])
    committed, end = _committed_pos(d / "before"), _log_end(d / "before")
    assert committed < end and (d / "before" / "abort").exists() == name.endswith("-abort")
    w = restarted["written"]
    assert w["dledgerCommittedPos"] == end == w["maxPhyOffset"], (w, end)
    units = sorted((off, size) for _, off, size, _ in _units(d / "expected" / "consumequeue")
                   if size != 2**31 - 1)   # fillPreBlank units left out
    assert units and units[-1][0] + units[-1][1] == end, (units[-1], end)
    past = [u for u in units if u[0] >= committed]
    assert len(past) == BACK, past
    if name.endswith("-norecheck"):   # queues that begin past offset 0: fillPreBlank units before theirs
        assert units == past
    else:
        assert units[0][0] == 48 and len(units) == len(sc["messages"]), units[:2]


@pytest.mark.parametrize("line,name", CASES)
def test_as_restart_writes_the_broker_s_files(restarted, line: str, name: str, tmp_path: Path) -> None:
    """``rebuild --as-restart`` of ``before/``: the broker's ``consumequeue/`` and ``index/`` byte for byte, and it
    says it assumes the node leads."""
    d = Path(restarted["scenario"]["dir"])
    code, err = _as_restart(d / "before", tmp_path / "ours", d, line)
    assert code == 0, err[-2000:]
    assert "once the node leads" in err, err[-2000:]
    printed = _PRINTED[tmp_path / "ours"]
    assert any("the restart assumes the node leads" in ln for ln in printed), printed
    _same_tree(d / "expected", tmp_path / "ours")


@pytest.mark.parametrize("line,name", KEPT)
def test_verify_predicts_the_restart_over_the_queues_kept(restarted, line: str, name: str) -> None:
    """The queues and index kept (every entry dispatched before the checkpoint went back): the broker's restart
    changes no unit; ``verify`` on ``before/`` predicts no unit lost."""
    d = Path(restarted["scenario"]["dir"])
    assert _units(d / "expected" / "consumequeue") == _units(d / "before" / "consumequeue")
    code, report = _verify(d / "before", d, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("restart_note")
    assert p["units_lost"] == 0, p


@pytest.mark.parametrize("line,name", CASES)
def test_verify_predicts_the_restart_over_no_queue(restarted, line: str, name: str) -> None:
    """``verify`` on ``before/`` (no queue, no index): the restart dispatches the units the broker's restart wrote
    (the uncommitted entries' too, once the node leads) and loses the others (5.x without ``recheckReputOffsetFromCq``:
    the committed entries', below the reput's start), and says it assumes the node leads."""
    d = Path(restarted["scenario"]["dir"])
    code, report = _verify(d / "before", d, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("restart_note")
    units = [u for u in _units(d / "expected" / "consumequeue") if u[2] != 2**31 - 1]
    lost = len(restarted["scenario"]["messages"]) - len(units)
    assert lost == (len(units) * 11 if name.endswith("-norecheck") else 0), (lost, len(units))
    assert (p["units_dispatched_again"], p["units_lost"]) == (len(units), lost), (p["notes"], p["commitlog_end"])
    assert any("it assumes the node leads" in n for n in p["notes"]), p["notes"]
