"""verify's "ext units orphaned" after a 5.x DLedger crash restart whose recovery walk ended early (a record whose body
CRC fails, which DLedger's recovery and the start's reput do not check) and whose start's reput, from DLedger's
committed position inside the walk (where verify's rebuild stops reading the log), walks the walk's last records
again, then the damaged record and the rest.  ``ConsumeQueue.putMessagePositionInfoWrapper`` puts an ext unit for
each own record it is handed; ``putMessagePositionInfo`` drops the walk's records (at or below the queue's max) and
appends those past the walk's end, each holding its new ext unit's address.  So the ext units no unit points at are,
with no cut, the reput's for the walk's records (``-damaged-again-layouts``); after ``truncateDirtyLogicFiles`` at the
walk's short ``processOffset`` (``-damaged-again-layouts-cut``), the walk's ones of the units the cut took, the reput
putting back those it walks pointing at its own.  The records past the walk's end come from the crash plan
(``ExtAgain.past``, :func:`store_format.dledger_crash_cut_reput.ext_past`), not from the rebuild
(:func:`pipelines.verify.ext_reput.ext_reput_puts`).  Stores written with DLEDGER_MORE_LAYOUTS=1 (5.5.1; the no-cut one
on 5.3.3 too with DLEDGER_LINES)."""
from __future__ import annotations

import types
from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_files import cq_unit, ext_appended, ext_figures_as_the_broker, ext_orphans, pointed_ext_addresses
from broker_dledger_runs import LINES, MORE_LAYOUTS, _committed_pos, _verify_with_plan, _written

from pipelines.verify.ext_reput import ext_reput_puts
from store_format.consumequeue_recovery import EXT_MAX_ADDR

_NO_CUT = [f"{ln}-dledger-abort-damaged-again-layouts" for ln in LINES
           if (ln.startswith("5.5") and MORE_LAYOUTS) or ln.startswith("5.3")]
_CUT = [f"{ln}-dledger-abort-damaged-again-layouts-cut" for ln in LINES if ln.startswith("5.5") and MORE_LAYOUTS]
_LONG_MIN = 1 << 63


def _units(folder: Path, end: int) -> list[tuple[int, int, int, int]]:
    """A consume queue's units in ``folder`` below byte ``end`` (its write position): (queue byte position,
    commitlog offset, size, tags code)."""
    out = []
    for f in sorted(folder.iterdir()):
        data = f.read_bytes()
        out += [(int(f.name) + at, *cq_unit(data, at)) for at in range(0, len(data), 20) if int(f.name) + at < end]
    return out


def _ext_files(src: Path, queue: str) -> dict[int, bytes]:
    return {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue_ext" / queue).iterdir()}


def _damaged_walk(w: dict, src: Path) -> tuple[int, int]:
    """What the broker wrote: the store it restarted held no queue and DLedger's committed position lies before the
    damaged record (``damagedRecord``, the message's commitlog offset): (committed position, damaged record)."""
    assert not (src / "before" / "consumequeue").is_dir() or not any((src / "before" / "consumequeue").iterdir())
    committed, damaged = _committed_pos(src / "before"), int(w["damagedRecord"])
    assert committed < damaged < int(w["maxPhyOffset"]), (committed, damaged, w["maxPhyOffset"])
    return committed, damaged


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("name", bh.params_or_skip(_NO_CUT, "DLEDGER_MORE_LAYOUTS=1 (5.5.1) or 5.3.3 (DLEDGER_LINES)"))
def test_verify_counts_the_ext_units_orphaned_when_the_reput_walks_an_early_ended_walks_records_again(
        name, tmp_path, monkeypatch):
    """The broker (-damaged-again-layouts, no cut): after the restart T0/0 holds a unit for every T0 message, each
    pointing at an ext unit; the ext units no unit points at are the reput's puts for the T0 records from the
    committed position to the damaged record (walked again, units dropped), those past the walk's last ext unit
    and before the first of the records from the damaged one on (appended by the reput, past verify's rebuild).
    verify's figures, every ext queue's appended and orphaned, are the broker's, with no "not predicted" note."""
    bh.skip_without_tools()
    line = name.split("-", 1)[0]
    r, w, src = _written(name)
    committed, damaged = _damaged_walk(w, src)
    after = w["queuesAfterDispatch"]["T0/0"]
    units = _units(src / "expected" / "consumequeue" / "T0" / "0", int(after["maxOffset"]))
    sent = [m for m in r["scenario"]["messages"] if m.get("topic") == "T0"]
    assert len(units) == len(sent) and all(t <= EXT_MAX_ADDR for _p, _o, _s, t in units), (len(units), len(sent))
    walked = [t + _LONG_MIN for _p, o, _s, t in units if o < damaged]
    past = [t + _LONG_MIN for _p, o, _s, t in units if o >= damaged]
    again = sum(committed <= o < damaged for _p, o, _s, _t in units)   # the walk's records the reput walks again
    assert past and again and max(walked) < min(past), (len(past), again)
    files = _ext_files(src, "T0/0")
    pointed = pointed_ext_addresses(src, "T0/0", int(after["maxOffset"]))
    broker = ext_orphans(files, int(after["extMaxOffset"]), pointed)
    assert broker == again == ext_appended(w, src, "T0/0", 0) - len(units), (broker, again)
    assert ext_orphans(files, max(walked) + 1, pointed) == 0 and ext_orphans(files, min(past), pointed) == broker, \
        "the orphaned ext units lie between the walk's last and the first of the records past it"
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut is None and crash.start_offset <= crash.reput_from < crash.walk_end < damaged, crash
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures["T0/0"][2] == figures["T0/0"][3] == broker, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("name", bh.params_or_skip(_CUT, "DLEDGER_MORE_LAYOUTS=1 (5.5.1)"))
def test_verify_counts_the_ext_units_orphaned_when_the_cut_takes_an_early_ended_walks_units(name, tmp_path,
                                                                                            monkeypatch):
    """The broker (-damaged-again-layouts-cut): truncateDirtyLogicFiles cut T0/0 at the walk's processOffset, below
    DLedger's committed position; after the restart the units from the load's write position are the reput's, one
    per T0 record from the committed position to the log's end (the walk's record it walks again put back, the
    damaged record and those past it appended), each pointing at an ext unit past the ext end the walk left, and
    every ext unit no unit points at is one of the walk's, as many as the T0 units the cut took.  verify's figures,
    every ext queue's appended and orphaned, are the broker's, with no "not predicted" note."""
    bh.skip_without_tools()
    line = name.split("-", 1)[0]
    r, w, src = _written(name)
    committed, damaged = _damaged_walk(w, src)
    po = int(w["truncateDirtyLogicFilesAt"])
    loaded, after = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    load_write, load_ext = int(loaded["maxOffset"]), int(loaded["extMaxOffset"])
    units = _units(src / "expected" / "consumequeue" / "T0" / "0", int(after["maxOffset"]))
    kept = [u for u in units if u[0] < load_write and u[3] <= EXT_MAX_ADDR]
    # the cut kept the units of records starting below processOffset (the walk's short one, below the committed)
    assert 0 < po < committed and kept and max(o for _p, o, _s, _t in kept) < po, (po, committed, kept[-1:])
    reput = [u for u in units if u[0] >= load_write]
    assert reput and all(o >= committed and t + _LONG_MIN >= load_ext for _p, o, _s, t in reput), (reput, loaded)
    assert any(o < damaged for _p, o, _s, _t in reput) and any(o >= damaged for _p, o, _s, _t in reput), reput
    files = _ext_files(src, "T0/0")
    pointed = pointed_ext_addresses(src, "T0/0", int(after["maxOffset"]))
    broker = ext_orphans(files, int(after["extMaxOffset"]), pointed)
    walk_puts = ext_appended(w, src, "T0/0", 0) - ext_appended(w, src, "T0/0", load_ext)
    assert broker == ext_orphans(files, load_ext, pointed) == walk_puts - len(kept) > 0, (broker, walk_puts, len(kept))
    assert ext_appended(w, src, "T0/0", load_ext) == len(reput), "every ext unit the reput put is pointed at"
    # the cut took T0 units below the committed position too, which the reput never walks: they stay cut
    assert 0 < sum(o < damaged for _p, o, _s, _t in reput) < broker, (reput, broker)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut is not None and crash.process_offset == po <= crash.reput_from < crash.walk_end < damaged, crash
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures["T0/0"][2] == figures["T0/0"][3] == broker, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]


def _crash(cut: object = None, reput_from: int = 2500, start_offset: int = 500, before: bool = False,
           skip: int = 0, from_old_files: bool = False) -> types.SimpleNamespace:
    a = types.SimpleNamespace(topic="T0", queue_id=0, before=7, count=2, past=3, skip=skip, positions=np.array([40]))
    return types.SimpleNamespace(cut=cut, walk_end=3000, ext_again=(a,), ext_unwalked=(), process_offset=1000, end=6000,
                                 reput_from=reput_from, before=before, start_offset=start_offset,
                                 from_old_files=from_old_files)


def _cut(**kw: object) -> types.SimpleNamespace:
    placed = types.SimpleNamespace(whole=(), units=())
    return types.SimpleNamespace(**{"inside_placed": placed, "before_placed": placed, "reset": (), "inside_from": -1,
                                    "lost": {}, **kw})


def test_ext_reput_puts_gives_the_units_pointed_after_a_walk_ended_early_and_walked_again():
    """A walk ended early, the reput from inside it before its end, the rebuild ending before that end: with no cut,
    the walk's own units and those past its end (``before + past``); after a cut at ``processOffset`` at or below the
    rebuild's end and the reput's start, the put-backs and those past it (``len(positions) + past``).  A queue the
    store held, messages parsed there, a reput from before the walk's start or data file, below ``processOffset``,
    set inside an entry, a queue replayed whole, reset or appended before the walk's data file: not predicted."""
    assert ext_reput_puts(_crash(), 2500) == ({"T0/0": 10}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(cut=_cut()), 2500) == ({"T0/0": 4}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(), 3000) == ({}, {})   # type: ignore[arg-type]   # the rebuild reads the walk whole
    whole = types.SimpleNamespace(whole=(types.SimpleNamespace(topic="T0", queue_id=0),), units=())
    before = types.SimpleNamespace(whole=(), units=(types.SimpleNamespace(topic="T0", queue_id=0),))
    for crash, to, held in ((_crash(), 2500, {("T0", 0): 100}), (_crash(skip=1), 2500, None),
                            (_crash(start_offset=2600), 2500, None), (_crash(before=True), 2500, None),
                            (_crash(cut=_cut(), reput_from=900), 900, None), (_crash(cut=_cut()), 900, None),
                            (_crash(cut=_cut(inside_from=2400)), 2500, None),
                            (_crash(cut=_cut(inside_placed=whole)), 2500, None),
                            (_crash(cut=_cut(reset=(("T0", 0),))), 2500, None),
                            (_crash(cut=_cut(before_placed=before)), 2500, None)):
        back, why = ext_reput_puts(crash, to, held)   # type: ignore[arg-type]
        assert back == {} and "before 3000, where the recovery's walk ends" in why["T0/0"] and "\n" not in why["T0/0"]


def test_ext_reput_puts_gives_the_units_pointed_after_a_walk_ended_early_and_a_reput_from_an_earlier_file():
    """The reput from a data file before the walk's (``before``), the rebuild ending before the walk's data file: the
    walk's own units (kept or, cut, every one put back) and those past its end (``before + past``), cut or not.  A
    rebuild ending inside the walk's data files, a converted store's old files, a queue the store held, with cut
    units lost, replayed whole, reset or appended before the walk's data file: not predicted."""
    early = {"reput_from": 400, "before": True}
    assert ext_reput_puts(_crash(**early), 450) == ({"T0/0": 10}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(cut=_cut(), **early), 450) == ({"T0/0": 10}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(cut=_cut(lost={("T0", 1): np.array([700])}), **early), 450) == \
        ({"T0/0": 10}, {})   # type: ignore[arg-type]   # another queue's units lost
    whole = types.SimpleNamespace(whole=(types.SimpleNamespace(topic="T0", queue_id=0),), units=())
    for crash, to, held in ((_crash(**early), 600, None), (_crash(from_old_files=True, **early), 450, None),
                            (_crash(**early), 450, {("T0", 0): 100}),
                            (_crash(cut=_cut(lost={("T0", 0): np.array([1200])}), **early), 450, None),
                            (_crash(cut=_cut(inside_placed=whole), **early), 450, None),
                            (_crash(cut=_cut(reset=(("T0", 0),)), **early), 450, None),
                            (_crash(cut=_cut(inside_from=300), **early), 450, None)):
        back, why = ext_reput_puts(crash, to, held)   # type: ignore[arg-type]
        assert back == {} and "before 3000, where the recovery's walk ends" in why["T0/0"] and "\n" not in why["T0/0"]
