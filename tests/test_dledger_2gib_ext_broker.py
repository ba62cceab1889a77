"""A 5.5.1 DLedger crash restart with ``enableConsumeQueueExt=true`` whose start's reput, set at 2147483647 inside an
entry of a log past 2 GiB, dispatches a blank's empty request there, or parses a message for a queue the walk wrote
and then goes on before the log's end, checked against the broker (``DLEDGER_2GIB=1`` only: the store holds some
2.15 GB of data, its ``before/`` copy as much).

``DLedgerCommitLog.checkMessageAndReturnSize`` finds a blank 48 bytes further
(:mod:`store_format.dledger_reput_inside`): ``doReput`` dispatches its empty request (``DispatchRequest(size,
success)``: topic "", queue 0, offset, size, tags code and store time 0).
``ConsumeQueue.putMessagePositionInfoWrapper`` (rocketmq-store 5.5.1) first puts its ext unit (``ConsumeQueueExt.put``:
tags code 0, store time 0, no bitmap) into ``consumequeue_ext/0/`` and the unit (0, 0, that ext unit's address) into
``consumequeue/0/``, as for the concurrent reput's empty requests
(:func:`store_format.concurrent_reput.empty_request_queue_files`, which ``pipelines.restart_cut.apply_cut`` writes).

The ``-embedded-ext-committed`` store: messages parsed there, one for a queue the walk wrote, then the reput goes on
at DLedger's committed position before the log's end, walking records of another queue only (their ext units after
the walk's, :class:`store_format.dledger_crash_cut.ExtAgain`).

``rebuild --as-restart`` on the store as the restart found it must write the broker's ``consumequeue/``,
``consumequeue_ext/`` and ``index/`` byte for byte, and ``verify``'s units lost count from the broker's queues.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    EMPTY_BLANK,
    LINE,
    NEEDS_2GIB,
    as_restart_matches_broker,
    embedded_message,
    first_units,
    log_bytes,
    past_2gib_embedded_blank_48_scenario,
    retargeted,
    same_ext_files_as_the_broker,
    with_messages,
    written,
)
from broker_dledger_scenarios import PAST_2GIB_FILE, past_2gib_abort_scenario

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store]

bh.skip_without_tools()

# the ext files' size (mappedFileSizeConsumeQueueExt): not the default 48 MiB, so that the files' sizes show which size
# the rebuild used, and the ext units the recovery's walk puts for the last data file's 11,207 T0 records (the store
# holds no consume queue before the restart) fill several files
EXT_FILE_SIZE = 100_000


def _ext_unit(store_time: int) -> bytes:
    """An ext unit as ``ConsumeQueueExt.CqExtUnit.write`` puts one without a bitmap: its size (20), the tags code
    (0: no message here has tags), the store time, the bitmap's length (0)."""
    return struct.pack(">hqqh", 20, 0, store_time, 0)


@NEEDS_2GIB
def test_crash_restart_with_ext_whose_reput_at_2147483647_dispatches_a_blanks_empty_request(tmp_path):
    """The ``-embedded-blank-48`` store (:func:`test_dledger_2gib_inside_broker.past_2gib_embedded_blank_48_scenario`)
    with ext files: the reput set at 2147483647 inside the last T0 entry's body finds a blank's header 48 bytes
    further and dispatches its empty request (topic "" queue 0: its ext unit, all zeros but its size, first in
    ``consumequeue_ext/0/``, the unit (0, 0, its address) in ``consumequeue/0/``), then parses the T5 message 56 bytes
    past 2147483647 (its ext unit the first of T5's, its unit holding that address), fails on the 'x' bytes after it
    and jumps.  ``rebuild --as-restart``: the broker's ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for
    byte, and verify's units lost."""
    sc = past_2gib_embedded_blank_48_scenario(LINE)
    ext = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": str(EXT_FILE_SIZE)}
    sc = {**sc, "name": f"{sc['name']}-ext", "config": {**sc["config"], **ext}}
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert int(data[0].name) == 0, "the broker deleted data files (its disk past diskMaxUsedSpaceRatio): free disk"
    msg = embedded_message(BLANK_MAX)
    (last,) = [f for f in data if int(f.name) <= BLANK_MAX < int(f.name) + PAST_2GIB_FILE]
    with last.open("rb") as f:
        f.seek(BLANK_MAX - int(last.name) - EMBED_AT_BODY_DATA - 88)
        record = f.read(88 + 4096)
    at = 88 + EMBED_AT_BODY_DATA   # 2147483647 in the record
    assert record[at:at + 48] == b"x" * 48, "'x' bytes at 2147483647"
    assert record[at + 48:at + 56] == EMPTY_BLANK, "the blank's header 48 bytes further"
    assert record[at + 56:at + 56 + len(msg)] == msg, "the message after it"
    assert record[at + 56 + len(msg):at + 56 + len(msg) + 56] == b"x" * 56, "'x' bytes after it"
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left the fillPreBlank unit
    assert "T5/0" not in w["queuesAfterLoad"], w["queuesAfterLoad"]
    # what the broker's reput did: the empty request's ext unit (tags code and store time 0) first in topic "" queue
    # 0's ext files, its unit holding that unit's address (its real offset 0 + Long.MIN_VALUE)
    expected = src / "expected"
    cq_size = int(sc["config"]["mappedFileSizeConsumeQueue"])
    empty = (expected / "consumequeue" / "0" / f"{0:020d}").read_bytes()
    assert len(empty) == cq_size and empty[:20] == struct.pack(">qiq", 0, 0, -2**63) and not any(empty[20:]), \
        empty[:40]
    (empty_ext,) = sorted((expected / "consumequeue_ext" / "0").iterdir())
    b = empty_ext.read_bytes()
    assert len(b) == EXT_FILE_SIZE and b[:20] == _ext_unit(0) and not any(b[20:]), b[:40]
    # the message read where the buffer stood: T5's first ext unit and its unit at its field's offset with its address
    t5 = (expected / "consumequeue" / "T5" / "0" / f"{0:020d}").read_bytes()
    assert t5[:20] == struct.pack(">qiq", BLANK_MAX, len(msg), -2**63) and not any(t5[20:]), t5[:40]
    (t5_ext,) = sorted((expected / "consumequeue_ext" / "T5" / "0").iterdir())
    assert t5_ext.read_bytes()[:22] == _ext_unit(1_700_000_000_001) + bytes(2)
    units = (expected / "consumequeue" / "T9" / "0" / f"{0:020d}").read_bytes()
    assert units[:20] == bytes(8) + BLANK_MAX.to_bytes(4, "big") + bytes(8), "T9's fillPreBlank unit"
    assert len(list((expected / "consumequeue_ext" / "T0" / "0").iterdir())) > 1, "T0's ext units in several files"
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    same_ext_files_as_the_broker(src, tmp_path / "ours")
    start = BLANK_MAX + 56
    assert (f'parses 2 message(s) (a blank at {BLANK_MAX + 48}, its empty request to topic "" queue 0, {start} to '
            f"{start + len(msg)})") in text, text[-3000:]


@NEEDS_2GIB
def test_crash_restart_with_ext_whose_reput_parses_a_message_for_a_walked_queue_then_goes_on(tmp_path):
    """``enableConsumeQueueExt=true``, DLedger's checkpoint one entry behind the log's end (``dledgerCommittedBack``:
    its committed position the end of the last T0 entry, before the last T9 one), and from 2147483647 on a T5 message
    (a new queue) and a T0 one (queue offset 0; the queue the walk wrote, whose units the reput does not walk again).
    The 5.5.1 broker's reput parses both (their ext units first, T0's after those the walk put, each unit holding its
    address; T0's at the write position the cut left), fails on the 'x' bytes after them and jumps to the committed
    position, the last T0 entry's end, then, once DLedger commits the rest, walks the last T9 message: its ext unit
    after the walk's and its cut unit back at 20 holding that address.  No queue gets ext units of both, so the
    rebuild's order (the walk's records, the T9 one again, then the parsed ones) gives the broker's files:
    ``rebuild --as-restart`` matches its ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for byte, and
    verify's units lost."""
    size = len(embedded_message(BLANK_MAX))
    at = [BLANK_MAX + k * size for k in range(2)]
    msgs = [retargeted(at[0], b"T5", 0), retargeted(at[1], b"T0", 0)]
    sc = past_2gib_abort_scenario(LINE)
    ext = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": str(EXT_FILE_SIZE)}
    sc = {**sc, "config": {**sc["config"], **ext}, "dledgerCommittedBack": 1}
    sc = with_messages(sc, f"{LINE}-dledger-abort-past-2gib-embedded-ext-committed", msgs)
    w, src = written(sc, tmp_path)
    assert log_bytes(src, BLANK_MAX, 2 * size) == b"".join(msgs) and log_bytes(src, at[1] + size, 8) == b"x" * 8
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left the fillPreBlank unit
    assert "T5/0" not in w["queuesAfterLoad"], w["queuesAfterLoad"]
    expected = src / "expected"
    # what the broker did: T5's unit holding its first ext unit's address; T0's parsed unit, once, holding an ext
    # address; T9's last message back at 20, holding the address of its second ext unit (the walk put the first)
    assert first_units(src, "T5", 2) == [(at[0], size, -2**63), (0, 0, 0)]
    t9 = first_units(src, "T9", 3)
    assert t9[0] == (0, BLANK_MAX, 0) and t9[1][0] > at[1] and t9[1][2] == 20 - 2**63 and t9[2] == (0, 0, 0), t9
    (t9_ext,) = sorted((expected / "consumequeue_ext" / "T9" / "0").iterdir())
    assert t9_ext.read_bytes()[:20] == t9_ext.read_bytes()[20:40] != bytes(20), "T9's last message's ext unit twice"
    t0 = [struct.unpack(">qiq", b[i:i + 20]) for f in sorted((expected / "consumequeue" / "T0" / "0").iterdir())
          for b in (f.read_bytes(),) for i in range(0, len(b), 20) if b[i:i + 8] == at[1].to_bytes(8, "big")]
    assert len(t0) == 1 and t0[0][1] == size and t0[0][2] < 0, t0
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="T5", parsed=1, ext=True)
    assert f"parses 2 message(s) ({at[0]} to {at[1]}, {at[1]} to {at[1] + size})" in text, text[-3000:]
