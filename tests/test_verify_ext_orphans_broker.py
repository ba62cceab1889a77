"""verify's "ext units orphaned" after a 5.x DLedger crash restart whose reput puts back cut units of an ext queue for
records past the end of verify's own rebuild (which reads the log up to DLedger's committed position): the units the
reput puts back point at the ext units it put for them (``ConsumeQueue.putMessagePositionInfoWrapper``), counted from
the crash plan (``ExtAgain.positions``, :mod:`pipelines.verify.ext_reput`), not from the rebuilt units. Checked
against the broker's files on the layouts store (T0/0 with ext files, the light queue %LMQ%q1, the BatchCQ topic BT0;
DLedger's checkpoint some entries behind the log's end; ``-recheck`` with DLEDGER_MORE_LAYOUTS=1), with the
``-mixed-disk-reput-ext`` cases in :mod:`test_dledger_crash_mixed_disk_reput_broker`; a walk ended early with the
start's reput from an earlier data file (``-before-damaged-layouts``, ``-cut``, DLEDGER_MORE_LAYOUTS=1: the walk's
puts and the reput's past the walk's end pointed at, ``ExtAgain.before + past``).  Also the line verify prints
where the plan gives no positions for such a queue (:func:`pipelines.verify.ext_reput.ext_reput_puts`)."""
from __future__ import annotations

import types

import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_files import (
    cq_unit,
    ext_appended,
    ext_figures_as_the_broker,
    ext_orphaned_as_the_broker,
    ext_orphans,
    pointed_ext_addresses,
)
from broker_dledger_runs import LINES, MORE_LAYOUTS, _committed_pos, _entries_from, _verify_with_plan, _written

from pipelines.verify.ext_reput import ext_reput_puts
from store_format.consumequeue_ext import LONG_MIN
from store_format.consumequeue_recovery import EXT_MAX_ADDR


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("suffix", ["", *(["-recheck"] if MORE_LAYOUTS else [])])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_counts_the_ext_units_the_reput_points_at_for_records_past_the_rebuild(line, suffix, tmp_path,
                                                                                      monkeypatch):
    """The 5.5.1 layouts store after a crash: the cut takes T0/0's last units, the reput puts them back at the cut's
    write position (from the committed position: the last ones; -recheck: every one), each pointing at the ext unit
    it put for it, records past the committed position among them (verify's rebuild stops there). verify's ext units
    orphaned, per queue, are those of the broker's files (the ext units below the ext end no unit below the write
    position points at)."""
    bh.skip_without_tools()
    name = f"{line}-dledger-abort-layouts{suffix}"
    r, w, src = _written(name)
    loaded, after = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut is not None and crash.walk_end < 0, crash
    (back,) = [a for a in crash.ext_again if (a.topic, a.queue_id) == ("T0", 0)]
    # what the broker wrote: the reput's units from the cut's write position on, each holding a new ext address
    # (past the ext end the load and the walk left), as many as the plan puts back
    put = (int(after["maxOffset"]) - int(loaded["maxOffset"])) // 20
    assert put == len(back.positions) > 0, (put, back)
    data = b"".join((src / "expected" / "consumequeue" / "T0" / "0" / f).read_bytes() for f in after["files"])
    first = int(after["files"][0])
    units = [(int.from_bytes(data[at:at + 8], "big"), int.from_bytes(data[at + 12:at + 20], "big", signed=True))
             for at in range(int(loaded["maxOffset"]) - first, int(after["maxOffset"]) - first, 20)]
    assert all(t - LONG_MIN >= int(loaded["extMaxOffset"]) for _o, t in units), (units, loaded["extMaxOffset"])
    # some of those records lie past DLedger's committed position, where verify's rebuild stops reading the log
    last = sorted((src / "before" / "dledger-n0" / "data").iterdir())[-1]
    entries = _entries_from(src, int(last.name) + 48, int(w["maxPhyOffset"]))
    committed = entries[-int(r["scenario"]["dledgerCommittedBack"])] - 48
    assert any(o >= committed for o, _t in units), (units, committed)
    orphaned = ext_orphaned_as_the_broker(p, w, src)
    assert orphaned["T0/0"][1] > 0 and not any("not predicted" in n for n in p["notes"]), (orphaned, p["notes"])


# the walk ended early and the reput from before its data file (from inside the walk, -damaged-again-layouts and
# -cut: tests/test_verify_ext_orphans_early_broker.py)
_BEFORE_EARLY = [f"{ln}-dledger-abort-{k}" for ln in LINES if ln.startswith("5.5") and MORE_LAYOUTS
                 for k in ("before-damaged-layouts", "before-damaged-cut-layouts")]


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("name", bh.params_or_skip(_BEFORE_EARLY, "DLEDGER_MORE_LAYOUTS=1"))
def test_verify_counts_the_ext_units_orphaned_when_the_reput_from_before_an_early_ended_walks_data_file_walks_again(
        name, tmp_path, monkeypatch):
    """A walk ended early at a damaged record (-before-damaged-layouts; -before-damaged-cut-layouts: the queues cut
    at the walk's short processOffset), the start's reput from DLedger's committed position (where verify's rebuild
    stops) in a data file before the walk's.  The broker: the store held no queue; T0/0's own units are the walk's
    (from a queue offset past the earlier records', fillPreBlank units before them; those below processOffset kept,
    the cut ones put back) and the reput's past the damaged record, each pointing at an ext unit, those past the
    walk's ones; the ext units no unit points at, more than the walk's records (the reput's for the earlier records
    too), all lie before the first of those past the walk.  verify's figures, every ext queue's appended and
    orphaned, are the broker's (the walk's puts and those past it pointed: ``ExtAgain.before + past``), with no
    "not predicted" note."""
    bh.skip_without_tools()
    line = name.split("-", 1)[0]
    _r, w, src = _written(name)
    assert not (src / "before" / "consumequeue").is_dir() or not any((src / "before" / "consumequeue").iterdir())
    committed, damaged = _committed_pos(src / "before"), int(w["damagedRecord"])
    after = w["queuesAfterDispatch"]["T0/0"]
    folder = src / "expected" / "consumequeue" / "T0" / "0"
    units = [(int(f.name) // 20 + at // 20, *cq_unit(f.read_bytes(), at)) for f in sorted(folder.iterdir())
             for at in range(0, f.stat().st_size, 20) if int(f.name) + at < int(after["maxOffset"])]
    own = [(i, o, t) for i, o, _s, t in units if t <= EXT_MAX_ADDR]
    blank = [i for i, o, s, t in units if (o, s, t) == (0, 2147483647, 0)]
    walked = [t - LONG_MIN for _i, o, t in own if o < damaged]
    past = [t - LONG_MIN for _i, o, t in own if o >= damaged]
    # what the broker wrote: no unit of an earlier record (fillPreBlank ones before the walk's first), the walk's
    # units pointing at ext units before those of the records past it
    assert blank and max(blank) < own[0][0] and committed < own[0][1] < damaged, (blank[-1:], own[:1], committed)
    assert len(own) + len(blank) == len(units) and walked and past and max(walked) < min(past), (len(walked), past)
    if "-cut-" in name:   # the cut kept the walk's units below processOffset, the reput put the others back
        po = int(w["truncateDirtyLogicFilesAt"])
        loaded = w["queuesAfterLoad"]["T0/0"]
        assert committed < po < damaged and all(o < po for i, o, _t in own if i * 20 < int(loaded["maxOffset"])), po
        assert any(o >= po for _i, o, _t in own if o < damaged), "no cut unit put back"
    files = {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue_ext" / "T0" / "0").iterdir()}
    pointed = pointed_ext_addresses(src, "T0/0", int(after["maxOffset"]))
    broker = ext_orphans(files, int(after["extMaxOffset"]), pointed)
    assert broker == ext_appended(w, src, "T0/0", 0) - len(own) > len(walked), (broker, len(own), len(walked))
    assert ext_orphans(files, min(past), pointed) == broker, "an orphaned ext unit past the walk's records' ones"
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.before and crash.reput_from < crash.start_offset < crash.walk_end <= damaged, crash
    assert (crash.cut is not None) == ("-cut-" in name), crash.cut
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures["T0/0"][2] == figures["T0/0"][3] == broker, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]


def _crash(walk_end: int = -1, reput_from: int = 900, before: bool = False, **cut: object) -> types.SimpleNamespace:
    placed = types.SimpleNamespace(whole=(), units=())
    a = types.SimpleNamespace(topic="T0", queue_id=0, positions=np.array([40, 60]))
    c = types.SimpleNamespace(inside_placed=placed, before_placed=placed, reset=(), inside_from=-1, lost={})
    c.__dict__.update({k: v for k, v in cut.items() if k != "cut"})
    return types.SimpleNamespace(cut=cut.get("cut", c), walk_end=walk_end, ext_again=(a,),
                                 ext_unwalked=(), process_offset=1000,
                                 end=6000, reput_from=reput_from, before=before, start_offset=500,
                                 from_old_files=False)


def test_ext_reput_puts_counts_the_plans_put_backs_or_says_the_figure_is_not_predicted():
    """A queue put back by position: its count; a rebuild ending before processOffset, a queue replayed whole with
    an own unit put back for a record past the rebuild's end, or a plan whose counts are not taken (a walk ended early)
    with a rebuild ending before the log's end: not predicted (why, one line)."""
    assert ext_reput_puts(_crash(), 5000) == ({"T0/0": 2}, {})   # type: ignore[arg-type]
    back, why = ext_reput_puts(_crash(), 900)   # type: ignore[arg-type]
    assert back == {} and "before the walk's processOffset 1000" in why["T0/0"] and "\n" not in why["T0/0"]
    w = types.SimpleNamespace(topic="T0", queue_id=0, put_back=(4200,), units=((40, 4200, 100, LONG_MIN + 20),))
    whole = types.SimpleNamespace(whole=(w,), units=())
    back, why = ext_reput_puts(_crash(inside_placed=whole), 4100)   # type: ignore[arg-type]
    assert back == {} and "record past the rebuild's end (4100)" in why["T0/0"]
    assert ext_reput_puts(_crash(inside_placed=whole), 5000) == ({}, {})   # type: ignore[arg-type]
    # the walk ended early (no positions taken), the reput from before its data file: not predicted when the
    # rebuild ends before the walk's end and the reput walks the records between again (or the cut takes units there)
    assert ext_reput_puts(_crash(walk_end=3000, reput_from=2500), 3000) == ({}, {})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(walk_end=3000, reput_from=2500, before=True, cut=None), 2600) == \
        ({}, {"T0/0": "the rebuild reads the log up to 2600, before 3000, where the recovery's walk ends, and the "
                       "reput walks the records between again: the ext units put for them that no unit points at "
                       "are not counted"})   # type: ignore[arg-type]
    assert ext_reput_puts(_crash(walk_end=3000, reput_from=3000, cut=None), 2600) == ({}, {})   # type: ignore
    back, why = ext_reput_puts(_crash(walk_end=3000, reput_from=3000), 2600)   # type: ignore[arg-type]
    assert back == {} and "cut takes units there" in why["T0/0"]


def test_predict_restart_says_in_one_line_that_a_queues_ext_units_orphaned_are_not_predicted():
    """``ext_not_predicted``: the queue's figure left at 0 (out of the plan's total) and one note naming it; its
    ext units appended still predicted."""
    from pipelines.verify.restart import predict_restart
    from pipelines.verify.restart_queue import recover_queue
    from store_format.config import BrokerConfig
    config = BrokerConfig.from_properties({"brokerVersion": "5.5", "enableConsumeQueueExt": "true"})

    def predicted(**why: dict[str, str]):  # noqa: ANN202
        return predict_restart([recover_queue("T0/0", [], [], config, ext_files=[])], config=config, commitlog_min=0,
                               commitlog_end=1000, clean_shutdown=False, store_index=[],
                               expected_index=lambda: iter(()), checkpoint_index_ts=None,
                               read_expected=lambda *_a: b"", dispatch_from=0, cut_at=500, ext_puts={"T0/0": 5},
                               **why)
    p = predicted(ext_not_predicted={"T0/0": "why not"})
    assert [(q.queue, q.ext_units_orphaned, q.ext_units_appended) for q in p.queues] == [("T0/0", 0, 5)]
    assert p.ext_units_orphaned == 0 and [n for n in p.notes if "T0/0" in n] == \
        ["ext units orphaned of T0/0 not predicted: why not"]
    p = predicted()
    assert [(q.queue, q.ext_units_orphaned) for q in p.queues] == [("T0/0", 5)] and \
        not any("not predicted" in n for n in p.notes)
