"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose walk ended at a damaged
message and whose start's reput, set inside an entry, parses a well-formed T0/0 message ending where T0/0's cut
records end, so that it goes on at the damaged message's entry past T0/0's cut units (not dispatching them again) to
the records of T0/0 past the walk's end (the -past-cut-over and -past-cut-two-over stores of
:mod:`test_dledger_crash_inside_past_more_broker`), with ``enableConsumeQueueExt=true`` (``-ext``) or the queues kept
(``-kept``: T0/0 on disk before the walk), written by the published RocketMQ store through the JVM harness in
``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart found it
(byte for byte; ``-kept``: ``verify``'s plan) and ``verify``'s units lost, counted from the broker's files.  The
stores are written with the others of :mod:`broker_dledger_runs` (one pytest session)."""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import ext_units
from broker_dledger_runs import (
    LINES,
    _loses_as_the_broker,
    _restart_as_the_broker,
    _same_files,
    _verify_loses_as_the_broker,
    _verify_with_plan,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

# the T0/0 messages after B9's in the -to-entry-past stores: 300-byte records, each behind a 48-byte DLedger header
_TAIL, _ENTRY_HEADER = 300, 48


def _t0_units(src: Path, sub: str = "expected") -> dict[str, list[tuple[int, int, int]]]:
    """The T0/0 consume queue's files in ``src/sub`` and each file's units, all of them."""
    folder = src / sub / "consumequeue" / "T0" / "0"
    out = {}
    for f in sorted(p.name for p in folder.iterdir()):
        b = (folder / f).read_bytes()
        out[f] = [struct.unpack(">qiq", b[i:i + 20]) for i in range(0, len(b), 20)]
    return out


def past_cut_written(name: str, cuts: int) -> tuple[dict, Path, int, int, int, int]:
    """A -past-cut store with ``cuts`` cut records (-past-cut-over, -past-cut-two-over, -past-cut-two-some and their
    variants, here and in :mod:`test_dledger_crash_inside_past_last_broker`; ``name``) as the broker wrote it: its
    run and folder, where the reput is set (processOffset - 1, past the cut records), where the last cut record ends,
    and the damaged record's offset (ending the walk, in the next entry) and the last one's."""
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + cuts * _TAIL, w["truncateDirtyLogicFilesAt"]
    reput = EMBED_PROCESS_OFFSET + cuts * _TAIL - 1
    cut_end = PAST_OVER_CUT_END + (cuts - 1) * (_ENTRY_HEADER + _TAIL)
    end = int(w["maxPhyOffset"])
    damaged, last = end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL
    assert int(w["damagedRecord"]) == damaged == cut_end + _ENTRY_HEADER, w["damagedRecord"]
    return r, src, reput, cut_end, damaged, last


def cut_two_some_units(units: list, reput: int, second: int, damaged: int, last: int) -> None:
    """The queue's units from the parsed one on as the broker's restart left them in a -past-cut-two-some store
    (:func:`past_cut_written`; ``second``: the second cut record): the parsed unit (ending where the first cut record
    ends), the second cut unit back, the damaged record's and the last one's; the first cut unit in none of
    ``units``."""
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END
    assert [u[:2] for u in units[:4]] == [(reput, PAST_OVER_CUT_END - reput), (second, _TAIL), (damaged, _TAIL),
                                          (last, _TAIL)], units
    assert all(u[0] != PAST_OVER_CUT_END - _TAIL for u in units), units   # the first cut unit


@pytest.mark.parametrize("two", [False, True], ids=["one", "two"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_goes_on_past_cut_units_to_records_past_the_walk_with_ext_files(
        line, two, tmp_path):
    """-past-cut-over-ext (one cut T0/0 unit) and -past-cut-two-over-ext (two): the reput goes on at the damaged
    message's entry without dispatching the cut units again; ``putMessagePositionInfoWrapper`` puts an ext unit for
    the parsed message, then for the damaged one and the next, each after the ext units the walk put (the cut units'
    among them: the cut leaves the ext file as it was), and the units hold those addresses: the parsed unit at 480,
    the two records' at 500 and 520 (over the second cut unit with -two), zeros after.  --as-restart writes the
    broker's consume queue and ext files byte for byte, and verify's units lost are the units the broker's queues
    lack (the cut units among them)."""
    cuts = 2 if two else 1
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-{'two-' if two else ''}over-ext"
    r, src, reput, cut_end, damaged, last = past_cut_written(name, cuts)
    queue = _t0_units(src)
    units = queue[f"{440:020d}"]
    got = units[2:6]
    assert [u[:2] for u in got] == [(reput, cut_end - reput), (damaged, _TAIL), (last, _TAIL), (0, 0)], units
    # the walk's ext units: one per T0/0 record it walked, the kept ones (below queue byte 480, fillPreBlank units
    # left out) and the cut ones (the cut leaves the ext file as it was); then the parsed message's, the damaged
    # one's and the last one's, the units holding their addresses (ConsumeQueueExt.decorate)
    kept = [u for f in queue.values() for u in f if u[1] not in (0, 2**31 - 1) and u[0] < damaged][:-1]
    walked = len(kept) + cuts
    cq_ext = ext_units((src / "expected" / "consumequeue_ext" / "T0" / "0" / f"{0:020d}").read_bytes())
    assert len(cq_ext) == walked + 3, (len(cq_ext), walked)
    assert [u[2] + 2**63 for u in kept] == [20 * k for k in range(len(kept))], kept
    assert [u[2] + 2**63 for u in got[:3]] == [20 * (walked + k) for k in range(3)], got
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))   # neither fillPreBlank nor the parsed unit held


@pytest.mark.parametrize("two", [False, True], ids=["one", "two"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_goes_on_past_cut_units_of_a_kept_queue(
        line, two, tmp_path, monkeypatch):
    """-past-cut-over-kept and -past-cut-two-over-kept: the -past-cut-over and -past-cut-two-over stores with the
    queues kept (T0/0 on disk before the walk, its units of the records past the walk's end written before the
    damage).  The cut leaves T0/0's write position at 480 (its first cut unit, queue offset 24), the parsed unit goes
    there, and the reput, going on at the damaged message's entry without dispatching the cut units again, appends
    the damaged record's unit and the next at 500 and 520 (-two: over the second cut unit and the damaged record's
    own unit; the unit after them on disk stays).  verify on the store as that restart found it puts them where the
    broker did and predicts the units lost."""
    from store_format.dledger_inside_units import InsideUnit
    cuts = 2 if two else 1
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-{'two-' if two else ''}over-kept"
    r, src, reput, cut_end, damaged, last = past_cut_written(name, cuts)
    w = r["written"]
    before = _t0_units(src, "before")[f"{440:020d}"]
    # on disk before the restart: queue offsets 22 on, the cut ones and those of the records past the walk's end
    assert [u[0] for u in before[2 + cuts:4 + cuts]] == [damaged, last], before
    after = _t0_units(src)[f"{440:020d}"]
    assert [u[:2] for u in after[2:5]] == [(reput, cut_end - reput), (damaged, _TAIL), (last, _TAIL)], after
    assert after[:2] == before[:2] and after[5:] == before[5:], (before, after)   # the rest as on disk
    assert int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 540, w["queuesAfterDispatch"]["T0/0"]
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    # the records past the walk's end where the broker put them (500 on), right after the parsed unit (the cut units
    # inside it not dispatched again)
    at = 440 + 20 * [u[0] for u in after].index(damaged)
    (q,) = [w for w in placed.whole if (w.topic, w.queue_id) == ("T0", 0)]   # replayed whole
    assert (placed.units, q.units[1][0], q.copies) == (
        (InsideUnit("T0", 0, 480, reput, cut_end - reput, 0),), at, ()), placed
    assert all(o not in q.lost for o in [u[0] for u in after]), q   # none dropped
    _loses_as_the_broker(p, r, src, (reput,))   # neither fillPreBlank nor the parsed unit held


@pytest.mark.parametrize("ext", [False, True], ids=["plain", "ext"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_dispatches_some_cut_units_again_then_records_past_the_walk(line, ext, tmp_path):
    """-past-cut-two-some: two T0/0 units cut (queue offsets 24, 25 at 480, 500), the parsed T0/0 message (queue
    offset 1000) ending where the first cut record ends, so the reput goes on at the second cut record's entry: the
    parsed unit at 480 (the first cut unit's place, that unit not dispatched again), the second cut unit dispatched
    again back at 500 (its queue offset the write position), then the damaged message's and the next one's at 520
    and 540; -ext (enableConsumeQueueExt): their ext units after the walk's (the cut ones' too), the parsed message's,
    the second cut record's again, the damaged one's and the last one's, the units holding those addresses.
    --as-restart writes the broker's files byte for byte, and verify's units lost are the units the broker's queues
    lack (the first cut unit among them)."""
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-some" + ("-ext" if ext else "")
    r, src, reput, cut_end, damaged, last = past_cut_written(name, 2)
    units = _t0_units(src)[f"{440:020d}"]
    cut_two_some_units(units[2:], reput, cut_end - _TAIL, damaged, last)   # the second cut T0/0 record's end
    assert units[6][:2] == (0, 0), units
    if ext:   # after the walk's ext units (the two cut ones' too): the parsed message's, the second cut record's
        # again, the damaged one's and the last one's, the units holding their addresses
        # (ext files of 204 bytes: 10 units each, the 11th at the next file's start)
        walked = 5 + 2
        folder = src / "expected" / "consumequeue_ext" / "T0" / "0"
        cq_ext = [u for f in sorted(folder.iterdir()) for u in ext_units(f.read_bytes()) if len(u) == 20]
        assert len(cq_ext) == walked + 4, len(cq_ext)
        assert [u[2] + 2**63 for u in units[2:6]] == [k // 10 * 204 + k % 10 * 20 for k in range(walked, walked + 4)]
    else:
        assert all(u[2] == 0 for u in units), units
    _restart_as_the_broker(src, name, line, tmp_path)
    if ext:
        _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))   # neither fillPreBlank nor the parsed unit held


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_dispatches_some_cut_units_of_a_kept_queue_again(
        line, tmp_path, monkeypatch):
    """-past-cut-two-some-kept: the -past-cut-two-some store with the queues kept (T0/0 on disk before the walk, its
    units of the records past the walk's end written before the damage): the broker's T0/0 as with the queues
    deleted (parsed unit at 480, the second cut unit back at 500, the records past at 520 and 540); verify's plan
    puts them there (the first cut unit counted dropped) and its units lost are those the broker's queues lack."""
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-some-kept"
    r, src, reput, cut_end, damaged, last = past_cut_written(name, 2)
    cut_two_some_units(_t0_units(src)[f"{440:020d}"][2:], reput, cut_end - _TAIL, damaged, last)
    w = r["written"]
    assert int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 560, w["queuesAfterDispatch"]["T0/0"]
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    (q,) = [w for w in placed.whole if (w.topic, w.queue_id) == ("T0", 0)]   # replayed whole
    # the first cut unit dispatched again dropped, the rest back where they were, the records past the walk's end after
    assert (placed.units, len(q.lost), all(p == s for p, s in q.copies)) == (
        (InsideUnit("T0", 0, 480, reput, PAST_OVER_CUT_END - reput, 0),), 1, True), placed
    _loses_as_the_broker(p, r, src, (reput,))   # neither fillPreBlank nor the parsed unit held
