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
pointing at its new ext unit, so the walk's are the orphaned ones), written with DLEDGER_MORE_LAYOUTS=1; and on
T0 of the stores that held their queues before the walk up to the log's end (``-mixed-disk-earlier-ext``,
``-mixed-disk-earlier-own-ext``, ``-mixed-disk-below-ext``, default stores): the walk's records all dropped, the
units the cut took put back by the reput pointing at its new ext units, so the orphaned ones are the walk's and the
reput's others and the on-disk ext units of the cut units; %LMQ%q1 of those stores (replayed whole by the crash
plan): the replay's units holding an ext address pointing at the reput's new ext units, the store's units below the
cut at their on-disk ones.  With DLEDGER_LINES=5.3.3 the same stores on 5.3.3, whose walk begins at the first data
file, so that verify's rebuild ends inside the walk's data files."""
from __future__ import annotations

import types

import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_files import (
    cq_unit,
    ext_appended,
    ext_figures_as_the_broker,
    ext_orphans,
    ext_recovered_end,
    folder_units,
    pointed_ext_addresses,
)
from broker_dledger_runs import LINES, MORE_LAYOUTS, _committed_pos, _verify_with_plan, _written

from pipelines.verify.ext_reput import ext_reput_puts
from store_format.consumequeue_recovery import EXT_MAX_ADDR

_BEFORE_CUT = [f"{ln}-dledger-abort-before-cut{k}-layouts" for ln in LINES if ln.startswith("5.5") and MORE_LAYOUTS
               for k in ("", "-magic", "-emptied")]
# the stores whose T0/0 the store held before the walk (keepQueues), DLedger's committed position before the walk's
# data file (written in the default suite with the dledger_written stores)
_HELD = [f"{ln}-dledger-abort-mixed-disk-{k}-ext" for ln in LINES if ln.startswith(("5.5", "5.3"))
         for k in ("earlier", "earlier-own", "below")]


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


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("name", bh.params_or_skip(_HELD, "5.5.1 or 5.3.3 (DLEDGER_LINES)"))
def test_verify_counts_the_ext_units_orphaned_of_a_queue_held_before_the_walk(name, tmp_path, monkeypatch):
    """The broker: the store the restart found held T0/0 up to past processOffset and DLedger's committed position
    lies before the last data file (5.5.1's walk begins there; 5.3.3's at the first data file); after the restart
    the units from the cut's write position (the reput's put-backs) point at ext units past the walk's, and the ext
    units no kept unit points at are the walk's and the reput's puts but the put-backs' plus the on-disk ones of the
    store's units the cut took.  verify's T0/0 figure is the broker's, with no "not predicted" note (%LMQ%q1/0,
    replayed whole: the next test)."""
    bh.skip_without_tools()
    line = name.split("-", 1)[0]
    _r, w, src = _written(name)
    po = int(w["truncateDirtyLogicFilesAt"])
    walk_file = int(sorted((src / "before" / "dledger-n0" / "data").iterdir())[-1].name)
    assert _committed_pos(src / "before") < walk_file < po, (walk_file, po)
    held = []   # the store's T0/0 units (commitlog offset, size, tags code), in its files' order
    for f in sorted((src / "before" / "consumequeue" / "T0" / "0").iterdir()):
        data = f.read_bytes()
        held += [u for u in (cq_unit(data, at) for at in range(0, len(data), 20)) if u[1] > 0]
    assert max(o + s for o, s, _t in held) >= po, "the store held T0/0 up to processOffset"
    loaded, after = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    on_disk_end = ext_recovered_end(src, "T0/0")
    expected = {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue" / "T0" / "0").iterdir()}
    size = len(next(iter(expected.values())))
    back = [cq_unit(expected[q - q % size], q % size)
            for q in range(int(loaded["maxOffset"]), int(after["maxOffset"]), 20)]
    # the reput's put-backs: records at or past processOffset, each pointing at an ext unit past the walk's
    assert back and all(o >= po and t <= EXT_MAX_ADDR and t + (1 << 63) >= int(loaded["extMaxOffset"])
                        for o, _s, t in back), (back, loaded)
    # the store's units the cut took: their ext units, on disk, pointed at by no kept unit
    cut_ext = {t + (1 << 63) for o, _s, t in held if o >= po and t <= EXT_MAX_ADDR}
    assert cut_ext and max(cut_ext) < on_disk_end, (sorted(cut_ext)[-3:], on_disk_end)
    ext_files = {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue_ext" / "T0" / "0").iterdir()}
    broker = ext_orphans(ext_files, int(after["extMaxOffset"]),
                         pointed_ext_addresses(src, "T0/0", int(after["maxOffset"])))
    assert broker == ext_appended(w, src, "T0/0", on_disk_end) - len(back) + len(cut_ext) > 0, (broker, len(back))
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    _walk_as_the_line(crash, line, walk_file)
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures["T0/0"][2] == figures["T0/0"][3] == broker, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]


def _walk_as_the_line(crash, line: str, walk_file: int) -> None:  # noqa: ANN001
    """The crash plan's walk: on 5.5.1 from the last data file, the reput (DLedger's committed position, where
    verify's rebuild ends) before it; on 5.3.3 from the first data file, the reput inside the walk's data files."""
    if line.startswith("5.5"):
        assert crash.reput_from < crash.start_offset == walk_file, crash
    else:
        assert crash.start_offset < crash.reput_from < walk_file, crash


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("name", bh.params_or_skip(_HELD, "5.5.1 or 5.3.3 (DLEDGER_LINES)"))
def test_verify_counts_the_ext_units_orphaned_of_a_queue_held_before_the_walk_and_replayed_whole(name, tmp_path,
                                                                                                 monkeypatch):
    """The broker (%LMQ%q1/0, own units and light ones, on disk before the walk up to past processOffset, the reput
    from DLedger's committed position before the walk's data file): after the restart the units below the write
    position the load left are the store's (the walk appended none there), those the reput appended from there that
    hold an ext address point at ext units past the load's ext end (the reput's puts), and the ext units no unit below
    the final write position points at are the on-disk ones no unit below the load's write position points at (a unit
    in a file before the cut's last one too: truncateDirtyLogicFiles takes its ext address from that file alone) plus
    the walk's and the reput's puts less those pointed at.  verify's %LMQ%q1/0 figure (the crash plan's whole replay
    of it, Placed.whole: its units holding an ext address) is the broker's, with no "not predicted" note."""
    bh.skip_without_tools()
    line, q = name.split("-", 1)[0], "%LMQ%q1/0"
    _r, w, src = _written(name)
    po = int(w["truncateDirtyLogicFilesAt"])
    walk_file = int(sorted((src / "before" / "dledger-n0" / "data").iterdir())[-1].name)
    assert _committed_pos(src / "before") < walk_file < po, (walk_file, po)
    held = folder_units(src / "before" / "consumequeue" / q)
    assert max(o + s for _p, o, s, _t in held if s > 0) >= po, "the store held %LMQ%q1/0 up to processOffset"
    loaded, after = w["queuesAfterLoad"][q], w["queuesAfterDispatch"][q]
    load_write, load_ext = int(loaded["maxOffset"]), int(loaded["extMaxOffset"])
    expected = folder_units(src / "expected" / "consumequeue" / q)
    kept = [u for u in expected if u[0] < load_write]
    assert kept == [u for u in held if u[0] < load_write] and max(o + s for _p, o, s, _t in kept) < po, \
        "the units below the load's write position are the store's"
    new = [t + (1 << 63) for p, _o, _s, t in expected
           if load_write <= p < int(after["maxOffset"]) and t <= EXT_MAX_ADDR]
    assert all(a >= load_ext for a in new), (new, loaded)
    on_disk_end = ext_recovered_end(src, q)
    pointed_on_disk = {t + (1 << 63) for _p, _o, _s, t in kept if t <= EXT_MAX_ADDR}
    assert all(a < on_disk_end for a in pointed_on_disk), (pointed_on_disk, on_disk_end)
    ext_files = {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue_ext" / q).iterdir()}
    broker = ext_orphans(ext_files, int(after["extMaxOffset"]), pointed_ext_addresses(src, q, int(after["maxOffset"])))
    on_disk = ext_orphans(ext_files, on_disk_end, {a - (1 << 63) for a in pointed_on_disk})
    assert broker == on_disk + ext_appended(w, src, q, on_disk_end) - len(new) > 0, (broker, on_disk, new)
    print(f"{name}: %LMQ%q1/0 orphaned {broker} (on disk {on_disk}, new pointed {len(new)}, "
          f"kept pointing {len(pointed_on_disk)})")
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut is not None and crash.cut.inside_from < 0, crash
    _walk_as_the_line(crash, line, walk_file)
    assert ("%LMQ%q1", 0) in {(x.topic, x.queue_id) for x in crash.cut.inside_placed.whole}, crash.cut.inside_placed
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures[q][2] == figures[q][3] == broker, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]


# no cut, the walk from the first data file to the log's end, the reput from DLedger's committed position inside it
# (5.3.3's -layouts: its truncateDirtyLogicFiles cuts nothing where the store held no queue)
_NO_CUT = [*(f"{ln}-dledger-abort-layouts-early" for ln in LINES if ln.startswith("5.5") and MORE_LAYOUTS),
           *(f"{ln}-dledger-abort-layouts" for ln in LINES if ln.startswith("5.3"))]


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("name", bh.params_or_skip(_NO_CUT, "DLEDGER_MORE_LAYOUTS=1 (5.5.1) or 5.3.3 (DLEDGER_LINES)"))
def test_verify_counts_the_reputs_ext_units_orphaned_with_no_cut_and_a_walk_from_before_the_rebuilds_end(
        name, tmp_path, monkeypatch):
    """The broker (5.5.1's -layouts-early, 5.3.3's -layouts): the store it restarted held no queue, no queue was
    cut, and DLedger's committed position (where verify's rebuild stops) lies inside the walk's data files; after the
    restart every T0 message has its unit below the write position, each pointing at an ext unit, and the ext units
    no unit points at are the reput's (one per T0 record from the committed position to the log's end, past the
    walk's).  verify's figures, every ext queue's appended and orphaned, are the broker's, with no "not predicted"
    note."""
    bh.skip_without_tools()
    line = name.split("-", 1)[0]
    r, w, src = _written(name)
    assert not (src / "before" / "consumequeue").is_dir() or not any((src / "before" / "consumequeue").iterdir())
    committed = _committed_pos(src / "before")
    sent = [m for m in r["scenario"]["messages"] if m["topic"] == "T0"]
    # after the load (the walk, then truncateDirtyLogicFiles) T0/0 holds every message: the walk's, none cut
    assert int(w["queuesAfterLoad"]["T0/0"]["maxOffset"]) == 20 * len(sent), (w["queuesAfterLoad"]["T0/0"], len(sent))
    after = w["queuesAfterDispatch"]["T0/0"]
    units = [u for u in folder_units(src / "expected" / "consumequeue" / "T0" / "0") if u[0] < int(after["maxOffset"])]
    assert len(units) == len(sent) and all(t <= EXT_MAX_ADDR for _p, _o, _s, t in units), (len(units), len(sent))
    walked = max(t + (1 << 63) for _p, _o, _s, t in units)   # the walk's last ext unit: the reput's come after it
    again = sum(o >= committed for _p, o, _s, _t in units)   # the T0 records the reput walks again
    files = {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue_ext" / "T0" / "0").iterdir()}
    pointed = pointed_ext_addresses(src, "T0/0", int(after["maxOffset"]))
    broker = ext_orphans(files, int(after["extMaxOffset"]), pointed)
    assert broker == again == ext_appended(w, src, "T0/0", 0) - len(sent) > 0, (broker, again)
    assert ext_orphans(files, walked + 1, pointed) == 0, "every ext unit up to the walk's last is pointed at"
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut is None and crash.walk_end < 0 and crash.start_offset <= crash.reput_from < crash.end, crash
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures["T0/0"][2] == figures["T0/0"][3] == broker, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]



_BEFORE_NO_CUT = [f"{ln}-dledger-abort-before-layouts" for ln in LINES if ln.startswith("5.5") and MORE_LAYOUTS]


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("name", bh.params_or_skip(_BEFORE_NO_CUT, "DLEDGER_MORE_LAYOUTS=1 (5.5.1)"))
def test_verify_counts_the_reputs_ext_units_orphaned_with_no_cut_and_the_reput_before_the_walks_data_file(
        name, tmp_path, monkeypatch):
    """The broker (5.5.1's -before-layouts): the store it restarted held no queue, no queue was cut, the walk ran
    from the last data file to the log's end and DLedger's committed position (the reput's start, where verify's
    rebuild stops) lies in the first; after the restart T0/0's units below the write position are fillPreBlank ones
    (the records before the walk's data file: the reput drops them) then the walk's, each pointing at an ext unit,
    and the ext units no unit points at are the reput's, more than the walk's records it walked again (the earlier
    records' too).  verify's figures, every ext queue's appended and orphaned, are the broker's, with no "not
    predicted" note."""
    bh.skip_without_tools()
    line = name.split("-", 1)[0]
    _r, w, src = _written(name)
    assert not (src / "before" / "consumequeue").is_dir() or not any((src / "before" / "consumequeue").iterdir())
    walk_file = int(sorted((src / "before" / "dledger-n0" / "data").iterdir())[-1].name)
    assert _committed_pos(src / "before") < walk_file, walk_file
    after = w["queuesAfterDispatch"]["T0/0"]
    units = [u for u in folder_units(src / "expected" / "consumequeue" / "T0" / "0") if u[0] < int(after["maxOffset"])]
    blanks = [u for u in units if u[1] == 0 and u[2] == 2**31 - 1]
    walked = units[len(blanks):]
    assert blanks == units[:len(blanks)] and blanks and walked, (len(blanks), len(units))
    assert all(o >= walk_file and t <= EXT_MAX_ADDR for _p, o, _s, t in walked), walked[:3]
    files = {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue_ext" / "T0" / "0").iterdir()}
    pointed = pointed_ext_addresses(src, "T0/0", int(after["maxOffset"]))
    broker = ext_orphans(files, int(after["extMaxOffset"]), pointed)
    assert broker == ext_appended(w, src, "T0/0", 0) - len(walked) > len(walked), (broker, len(walked))
    assert ext_orphans(files, max(t + (1 << 63) for _p, _o, _s, t in walked) + 1, pointed) == 0, \
        "every ext unit up to the walk's last is pointed at"
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut is None and crash.walk_end < 0 and crash.before and crash.reput_from < crash.start_offset, crash
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures["T0/0"][2] == figures["T0/0"][3] == broker, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]

def _crash(start_offset: int, skip: int = 0, lost: dict | None = None, reset: tuple = (),
           inside_from: int = -1, whole: tuple = ()) -> types.SimpleNamespace:
    placed = types.SimpleNamespace(whole=whole, units=())
    a = types.SimpleNamespace(topic="T0", queue_id=0, before=7, count=11, skip=skip, positions=np.array([40, 60]))
    c = types.SimpleNamespace(inside_placed=placed, before_placed=placed, reset=reset, inside_from=inside_from,
                              lost=lost or {})
    return types.SimpleNamespace(cut=c, walk_end=-1, ext_again=(a,),
                                 ext_unwalked=(), process_offset=1000, end=6000, reput_from=300,
                                 before=True, start_offset=start_offset)


def test_ext_reput_puts_gives_the_walks_units_when_the_rebuild_ends_before_the_walks_data_file():
    """A rebuild ending at or before the walk's data file: the walk's own units (``before``), each pointing at an
    ext unit; a queue the cut left no file, every record the reput walks (``count``); inside that file, a unit of
    the queue lost, parsed messages' units, a queue the cut left no file with the reput set inside an entry, one
    the store held units of below ``processOffset`` or held and left no file by the cut: not predicted (one line);
    one the store held units of up to ``processOffset``: the units the reput puts back (``positions``), the rebuild
    ending inside the walk's data file too."""
    assert ext_reput_puts(_crash(600), 500) == ({"T0/0": 7}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(600), 600) == ({"T0/0": 7}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(600, reset=(("T0", 0),)), 500) == ({"T0/0": 11}, {})   # type: ignore[arg-type]
    for crash in (_crash(400), _crash(600, skip=1), _crash(600, lost={("T0", 0): np.array([700])}),
                  _crash(600, reset=(("T0", 0),), inside_from=550), _crash(400, reset=(("T0", 0),))):
        back, why = ext_reput_puts(crash, 500)   # type: ignore[arg-type]
        assert back == {} and "before the walk's processOffset 1000" in why["T0/0"] and "\n" not in why["T0/0"]
    assert ext_reput_puts(_crash(600), 500, {("T0", 0): 1000}) == ({"T0/0": 2}, {})   # type: ignore[arg-type]
    # held up to processOffset, the rebuild ending inside the walk's data file (5.3.3's walk from the first one)
    assert ext_reput_puts(_crash(400), 500, {("T0", 0): 1000}) == ({"T0/0": 2}, {})   # type: ignore[arg-type]
    # held below processOffset (the walk appends units the cut keeps), or held and left no file by the cut
    for crash, top in ((_crash(600), 999), (_crash(600, reset=(("T0", 0),)), 1200)):
        back, why = ext_reput_puts(crash, 500, {("T0", 0): top})   # type: ignore[arg-type]
        assert back == {} and "before the walk's processOffset 1000" in why["T0/0"] and "\n" not in why["T0/0"]


def test_ext_reput_puts_gives_the_ext_holding_units_of_a_queue_held_before_the_walk_and_replayed_whole():
    """A queue replayed whole (``Placed.whole``) that the store held up to ``processOffset``, the rebuild ending at or
    before the walk's data file: the units the replay appends that hold an ext address (each the reput's new ext
    unit), the rebuild ending inside the walk's data file too; held below ``processOffset`` or not at all, messages
    parsed there, the reput set inside an entry, or held and left no file by the cut: not predicted (one line)."""
    ext, plain = -(1 << 63) + 40, 42
    whole = (types.SimpleNamespace(topic="T0", queue_id=0, put_back=(700, 800, 900),
                                   units=((2480, 700, 10, plain), (2500, 800, 10, ext), (2520, 900, 10, plain))),)
    held = {("T0", 0): 1000}
    assert ext_reput_puts(_crash(600, whole=whole), 500, held) == ({"T0/0": 1}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(400, whole=whole), 500, held) == ({"T0/0": 1}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(600, whole=whole, lost={("T0", 0): np.array([950])}), 500, held) \
        == ({"T0/0": 1}, {})   # type: ignore[arg-type]
    # held below processOffset, parsed messages, set inside an entry, the rebuild inside the walk's data file held
    # below processOffset, held and left no file, not held
    for crash, top in ((_crash(600, whole=whole), 999), (_crash(600, whole=whole, skip=1), 1000),
                       (_crash(600, whole=whole, inside_from=550), 1000), (_crash(400, whole=whole), 999),
                       (_crash(600, whole=whole, reset=(("T0", 0),)), 1000), (_crash(600, whole=whole), 0)):
        back, why = ext_reput_puts(crash, 500, {("T0", 0): top} if top else {})   # type: ignore[arg-type]
        assert back == {} and "before the walk's processOffset 1000" in why["T0/0"] and "\n" not in why["T0/0"]


def test_ext_reput_puts_gives_the_walks_units_with_no_cut_and_the_reput_inside_the_walk():
    """No cut, the walk to the log's end, the reput from inside it (at or after the walk's start), the rebuild
    ending before the log's end: a queue the store held no unit of has every own unit the walk put pointed at
    (``before``), the reput from an earlier data file too; one the store held units of, messages parsed where the
    reput was set, a reput from before the walk's start in its data file or from a converted store's old files: not
    predicted (one line); a rebuild reading the whole log: the rebuilt units' figure."""
    def crash(start: int = 0, reput: int = 300, skip: int = 0, before: bool = False,
              old: bool = False) -> types.SimpleNamespace:
        a = types.SimpleNamespace(topic="T0", queue_id=0, before=7, count=3, skip=skip, positions=np.zeros(0),
                                  walked=np.zeros((0, 2), np.int64))
        return types.SimpleNamespace(cut=None, walk_end=-1, ext_again=(a,),
                                     ext_unwalked=(), process_offset=1000, end=6000,
                                     reput_from=reput, before=before, start_offset=start, from_old_files=old)
    assert ext_reput_puts(crash(), 300) == ({"T0/0": 7}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(crash(start=300), 300) == ({"T0/0": 7}, {})   # type: ignore[arg-type]
    # the reput from an earlier data file (DLedgerCrash.before): the walk's units too, the earlier records dropped
    assert ext_reput_puts(crash(start=400, before=True), 300) == ({"T0/0": 7}, {})   # type: ignore[arg-type]
    back, why = ext_reput_puts(crash(start=400, before=True, old=True), 300)   # type: ignore[arg-type]
    assert back == {} and "reput walks the records between again" in why["T0/0"]
    assert ext_reput_puts(crash(), 6000) == ({}, {})   # type: ignore[arg-type]
    for c, held in ((crash(), {("T0", 0): 100}), (crash(skip=1), None), (crash(start=400), None)):
        back, why = ext_reput_puts(c, 300, held)   # type: ignore[arg-type]
        assert back == {} and "reput walks the records between again" in why["T0/0"] and "\n" not in why["T0/0"]
