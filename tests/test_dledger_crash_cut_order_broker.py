"""5.5.1 DLedger crash restarts whose walk did not put a cut queue's units one after the other from their queue
offsets, checked against the broker: the ``partial`` crash restart
(:func:`broker_dledger_scenarios.partial_abort_scenario`: one queue, T0/0, 400 messages, DLedger's checkpoint two
entries behind the log's end; ``truncateDirtyLogicFiles`` keeps the units of messages 0-375, the start's reput from the
committed position dispatches the last two) with one record's QUEUEOFFSET field planted (``plantBytes``: no check the
walk or the reput runs reads it against anything).

* ``-partial-first-behind``: message :data:`FIRST` (the first one past ``processOffset``) planted to
  :data:`BEHIND`, not one past the walk's unit before it (375): its ``* 20`` lies below the walk's write position, so
  ``ConsumeQueue.putMessagePositionInfo`` drops it ("Build consume queue repeatedly") and appends the next ones one
  slot down; the cut takes them back to slot 376, the reput appends the last two there.
  ``-partial-first-behind-recheck`` (full suite): with ``recheckReputOffsetFromCq`` the reput dispatches every cut unit
  again from the state the cut left, drops that one again and puts the others back where the walk had them.
* ``-partial-first-ahead`` (full suite): message :data:`FIRST` planted to :data:`AHEAD`: appended at slot 376 all the
  same ("logic queue order maybe wrong" only logged), the others after it at their own slots.
* ``-partial-dropped-back``: message :data:`BACK` (the last but one, one of the two the reput dispatches) planted to
  :data:`BACK_TO`, below the slot the walk reached it at (398): the walk dropped it; the reput's write position after
  the cut (376) lies lower, so the reput appends it there, then the last message's unit.  No file of the walk holds
  it: ``rebuild --as-restart`` writes it from its record
  (:func:`store_format.dledger_crash_cut_reput._written_units`).

``--as-restart`` on the store as the restart found it writes the broker's ``consumequeue/`` and ``index/`` byte for
byte, and ``verify``'s units lost are the broker's (:func:`store_format.dledger_crash_cut_reput._reput_positions`: the
walk's positions from one past its unit before the cut ones, the reput's from the state the cut left).
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
FIRST = 376        # the first message past processOffset (the cut keeps 0-375)
BEHIND = 370       # -first-behind: its queue offset as planted (below 376)
AHEAD = 426        # -first-ahead: so (50 past 376)
BACK = 398         # -dropped-back: the message planted, the last but one
BACK_TO = 390      # its queue offset as planted (below 398, not below 376)
QUEUE_OFFSET_AT = 20   # QUEUEOFFSET's place in a message record (after TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG)
ENTRY_HEADER = 48      # a DLedger entry's header before each record
CQ_FILE = 220


def _plant(message: int, queue_offset: int) -> dict:
    return {"put": message, "add": QUEUE_OFFSET_AT, "bytes": base64.b64encode(queue_offset.to_bytes(8, "big")).decode()}


def _scenarios(line: str) -> list[dict]:
    """The module docstring's stores of ``line``."""
    sc = partial_abort_scenario(line)
    assert sc["config"]["mappedFileSizeConsumeQueue"] == str(CQ_FILE)
    name = sc["name"]
    behind = {**sc, "plantBytes": _plant(FIRST, BEHIND), "name": f"{name}-first-behind"}
    return [behind, {**behind, "config": {**sc["config"], "recheckReputOffsetFromCq": "true"},
                     "name": f"{name}-first-behind-recheck"},
            {**sc, "plantBytes": _plant(FIRST, AHEAD), "name": f"{name}-first-ahead"},
            {**sc, "plantBytes": _plant(BACK, BACK_TO), "name": f"{name}-dropped-back"}]


SCENARIOS = {ln: bh.bounded(_scenarios(ln), full_only=("-first-behind-recheck", "-first-ahead")) for ln in LINES}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts, a cut queue's record with its queue offset planted", threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _record(src: Path, at: int) -> tuple[int, int]:
    """The TOTALSIZE and QUEUEOFFSET fields of the record at commitlog offset ``at`` in the store as the restart found
    it (a DLedger data file holds it at that position, after its entry's header)."""
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    (f,) = [d for d in data if int(d.name) <= at < int(d.name) + d.stat().st_size]
    b = f.read_bytes()[at - int(f.name):]
    return int.from_bytes(b[:4], "big"), int.from_bytes(b[QUEUE_OFFSET_AT:QUEUE_OFFSET_AT + 8], "big")


def _next(src: Path, at: int, k: int = 1) -> int:
    """The commitlog offset of the record ``k`` records after the one at ``at`` (one data file)."""
    for _ in range(k):
        at += _record(src, at)[0] + ENTRY_HEADER
    return at


def _slots(src: Path, state: dict) -> list[int]:
    """The commitlog offsets of the units of the broker's T0/0 file by slot (0: zeros), every slot of its files."""
    out: list[int] = [0] * (int(state["files"][0]) // 20)
    for f in state["files"]:
        out += [o for o, _s in bh.cq_units(src / "expected" / "consumequeue" / "T0" / "0" / f)]
    return out


def _broker(written: dict, line: str, suffix: str) -> tuple[dict, Path, int, int, list[int], int]:
    """The store ``-partial<suffix>``: its run, folder, the planted record's offset (its QUEUEOFFSET field checked),
    ``processOffset``, the broker's T0/0 by slot and its write position in units."""
    name = f"{line}-dledger-abort-partial{suffix}"
    if name not in written:
        pytest.skip(f"{name}: PIPELINES_FULL_SUITE=1")
    r = written[name]
    w, src = r["written"], Path(r["scenario"]["dir"])
    planted = int(w["plantedAt"]) - QUEUE_OFFSET_AT
    assert _record(src, planted)[1] == int.from_bytes(base64.b64decode(r["scenario"]["plantBytes"]["bytes"]), "big")
    (state,) = w["queuesAfterDispatch"].values()
    return r, src, planted, int(w["truncateDirtyLogicFilesAt"]), _slots(src, state), int(state["maxOffset"]) // 20


def _ours(r: dict, src: Path, line: str, tmp_path: Path, slots: list[int], write: int, never: int = -1) -> None:
    """``--as-restart`` writes the broker's files byte for byte; ``verify``'s units lost: of the units the log's
    dispatch from its start puts (not ``never``'s, the record whose queue offset lies behind the ones before it),
    those the broker's queue lacks (it holds those of its files below its write position, ``write``)."""
    held = sum(1 for o in slots[:write] if o and o != never)
    name = r["scenario"]["name"]
    code, err = _as_restart(bh.copy_store(src / "before", tmp_path / "store"), tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    p = _dledger_prediction(src, name, line, tmp_path)
    lost = _queued(r["scenario"]) - (never >= 0) - held
    assert p["units_lost"] == lost, (p["units_lost"], lost, p["notes"])


@pytest.mark.parametrize("suffix", ["-first-behind", "-first-ahead"])
@pytest.mark.parametrize("line", LINES)
def test_a_first_cut_unit_not_one_past_the_walks_unit_before_it(written, line, suffix, tmp_path):
    """``-partial-first-behind``/``-first-ahead``: the planted record is the first past ``processOffset`` (the one
    after slot 375's); the broker's T0/0 holds 0-375, the last two messages' units at 376 and 377 (the reput's) and the
    walk's units of the messages from 379 (behind: one slot down, the planted one dropped) or 378 (ahead: each at its
    own slot, the planted one at 376, not 426) on after them, none past the file the cut left."""
    r, src, planted, po, slots, write = _broker(written, line, suffix)
    # what the broker wrote
    size375 = _record(src, slots[375])[0]
    assert slots[375] < po <= planted == slots[375] + size375 + ENTRY_HEADER, (slots[375], po, planted)
    last = _next(src, planted, 399 - FIRST)   # the last message's record
    assert write == FIRST + 2 and slots[FIRST:FIRST + 2] == [_next(src, planted, BACK - FIRST), last], slots[FIRST:]
    stale = _next(src, planted, 3 if suffix == "-first-behind" else 2)   # the walk's unit at slot 378
    assert slots[378] == stale and slots[379] == _next(src, stale), (slots[378:], stale)
    assert len(slots) == FIRST - FIRST % 11 + 11 and 0 not in slots[FIRST:], len(slots)   # the file of 374-384
    # ours (the planted record behind: no dispatch of the log from its start puts its unit either)
    _ours(r, src, line, tmp_path, slots, write, never=planted if suffix == "-first-behind" else -1)


@pytest.mark.parametrize("line", LINES)
def test_a_first_cut_unit_the_walk_dropped_dropped_again_by_a_reput_from_the_cut(written, line, tmp_path):
    """``-partial-first-behind-recheck`` (full suite): the reput from the cut queue's max dispatches every cut unit:
    the planted one dropped again, the others where the walk had them, one slot down (376: message 377's, 398: the
    last message's); the broker's T0/0 lacks that one unit."""
    r, src, planted, po, slots, write = _broker(written, line, "-first-behind-recheck")
    # what the broker wrote
    assert slots[375] < po <= planted, (slots[375], po, planted)
    assert write == 399 and slots[FIRST:write] == [_next(src, planted, k) for k in range(1, 400 - FIRST)], slots[370:]
    assert planted not in slots
    # ours (no dispatch of the log from its start puts the planted record's unit either)
    _ours(r, src, line, tmp_path, slots, write, never=planted)


@pytest.mark.parametrize("line", LINES)
def test_a_cut_unit_the_walk_dropped_that_the_reput_puts_back(written, line, tmp_path):
    """``-partial-dropped-back``: the planted record (message 398, queue offset 390) is the last but one; the walk
    reached it at slot 398 and dropped it (390 * 20 below 398 * 20); the broker's T0/0 after the reput holds it at
    376 (the write position the cut left, not above 390 * 20: appended) and the last message's after it, then the
    walk's units of 378 on at their slots.  ``--as-restart`` writes the planted record's unit from it."""
    r, src, planted, po, slots, write = _broker(written, line, "-dropped-back")
    # what the broker wrote
    assert po <= slots[FIRST] and slots[375] < po and _next(src, slots[375]) >= po, (slots[375:378], po)
    first = _next(src, slots[375])   # message 376's record
    assert planted == _next(src, first, BACK - FIRST), (planted, first)
    assert write == FIRST + 2 and slots[FIRST:write] == [planted, _next(src, planted)], slots[FIRST:]
    assert slots[378] == _next(src, first, 2) and _record(src, planted)[1] * 20 >= FIRST * 20, slots[378]
    # ours (the planted record's unit, which a dispatch of the log from its start drops, the broker's queue holds: the
    # units it lacks of that dispatch's are the others it does not hold)
    _ours(r, src, line, tmp_path, slots, write, never=planted)
