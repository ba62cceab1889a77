"""verify's "ext units orphaned" after a 5.5.1 DLedger crash restart with no cut after a walk to the log's end, the
start's reput from DLedger's committed position inside the walk or in an earlier data file, of a queue the store held
units of before the walk: the ``-layouts-early`` and ``-before-layouts`` stores
(:func:`broker_dledger_scenarios.layouts_early_abort_scenario`, :func:`broker_dledger_scenarios.before_abort_scenarios`:
ext files of 10 units, a light queue, a BatchCQ topic; the checkpoint's ``logicsPhysicalOffset`` below the walk's
``processOffset``, so ``DLedgerCommitLog.dledgerRecoverAbnormally`` calls no ``truncateDirtyLogicFiles``) restarted
with their queues kept (``keepQueues``: ``consumequeue/`` and ``consumequeue_ext/`` as the crashed broker left them,
T0/0 up to the log's last record), and ``-tail`` (T0/0's last :data:`TAIL_UNITS` units zeroed: harness
``zeroQueueTail``, its max then the end of a record of the walk's last data file past the committed position).

The broker (rocketmq-store 5.5.1): ``ConsumeQueue.putMessagePositionInfoWrapper`` puts an ext unit for every own
record handed to it, the walk's and the reput's; ``putMessagePositionInfo`` drops each unit ending at or below the
queue's max physical offset, so a queue held up to every record the walk and the reput walk keeps its files as they
were: the ext units pointed at are the store's own, every one the walk and the reput put is orphaned; held up to a
record of the walk, the walk appends the units of the records after it (queue offsets from the write position on),
each pointing at its new ext unit, and the reput drops all of its own
(:func:`pipelines.verify.ext_reput.ext_reput_puts`, ``_held_walk_appends``: the walk's units past the max, from the
crash plan's ``ExtAgain.walked``; a queue held up to anywhere else stays "not predicted", one line).  Written with
DLEDGER_MORE_LAYOUTS=1 (as the stores they restart); the module's stores are its own.
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
from broker_dledger_scenarios import before_abort_scenarios, layouts_early_abort_scenario

from store_format.consumequeue_recovery import EXT_MAX_ADDR

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
# -tail: T0/0's last units zeroed before the restart (harness zeroQueueTail: units that never reached the disk), all
# past DLedger's committed position, in the walk's last data file; fewer than 25 (267 units, files of 11: the last
# holds 3), so that the third file from the end, where ConsumeQueue.recover starts reading, still holds a unit (30
# zeroed it whole: the recovery set no max, another shape)
TAIL_UNITS = 20


def held_scenarios(line: str) -> list[dict]:
    """``<line>-dledger-abort-layouts-early-kept`` and ``-before-layouts-kept`` (module docstring)."""
    early = layouts_early_abort_scenario(line)
    before = before_abort_scenarios(line)[1]
    assert before["name"].endswith("-before-layouts"), before["name"]
    kept = [{**sc, "keepQueues": True, "name": f"{sc['name']}-kept"} for sc in (early, before)]
    tail = {"path": "consumequeue/T0/0", "units": TAIL_UNITS, "unitSize": 20}
    return kept + [{**sc, "zeroQueueTail": tail, "name": f"{sc['name']}-tail"} for sc in kept]


SCENARIOS = {LINE: held_scenarios(LINE)} if MORE_LAYOUTS and LINE in bh.lines_from_env("DLEDGER_LINES", LINE) \
    else {}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts, no cut, an ext queue held before the walk", threads=1)
_RUNS: dict[str, dict] = {}
NAMES = [sc["name"] for scs in SCENARIOS.values() for sc in scs]


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


@pytest.mark.parametrize("name", bh.params_or_skip(NAMES, "DLEDGER_MORE_LAYOUTS=1 (5.5.1)"))
def test_verify_counts_the_ext_units_orphaned_of_a_queue_held_before_a_walk_with_no_cut(name, written, tmp_path,
                                                                                        monkeypatch):
    """The broker: no ``truncateDirtyLogicFiles`` call, DLedger's committed position (the reput's start, where
    verify's rebuild stops) inside the walk (``-layouts-early``) or before its data file (``-before-layouts``), and
    the store it restarted held T0/0 up to the end of the log's last T0 record (``-kept``) or up to a record of the
    walk's last data file past the committed position, its last units zeroed (``-tail``).  After the restart T0/0's
    units are the store's, then (``-tail``) the walk's for the records past its max, each pointing at an ext unit past
    the ext end the load left; the ext units no unit points at are those the store's files already left so plus every
    one the walk and the reput put (one per T0 record each walks) less those the walk's appended units point at.
    verify's figures, every ext queue's appended and orphaned, are the broker's, with no "not predicted" note."""
    r = written[name]
    w, src = r["written"], Path(r["scenario"]["dir"])
    assert w.get("ok"), w.get("error")
    assert int(w["truncateDirtyLogicFilesAt"]) == -1, "no cut"
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    committed, last_file = _committed_pos(src / "before"), int(data[-1].name)
    assert len(data) == 2 and 0 < committed < last_file, (committed, last_file)
    sent = [m for m in r["scenario"]["messages"] if m.get("topic") == "T0"]
    tail = TAIL_UNITS if "zeroQueueTail" in r["scenario"] else 0
    held = [u for u in folder_units(src / "before" / "consumequeue" / "T0" / "0") if u[2] > 0]
    assert len(held) == len(sent) - tail, ("the store held T0/0 but for the zeroed units", len(held), len(sent))
    top = max(o + s for _p, o, s, _t in held)
    assert not tail or committed < last_file < top, (committed, last_file, top)   # -tail: max in the last data file
    loaded, after = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    kept = [u for u in folder_units(src / "expected" / "consumequeue" / "T0" / "0") if u[2] > 0]
    assert int(loaded["maxOffset"]) == int(after["maxOffset"]) == 20 * len(sent) == 20 * len(kept), (loaded, after)
    assert int(loaded["maxPhysicOffset"]) == int(after["maxPhysicOffset"]) == max(o + s for _p, o, s, _t in kept)
    on_disk_end = ext_recovered_end(src, "T0/0")
    assert kept[:len(held)] == held, "the store's units, unchanged"
    appended = kept[len(held):]
    assert len(appended) == tail and all(o >= top and committed <= o for _p, o, _s, _t in appended), appended[:2]
    assert all(t <= EXT_MAX_ADDR for _p, _o, _s, t in kept), "each unit points at an ext unit"
    assert all((t + (1 << 63) >= on_disk_end) == (u in appended) for u in kept for t in [u[3]]), on_disk_end
    walked = ext_appended(w, src, "T0/0", on_disk_end)   # the walk's and the reput's ext puts
    again = sum(o >= committed for _p, o, _s, _t in kept)
    assert walked > again > 0, (walked, again)
    files = {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue_ext" / "T0" / "0").iterdir()}
    pointed = pointed_ext_addresses(src, "T0/0", int(after["maxOffset"]))
    broker = ext_orphans(files, int(after["extMaxOffset"]), pointed)
    assert broker == ext_orphans(files, on_disk_end, pointed) + walked - tail, (broker, walked)
    print(f"{name}: T0/0 ext units orphaned {broker} (walk and reput {walked}, again {again}, appended {tail})")
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, LINE)
    # the walk from the first data file (-layouts-early: the checkpoint's logicsPhysicalOffset 100) or the last
    assert crash.cut is None and crash.walk_end < 0 and crash.start_offset == (last_file if "-before-" in name else 0)
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures["T0/0"][2] == figures["T0/0"][3] == broker, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]


def test_ext_reput_puts_gives_the_walks_units_past_the_max_of_a_queue_held_before_a_walk_with_no_cut():
    """No cut after a walk to the log's end, the reput from inside it or from an earlier data file, a queue the store
    held units of: held up to the log's end (its max at or past it), no unit appended (0); held up to the end of a
    record the walk walks, the walk's units after it (their queue offsets from that record's + 1 on); held up to
    anywhere else, the queue offsets after it not one after the other, or the reput from a converted store's old
    files: not predicted (one line)."""
    import types

    import numpy as np

    from pipelines.verify.ext_reput import ext_reput_puts

    walk = np.array([[1000, 0], [2000, 1], [3000, 2], [4000, 3]], np.int64)   # (end, queue offset)

    def crash(start: int = 0, before: bool = False, old: bool = False,
              walked: np.ndarray = walk) -> types.SimpleNamespace:
        a = types.SimpleNamespace(topic="T0", queue_id=0, before=4, count=3, skip=0, positions=np.zeros(0),
                                  walked=walked)
        return types.SimpleNamespace(cut=None, walk_end=-1, ext_again=(a,),
                                     ext_unwalked=(), process_offset=1000, end=6000,
                                     reput_from=300, before=before, start_offset=start, from_old_files=old)
    for c in (crash(), crash(start=300), crash(start=400, before=True)):
        for top, n in ((6000, 0), (6100, 0), (4000, 0), (2000, 2), (1000, 3)):
            assert ext_reput_puts(c, 300, {("T0", 0): top}) == ({"T0/0": n}, {})   # type: ignore[arg-type]
        for top in (5999, 2500, 500):
            back, why = ext_reput_puts(c, 300, {("T0", 0): top})   # type: ignore[arg-type]
            assert back == {} and "reput walks the records between again" in why["T0/0"] and "\n" not in why["T0/0"]
    gap = crash(walked=np.array([[1000, 0], [2000, 1], [3000, 5]], np.int64))
    back, why = ext_reput_puts(gap, 300, {("T0", 0): 2000})   # type: ignore[arg-type]
    assert back == {} and "\n" not in why["T0/0"]
    back, why = ext_reput_puts(crash(start=400, before=True, old=True), 300, {("T0", 0): 6000})   # type: ignore[arg-type]
    assert back == {} and "\n" not in why["T0/0"]
