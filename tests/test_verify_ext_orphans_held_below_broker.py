"""verify's "ext units orphaned" after a 5.5.1 DLedger crash restart with no cut after a walk to the log's end from
the last data file, the start's reput from DLedger's committed position in the first, of an ext queue the store held
units of up to a record BELOW the walk's data file: the ``-before-layouts`` store
(:func:`broker_dledger_scenarios.before_abort_scenarios`: ext files of 10 units, a light queue, a BatchCQ topic; the
checkpoint's ``logicsPhysicalOffset`` below the walk's ``processOffset``, so no ``truncateDirtyLogicFiles``) with its
queues kept (``keepQueues``), its T0 puts from :data:`REROUTE` on sent to T5 instead (so that T0 has few records in
the last data file), and T0/0's last :data:`TAIL_UNITS` units zeroed (harness ``zeroQueueTail``): every T0 unit of
the last data file, so the store lost its later units and ``ConsumeQueue.recover`` (from the third file from the
end, which still holds units) sets its max to the end of its last record of the first data file.  ``-more``: T0/0's
last :data:`MORE_UNITS` units of the first data file zeroed too, so the store lost more units than the walk's records
and the walk's first queue offset lies past the store's write position after recover.  ``-unwalked``: T0's puts of
the last data file sent to T5 too (the walk walks no T0 record) and T0/0's last :data:`UNWALKED_UNITS` units zeroed:
the reput, from the committed position, puts an ext unit for each of the 4 T0 records from there and appends the 2
past the max; ``-unwalked-ahead`` (:data:`AHEAD_UNITS` zeroed, the max before the committed position): all 4, their
queue offsets one past the write position (appended there, no hole); ``-unwalked-none`` (none zeroed): none.
Asserted from the broker's files (:data:`UNWALKED_SHAPES`); verify's figures are the broker's: the plan carries
those records' units (``DLedgerCrash.ext_unwalked``) and ``held_reput_appends`` replays the put rule on them from
the store's max and write position after ``recover``.

The broker (rocketmq-store 5.5.1): the walk puts an ext unit for each T0 record of the last data file
(``ConsumeQueue.putMessagePositionInfoWrapper``) and ``putMessagePositionInfo`` appends each of them (each ends past
the max; queue offsets from the write position on, or past it: ``-more``, where the put rule only logs the jump
and appends at the write position), pointing at that ext unit; the reput, from the committed position
in the first data file, puts an ext unit for each T0 record from there and drops every unit (each ends at or below
the walk's max), so the walk's puts are pointed at and the reput's orphaned (:func:`pipelines.verify.ext_reput.
ext_reput_puts`, ``_held_walk_appends``: every walked unit of the queue when its max lies below the walk's start).
Written with DLEDGER_MORE_LAYOUTS=1 (as the stores they restart); the module's stores are its own.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import (
    ext_appended,
    ext_figures_as_the_broker,
    ext_orphans,
    ext_recovered_end,
    folder_units,
    pointed_ext_addresses,
)
from broker_dledger_runs import MORE_LAYOUTS, _committed_pos, _verify_with_plan
from broker_dledger_scenarios import before_abort_scenarios

from store_format.consumequeue_recovery import EXT_MAX_ADDR

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
# T0's puts from this index on go to T5: T0 keeps 11 records in the last data file (from the 246th put on)
REROUTE = 262
# every T0 unit of the last data file zeroed (fewer than 25: ConsumeQueue.recover's third file from the end keeps
# units; the queue's files hold 11 units each)
TAIL_UNITS = 11
# ``-held-below-more``: this many more units zeroed (the second file from the end's last ones): the store lost more
# units than the walk's records, so the walk's first queue offset lies past the write position after recover
# (2 of the 4 T0 records past DLedger's committed position in the first data file: its max stays past that position)
MORE_UNITS = 2
# ``-held-below-unwalked``: T0's puts from this index on (the last data file's) go to T5, so the walk walks no T0
# record, and T0/0's last UNWALKED_UNITS units zeroed (2 of the 4 T0 records past DLedger's committed position)
REROUTE_ALL = 246
UNWALKED_UNITS = 2
# ``-held-below-unwalked-ahead``: this many zeroed (the 4 T0 records past the committed position and the one before
# it): the reput appends all 4, their queue offsets one past the write position; ``-unwalked-none``: none zeroed
# (the store's max past all 4: none appended)
AHEAD_UNITS = 5
# per unwalked store (suffix): its zeroed units, and what the broker does with the reput's T0 records (asserted
# from its files): the units appended of those past the committed position, and the T0 records that get no unit
UNWALKED_SHAPES = {"-unwalked": (UNWALKED_UNITS, UNWALKED_UNITS, 0), "-unwalked-ahead": (AHEAD_UNITS, 4, 1),
                   "-unwalked-none": (0, 0, 0)}


def _rerouted(messages: list[dict], at: int) -> list[dict]:
    """``messages`` with T0's puts from the ``at``-th put on sent to T5."""
    out, n = [], 0
    for m in messages:
        if "sleepMs" not in m:
            m = {**m, "topic": "T5"} if m.get("topic") == "T0" and n >= at else m
            n += 1
        out.append(m)
    return out


def held_below_scenarios(line: str) -> list[dict]:
    """``<line>-dledger-abort-before-layouts-held-below`` (module docstring), ``-held-below-more``
    (:data:`MORE_UNITS` more units zeroed) and ``-held-below-unwalked``, ``-unwalked-ahead`` and ``-unwalked-none``
    (no T0 record in the walk's data file; the units zeroed: :data:`UNWALKED_SHAPES`)."""
    before = before_abort_scenarios(line)[1]
    assert before["name"].endswith("-before-layouts"), before["name"]
    out = []
    for reroute, zeroed, suffix in ((REROUTE, TAIL_UNITS, ""), (REROUTE, TAIL_UNITS + MORE_UNITS, "-more"),
                                    *((REROUTE_ALL, z, k) for k, (z, _a, _l) in UNWALKED_SHAPES.items())):
        tail = {"zeroQueueTail": {"path": "consumequeue/T0/0", "units": zeroed, "unitSize": 20}} if zeroed else {}
        out.append({**before, "messages": _rerouted(before["messages"], reroute), "keepQueues": True, **tail,
                    "name": f"{before['name']}-held-below{suffix}"})
    return out


SCENARIOS = {LINE: held_below_scenarios(LINE)} if MORE_LAYOUTS and LINE in bh.lines_from_env("DLEDGER_LINES", LINE) \
    else {}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts, no cut, an ext queue held below the walk's data file",
                   threads=1)
_RUNS: dict[str, dict] = {}
NAMES = [sc["name"] for scs in SCENARIOS.values() for sc in scs if "-unwalked" not in sc["name"]]
UNWALKED = [sc["name"] for scs in SCENARIOS.values() for sc in scs if "-unwalked" in sc["name"]]


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _restarted(r: dict) -> tuple[dict, Path, int, int, list[dict]]:
    """A store of this module as the broker restarted it, checked: written, no ``truncateDirtyLogicFiles`` call, two
    data files with DLedger's committed position (the reput's start) in the first.  Returns the harness's line, the
    scenario's folder, that committed position, the walk's data file's start and the T0 messages put."""
    w, src = r["written"], Path(r["scenario"]["dir"])
    assert w.get("ok"), w.get("error")
    assert int(w["truncateDirtyLogicFilesAt"]) == -1, "no cut"
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    committed, last_file = _committed_pos(src / "before"), int(data[-1].name)
    assert len(data) == 2 and 0 < committed < last_file, (committed, last_file)
    return w, src, committed, last_file, [m for m in r["scenario"]["messages"] if m.get("topic") == "T0"]


@pytest.mark.parametrize("name", bh.params_or_skip(NAMES, "DLEDGER_MORE_LAYOUTS=1 (5.5.1)"))
def test_verify_counts_the_ext_units_orphaned_of_a_queue_held_below_the_walks_data_file(name, written, tmp_path,
                                                                                       monkeypatch):
    """The broker: no ``truncateDirtyLogicFiles`` call, DLedger's committed position (the reput's start, where
    verify's rebuild stops) in the first data file, the walk from the last, and the store it restarted held T0/0 up
    to its last record of the first data file (every unit of the last zeroed; ``-more``: its last :data:`MORE_UNITS`
    of the first too, so the walk's first queue offset lies that far past the write position after recover).  After
    the restart T0/0's units are the store's, then the walk's for every T0 record of the last data file, appended
    from the write position (no hole, ``-more`` too), each pointing at an ext unit past the ext end the load left;
    the ext units no unit points at are those the store's files already left so plus every one the walk and the
    reput put less those the walk's appended units point at.  verify's figures, every ext queue's
    appended and orphaned, are the broker's, with no "not predicted" note."""
    r = written[name]
    w, src, committed, last_file, sent = _restarted(r)
    lost = int(r["scenario"]["zeroQueueTail"]["units"]) - TAIL_UNITS   # units lost of the first data file's records
    held = [u for u in folder_units(src / "before" / "consumequeue" / "T0" / "0") if u[2] > 0]
    assert len(held) == len(sent) - TAIL_UNITS - lost, ("the store held T0/0 but for the zeroed units", len(held))
    top = max(o + s for _p, o, s, _t in held)
    loaded, after = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    assert committed < top < last_file, (committed, top, last_file)   # the store's max: below the walk's data file
    kept = [u for u in folder_units(src / "expected" / "consumequeue" / "T0" / "0") if u[2] > 0]
    # load() recovers the queue, then the commitlog (the walk appends); the reput appends none
    assert int(loaded["maxOffset"]) == int(after["maxOffset"]) == 20 * (len(sent) - lost) == 20 * len(kept), \
        (loaded, after)
    assert [u[0] for u in kept] == list(range(0, 20 * len(kept), 20)), "appended at the write position: no hole"
    assert int(loaded["maxPhysicOffset"]) == int(after["maxPhysicOffset"]) == max(o + s for _p, o, s, _t in kept)
    on_disk_end = ext_recovered_end(src, "T0/0")
    assert kept[:len(held)] == held, "the store's units, unchanged"
    appended = kept[len(held):]
    # the walk's units: every T0 record of the last data file, none of the first (the reput dropped them all)
    assert len(appended) == TAIL_UNITS and all(o >= last_file for _p, o, _s, _t in appended), appended[:2]
    assert all(t <= EXT_MAX_ADDR for _p, _o, _s, t in kept), "each unit points at an ext unit"
    assert all((t + (1 << 63) >= on_disk_end) == (u in appended) for u in kept for t in [u[3]]), on_disk_end
    walked = ext_appended(w, src, "T0/0", on_disk_end)   # the walk's and the reput's ext puts
    again = sum(o >= committed for _p, o, _s, _t in kept) + lost   # the reput walks the lost records too
    assert walked == TAIL_UNITS + again > again > TAIL_UNITS, (walked, again)
    files = {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue_ext" / "T0" / "0").iterdir()}
    pointed = pointed_ext_addresses(src, "T0/0", int(after["maxOffset"]))
    broker = ext_orphans(files, int(after["extMaxOffset"]), pointed)
    assert broker == ext_orphans(files, on_disk_end, pointed) + walked - TAIL_UNITS, (broker, walked)
    print(f"{name}: T0/0 ext units orphaned {broker} (walk and reput {walked}, again {again}, appended {TAIL_UNITS})")
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, LINE)
    assert crash.cut is None and crash.walk_end < 0 and crash.start_offset == last_file
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures["T0/0"][2] == figures["T0/0"][3] == broker, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]


def _unwalked_broker(r: dict) -> tuple[int, int, Path, int]:
    """A ``-held-below-unwalked`` store as the broker wrote it (the assertions of the two tests below): T0/0's ext
    units orphaned after the restart, the reput's ext puts for it, the store's directory and the walk's data file's
    start.  Its shape (:data:`UNWALKED_SHAPES`): the units zeroed, those the reput appends and the T0 records left
    with no unit (those between the store's max and the committed position, which the reput does not walk)."""
    name = r["scenario"]["name"]
    zeroed, n_appended, n_lost = UNWALKED_SHAPES[name[name.index("-unwalked"):]]
    w, src, committed, last_file, sent = _restarted(r)
    held = [u for u in folder_units(src / "before" / "consumequeue" / "T0" / "0") if u[2] > 0]
    assert len(held) == len(sent) - zeroed, ("the store held T0/0 but for the zeroed units", len(held))
    top = max(o + s for _p, o, s, _t in held)
    assert top < last_file and (top < committed) == bool(n_lost), (committed, top, last_file)
    kept = [u for u in folder_units(src / "expected" / "consumequeue" / "T0" / "0") if u[2] > 0]
    assert len(kept) == len(sent) - n_lost and all(o + s <= last_file for _p, o, s, _t in kept), "no T0 walked"
    loaded, after = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    # the walk appends no T0 unit: the load leaves T0/0 as recover did; the reput appends the records past its max
    assert int(loaded["maxOffset"]) == 20 * len(held) and int(loaded["maxPhysicOffset"]) == top, loaded
    assert int(after["maxOffset"]) == 20 * len(kept), after
    assert [u[0] for u in kept] == list(range(0, 20 * len(kept), 20)), "appended at the write position: no hole"
    assert kept[:len(held)] == held, "the store's units, unchanged"
    appended = kept[len(held):]
    # the reput's records past the max, from the write position (-ahead: their queue offsets n_lost past it)
    assert len(appended) == n_appended and all(o + s > top and o >= committed for _p, o, s, _t in appended), \
        appended
    on_disk_end = ext_recovered_end(src, "T0/0")
    assert all(t <= EXT_MAX_ADDR for _p, _o, _s, t in kept), "each unit points at an ext unit"
    assert all((t + (1 << 63) >= on_disk_end) == (u in appended) for u in kept for t in [u[3]]), on_disk_end
    put = ext_appended(w, src, "T0/0", on_disk_end)   # the reput's ext puts (the walk puts none for T0)
    again = sum(o >= committed for _p, o, _s, _t in kept)   # every T0 record from the committed position has a unit
    assert put == again == 4 and put >= n_appended, (put, again)
    files = {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue_ext" / "T0" / "0").iterdir()}
    pointed = pointed_ext_addresses(src, "T0/0", int(after["maxOffset"]))
    broker = ext_orphans(files, int(after["extMaxOffset"]), pointed)
    assert broker == ext_orphans(files, on_disk_end, pointed) + put - n_appended, (broker, put)
    print(f"{name}: T0/0 ext units orphaned {broker} (reput {put}, appended {n_appended})")
    return broker, put, src, last_file


@pytest.mark.parametrize("name", bh.params_or_skip(UNWALKED, "DLEDGER_MORE_LAYOUTS=1 (5.5.1)"))
def test_the_broker_appends_from_the_reput_to_a_queue_held_below_the_walks_data_file_it_does_not_walk(name,
                                                                                                    written):
    """The broker, ``-held-below-unwalked``: no T0 record in the walk's data file, T0/0 held up to a record past
    DLedger's committed position (its last units zeroed; ``-ahead``: up to a record before it, ``-none``: every
    unit kept).  The walk appends no T0 unit (``queuesAfterLoad``: the write position recover left); the reput,
    from the committed position, puts an ext unit for each T0 record from there, drops the units of those ending at
    or below the max and appends the others from the write position (``-ahead``: their queue offsets past it, the
    jump only logged), each pointing at its new ext unit; the rest of the reput's ext units are orphaned
    (:func:`_unwalked_broker`)."""
    _unwalked_broker(written[name])


@pytest.mark.parametrize("name", bh.params_or_skip(UNWALKED, "DLEDGER_MORE_LAYOUTS=1 (5.5.1)"))
def test_verify_counts_the_ext_units_orphaned_of_a_queue_held_below_the_walks_data_file_it_does_not_walk(
        name, written, tmp_path, monkeypatch):
    """``-held-below-unwalked`` (and ``-ahead``, ``-none``): the crash plan carries T0/0's units of the records the
    reput walks before the walk's data file (``DLedgerCrash.ext_unwalked``) and verify replays
    ``putMessagePositionInfo`` on them from the store's max and write position after ``recover``
    (``held_reput_appends``): its ext units appended (the reput's puts) and orphaned (those puts less the units
    appended, plus the store's own orphans) are the broker's (:func:`_unwalked_broker`), with no "not predicted"
    note, and so are the other ext queues' figures."""
    broker, put, src, last_file = _unwalked_broker(written[name])
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, LINE)
    assert crash.cut is None and crash.walk_end < 0 and crash.start_offset == last_file
    assert [u[:3] for u in crash.ext_unwalked if u[:2] == ("T0", 0)] == [("T0", 0, put)], crash.ext_unwalked
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]
    figures = ext_figures_as_the_broker(p, written[name]["written"], src)
    assert figures["T0/0"] == (put, put, broker, broker) and len(figures) > 1, figures


def test_ext_reput_puts_gives_every_walked_unit_of_a_queue_held_below_the_walks_data_file():
    """No cut after a walk to the log's end from a data file at 1000, a queue the store held up to 900 (below it):
    every unit the walk walks when the first one's queue offset is the store's write position after recover, or past
    it (more units lost: appended anyway, from the write position), and the others follow it; a write position past
    the first, gaps after it, no walked unit (the reput would append the earlier files' records past the max) or no
    write position known: not predicted (one line).  A queue held below the walk's data file the walk walks no
    record of (``DLedgerCrash.ext_unwalked``): the reput's units of it past the max appended; one with such a unit's
    queue offset behind the write position: not predicted (one line); one not held or held up to that file, or a
    reput not from an earlier data file: no answer."""
    import types

    import numpy as np

    from pipelines.verify.ext_reput import ext_reput_puts
    from store_format.dledger_queue_track import KIND_CQ

    walk = np.array([[1100, 7], [1200, 8], [1300, 9]], np.int64)   # (end, queue offset)

    def crash(walked: np.ndarray = walk, before: bool = True) -> types.SimpleNamespace:
        a = types.SimpleNamespace(topic="T0", queue_id=0, before=3, count=5, skip=0, positions=np.zeros(0),
                                  walked=walked)
        return types.SimpleNamespace(cut=None, walk_end=-1, ext_again=(a,),
                                     ext_unwalked=(), process_offset=1000, end=1400,
                                     reput_from=300 if before else 1000, before=before, start_offset=1000,
                                     from_old_files=False)
    held = {("T0", 0): 900}
    for c in (crash(), crash(before=False)):
        for wrote in (7 * 20, 5 * 20):
            assert ext_reput_puts(c, 300, held, {("T0", 0): wrote}) == ({"T0/0": 3}, {})   # type: ignore[arg-type]
    for c, wrote in ((crash(), {("T0", 0): 8 * 20}), (crash(), {}), (crash(walked=walk[:0]), {("T0", 0): 140}),
                     (crash(walked=np.array([[1100, 7], [1300, 9]], np.int64)), {("T0", 0): 140})):
        back, why = ext_reput_puts(c, 300, held, wrote)   # type: ignore[arg-type]
        assert back == {} and "not counted" in why["T0/0"] and "\n" not in why["T0/0"], (back, why)
    # a queue the reput walks records of before the walk's data file, none walked (DLedgerCrash.ext_unwalked): held
    # below that file, its units past the max appended (held_reput_appends), where that is not modelled its orphans
    # not predicted (one line); not held, or held up to the walk's data file: no answer
    def rows(*units: tuple[int, int, int]) -> np.ndarray:   # (offset, end, queue offset) -> UNIT_COLUMNS rows
        return np.array([(o, e, 0, k, KIND_CQ) for o, e, k in units], np.int64).reshape(-1, 5)
    t1 = rows((310, 400, 5), (450, 500, 6), (520, 560, 7), (600, 650, 8))   # held up to 500: 2 past it
    t4 = rows((310, 400, 5), (520, 560, 3))   # past the max, its queue offset behind the write position
    for c, answer, refused in ((crash(), {"T1/0": 2}, {"T4/0"}), (crash(before=False), {}, set())):
        c.ext_unwalked = (("T1", 0, 4, t1), ("T2", 0, 3, rows()), ("T3", 0, 2, rows()), ("T4", 0, 2, t4))
        back, why = ext_reput_puts(c, 300, {**held, ("T1", 0): 500, ("T3", 0): 1000,   # type: ignore[arg-type]
                                            ("T4", 0): 400}, {("T0", 0): 140, ("T1", 0): 140, ("T4", 0): 120})
        assert back == {"T0/0": 3, **answer} and set(why) == refused and all("\n" not in w for w in why.values()), \
            (back, why)


def test_held_reput_appends_replays_the_put_rule_from_the_stores_max_and_write_position():
    """``ConsumeQueue.putMessagePositionInfo`` on the reput's records of a queue held up to ``top`` (write position
    ``wrote``): a unit ending at or below the max dropped; past it, appended at the write position with its queue
    offset equal to it or ahead of it (each appended one moving the max to its end); -1 where a unit past the max has
    a queue offset behind the write position or 0, rows not all own units, or fewer than the puts counted."""
    import numpy as np

    from store_format.dledger_crash_reput_before import held_reput_appends
    from store_format.dledger_queue_track import KIND_CQ, KIND_LIGHT

    def rows(*units: tuple[int, int, int], kind: int = KIND_CQ) -> np.ndarray:
        return np.array([(o, e, 0, k, kind) for o, e, k in units], np.int64).reshape(-1, 5)
    four = rows((100, 200, 10), (200, 300, 11), (300, 400, 12), (400, 500, 13))
    for top, wrote, n in ((300, 12 * 20, 2), (500, 14 * 20, 0), (50, 10 * 20, 4), (50, 9 * 20, 4),
                          (250, 11 * 20, 3)):   # equal, all at or below, all from the first, ahead by one
        assert held_reput_appends(four, 4, top, wrote) == n, (top, wrote)
    for units, own, top, wrote in ((four, 4, 300, 13 * 20), (rows((100, 200, 0)), 1, 50, 0), (four, 3, 300, 240),
                                   (rows((100, 200, 10), kind=KIND_LIGHT), 1, 50, 200), (four, 4, 300, -1)):
        assert held_reput_appends(units, own, top, wrote) == -1, (units, top, wrote)
