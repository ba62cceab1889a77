"""DLedger crash restarts (an abort file) over a queue holding a record's own units and light ones (``%LMQ%q1``,
queue 0) with ext files (``enableConsumeQueueExt=true``, ext files of 10 units), in the two shapes
``store_format.dledger_crash_cut.cut_queues`` refused before:

* every unit of the queue cut (its file deleted), the reput set inside an entry putting back only its last cut unit
  (5.5.1, ``recheckReputOffsetFromCq=true``; ``store_format.dledger_inside_mixed.mixed_put_back``):
  ``ConsumeQueue.truncateDirtyLogicFiles`` with no file left reaches ``ConsumeQueueExt.truncateByMaxAddress`` with
  the address 1 (no ext address: nothing cut) and ``correctMinOffset`` returns before ``truncateByMinAddress``: the
  ext file stays as the walk wrote it, an own unit put back gets its ext unit after the walk's
  (``-light-mixed-emptied-back-ext``, ``-light-mixed-emptied-back-own-ext``);
* on disk before the walk, a reput NOT set inside an entry from before the walk's last data file (the committed
  position; 5.5.1 and 5.3.3; ``earlier_reput_refusal``, ``earlier_units``): ``putMessagePositionInfoWrapper`` puts an
  ext unit for each own record the reput walks, of the earlier data file too, before ``putMessagePositionInfo``
  drops or appends its unit (``-mixed-disk-earlier-ext``, ``verify`` only).

Written by the published RocketMQ store through the JVM harness in ``tests/broker/``: what the broker's restart wrote
first (``consumequeue/`` and ``consumequeue_ext/``), then ``rebuild --as-restart`` byte for byte (the first shape)
and ``verify``'s figures.  The scenarios: :mod:`broker_dledger_inside_mixed_emptied_back_scenarios`,
:mod:`broker_dledger_mixed_disk_earlier_scenarios`.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_files import cq_unit, ext_figures_as_the_broker
from broker_dledger_runs import (
    LINES,
    _entries_from,
    _inside_run,
    _lost_per_queue,
    _restart_as_the_broker,
    _verify_loses_as_the_broker,
    _verify_with_plan,
    _written,
)
from test_dledger_crash_mixed_disk_earlier_broker import _lmq_records, _queue_files

from store_format import dledger_inside_mixed
from store_format.consumequeue_ext import ext_addresses
from store_format.consumequeue_ext_recovery import ext_position_after_puts
from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

_LMQ = Path("consumequeue") / "%LMQ%q1" / "0" / f"{0:020d}"
_LMQ_EXT = Path("consumequeue_ext") / "%LMQ%q1" / "0" / f"{0:020d}"
_EXT_FILE = 204   # mappedFileSizeConsumeQueueExt of the scenarios: 10 units of 20 bytes and the end blank
LMQ = "%LMQ%q1/0"


def _ext_address(ordinal: int) -> int:
    """The tags code of a unit holding ext unit ``ordinal``'s address (ext files of 204 bytes)."""
    return int(ext_addresses(np.array([ordinal]), _EXT_FILE)[0])


def _ext_sizes(ext: bytes) -> list[int]:
    """The sizes of the ext units from the file's start (ConsumeQueueExt.recover's walk: up to a size 0)."""
    out, at = [], 0
    while at + 2 <= len(ext) and (n := int.from_bytes(ext[at:at + 2], "big")) > 0:
        out.append(n)
        at += n
    return out


@pytest.mark.parametrize("own", [False, True], ids=["light", "own"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_back_the_last_cut_unit_of_an_emptied_mixed_queue_with_ext(
        line, own, tmp_path):
    """The -light-mixed-emptied-back-ext stores: the walk's units of %LMQ%q1 both past processOffset, the cut
    deletes its file (max -1) and leaves its ext file (the walk's ext unit 0, for the own unit). The reput, going on
    at the last message's entry, puts back only its unit: a light one (``light``: a new file, a fillPreBlank unit at
    0, the unit at 20 holding its tags code, no ext unit) or the own one (``own``: ext unit 1 after the walk's, the
    unit at 0 of a new file holding its address). --as-restart writes the broker's files (consumequeue_ext/ too) byte
    for byte, verify predicts the units lost."""
    from broker_dledger_inside_mixed_emptied_back_scenarios import EMPTIED_BACK_LIGHT_QUEUE_OFFSET
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_skip_t0_message
    from broker_dledger_inside_scenarios import LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-emptied-back{'-own' if own else ''}-ext"
    reput, head, size = embedded_light_mixed_skip_t0_message()
    r, w, src = _inside_run(name, reput, head)
    last = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message: %LMQ%q1's own record (own) or T0/0's, light
    assert reput + size == last - ENTRY_HEADER_SIZE
    assert r["scenario"]["messages"][-1 if own else -3]["topic"] == "%LMQ%q1", r["scenario"]["messages"][-3:]
    assert r["scenario"]["config"]["enableConsumeQueueExt"] == "true"
    # what the broker wrote: the cut left no file of %LMQ%q1 (max -1), its ext file as the walk wrote it (ext unit 0,
    # for the own unit: 20 bytes)
    loaded = w["queuesAfterLoad"]["%LMQ%q1/0"]
    assert int(loaded["maxPhysicOffset"]) == -1 and int(loaded["extMaxOffset"]) == 20, loaded
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    held = (src / "expected" / _LMQ).read_bytes()
    ext = (src / "expected" / _LMQ_EXT).read_bytes()
    assert state["files"] == [f"{0:020d}"], state
    if own:   # ext unit 1 put for the own unit, appended at 0 (queue offset 0) of the new file
        assert int(state["maxOffset"]) == 20 and int(state["extMaxOffset"]) == 40, state
        assert cq_unit(held, 0) == (last, LIGHT_TAIL, _ext_address(1)) and held[20:] == bytes(len(held) - 20)
        assert _ext_sizes(ext) == [20, 20] and ext[40:] == bytes(len(ext) - 40), ext[:60].hex()
    else:   # the light unit at its queue offset, a fillPreBlank unit before it, no ext unit put
        at = EMPTIED_BACK_LIGHT_QUEUE_OFFSET * 20
        blank = (0).to_bytes(8, "big") + (2**31 - 1).to_bytes(4, "big") + bytes(8)
        assert int(state["maxOffset"]) == at + 20 and int(state["extMaxOffset"]) == 20, state
        assert held[:at] == blank * EMPTIED_BACK_LIGHT_QUEUE_OFFSET and held[at + 20:] == bytes(len(held) - at - 20)
        assert cq_unit(held, at)[:2] == (last, LIGHT_TAIL) and cq_unit(held, at)[2] >= 0, held[:60].hex()
        assert _ext_sizes(ext) == [20] and ext[20:] == bytes(len(ext) - 20), ext[:60].hex()
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    # a unit each, a light one more for the last message (own: the light record inside the parsed message)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=1)


@pytest.mark.parametrize("suffix", ["", "-own"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith(("5.5", "5.3"))])
def test_verify_predicts_a_reput_from_before_the_last_data_file_over_a_kept_mixed_queue_with_ext(
        line, suffix, tmp_path, monkeypatch):
    """The -mixed-disk-earlier-ext store (the layouts store with its ext files of 10 units, %LMQ%q1/0 on disk before
    the walk, DLedger's checkpoint before the walk's last data file): the reput from that committed position puts an
    ext unit for each own record of %LMQ%q1 it walks, of the earlier data file too, before putMessagePositionInfo
    drops or appends its unit (putMessagePositionInfoWrapper), none for a light one (``-own``: two such records
    there, the broker's ext file that many units longer). verify on the store as that restart found it replays the
    queue so (its units, tags codes too, the broker's; its ext write position for the last data file's units after
    the walk's ext units and the earlier records') and predicts the units lost of the other queues as the broker's
    (%LMQ%q1's units the rule drops are none lost); its ext units appended are the broker's, its ext units orphaned
    of T0/0 (held up to the log's end) and of %LMQ%q1/0 (replayed whole) the broker's, 5.3.3's too (its walk from
    the first data file, the rebuild ending inside the walk's data files), with no "not predicted" note."""
    from broker_dledger_mixed_disk_earlier_scenarios import EARLIER_BACK
    name = f"{line}-dledger-abort-mixed-disk-earlier{suffix}-ext"
    r, w, src = _written(name)
    conf = r["scenario"]["config"]
    assert conf.get("enableConsumeQueueExt") == "true" and r["scenario"]["keepQueues"], conf
    ext_file = int(conf["mappedFileSizeConsumeQueueExt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    last = int(data[-1].name)
    end = int(w["maxPhyOffset"])
    reput = _entries_from(src, 48, end)[-EARLIER_BACK] - 48
    loaded = w["queuesAfterLoad"][LMQ]
    write, top = int(loaded["maxOffset"]), int(loaded["maxPhysicOffset"])
    assert reput < last <= top, (reput, last, top)
    # what the broker wrote: the reput's records of %LMQ%q1 (own ones in the earlier data file too) and the ext units
    # it put, one per own record from its start, after those the load and the walk left (ext units of 20 bytes)
    recs = _lmq_records(src, w)
    walked = [(o, s, k) for o, s, k in recs if o >= reput]
    own_earlier = [(o, s) for o, s, k in walked if k == "own" and o < last]
    state = w["queuesAfterDispatch"][LMQ]
    ext_put = (int(state["extMaxOffset"]) - int(loaded["extMaxOffset"])) // 20
    assert ext_put == sum(k == "own" for _o, _s, k in walked), (ext_put, walked)
    print(f"{name}: {len(own_earlier)} own records of the earlier data file, {ext_put} ext units put by the reput")
    assert len(own_earlier) == (2 if suffix else 0), own_earlier
    size = int(conf["mappedFileSizeConsumeQueue"])
    expected = _queue_files(src, "expected")
    held = [cq_unit(expected[p - p % size], p % size) for p in range(write, int(state["maxOffset"]), 20)]
    # the plan's ext write position for %LMQ%q1's units of the last data file: after the walk's ext units and the
    # earlier own records' (mixed_on_disk's ext_end)
    ext_at: list[int] = []
    real = dledger_inside_mixed.mixed_on_disk

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        out = real(*args, **kwargs)
        ext_at.append(out.ext_end)
        return out
    monkeypatch.setattr(dledger_inside_mixed, "mixed_on_disk", spy)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut.reput == reput and crash.cut.inside_from < 0, (crash.cut.reput, reput)
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("%LMQ%q1", 0)]
    assert [(pos, o, s, t) for pos, o, s, t in w_lmq.units] == \
        [(write + 20 * i, *u) for i, u in enumerate(held)] and not w_lmq.copies, (w_lmq, held)
    assert w_lmq.walk_end == write, w_lmq
    # the earlier own records before the walk's first data file counted there (all dropped: at or below the max);
    # those of the walk's earlier data files (5.3.3's walk from the first one) put by the replay after it, in order
    counted = [o for o, _s in own_earlier if o < crash.start_offset]
    assert ext_at == [ext_position_after_puts(int(loaded["extMaxOffset"]), len(counted), ext_file)], ext_at
    lost = _lost_per_queue(r, src)
    predicted = {q["queue"]: q["units_lost"] for q in p["queues"]}
    print(f"{name}: units lost {predicted}, the broker's queues lack {lost}; ext orphans "
          f"{ {q['queue']: q.get('ext_units_orphaned') for q in p['queues'] if q.get('ext_units_orphaned')} }")
    # every ext queue's ext units appended and orphaned the broker's: on 5.5.1 T0/0 204 and 202 (-own), %LMQ%q1/0 6 and
    # 12; on 5.3.3 (its walk from the first data file: DLedger's committed position, where verify's rebuild stops,
    # lies inside the walk's data files) 368 and 364, 6 and 14 (pipelines.verify.ext_reput: queues held up to
    # processOffset, one replayed whole)
    figs = ext_figures_as_the_broker(p, w, src)
    said = [n for n in p["notes"] if "ext units orphaned of" in n]
    assert sorted(figs) == [LMQ, "T0/0"] and not said, (figs, said)
    # %LMQ%q1's units the rule drops in any dispatch from the queue's start are not lost: compare the other queues
    assert {q: n for q, n in predicted.items() if n and q != LMQ} == {q: n for q, n in lost.items() if n and q != LMQ}

