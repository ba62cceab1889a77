"""A 5.5.1 DLedger crash restart whose store holds, when it restarts, a consume queue with real units and no unit of the
walk before its cut ones, checked against the broker.

``-partial-held-ahead``: the ``partial`` crash restart (:func:`broker_dledger_scenarios.partial_abort_scenario`: 400
messages, DLedger's checkpoint two entries behind the log's end, the queue folders deleted before the restart) with
messages :data:`EARLY` (in the data files before the walk's) and :data:`CUT` (past ``processOffset``) sent to T9/0,
and ``consumequeue/T9/0/0`` planted holding the units of the first two only (``plantUnits``: as if the last ones never
reached the disk).  ``ConsumeQueue.recover`` loads it at write position 40; the walk's ``putMessagePositionInfo``
appends the first cut unit (queue offset 4, its ``* 20`` past 40: "logic queue order maybe wrong" only logged) at 40
and the others after it, not at their queue offsets; ``truncateDirtyLogicFiles(processOffset)`` takes them back to 40,
and the start's reput from the committed position appends the last one there, leaving the walk's last two units past
the write position.  ``verify``'s plan (:func:`store_format.dledger_crash_cut_reput._reput_positions`: the walk's
positions from the write position ``recover`` gave the files, ``QueuesOnDisk.loaded_at``) puts the unit it moves where
the broker's walk had it, and its units lost are the broker's.

``-partial-held-behind`` (full suite): the planted file holds the units of all four of :data:`EARLY` (write position 80)
and the first cut message's QUEUEOFFSET field is set to :data:`BEHIND` (``plantBytes``): its ``* 20`` lies below 80, so
the walk drops its unit ("Build consume queue repeatedly") and appends the next two at 80 and 100; the cut takes them
back to 80 and the reput appends the last one there (the walk's copy stays at 100).
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_scenarios import partial_abort_scenario

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = [ln for ln in bh.lines_from_env("DLEDGER_LINES", "5.5.1") if ln.startswith("5.5")]
EARLY = (10, 20, 30, 40)   # T9/0's messages before the walk's data file (queue offsets 0-3)
CUT = (390, 395, 399)      # and past processOffset (queue offsets 4-6), the last one the reput puts back
PLANTED = EARLY[:2]        # the units consumequeue/T9/0/0 holds when the restart starts
CQ_FILE = 220
BEHIND = 2                 # -held-behind: the first cut message's queue offset as planted
QUEUE_OFFSET_AT = 20       # QUEUEOFFSET's place in a record (after TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG)


def _scenarios(line: str) -> list[dict]:
    """The module docstring's store of ``line``."""
    sc = partial_abort_scenario(line)
    assert sc["config"]["mappedFileSizeConsumeQueue"] == str(CQ_FILE)
    messages = [{**m, "topic": "T9", "queueId": 0} if i in EARLY + CUT else m for i, m in enumerate(sc["messages"])]
    def held(planted: tuple[int, ...]) -> dict:
        units = [{"put": p, "tagsCode": 0} for p in planted]   # the puts carry no tags
        return {f"consumequeue/T9/0/{0:020d}": {"fileSize": CQ_FILE, "units": units}}

    behind = {"put": CUT[0], "add": QUEUE_OFFSET_AT, "bytes": base64.b64encode(BEHIND.to_bytes(8, "big")).decode()}
    name = f"{line}-dledger-abort-partial-held"
    return [{**sc, "messages": messages, "name": f"{name}-ahead", "plantUnits": held(PLANTED)},
            {**sc, "messages": messages, "name": f"{name}-behind", "plantUnits": held(EARLY), "plantBytes": behind}]


SCENARIOS = {ln: bh.bounded(_scenarios(ln), full_only=("-held-behind",)) for ln in LINES}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts, a queue on disk with no walk unit before its cut ones",
                   threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _verify_plan(src: Path, tmp_path: Path, line: str, monkeypatch) -> tuple[dict, object]:  # noqa: ANN001
    """``verify --json`` of ``src/before`` and the DLedger crash plan it made (``dledger_crash_on_disk``'s)."""
    import pipelines.verify.compare_store as cs
    from pipelines.cli import main
    plans = []
    real = cs.dledger_crash_on_disk

    def keep(*a, **k):  # noqa: ANN002, ANN003, ANN202
        crash, why = real(*a, **k)
        plans.append((crash, why))
        return crash, why

    monkeypatch.setattr(cs, "dledger_crash_on_disk", keep)
    out = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(out):
        main(["verify", "--store", str(src / "before"), "--config", str(src / "broker.conf"), "--broker-version",
              bh.BROKER_VERSION_ARG[line], "--engine", "local", "--work", str(tmp_path / "verify"), "--json"])
    ((crash, why),) = plans
    assert why is None, why
    return json.loads(out.getvalue()), crash


@pytest.mark.parametrize("line", LINES)
def test_the_walk_appends_a_held_queues_first_cut_unit_where_recover_left_its_files(written, line, tmp_path,
                                                                                    monkeypatch):
    """``-partial-held-ahead``: the broker's T9/0 after its restart holds the two planted units, the reput's unit of
    the last message at 40 (the write position the cut left), then the walk's units of the last two messages at 60
    and 80 (past the write position, 60): the walk put its cut units from 40, where ``recover`` left the planted
    file, not from their queue offsets' slots (80, 100, 120: zeros at 100 and 120).  ``verify``'s plan moves the
    last message's unit from 80 (where the walk had it) to 40 and deletes no T9/0 file; its units lost are the
    broker's."""
    r = written[f"{line}-dledger-abort-partial-held-ahead"]
    sc, w, src = r["scenario"], r["written"], Path(r["scenario"]["dir"])
    # what the broker wrote
    before = bh.cq_units(src / "before" / "consumequeue" / "T9" / "0" / f"{0:020d}")
    assert all(s > 0 for _o, s in before[:2]) and not any(o or s for o, s in before[2:]), before
    load, after = w["queuesAfterLoad"]["T9/0"], w["queuesAfterDispatch"]["T9/0"]
    assert (load["files"], int(load["maxOffset"])) == ([f"{0:020d}"], 40), load
    assert (after["files"], int(after["maxOffset"])) == ([f"{0:020d}"], 60), after
    po = int(w["truncateDirtyLogicFilesAt"])
    units = bh.cq_units(src / "expected" / "consumequeue" / "T9" / "0" / f"{0:020d}")
    assert units[:2] == before[:2], units
    reput, walk_395, walk_399 = units[2:5]
    # the reput's unit of message 399 at 40, the walk's of 395 and 399 at 60 and 80, all past processOffset
    assert reput == walk_399 and po <= walk_395[0] < walk_399[0] and int(after["maxPhysicOffset"]) == sum(reput), units
    assert not any(o or s for o, s in units[5:]), units   # nothing at the queue offsets' slots 100, 120
    # ours: verify's plan and prediction
    report, crash = _verify_plan(src, tmp_path, line, monkeypatch)
    (move,) = [m for m in crash.cut.moves if (m.topic, m.queue_id) == ("T9", 0)]
    assert (move.source, move.target, move.count) == (80, 40, 1), move
    assert not [d for d in crash.cut.dropped if d[:2] == ("T9", 0)], crash.cut.dropped
    p = report["restart"]
    lost = {q["queue"]: q["units_lost"] for q in p["queues"]}
    assert lost["T9/0"] == len(EARLY + CUT) - 3, lost   # it holds 10's, 20's and 399's units
    t0_end = int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"])
    held = sum(1 for f in w["queuesAfterDispatch"]["T0/0"]["files"]
               for _o, s in bh.cq_units(src / "expected" / "consumequeue" / "T0" / "0" / f)[:(t0_end - int(f)) // 20]
               if s not in (0, 2**31 - 1))   # not a fillPreBlank unit
    t0 = sum(1 for m in sc["messages"] if m["topic"] == "T0")
    assert lost["T0/0"] == t0 - held and p["units_lost"] == lost["T0/0"] + lost["T9/0"], (lost, t0, held)


@pytest.mark.parametrize("line", LINES)
def test_the_walk_drops_a_held_queues_cut_unit_below_where_recover_left_its_files(written, line, tmp_path,
                                                                                  monkeypatch):
    """``-partial-held-behind`` (full suite): the broker's T9/0 after its restart holds the four planted units, the
    reput's unit of the last message at 80, the walk's copy of it at 100 (past the write position, 100) and zeros
    after: the walk dropped the first cut unit (queue offset 2, below 80) and put the next two from 80.  ``verify``'s
    plan moves the last message's unit from 100 to 80; its units lost are the broker's (the second cut message's: the
    first one's unit no dispatch of the log puts)."""
    name = f"{line}-dledger-abort-partial-held-behind"
    if name not in written:
        pytest.skip(f"{name}: PIPELINES_FULL_SUITE=1")
    r = written[name]
    w, src = r["written"], Path(r["scenario"]["dir"])
    # what the broker wrote
    before = bh.cq_units(src / "before" / "consumequeue" / "T9" / "0" / f"{0:020d}")
    assert all(s > 0 for _o, s in before[:4]) and not any(o or s for o, s in before[4:]), before
    assert int(w["queuesAfterLoad"]["T9/0"]["maxOffset"]) == 80, w["queuesAfterLoad"]
    assert int(w["queuesAfterDispatch"]["T9/0"]["maxOffset"]) == 100, w["queuesAfterDispatch"]
    units = bh.cq_units(src / "expected" / "consumequeue" / "T9" / "0" / f"{0:020d}")
    assert units[:4] == before[:4] and units[4] == units[5], units   # the reput's at 80, the walk's at 100
    assert units[4][0] >= int(w["truncateDirtyLogicFilesAt"]) and not any(o or s for o, s in units[6:]), units
    # ours
    report, crash = _verify_plan(src, tmp_path, line, monkeypatch)
    (move,) = [m for m in crash.cut.moves if (m.topic, m.queue_id) == ("T9", 0)]
    assert (move.source, move.target, move.count) == (100, 80, 1), move
    # units lost against what the log's dispatch holds: not the planted record's (queue offset 2, behind the four
    # before it: every dispatch drops it), 395's (the broker's queue holds the other five)
    lost = {q["queue"]: q["units_lost"] for q in report["restart"]["queues"]}
    assert lost["T9/0"] == len(EARLY + CUT) - 1 - 5, lost
