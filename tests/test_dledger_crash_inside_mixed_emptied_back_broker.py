"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, with no parsed unit there, puts back only the last cut units of a queue holding a record's own units and
light ones (``%LMQ%q1``, queue 0) every unit of which the cut took (its files deleted, its max -1:
``recoverTopicQueueTable``): ``putMessagePositionInfo`` creates the file where the first unit put back falls by its
own queue offset (``fillPreBlank`` units before it).  Written by the published RocketMQ store through the JVM harness
in ``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart found it
(byte for byte) and ``verify``'s units lost.  The scenarios: :mod:`broker_dledger_inside_mixed_emptied_back_scenarios`.
"""
from __future__ import annotations

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit
from broker_dledger_runs import LINES, _inside_run, _restart_as_the_broker, _verify_loses_as_the_broker

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_back_only_the_last_cut_unit_of_a_mixed_queue_the_cut_emptied(
        line, tmp_path):
    """The -light-mixed-emptied-back store: the walk's units of %LMQ%q1, the own unit of the message put to it
    (queue offset 0) at 0 and the last message's light unit (queue offset 1) at 20, both past processOffset: the cut
    deletes its file (max -1). The T0/0 message where the reput is set swallows the %LMQ%q1 record (no parsed unit
    in %LMQ%q1), so the reput, going on at the last message's entry, puts back only its light unit: a new file, a
    fillPreBlank unit at 0, the unit at 20; the own unit stays cut. --as-restart writes the broker's files byte for
    byte, verify predicts the units lost."""
    from broker_dledger_inside_mixed_emptied_back_scenarios import EMPTIED_BACK_LIGHT_QUEUE_OFFSET
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_skip_t0_message
    from broker_dledger_inside_scenarios import LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-emptied-back"
    reput, head, size = embedded_light_mixed_skip_t0_message()
    r, w, src = _inside_run(name, reput, head)
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, T0/0 and %LMQ%q1 light queue offset 1
    assert reput + size == tail - ENTRY_HEADER_SIZE and r["scenario"]["messages"][-3]["topic"] == "%LMQ%q1"
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    at = EMPTIED_BACK_LIGHT_QUEUE_OFFSET * 20
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == at + 20, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    blank = (0).to_bytes(8, "big") + (2**31 - 1).to_bytes(4, "big") + bytes(8)
    assert held[:at] == blank * EMPTIED_BACK_LIGHT_QUEUE_OFFSET and held[at + 20:] == bytes(len(held) - at - 20), \
        held[:100].hex()
    assert cq_unit(held, at)[:2] == (tail, LIGHT_TAIL), held[:100].hex()
    t0 = b"".join(f.read_bytes() for f in sorted((src / "expected" / "consumequeue" / "T0" / "0").iterdir()))
    t0_units = [cq_unit(t0, k)[0] for k in range(0, len(t0), 20)]
    assert reput in t0_units and tail in t0_units, "the parsed and the last message in T0/0"
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for the last message
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=1)
