"""5.5.1 DLedger crash restarts whose store holds, for a queue the recovery's walk writes, consume queue files of zeros
other than one file named 0, checked against the broker.

The stores are :mod:`test_dledger_crash_zeros_broker`'s ``-small-zeros-kept`` (T0/0: the walk's units, some below
``processOffset``) and ``-small-zeros-emptied`` (T9/0: the walk's one unit, queue offset 1, past it) with other files
of zeros planted (``plantFiles``, 220 bytes each: 11 units):

* ``-zeros-two``, ``-zeros-emptied-two``: files 0 and 220.  ``ConsumeQueue.recover`` reads from the third file from
  the end (the first here), stops at its first unit and ``MappedFileQueue.truncateDirtyFiles`` deletes file 220: as
  one file named 0.
* ``-zeros-named`` (full suite): one file named 220.  The walk's T0/0 units go from its start, queue byte 220 (no
  ``fillPreBlank``: ``MappedFile.isFirstCreateInQueue``), the first one's queue offset * 20 past it ("logic queue
  order maybe wrong").
* ``-zeros-emptied-named``: one file named 220.  The walk's T9/0 unit (queue offset 1) is dropped:
  ``putMessagePositionInfo`` compares its queue offset * 20 (20) with the file's start plus its write position (220)
  ("Build consume queue repeatedly"); ``truncateDirtyLogicFiles`` then reads that file's first unit, zeros (offset 0
  below ``processOffset``): it keeps the file, write position 20, max 0; the start's reput drops the unit again by
  the same check.  T9/0 holds no unit after the restart.
* ``-zeros-four`` (full suite): files 0, 220, 440 and 660.  ``recover`` reads from file 220 (the third from the end),
  stops at its first unit and deletes 440 and 660; file 0 stays unread.  The walk's units go from queue byte 220.

``verify`` on the store as the restart found it predicts the units lost, queue by queue, and the index keys put again as
the broker's files hold them (``QueuesOnDisk.zeros_queues``: every file of such a queue all zeros; the walk's units
through ``dispatch_units``, the reput's put-back by the queue offset check from the write position the cut left).
"""
from __future__ import annotations

import base64
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_2gib import BLANK_MAX, FILL_PRE_BLANK_UNIT
from broker_dledger_files import folder_units
from test_dledger_crash_zeros_broker import _units, _verify_as_the_broker, zeros_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
CQ_FILE = 220   # the -small stores' mappedFileSizeConsumeQueue
ZEROS = base64.b64encode(bytes(CQ_FILE)).decode()


def _planted(sc: dict, queue: str, starts: tuple[int, ...], name: str) -> dict:
    """``sc`` with ``queue``'s files of zeros at ``starts`` planted instead, named ``name``."""
    return {**sc, "plantFiles": {f"consumequeue/{queue}/{s:020d}": ZEROS for s in starts}, "name": name}


def files_scenarios(line: str) -> list[dict]:
    """The module docstring's stores of ``line``."""
    kept, emptied = zeros_scenarios(line)
    base = kept["name"].replace("-zeros-kept", "-zeros")
    return [_planted(kept, "T0/0", (0, CQ_FILE), f"{base}-two"),
            _planted(kept, "T0/0", (CQ_FILE,), f"{base}-named"),
            _planted(emptied, "T9/0", (0, CQ_FILE), f"{base}-emptied-two"),
            _planted(emptied, "T9/0", (CQ_FILE,), f"{base}-emptied-named"),
            _planted(kept, "T0/0", tuple(range(0, 4 * CQ_FILE, CQ_FILE)), f"{base}-four")]


SCENARIOS = {LINE: bh.bounded(files_scenarios(LINE), full_only=("-zeros-two", "-zeros-named", "-zeros-emptied-two",
                                                                 "-zeros-four"))}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts with consume queue files of zeros on disk", threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _run(written: dict, suffix: str) -> tuple[dict, dict, Path]:
    """Store ``-small<suffix>``'s scenario, harness report and folder (a skip when not written)."""
    name = f"{LINE}-dledger-abort-small{suffix}"
    if name not in written:
        pytest.skip(f"{name}: PIPELINES_FULL_SUITE=1")
    r = written[name]
    return r["scenario"], r["written"], Path(r["scenario"]["dir"])


def _planted_as_found(sc: dict, src: Path) -> None:
    """The store as the restart found it: the planted files of zeros, no other queue file."""
    files = sorted(p.relative_to(src / "before").as_posix() for p in (src / "before" / "consumequeue").rglob("*")
                   if p.is_file())
    assert files == sorted(sc["plantFiles"]), files
    assert not any(b for f in files for b in (src / "before" / f).read_bytes())


def _walked_from(w: dict, src: Path, queue: str, start: int) -> list[tuple[int, int]]:
    """The broker's units of ``queue`` after the restart from queue byte ``start`` on: each the walk's record's (in
    the last data file), no ``fillPreBlank`` unit; and nothing before ``start``."""
    walk_from = int(sorted((src / "before" / "dledger-n0" / "data").iterdir())[-1].name)
    end = int(w["queuesAfterDispatch"][queue]["maxOffset"])
    every = folder_units(src / "expected" / "consumequeue" / queue)
    assert not any(o or s or t for p, o, s, t in every if p < start), every[:start // 20]
    units = [(o, s) for p, o, s, _t in every if start <= p < end]
    assert units and all(s not in (0, BLANK_MAX) and o >= walk_from for o, s in units), units
    return units


@pytest.mark.parametrize("suffix,start,files", [("-zeros-two", 0, [0]), ("-zeros-named", CQ_FILE, [CQ_FILE]),
                                                ("-zeros-four", CQ_FILE, [0, CQ_FILE])])
def test_the_walk_appends_from_the_start_of_the_file_recover_stops_in(written, tmp_path, suffix, start, files):
    """``-zeros-two``, ``-zeros-named``, ``-zeros-four`` (full suite): after the load the broker's T0/0
    holds the files ``recover`` kept (``files``: file 220 of ``-two``, 440 and 660 of ``-four`` deleted), the walk's
    units below ``processOffset`` from the start of the one it stopped in, queue byte ``start``, no ``fillPreBlank``
    unit, though the first one's queue offset * 20 lies past it; after the reput the cut ones follow.  ``verify``
    predicts the units lost and the index keys put again as the broker's files hold them."""
    sc, w, src = _run(written, suffix)
    _planted_as_found(sc, src)
    po = int(w["truncateDirtyLogicFilesAt"])
    load = w["queuesAfterLoad"]["T0/0"]
    assert load["files"] == [f"{f:020d}" for f in files], load
    units = _walked_from(w, src, "T0/0", start)
    below = [(o, s) for o, s in units if o < po]
    assert below and len(below) < len(units), (po, units)
    assert (int(load["maxOffset"]), int(load["maxPhysicOffset"])) == (start + 20 * len(below), sum(below[-1])), load
    _verify_as_the_broker(src, tmp_path, sc, w, "T0/0")


def test_a_file_of_zeros_named_past_0_merges_into_the_cut(written, tmp_path):
    """``-zeros-emptied-two`` (full suite): as one file named 0 (file 220 deleted by ``recover``): the walk put T9/0's
    unit at 0, the cut deleted the file (no file, max -1) and the reput put the unit back after one ``fillPreBlank``
    unit in a new file.  ``verify`` predicts the units lost and the index keys put again."""
    sc, w, src = _run(written, "-zeros-emptied-two")
    _planted_as_found(sc, src)
    load, after = w["queuesAfterLoad"]["T9/0"], w["queuesAfterDispatch"]["T9/0"]
    assert (int(load["maxPhysicOffset"]), load["files"]) == (-1, []), load
    units = _units(src, "T9/0", int(after["maxOffset"]))
    assert after["files"] == [f"{0:020d}"] and len(units) == 2 and units[0] == (0, BLANK_MAX), (after, units)
    assert (src / "expected" / "consumequeue" / "T9" / "0" / f"{0:020d}").read_bytes()[:20] == FILL_PRE_BLANK_UNIT
    _verify_as_the_broker(src, tmp_path, sc, w, "T9/0")


def test_the_queue_offset_check_drops_a_unit_below_a_file_named_past_0(written, tmp_path):
    """``-zeros-emptied-named``: the broker's walk dropped T9/0's unit (queue offset 1: 20 below the file's start,
    220), so the cut read the planted file's first unit as zeros below ``processOffset`` and kept it (T9/0 after the
    load: file 220, write position 20, max 0), and the reput dropped the unit again: T9/0's file all zeros after the
    restart, its messages' units both lost.  ``verify`` predicts the units lost and the index keys put again."""
    sc, w, src = _run(written, "-zeros-emptied-named")
    _planted_as_found(sc, src)
    load, after = w["queuesAfterLoad"]["T9/0"], w["queuesAfterDispatch"]["T9/0"]
    assert (load["files"], int(load["maxOffset"]), int(load["maxPhysicOffset"])) == (
        [f"{CQ_FILE:020d}"], CQ_FILE + 20, 0), load
    assert after == load, after
    assert not any((src / "expected" / "consumequeue" / "T9" / "0" / f"{CQ_FILE:020d}").read_bytes())
    p = _verify_as_the_broker(src, tmp_path, sc, w, "T9/0")
    (t9,) = [q for q in p["queues"] if q["queue"] == "T9/0"]
    assert t9["units_lost"] == 2 and t9["units_dispatched_again"] == 0, t9
