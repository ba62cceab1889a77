"""DLedger crash restarts whose recovery walk ends early (a damaged message: its body CRC fails the walk's message
check, DLedger's recovery reads none) over a store holding a consume queue of one file of zeros, checked against the
broker.

The stores are :mod:`test_dledger_crash_zeros_broker`'s ``-small-zeros-kept`` and ``-small-zeros-emptied`` with a body
byte of message 197 (a T1/0 one in the last data file, past ``processOffset``) damaged (``damageMessage``):

* ``-zeros-kept-damaged``: the 5.5.1 walk from the last data file ends at message 197, so its ``processOffset`` is
  shorter; the walk's T0/0 units (messages 173, 184 and 194) go onto the planted file from 0, the cut keeps those
  below ``processOffset`` (173, 184), and the start's reput from the queues' largest max
  (``recheckReputOffsetFromCq``; its message check reads no CRC) puts 194's back and appends those of the records past
  the walk's end (198, 199) after it.  On 5.3.3 (``DLEDGER_LINES=5.3.3,5.5.1``) the walk starts at the first data file,
  nothing is cut, and the reput appends 198's and 199's units.
* ``-zeros-emptied-damaged`` (full suite): the walk ends before T9/0's one message of the last data file (199), so it
  writes nothing into T9/0's file of zeros; the 5.5.1 cut still reads that file's first unit (zeros, offset 0 below
  ``processOffset``) and keeps it (write position 20, max 0), and the reput appends 199's unit at 20.

``-zeros-kept-damaged`` without ``recheckReputOffsetFromCq`` (the start's reput from the committed position, the log's
end) is :mod:`test_dledger_crash_damaged_norecheck_broker`'s.

``verify`` on the store as the restart found it predicts the units lost, queue by queue, and the index keys put again as
the broker's files hold them.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_2gib import BLANK_MAX
from test_dledger_crash_zeros_broker import _units, _verify_as_the_broker, _zeros_planted, zeros_scenarios
from test_dledger_crash_zeros_mixed_broker import _offsets

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
LINES = [ln for ln in bh.lines_from_env("DLEDGER_LINES", LINE) if ln.startswith(("5.3", "5.5"))]
DAMAGED = 197


def damaged_scenarios(line: str) -> list[dict]:
    """The module docstring's stores of ``line``."""
    kept, emptied = zeros_scenarios(line)
    return [{**kept, "damageMessage": DAMAGED, "name": f"{kept['name']}-damaged"},
            {**emptied, "damageMessage": DAMAGED, "name": f"{emptied['name']}-damaged"}]


SCENARIOS = {ln: bh.bounded(damaged_scenarios(ln), full_only=("-zeros-emptied-damaged",))
             for ln in LINES}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts ending early with a consume queue file of zeros on disk",
                   threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _run(written: dict, name: str) -> tuple[dict, dict, Path]:
    if name not in written:
        pytest.skip(f"{name}: PIPELINES_FULL_SUITE=1, DLEDGER_LINES (a line)")
    r = written[name]
    return r["scenario"], r["written"], Path(r["scenario"]["dir"])


def _walk_ended_at_the_damage(w: dict, src: Path, offsets: list[int]) -> None:
    """The broker's recovery: the log as DLedger keeps it (every message), the walk's ``processOffset`` short of the
    damaged message's record (5.5.1: the cut there), which the log holds."""
    assert int(w["maxPhyOffset"]) == offsets[-1] + len(_record(src, offsets[-1])), w["maxPhyOffset"]
    po = int(w["truncateDirtyLogicFilesAt"])
    assert po == -1 or po < offsets[DAMAGED], (po, offsets[DAMAGED])


def _record(src: Path, at: int) -> bytes:
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())[-1]
    b = data.read_bytes()[at - int(data.name):]
    return b[:int.from_bytes(b[:4], "big")]


def test_a_walk_ending_early_onto_a_file_of_zeros(written, tmp_path):
    """``-zeros-kept-damaged`` (5.5.1): the broker's T0/0 after the load is the planted file holding the walk's units
    below ``processOffset`` from byte 0 (messages 173 and 184), no ``fillPreBlank`` unit; after the reput 194's (cut)
    and the records past the walk's end (198, 199) follow.  ``verify`` predicts the units lost and the index keys
    put again as the broker's files hold them."""
    sc, w, src = _run(written, f"{LINE}-dledger-abort-small-zeros-kept-damaged")
    _zeros_planted(src, "T0/0")
    offsets = _offsets(src)
    assert len(offsets) == len(sc["messages"]), len(offsets)
    _walk_ended_at_the_damage(w, src, offsets)
    po = int(w["truncateDirtyLogicFilesAt"])
    at = {o: i for i, o in enumerate(offsets)}
    load, after = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    units = _units(src, "T0/0", int(after["maxOffset"]))
    assert [at.get(o) for o, _s in units] == [173, 184, 194, 198, 199], units
    assert offsets[184] < po <= offsets[194], (po, offsets[184], offsets[194])
    assert (load["files"], int(load["maxOffset"]), int(load["maxPhysicOffset"])) == (
        [f"{0:020d}"], 40, sum(units[1])), load
    _verify_as_the_broker(src, tmp_path, sc, w, "T0/0")


def test_a_walk_ending_before_a_queue_of_zeros_leaves_the_cut_its_zeros_unit(written, tmp_path):
    """``-zeros-emptied-damaged`` (full suite): the walk wrote nothing into T9/0's file of zeros, the cut kept its
    first unit (zeros: after the load T9/0 has file 0, write position 20, max 0) and the reput appended 199's unit at
    20.  ``verify`` predicts the units lost and the index keys put again as the broker's files hold them."""
    sc, w, src = _run(written, f"{LINE}-dledger-abort-small-zeros-emptied-damaged")
    _zeros_planted(src, "T9/0")
    offsets = _offsets(src)
    _walk_ended_at_the_damage(w, src, offsets)
    load, after = w["queuesAfterLoad"]["T9/0"], w["queuesAfterDispatch"]["T9/0"]
    assert (load["files"], int(load["maxOffset"]), int(load["maxPhysicOffset"])) == ([f"{0:020d}"], 20, 0), load
    units = _units(src, "T9/0", int(after["maxOffset"]))
    assert units[0] == (0, 0) and units[1][0] == offsets[199] and units[1][1] not in (0, BLANK_MAX), units
    _verify_as_the_broker(src, tmp_path, sc, w, "T9/0")


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.3")] or [pytest.param(
    "5.3.3", marks=pytest.mark.skip(reason="5.3.3: DLEDGER_LINES=5.3.3,5.5.1"))])
def test_533_walks_from_the_first_data_file_to_the_damage(written, tmp_path, line):
    """5.3.3 (``DLEDGER_LINES``; ``-zeros-emptied-damaged`` with ``PIPELINES_FULL_SUITE=1``): the walk from the first
    data file to the damaged message puts the planted queue's units from 0 at their own queue offsets, nothing is cut,
    and the reput appends the records past the damage: the planted queue holds every unit of its messages.
    ``verify`` predicts the units lost and the index keys put again as the broker's files hold them."""
    for suffix, queue in (("-zeros-kept-damaged", "T0/0"), ("-zeros-emptied-damaged", "T9/0")):
        name = f"{line}-dledger-abort-small{suffix}"
        if name not in written:
            continue
        sc, w, src = _run(written, name)
        _zeros_planted(src, queue)
        assert int(w["truncateDirtyLogicFilesAt"]) == -1, w["truncateDirtyLogicFilesAt"]
        mine = [m for m in sc["messages"] if f"{m['topic']}/{m['queueId']}" == queue]
        units = _units(src, queue, int(w["queuesAfterDispatch"][queue]["maxOffset"]))
        assert len(units) == len(mine) and all(s not in (0, BLANK_MAX) for _o, s in units), (queue, units)
        _verify_as_the_broker(src, tmp_path / name, sc, w, queue, line)
