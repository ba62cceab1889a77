"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, parses well-formed messages there for queues the crash recovery's walk wrote, written by the published
RocketMQ store through the JVM harness in ``tests/broker/``: a queue on disk before the walk that the cut leaves a
file of (``keepQueues``: what the broker wrote, and ``verify``'s prediction on the store as its restart found it),
and queues whose cut units the reput, going on at an entry's start, dispatches again after the parsed ones (a queue
the cut left with no file, one whose units below processOffset lie in an earlier data file: ``rebuild
--as-restart`` byte for byte and ``verify``'s units lost).

The other inside-entry cases are in :mod:`test_dledger_crash_broker` (empty requests over held files:
:mod:`test_empty_request_held_broker`; batch queues, light queues with ext: :mod:`test_dledger_crash_inside_broker`);
the broker writes every store once a pytest session (:mod:`broker_dledger_runs`).
"""
from __future__ import annotations

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit
from broker_dledger_runs import (
    LINES,
    _queued,
    _restart_as_the_broker,
    _units_below_write,
    _verify,
    _verify_loses_as_the_broker,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_kept_queue_the_cut_left_a_unit(
        line, tmp_path, monkeypatch):
    """The -own-kept store (queues kept, a last T8/0 message after B9's, cut) with the last message before the host
    (below processOffset, in the last data file) sent to T8/0 too: the cut leaves T8/0, on disk before the walk, its
    file with that unit (write position 20, max its end) and takes the last one; the T8/0 message where the reput is
    set (processOffset - 1, queue offset 13) ends past that max and its queue offset lies past the write position,
    so the broker appends it at 20, over the cut unit ("logic queue order maybe wrong"); the 'x' bytes after it send
    the reput past the rest (the cut unit stays lost). verify on the store as that restart found it predicts the
    units lost, and its plan puts the parsed unit where the broker did."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_scenarios import EMBED_OWN_QUEUE_OFFSET, EMBED_PROCESS_OFFSET, TO_ENTRY_TAIL_BODY

    from pipelines.verify import compare_store
    from store_format.dledger_inside_units import InsideUnit
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-own-held"
    r, w, src = _written(name)
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    msg = embedded_message(reput, topic=b"T8", queue_offset=EMBED_OWN_QUEUE_OFFSET)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    with data[-1].open("rb") as f:
        f.seek(reput - int(data[-1].name))
        assert f.read(len(msg) + 8) == msg + b"x" * 8, "the T8 message at processOffset - 1, 'x' bytes after it"
    # T8/0 on disk before the restart: two units, the first below processOffset in the last data file, the
    # second (the last message's) past it
    (held_file,) = sorted((src / "before" / "consumequeue" / "T8" / "0").iterdir())
    before = held_file.read_bytes()
    first, cut = cq_unit(before, 0), cq_unit(before, CQ_UNIT_SIZE)
    assert int(data[-1].name) <= first[0] and first[0] + first[1] < reput + 1 <= cut[0], (first, cut)
    assert before[2 * CQ_UNIT_SIZE:] == bytes(len(before) - 2 * CQ_UNIT_SIZE), "T8/0 holds two units"
    assert w["queuesAfterLoad"]["T8/0"]["files"] == [held_file.name], w["queuesAfterLoad"].get("T8/0")
    state = w["queuesAfterDispatch"]["T8/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 2 * CQ_UNIT_SIZE, state
    held = (src / "expected" / "consumequeue" / "T8" / "0" / held_file.name).read_bytes()
    assert cq_unit(held, 0) == first and cq_unit(held, CQ_UNIT_SIZE) == (reput, len(msg), 0), held[:60].hex()
    assert held[2 * CQ_UNIT_SIZE:] == bytes(len(held) - 2 * CQ_UNIT_SIZE), held.hex()
    plans = []

    def capture(*args):
        plans.append(real(*args))
        return plans[-1]
    real = compare_store.dledger_crash_on_disk
    monkeypatch.setattr(compare_store, "dledger_crash_on_disk", capture)
    code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    (crash, _why), = plans
    placed = crash.cut.inside_placed
    assert (placed.units, placed.opened, placed.blank_until) == (
        (InsideUnit("T8", 0, CQ_UNIT_SIZE, reput, len(msg), 0),), (), ()), placed
    held_units = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - held_units > 0, (held_units, p["units_lost"], p["notes"])



@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_a_cut_unit_back_after_a_parsed_one_in_a_queue_left_no_file(
        line, tmp_path):
    """The -to-entry store with its last message and the one where the reput is set (processOffset - 1, ending at
    B9's entry) for T8/0, a topic of its own: the 5.5.1 cut leaves T8/0 no file (max -1), so the parsed unit (queue
    offset 13) gets file 220, two fillPreBlank units before it, and the reput, going on at B9's entry, dispatches
    B9's unit again and then the cut T8/0 unit (queue offset 0: no "build consume queue repeatedly" check), which
    the broker appends after the parsed one, at 280, not at 0 where the walk had it (file 0 not written again).
    --as-restart writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        EMBED_OWN_QUEUE_OFFSET,
        TO_ENTRY_HOST_TAIL,
    )

    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-emptied"
    r, w, src = _written(name)
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    reput = int(w["truncateDirtyLogicFilesAt"]) - 1
    tail = int(w["maxPhyOffset"]) - 300   # the last T8/0 message (300 bytes), the log's last
    assert w["queuesAfterLoad"]["T8/0"]["files"] == [] and int(w["queuesAfterLoad"]["T8/0"]["maxPhysicOffset"]) == -1
    state = w["queuesAfterDispatch"]["T8/0"]
    at = EMBED_OWN_QUEUE_OFFSET * CQ_UNIT_SIZE
    assert state["files"] == [f"{at - at % size:020d}"] and int(state["maxOffset"]) == at + 2 * CQ_UNIT_SIZE, state
    held = (src / "expected" / "consumequeue" / "T8" / "0" / state["files"][0]).read_bytes()
    assert [cq_unit(held, k) for k in range(at % size, at % size + 2 * CQ_UNIT_SIZE, CQ_UNIT_SIZE)] == [
        (reput, host_end - reput, 0), (tail, 300, 0)], held.hex()
    _restart_as_the_broker(src, name, line, tmp_path)
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    count = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - count, (count, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_drops_a_cut_unit_after_a_parsed_one_in_a_queue_held_earlier(
        line, tmp_path):
    """The -to-entry-emptied layout over the -earlier walk (both data files walked, the cut still happening) for
    T6/0, whose unit below processOffset lies in the earlier data file (queue offset 0): the cut leaves its write
    position at its cut unit (20), the parsed T6/0 message (queue offset 1000, ending at B9's entry) is appended
    there, and the reput, going on at B9's entry, drops the cut T6/0 unit (queue offset 1: its position lies below
    the write position). --as-restart writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_scenarios import EMBED_HOST_AT, EMBED_HOST_BODY, TO_ENTRY_HOST_TAIL

    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-earlier"
    r, w, src = _written(name)
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    reput = int(w["truncateDirtyLogicFilesAt"]) - 1
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    state = w["queuesAfterDispatch"]["T6/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 2 * CQ_UNIT_SIZE, state
    held = (src / "expected" / "consumequeue" / "T6" / "0" / state["files"][0]).read_bytes()
    first = cq_unit(held, 0)
    assert first[0] < int(data[1].name) and cq_unit(held, CQ_UNIT_SIZE) == (reput, host_end - reput, 0), held[:60].hex()
    assert held[2 * CQ_UNIT_SIZE:] == bytes(len(held) - 2 * CQ_UNIT_SIZE), held.hex()
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))
