"""5.5.1 DLedger crash restarts whose store holds a consume queue of one file of zeros named 0 (units that never
reached the disk) for a queue the recovery's walk writes into, with ext files (``enableConsumeQueueExt=true``, ext
files of 204 bytes: 10 ext units each), checked against the broker.

The stores are :mod:`test_dledger_crash_zeros_broker`'s ``-small-zeros-kept`` and ``-small-zeros-emptied`` with ext
files on (``-zeros-ext-kept``, full suite, and ``-zeros-ext-emptied``); the harness deletes ``consumequeue_ext/``
with the queue folders, so the planted queue has no ext file when the restart opens the store:

* ``ConsumeQueue.recover`` accepts no unit of the file of zeros: its last ext address stays 1, not an ext address, so
  ``ConsumeQueueExt.truncateByMaxAddress`` does nothing (and there is no ext file to keep).
* the walk's ``putMessagePositionInfoWrapper`` puts each of its units' ext units (``ConsumeQueueExt.put``) from the
  ext queue's start, 0, and the unit points at it.
* ``truncateDirtyLogicFiles(processOffset)`` leaves the ext files alone: with ``-kept`` a file of the queue stays (it
  returns inside its loop, before ``truncateByMaxAddress``); with ``-emptied`` the cut deletes the file at its first
  unit (the last ext address stays 1).  So the ext units of the cut units stay in the ext files, and the reput puts
  them again after them.

``verify`` on the store as the restart found it predicts the units lost, queue by queue, the index keys put again and
the ext files' end as the broker's files hold them.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_2gib import BLANK_MAX
from test_dledger_crash_zeros_broker import (
    _run,
    _units,
    _verify_as_the_broker,
    _zeros_planted,
    zeros_scenarios,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
EXT = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204"}
EXT_UNIT = 20   # an ext unit without a filter bitmap: size, tags code, msg store time, bitmap size


def _scenarios() -> list[dict]:
    """``-zeros-ext-kept`` and ``-zeros-ext-emptied`` (module docstring)."""
    return [{**sc, "config": {**sc["config"], **EXT}, "name": sc["name"].replace("-zeros-", "-zeros-ext-")}
            for sc in zeros_scenarios(LINE)]


SCENARIOS = {LINE: bh.bounded(_scenarios(), full_only=("-zeros-ext-kept",))}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts with a file of zeros on disk and ext files", threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _real_units(src, queue: str, end: int) -> list[tuple[int, int]]:  # noqa: ANN001
    """The broker's units of ``queue`` after its restart below queue byte ``end``, no ``fillPreBlank`` unit."""
    return [(o, s) for o, s in _units(src, queue, end) if s not in (0, BLANK_MAX)]


def _verify_ext_as_the_broker(src, tmp_path, sc: dict, w: dict, queue: str) -> None:  # noqa: ANN001
    """``verify`` on ``src/before``: the units lost and index keys (:func:`_verify_as_the_broker`), and per queue the
    ext units the restart appends and those it leaves orphaned (no unit pointing at them) as the broker's ext files
    hold them: every queue's ext files were deleted before the restart, so each ext unit there is one it put."""
    p = _verify_as_the_broker(src, tmp_path, sc, w, queue)
    per = {q["queue"]: q for q in p["queues"]}
    appended = orphaned = 0
    for name, v in w["queuesAfterDispatch"].items():
        ext = int(v["extMaxOffset"]) // EXT_UNIT
        n = len(_real_units(src, name, int(v["maxOffset"])))
        got = per.get(name, {"ext_units_appended": 0, "ext_units_orphaned": 0})
        assert (got["ext_units_appended"], got["ext_units_orphaned"]) == (ext, ext - n), (name, got, ext, n)
        appended, orphaned = appended + ext, orphaned + ext - n
    assert (p["ext_units_appended"], p["ext_units_orphaned"]) == (appended, orphaned), p
    assert per[queue]["ext_units_orphaned"] > 0


def _no_ext_planted(src) -> None:  # noqa: ANN001
    """The store as the restart found it holds no ext file."""
    ext = src / "before" / "consumequeue_ext"
    assert not ext.exists() or not [p for p in ext.rglob("*") if p.is_file()]


def test_a_kept_file_of_zeros_keeps_the_cut_units_ext_units(written, tmp_path):
    """``-zeros-ext-kept`` (full suite): the broker's T0/0 after the load is the planted file holding the walk's
    units below ``processOffset`` from byte 0 and one ext file holding the ext units of every walked unit, the cut
    ones too (a file stays: ``truncateDirtyLogicFiles`` returns before ``truncateByMaxAddress``); after the reput the
    cut units follow in the queue, pointing at their ext units put again after the others.  ``verify`` predicts the
    units lost, the index keys and the ext units appended and orphaned as the broker's files hold them."""
    r = _run(written, f"{LINE}-dledger-abort-small-zeros-ext-kept")   # full suite
    sc, w, src = r["scenario"], r["written"], Path(r["scenario"]["dir"])
    _zeros_planted(src, "T0/0")
    _no_ext_planted(src)
    po = int(w["truncateDirtyLogicFilesAt"])
    load, after = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    units = _real_units(src, "T0/0", int(after["maxOffset"]))
    below = [u for u in units if u[0] < po]
    assert below and len(below) < len(units), (po, units)
    assert (load["files"], int(load["maxOffset"])) == ([f"{0:020d}"], 20 * len(below)), load
    assert (load["extFiles"], int(load["extMaxOffset"])) == ([f"{0:020d}"], EXT_UNIT * len(units)), load
    assert int(after["extMaxOffset"]) == EXT_UNIT * (2 * len(units) - len(below)), (after, units, below)
    _verify_ext_as_the_broker(src, tmp_path, sc, w, "T0/0")


def test_an_emptied_file_of_zeros_leaves_its_ext_unit(written, tmp_path):
    """``-zeros-ext-emptied``: the broker's cut deleted T9/0's planted file (the walk's unit at 0, past
    ``processOffset``) and left its ext file holding that unit's ext unit (the last ext address 1:
    ``truncateByMaxAddress`` does nothing); the reput put the unit back after one ``fillPreBlank`` unit, pointing at
    its ext unit put again after the first.  ``verify`` predicts the units lost, the index keys and the ext units
    appended and orphaned as the broker's files hold them."""
    r = _run(written, f"{LINE}-dledger-abort-small-zeros-ext-emptied")
    sc, w, src = r["scenario"], r["written"], Path(r["scenario"]["dir"])
    _zeros_planted(src, "T9/0")
    _no_ext_planted(src)
    load, after = w["queuesAfterLoad"]["T9/0"], w["queuesAfterDispatch"]["T9/0"]
    assert (load["files"], int(load["maxPhysicOffset"])) == ([], -1), load
    assert (load["extFiles"], int(load["extMaxOffset"])) == ([f"{0:020d}"], EXT_UNIT), load
    assert _units(src, "T9/0", int(after["maxOffset"]))[0] == (0, BLANK_MAX)
    assert len(_real_units(src, "T9/0", int(after["maxOffset"]))) == 1 and int(after["extMaxOffset"]) == 2 * EXT_UNIT
    _verify_ext_as_the_broker(src, tmp_path, sc, w, "T9/0")
