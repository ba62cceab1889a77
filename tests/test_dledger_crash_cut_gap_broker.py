"""5.5.1 DLedger crash restarts whose cut queue holds a record whose queue offset is ahead of where the walk put its
unit (a queue offset gap): the ``partial`` crash restart (:func:`broker_dledger_scenarios.partial_abort_scenario`: one
queue, T0/0, 400 messages, DLedger's checkpoint two entries behind the log's end) with the QUEUEOFFSET field of
message 398's record (one of the last two, past ``processOffset``) raised by :data:`AHEAD` (``plantBytes``: no check
the walk or the reput runs reads that field against anything).

* ``-partial-ahead``: no ``recheckReputOffsetFromCq``: the start's reput from the committed position puts back the
  last two cut units only, appended at the write position the cut left;
* ``-partial-ahead-recheck``: with it, the reput from the cut queue's max puts back every cut unit.

``ConsumeQueue.putMessagePositionInfo`` (5.5.1) compares the unit's queue offset * 20 with the write position only to
drop one below it ("Build consume queue repeatedly"); one above it is appended at the write position all the same
("logic queue order maybe wrong" is only logged).  So the broker's queue holds message 398's unit at the slot the
ones before it leave, not at its queue offset, in the walk and in the reput alike.  ``rebuild --as-restart`` on the
store as the restart found it writes the broker's files byte for byte, and ``verify``'s prediction counts the units
the broker's queue lacks (:func:`store_format.dledger_crash_cut_reput.put_back_units`: the units put back placed by
:func:`store_format.consumequeue.assign_positions` from the state the cut left).
"""
from __future__ import annotations

import base64
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_runs import _as_restart, _dledger_prediction, _queued, _same_tree
from broker_dledger_scenarios import partial_abort_scenario

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = [ln for ln in bh.lines_from_env("DLEDGER_LINES", "5.5.1") if ln.startswith("5.5")]
PLANTED = 398   # the message whose record's queue offset is raised (queue offset 398 as put)
AHEAD = 50      # by this many units
QUEUE_OFFSET_AT = 20   # QUEUEOFFSET's place in a message record (after TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG)


def _scenarios(line: str) -> list[dict]:
    """The module docstring's stores of ``line``."""
    sc = partial_abort_scenario(line)
    plant = {"put": PLANTED, "add": QUEUE_OFFSET_AT,
             "bytes": base64.b64encode((PLANTED + AHEAD).to_bytes(8, "big")).decode()}
    ahead = {**sc, "plantBytes": plant, "name": f"{line}-dledger-abort-partial-ahead"}
    return [ahead, {**ahead, "config": {**sc["config"], "recheckReputOffsetFromCq": "true"},
                    "name": f"{line}-dledger-abort-partial-ahead-recheck"}]


SCENARIOS = {ln: bh.bounded(_scenarios(ln), full_only=("-partial-ahead-recheck",)) for ln in LINES}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts, a cut queue's record with its queue offset ahead", threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _held_units(src: Path, state: dict, size: int) -> list[tuple[int, int]]:
    """The message units the broker's T0/0 holds below its write position: (queue slot, commitlog offset), in slot
    order."""
    out: list[tuple[int, int]] = []
    for f in state["files"]:
        data = (src / "expected" / "consumequeue" / "T0" / "0" / f).read_bytes()
        out += [((int(f) + i) // 20, int.from_bytes(data[i:i + 8], "big"))
                for i in range(0, min(size, int(state["maxOffset"]) - int(f)), 20)
                if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1]   # not a fillPreBlank unit
    return out


def _record_queue_offset(src: Path, at: int) -> int:
    """The QUEUEOFFSET field of the record at commitlog offset ``at`` in the store as the restart found it."""
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    (f,) = [d for d in data if int(d.name) <= at < int(d.name) + d.stat().st_size]
    b = f.read_bytes()[at - int(f.name):]
    return int.from_bytes(b[QUEUE_OFFSET_AT:QUEUE_OFFSET_AT + 8], "big")


@pytest.mark.parametrize("suffix", ["", "-recheck"])
@pytest.mark.parametrize("line", LINES)
def test_a_cut_queue_record_whose_queue_offset_is_ahead(written, line, suffix, tmp_path):
    """The module docstring's stores: the broker's T0/0 holds message 398's unit at the slot right after message
    397's (the walk's and the reput's append at the write position), below its raised queue offset, and message 399's
    after it; the cut took the last units and the reput put back the last two (-partial-ahead, appended from the
    cut's write position) or all (-recheck, each where the walk had it).  ``--as-restart`` writes those files byte
    for byte; ``verify`` predicts the units the broker's queue lacks."""
    name = f"{line}-dledger-abort-partial-ahead{suffix}"
    if name not in written:
        pytest.skip(f"{name}: PIPELINES_FULL_SUITE=1")
    r = written[name]
    sc, w, src = r["scenario"], r["written"], Path(r["scenario"]["dir"])
    # what the broker wrote: the planted field, the cut, and the queue after the reput
    planted = int(w["plantedAt"]) - QUEUE_OFFSET_AT
    assert _record_queue_offset(src, planted) == PLANTED + AHEAD
    po = int(w["truncateDirtyLogicFilesAt"])
    assert 0 < po < planted, (po, planted)   # the cut takes message 398's unit
    (state,) = w["queuesAfterDispatch"].values()
    slots = _held_units(src, state, int(sc["config"]["mappedFileSizeConsumeQueue"]))
    held = [o for _s, o in slots]
    (at,) = [s for s, o in slots if o == planted]
    # message 398's unit the last but one, below its queue offset, and the slots one after the other
    assert held[-2] == planted and at < PLANTED + AHEAD and held[-1] > planted, (at, slots[-3:])
    assert [s for s, _o in slots] == list(range(slots[0][0], slots[-1][0] + 1)), slots[:3]
    cut = sum(1 for o in held if o >= po)   # the units put back, at or past processOffset
    if suffix:   # every unit the cut took put back, each where the walk had it: message 398's at slot 398
        assert at == PLANTED and cut > 2 and slots[-1][0] == _queued(sc) - 1, (at, cut, slots[-1])
    else:   # the last two put back from the cut's write position, below the slots the walk had them at
        assert cut == 2 and at < PLANTED, (cut, at)
    # ours
    code, err = _as_restart(bh.copy_store(src / "before", tmp_path / "store"), tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    p = _dledger_prediction(src, name, line, tmp_path)
    assert p["units_lost"] == _queued(sc) - len(held), (p["units_lost"], _queued(sc) - len(held), p["notes"])
