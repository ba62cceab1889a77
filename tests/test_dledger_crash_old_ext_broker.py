"""A 5.5.1 DLedger crash restart of a store converted in place, with ext files (``enableConsumeQueueExt``), whose
start's reput (``recheckReputOffsetFromCq=true``, every queue empty after a queue cut that left T7/0 no file: the
min offset, the first old ``commitlog/`` file's) meets a record its message check refuses in that old file (a
flipped byte of its magic code, ``damageMagic``).

``DLedgerCommitLog.getData`` below ``dividedCommitlogOffset`` is the base ``CommitLog.getData`` (the old file's
bytes to its end); ``DLedgerCommitLog.checkMessageAndReturnSize`` fails on the record (size -1, the bytes 48
further no record either), so ``ReputMessageService.doReput`` jumps to that old file's end: T7/0 gets the units of
its old records before the refused one, then the walk's units, which ``ConsumeQueue.putMessagePositionInfo``
appends at the write position ("logic queue order maybe wrong"), below their queue offsets' positions, each holding
the address of the ext unit ``ConsumeQueueExt.put`` put for it
(:func:`store_format.dledger_crash_before._reset_positions`).  Written by the 5.5.1 broker through the JVM harness
in ``tests/broker/`` (this module writes its one store itself): what the broker's restart wrote,
``rebuild --as-restart`` byte for byte (``consumequeue/``, ``consumequeue_ext/``, ``index/``) and ``verify``'s
figures (units dispatched and lost, ext units appended and orphaned per queue).
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import ext_appended_as_the_broker, ext_orphaned_as_the_broker
from broker_dledger_runs import (
    LINES,
    _as_restart,
    _dledger_prediction,
    _same_files,
    _same_tree,
    _units,
    _units_held,
)
from broker_dledger_scenarios import converted_old_reput_abort_scenarios
from test_dledger_crash_old_refused_broker import EXT_DAMAGED_PUT, _old_file_records, old_magic_ext_scenario

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

_LINES_55 = [ln for ln in LINES if ln.startswith("5.5")]
CQ_UNIT = 20


STORES = bh.Stores({ln: [*old_magic_ext_scenario(ln), *(sc for sc in converted_old_reput_abort_scenarios(ln)
                                                         if sc["name"].endswith("-cut-emptied-ext"))]
                    for ln in _LINES_55}, "converted DLedger store(s)")


@pytest.fixture(scope="module")
def written(request, tmp_path_factory) -> dict:  # noqa: ANN001
    if not STORES.scenarios:
        pytest.skip("the 5.5.1 line only: DLEDGER_LINES=5.5.1")
    return bh.write_lines(request, STORES, tmp_path_factory.mktemp("old-magic-ext"))


@pytest.mark.parametrize("line", _LINES_55)
def test_as_restart_after_a_cut_whose_reput_meets_a_bad_magic_code_in_an_old_file_with_ext_files(line, written,
                                                                                                tmp_path):
    """The broker's restart of the -cut-emptied-ext-old-magic store: every queue empty after the cut, the reput
    from the first old file refusing its third record (bad magic code) and going on at the second old file: T7/0
    gets its first two old records' units, none of the other four, then the walk's three (queue offsets 6 to 8)
    appended right after them at positions 2 to 4 of its one file, each holding the address of the ext unit put
    for it (after the walk's three ext units the cut keeps, and the two old records').  ``rebuild --as-restart`` on
    the store as the restart found it writes consumequeue/, consumequeue_ext/ and index/ byte for byte; verify's
    units dispatched are those the broker holds, none lost, its ext units appended and orphaned the broker's."""
    name = f"{line}-dledger-abort-converted-cut-emptied-ext-old-magic"
    r = written[name]
    w = r["written"]
    assert w.get("ok"), w.get("error")
    src = Path(r["scenario"]["dir"])
    old = sorted((src / "before" / "commitlog").iterdir())
    damaged = int(w["damagedMagicRecord"])
    first = _old_file_records(old[0])
    assert len(first) == EXT_DAMAGED_PUT and damaged < int(old[1].name), (first, damaged)
    assert int(w["truncateDirtyLogicFilesAt"]) >= 0, w
    exp = src / "expected"
    t7 = [u for u in _units(exp / "consumequeue") if u[0] == "T7/0"]
    # the two old T7 records before the damaged one, then the walk's three at positions 2 to 4 (one file of six)
    assert [u[1] for u in t7[:2]] == [int(old[0].name) + a for a in first], (t7, first)
    assert len(t7) == EXT_DAMAGED_PUT + 3 and all(u[1] >= int(old[1].name) for u in t7[2:]), t7
    t7_dir = exp / "consumequeue" / "T7" / "0"
    assert [p.name for p in t7_dir.iterdir()] == [f"{0:020d}"]
    data = (t7_dir / f"{0:020d}").read_bytes()
    assert int.from_bytes(data[5 * CQ_UNIT:5 * CQ_UNIT + 8], "big") == 0, "nothing past position 4"
    assert all(u[3] < 0 for u in t7), t7   # every T7 unit holds an ext unit's address
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert "it begins in the old commitlog files" in err and "the cut left T7/0 with no file" in err, err[-2000:]
    _same_tree(exp, tmp_path / name)
    _same_files(exp, tmp_path / name, "consumequeue_ext", written=True)
    _verify_as_the_broker(r, src, name, line, tmp_path)


def _verify_as_the_broker(r: dict, src: Path, name: str, line: str, tmp_path: Path) -> None:
    """verify's figures on the store as the restart found it: every unit the broker holds dispatched by the restart,
    none lost; its ext units appended and orphaned per queue the broker's (one ext unit per record the reput read,
    the old files' ones once: the walk put none for them)."""
    p = _dledger_prediction(src, name, line, tmp_path)
    assert (p["units_dispatched_again"], p["units_lost"]) == (_units_held(src / "expected" / "consumequeue"), 0), p
    appended = ext_appended_as_the_broker(p, r["written"], src)
    orphaned = ext_orphaned_as_the_broker(p, r["written"], src)
    assert p["ext_units_appended"] == sum(appended.values()) and sum(b for _v, b in orphaned.values()) > 0, \
        (appended, orphaned)


@pytest.mark.parametrize("line", _LINES_55)
def test_as_restart_after_a_cut_whose_reput_reads_the_old_files_whole_with_ext_files(line, written, tmp_path):
    """The same store undamaged (-converted-cut-emptied-ext): the reput reads every old record, so T7/0's units
    take its six old records' queue offsets' positions, the walk's three after them (queue offsets 6 to 8, its
    second file), the replay from the empty queue giving the positions the queue offsets give.  ``rebuild
    --as-restart`` writes consumequeue/, consumequeue_ext/ and index/ byte for byte; verify's figures are the
    broker's."""
    name = f"{line}-dledger-abort-converted-cut-emptied-ext"
    r = written[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    t7 = [u for u in _units(src / "expected" / "consumequeue") if u[0] == "T7/0"]
    assert len(t7) == 9 and sorted(p.name for p in (src / "expected" / "consumequeue" / "T7" / "0").iterdir()) \
        == [f"{0:020d}", f"{6 * CQ_UNIT:020d}"], t7
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0 and "the cut left T7/0 with no file" in err, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
    _verify_as_the_broker(r, src, name, line, tmp_path)
