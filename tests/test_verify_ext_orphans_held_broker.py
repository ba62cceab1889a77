"""verify's "ext units orphaned" after a 5.5.1 DLedger crash restart with no cut after a walk to the log's end, the
start's reput from DLedger's committed position inside the walk or in an earlier data file, of a queue the store held
units of before the walk: the ``-layouts-early`` and ``-before-layouts`` stores
(:func:`broker_dledger_scenarios.layouts_early_abort_scenario`, :func:`broker_dledger_scenarios.before_abort_scenarios`:
ext files of 10 units, a light queue, a BatchCQ topic; the checkpoint's ``logicsPhysicalOffset`` below the walk's
``processOffset``, so ``DLedgerCommitLog.dledgerRecoverAbnormally`` calls no ``truncateDirtyLogicFiles``) restarted
with their queues kept (``keepQueues``: ``consumequeue/`` and ``consumequeue_ext/`` as the crashed broker left them,
T0/0 up to the log's last record).

The broker (rocketmq-store 5.5.1): ``ConsumeQueue.putMessagePositionInfoWrapper`` puts an ext unit for every own
record handed to it, the walk's and the reput's; ``putMessagePositionInfo`` drops each unit ending at or below the
queue's max physical offset, so a queue held up to every record the walk and the reput walk keeps its files as they
were: the ext units pointed at are the store's own, every one the walk and the reput put is orphaned
(:func:`pipelines.verify.ext_reput.ext_reput_puts`: none pointed at, ``0``; a queue held below the walk's end stays
"not predicted", one line).  Written with DLEDGER_MORE_LAYOUTS=1 (as the stores they restart); the module's stores are
its own.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import (
    cq_unit,
    ext_appended,
    ext_figures_as_the_broker,
    ext_orphans,
    ext_recovered_end,
    pointed_ext_addresses,
)
from broker_dledger_runs import MORE_LAYOUTS, _committed_pos, _verify_with_plan
from broker_dledger_scenarios import before_abort_scenarios, layouts_early_abort_scenario

from store_format.consumequeue_recovery import EXT_MAX_ADDR

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"


def held_scenarios(line: str) -> list[dict]:
    """``<line>-dledger-abort-layouts-early-kept`` and ``-before-layouts-kept`` (module docstring)."""
    early = layouts_early_abort_scenario(line)
    before = before_abort_scenarios(line)[1]
    assert before["name"].endswith("-before-layouts"), before["name"]
    return [{**sc, "keepQueues": True, "name": f"{sc['name']}-kept"} for sc in (early, before)]


SCENARIOS = {LINE: held_scenarios(LINE)} if MORE_LAYOUTS and LINE in bh.lines_from_env("DLEDGER_LINES", LINE) \
    else {}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts, no cut, an ext queue held before the walk", threads=1)
_RUNS: dict[str, dict] = {}
NAMES = [sc["name"] for scs in SCENARIOS.values() for sc in scs]


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _units(folder: Path) -> list[tuple[int, int, int, int]]:
    """A consume queue's units in ``folder``: (queue byte position, commitlog offset, size, tags code)."""
    out = []
    for f in sorted(folder.iterdir()):
        data = f.read_bytes()
        out += [(int(f.name) + at, *cq_unit(data, at)) for at in range(0, len(data), 20)]
    return out


@pytest.mark.parametrize("name", bh.params_or_skip(NAMES, "DLEDGER_MORE_LAYOUTS=1 (5.5.1)"))
def test_verify_counts_the_ext_units_orphaned_of_a_queue_held_up_to_the_walks_end_with_no_cut(name, written, tmp_path,
                                                                                             monkeypatch):
    """The broker: no ``truncateDirtyLogicFiles`` call, the store it restarted held T0/0 up to the end of the log's
    last T0 record, and DLedger's committed position (the reput's start, where verify's rebuild stops) lies inside
    the walk (``-layouts-early``) or before its data file (``-before-layouts``); after the restart T0/0's units are
    the store's, unchanged, and the ext units no unit points at are those the store's files already left so plus
    every one the walk and the reput put (one per T0 record each walks).  verify's figures, every ext queue's
    appended and orphaned, are the broker's, with no "not predicted" note."""
    r = written[name]
    w, src = r["written"], Path(r["scenario"]["dir"])
    assert w.get("ok"), w.get("error")
    assert int(w["truncateDirtyLogicFilesAt"]) == -1, "no cut"
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    committed, last_file = _committed_pos(src / "before"), int(data[-1].name)
    assert len(data) == 2 and 0 < committed < last_file, (committed, last_file)
    sent = [m for m in r["scenario"]["messages"] if m.get("topic") == "T0"]
    held = _units(src / "before" / "consumequeue" / "T0" / "0")
    held = [u for u in held if u[2] > 0]
    assert len(held) == len(sent), ("the store held every T0 record", len(held), len(sent))
    top = max(o + s for _p, o, s, _t in held)
    loaded, after = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    assert int(loaded["maxPhysicOffset"]) == int(after["maxPhysicOffset"]) == top, (loaded, after, top)
    assert int(loaded["maxOffset"]) == int(after["maxOffset"]) == 20 * len(sent), (loaded, after)
    kept = [u for u in _units(src / "expected" / "consumequeue" / "T0" / "0") if u[2] > 0]
    assert kept == held and all(t <= EXT_MAX_ADDR for _p, _o, _s, t in kept), "the store's units, unchanged"
    on_disk_end = ext_recovered_end(src, "T0/0")
    assert all(t + (1 << 63) < on_disk_end for _p, _o, _s, t in kept), on_disk_end
    walked = ext_appended(w, src, "T0/0", on_disk_end)   # the walk's and the reput's ext puts
    again = sum(o >= committed for _p, o, _s, _t in held)
    assert walked > again > 0, (walked, again)
    files = {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue_ext" / "T0" / "0").iterdir()}
    pointed = pointed_ext_addresses(src, "T0/0", int(after["maxOffset"]))
    broker = ext_orphans(files, int(after["extMaxOffset"]), pointed)
    assert broker == ext_orphans(files, on_disk_end, pointed) + walked, (broker, walked)
    print(f"{name}: T0/0 ext units orphaned {broker} (walk and reput {walked}, again {again})")
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, LINE)
    # the walk from the first data file (-layouts-early: the checkpoint's logicsPhysicalOffset 100) or the last
    assert crash.cut is None and crash.walk_end < 0 and crash.start_offset == (last_file if "-before-" in name else 0)
    figures = ext_figures_as_the_broker(p, w, src)
    assert figures["T0/0"][2] == figures["T0/0"][3] == broker, figures
    assert not [n for n in p["notes"] if "not predicted" in n], p["notes"]


def test_ext_reput_puts_gives_none_pointed_of_a_queue_held_up_to_the_log_end_with_no_cut():
    """No cut after a walk to the log's end, the reput from inside it or from an earlier data file: a queue the store
    held up to the log's end (its max at or past it) has no unit appended, so no new ext unit is pointed at (0); held
    below the log's end, or the reput from a converted store's old files: not predicted (one line)."""
    import types

    import numpy as np

    from pipelines.verify.ext_reput import ext_reput_puts

    def crash(start: int = 0, before: bool = False, old: bool = False) -> types.SimpleNamespace:
        a = types.SimpleNamespace(topic="T0", queue_id=0, before=7, count=3, skip=0, positions=np.zeros(0))
        return types.SimpleNamespace(cut=None, walk_end=-1, ext_again=(a,), process_offset=1000, end=6000,
                                     reput_from=300, before=before, start_offset=start, from_old_files=old)
    for c in (crash(), crash(start=300), crash(start=400, before=True)):
        for top in (6000, 6100):
            assert ext_reput_puts(c, 300, {("T0", 0): top}) == ({"T0/0": 0}, {})   # type: ignore[arg-type]
        back, why = ext_reput_puts(c, 300, {("T0", 0): 5999})   # type: ignore[arg-type]
        assert back == {} and "reput walks the records between again" in why["T0/0"] and "\n" not in why["T0/0"]
    back, why = ext_reput_puts(crash(start=400, before=True, old=True), 300, {("T0", 0): 6000})   # type: ignore[arg-type]
    assert back == {} and "\n" not in why["T0/0"]
