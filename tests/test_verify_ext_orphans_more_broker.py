"""verify's "ext units orphaned" after a 5.5.1 DLedger crash restart whose rebuild (which reads the log up to
DLedger's committed position) ends before the recovery's walk's data file, and so before its ``processOffset``: the
start's reput (from the committed position, in an earlier data file) walks records the walk's queues already hold,
``ConsumeQueueExt.put`` for each (``ConsumeQueue.putMessagePositionInfoWrapper``), then ``putMessagePositionInfo``
drops those units; only the units ``truncateDirtyLogicFiles`` cut are put back, each pointing at the ext unit put
for it.  So every own unit the walk put points at one ext unit (kept, or the put-back's in its place) and the
reput's others are orphaned: the crash plan's ``ExtAgain.before`` (:func:`pipelines.verify.ext_reput.ext_reput_puts`).
Checked against the broker's files on ``-before-cut-layouts``, ``-before-cut-magic-layouts`` (the reput's check
refusing a record in the first data file and going on at the next one) and ``-before-cut-emptied-layouts`` (T0, and
T7, a queue the 5.5.1 cut left with no file: ``ConsumeQueueExt.truncateByMaxAddress`` gets no ext address and keeps
the walk's ext units, ``correctMinOffset`` sets its max to -1 and the reput appends every record of it it walks, each
pointing at its new ext unit, so the walk's are the orphaned ones), written with DLEDGER_MORE_LAYOUTS=1."""
from __future__ import annotations

import types

import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_files import ext_figures_as_the_broker, ext_orphans, pointed_ext_addresses
from broker_dledger_runs import LINES, MORE_LAYOUTS, _committed_pos, _verify_with_plan, _written

from pipelines.verify.ext_reput import ext_reput_puts

_BEFORE_CUT = [f"{ln}-dledger-abort-before-cut{k}-layouts" for ln in LINES if ln.startswith("5.5") and MORE_LAYOUTS
               for k in ("", "-magic", "-emptied")]


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("name", bh.params_or_skip(_BEFORE_CUT, "DLEDGER_MORE_LAYOUTS=1 (5.5.1)"))
def test_verify_counts_the_ext_units_orphaned_when_the_rebuild_ends_before_the_walks_data_file(name, tmp_path,
                                                                                               monkeypatch):
    """The broker: DLedger's committed position (where verify's rebuild stops) lies before the walk's data file,
    which lies before the cut's processOffset, the store it restarted held no queue, and T0/0's ext files hold units
    no unit below its write position points at. verify's ext units appended and orphaned, per queue and in total,
    are the broker's, with no "not predicted" note."""
    bh.skip_without_tools()
    line = name.split("-", 1)[0]
    _r, w, src = _written(name)
    walk_file = int(sorted((src / "before" / "dledger-n0" / "data").iterdir())[-1].name)
    committed = _committed_pos(src / "before")
    assert committed < walk_file < int(w["truncateDirtyLogicFilesAt"]), (committed, walk_file, w)
    # the store the restart found holds no queue: every unit of the walk appended (the restart rebuilt them)
    assert not (src / "before" / "consumequeue").exists(), name
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut is not None and crash.walk_end < 0 and crash.reput_from < crash.start_offset, crash
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures["T0/0"][2] == figures["T0/0"][3] > 0, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("name", bh.params_or_skip([n for n in _BEFORE_CUT if "-emptied" in n],
                                                   "DLEDGER_MORE_LAYOUTS=1 (5.5.1)"))
def test_verify_counts_the_walks_ext_units_orphaned_of_a_queue_the_cut_left_no_file(name, tmp_path, monkeypatch):
    """The broker (-before-cut-emptied-layouts' T7): after the load (the walk, then the cut) the queue has no file
    but its ext files hold the walk's units; after the restart's reput those units, and only those, are the ones no
    unit below the write position points at (every ext unit the reput put is pointed at).  verify's T7 figure is
    the broker's, with no "not predicted" note, where its rebuild ends before the walk's data file."""
    bh.skip_without_tools()
    line = name.split("-", 1)[0]
    _r, w, src = _written(name)
    loaded, after = w["queuesAfterLoad"]["T7/0"], w["queuesAfterDispatch"]["T7/0"]
    walked_ext = int(loaded["extMaxOffset"])   # the ext end the walk left; the cut kept it
    assert loaded["files"] == [] and walked_ext > 0 and int(after["maxOffset"]) > 0, (loaded, after)
    folder = src / "expected" / "consumequeue_ext" / "T7" / "0"
    files = {int(f.name): f.read_bytes() for f in folder.iterdir()}
    pointed = pointed_ext_addresses(src, "T7/0", int(after["maxOffset"]))
    orphaned = ext_orphans(files, int(after["extMaxOffset"]), pointed)
    assert orphaned == ext_orphans(files, walked_ext, set()) == ext_orphans(files, walked_ext, pointed) > 0, (
        orphaned, walked_ext, after)
    committed = _committed_pos(src / "before")
    walk_file = int(sorted((src / "before" / "dledger-n0" / "data").iterdir())[-1].name)
    assert committed < walk_file, (committed, walk_file)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut is not None and ("T7", 0) in crash.cut.reset and crash.cut.inside_from < 0, crash.cut
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures["T7/0"][2] == figures["T7/0"][3] == orphaned, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]


def _crash(start_offset: int, skip: int = 0, lost: dict | None = None, reset: tuple = (),
           inside_from: int = -1) -> types.SimpleNamespace:
    placed = types.SimpleNamespace(whole=(), units=())
    a = types.SimpleNamespace(topic="T0", queue_id=0, before=7, count=11, skip=skip, positions=np.array([40, 60]))
    c = types.SimpleNamespace(inside_placed=placed, before_placed=placed, reset=reset, inside_from=inside_from,
                              lost=lost or {})
    return types.SimpleNamespace(cut=c, walk_end=-1, ext_again=(a,), process_offset=1000, end=6000, reput_from=300,
                                 before=True, start_offset=start_offset)


def test_ext_reput_puts_gives_the_walks_units_when_the_rebuild_ends_before_the_walks_data_file():
    """A rebuild ending at or before the walk's data file: the walk's own units (``before``), each pointing at an
    ext unit; a queue the cut left no file, every record the reput walks (``count``); inside that file, a unit of
    the queue lost, parsed messages' units, a queue the cut left no file with the reput set inside an entry, or one
    the store held units of before the walk: not predicted (one line)."""
    assert ext_reput_puts(_crash(600), 500) == ({"T0/0": 7}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(600), 600) == ({"T0/0": 7}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(600, reset=(("T0", 0),)), 500) == ({"T0/0": 11}, {})   # type: ignore[arg-type]
    for crash in (_crash(400), _crash(600, skip=1), _crash(600, lost={("T0", 0): np.array([700])}),
                  _crash(600, reset=(("T0", 0),), inside_from=550), _crash(400, reset=(("T0", 0),))):
        back, why = ext_reput_puts(crash, 500)   # type: ignore[arg-type]
        assert back == {} and "before the walk's processOffset 1000" in why["T0/0"] and "\n" not in why["T0/0"]
    for crash in (_crash(600),):   # a queue the store held units of before the walk (the walk may drop some)
        back, why = ext_reput_puts(crash, 500, frozenset({("T0", 0)}))   # type: ignore[arg-type]
        assert back == {} and "before the walk's processOffset 1000" in why["T0/0"] and "\n" not in why["T0/0"]
