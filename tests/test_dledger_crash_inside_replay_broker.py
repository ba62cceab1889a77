"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside an
entry, parses a message for an ordinary queue the walk wrote in a case only the replay of that queue
(:mod:`store_format.dledger_inside_replay`) models (:mod:`broker_dledger_inside_replay_scenarios`): T6/0, left with
no file by the cut, whose first cut unit lies inside the parsed message, its second dispatched again, then its
records past the walk's end.  Written by the published RocketMQ store through the JVM harness in ``tests/broker/``:
what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart found it (byte for byte) and
``verify``'s units lost, counted from the broker's files.  The stores are written with the others of
:mod:`broker_dledger_runs` (one pytest session)."""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_runs import (
    LINES,
    _queued,
    _restart_as_the_broker,
    _units_below_write,
    _verify,
    _verify_with_plan,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

# the messages after B9's in the -to-entry-past stores: 300-byte records, each behind a 48-byte DLedger header
_TAIL, _ENTRY_HEADER = 300, 48


def _units(src: Path, queue: str) -> dict[str, list[tuple[int, int, int]]]:
    """The broker's files of ``queue`` (``topic/queue id``) after its restart and each file's units."""
    folder = src / "expected" / "consumequeue" / queue
    return {f.name: [struct.unpack(">qiq", f.read_bytes()[i:i + 20]) for i in range(0, f.stat().st_size, 20)]
            for f in sorted(folder.iterdir())}


@pytest.mark.parametrize("over", [False, True], ids=["some", "over"])
@pytest.mark.parametrize("zero", [False, True], ids=["", "zero"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_goes_on_past_cut_units_of_a_queue_left_no_file(line, zero, over, tmp_path,
                                                                                   monkeypatch):
    """-past-cut-two-some-emptied: T6/0's two cut units (queue offsets 0 and 1: the 5.5.1 cut leaves it no file, max
    -1), the parsed T6/0 message ending where the first cut record ends, so the reput goes on at the second cut
    record's entry: the parsed unit opens T6/0's file where its queue offset falls (1000: fillPreBlank units before
    it, the unit filling that file; getLastMappedFile then creates the next file for the second cut unit, which the
    queue offset check drops, as it drops the two records past the walk's end, queue offsets 1 to 3 below the write
    position), or at 0 (``zero``: the second cut unit at 20, the records past the walk's end at 40 and 60).
    ``over`` (-past-cut-two-over-emptied): the parsed message ends where the second cut record ends, the reput goes
    on at the damaged message's entry, dispatching no cut unit again (with ``zero`` the records past the walk's end
    at 20 and 40, their queue offsets 2 and 3 at or past the write position).
    --as-restart writes the broker's files byte for byte, and verify's units lost are the units the broker's queues
    lack."""
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET, TO_ENTRY_QUEUE_OFFSET

    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-{'over' if over else 'some'}-emptied" \
        + ("-zero" if zero else "")
    r, w, src = _written(name)
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + 2 * _TAIL, w["truncateDirtyLogicFilesAt"]
    reput = EMBED_PROCESS_OFFSET + 2 * _TAIL - 1
    second = PAST_OVER_CUT_END + _ENTRY_HEADER   # the second cut T6/0 record
    end = int(w["maxPhyOffset"])
    damaged, last = end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL
    assert int(w["damagedRecord"]) == damaged == second + _TAIL + _ENTRY_HEADER, w["damagedRecord"]
    # what the broker wrote: T6/0's file from the parsed unit on, and where that unit fills its file (queue offset
    # 1000 with files of 11 units), the next one getLastMappedFile creates for the second cut unit, which the queue
    # offset check then drops (zeros)
    at = 0 if zero else TO_ENTRY_QUEUE_OFFSET * 20
    opened = (at - at % size, *((at + 20,) if (at + 20) % size == 0 else ()))
    files = _units(src, "T6/0")
    assert list(files) == [f"{f:020d}" for f in opened], list(files)
    units, *empty = files.values()
    assert not any(any(u) for f in empty for u in f), empty
    blank = (0, 2**31 - 1, 0)
    parsed = (reput, (second + _TAIL if over else PAST_OVER_CUT_END) - reput, 0)
    appended = ((damaged, last) if over else (second, damaged, last)) if zero else ()
    rest = [(o, _TAIL, 0) for o in appended]
    k = at % size // 20
    assert units[:k] == [blank] * k and units[k:k + 1 + len(rest)] == [parsed, *rest], units
    assert not any(any(u) for u in units[k + 1 + len(rest):]), units
    _restart_as_the_broker(src, name, line, tmp_path)
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    held = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed unit
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / "plan"), src, line)
    (q,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("T6", 0)]
    assert (q.cut_from, q.opened, q.put_back) == (0, opened, appended), q
