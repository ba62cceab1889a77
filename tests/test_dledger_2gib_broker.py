"""A 5.5.1 DLedger crash restart whose start's reput is set at 2147483647 inside a log past 2 GiB, checked against
the broker (``DLEDGER_2GIB=1`` only: the store holds some 2.15 GB of data, its ``before/`` copy as much, and the
broker takes minutes to write it).

The scenario (:func:`broker_dledger_scenarios.past_2gib_abort_scenario`): after the crash,
``dledgerRecoverAbnormally``'s walk over the last data file ends with a ``processOffset`` below 2147483647 (48
bytes short per entry), the cut (``truncateDirtyLogicFiles``) leaves T9's queue with its ``fillPreBlank`` unit
only, whose ``offset + size`` is 2147483647, and ``doRecheckReputOffsetFromCq`` sets the reput there, inside the
body of the last T0 entry: ``DLedgerCommitLog``'s message check fails there and ``doReput`` jumps to the end of the
bytes ``getData`` handed it (:mod:`store_format.dledger_reput_inside`).  ``rebuild --as-restart`` on the store as
the restart found it must write the broker's ``consumequeue/`` and ``index/`` byte for byte.

``DLEDGER_2GIB_CONVERTED=1`` (some 2.15 GB of old commitlog files, as much again in ``before/``, a minute or two):
the same reput at 2147483647 in a store converted in place, inside a body of its last old ``commitlog/`` file
(:func:`broker_dledger_scenarios.converted_past_2gib_abort_scenario`): ``getData`` there is the base
``CommitLog``'s, the file's bytes to its end, the check fails, and ``doReput`` jumps to the file's end, the first
data file (:mod:`store_format.dledger_crash_old`); the same byte for byte comparison.  With it too: the same
with two data files and the walk from the second (``-two-files``: the reput goes on at the first, before the walk's
data file) and with 2147483647 in an old file but the last (``-next-old``: the reput goes on at the last old file).

The ``-embedded`` stores (same switches) hold a well-formed message at 2147483647, inside a T0 body: the broker's
reput dispatches it before its check fails on the bytes after it and jumps
(:func:`store_format.dledger_reput_inside.reput_inside_entry`'s records); the same comparison, and verify's units
lost counted from the broker's queues below their write positions.
"""
from __future__ import annotations

import os
import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    EMBED_T0_DATA,
    FILL_PRE_BLANK_UNIT,
    LINE,
    NEEDS_2GIB,
    as_restart,
    as_restart_matches_broker,
    assert_embedded_t5_dispatched,
    embedded_message,
    first_queue_file,
    held_units,
    queued_messages,
    same_files_as_the_broker,
    t0_record_at_2147483647,
    verify_restart,
    with_embedded_message,
    written,
)
from broker_dledger_scenarios import (
    converted_past_2gib_abort_scenario,
    converted_past_2gib_next_old_abort_scenario,
    converted_past_2gib_two_files_abort_scenario,
    past_2gib_abort_scenario,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store]

bh.skip_without_tools()

@NEEDS_2GIB
def test_as_restart_after_a_crash_whose_reput_starts_at_2147483647_inside_the_log(tmp_path):
    sc = past_2gib_abort_scenario(LINE)
    w, src = written(sc, tmp_path)
    assert int(w["maxPhyOffset"]) > BLANK_MAX, w["maxPhyOffset"]
    t9 = w["queuesAfterLoad"]["T9/0"]
    assert int(t9["maxPhysicOffset"]) == BLANK_MAX, t9   # the cut left the fillPreBlank unit only
    text = as_restart(src, tmp_path / "ours")
    assert f"sets the reput at {BLANK_MAX} (where a queue the cut left with fillPreBlank units only" in text, \
        text[-3000:]
    same_files_as_the_broker(src, tmp_path / "ours")
    # what the broker's reput did from there: T9's last unit and T0's last ones stay cut (the jump), or came back
    units = first_queue_file(src, "T9/0")
    assert units[:20] == FILL_PRE_BLANK_UNIT, "T9's fillPreBlank unit"


@pytest.mark.skipif(os.environ.get("DLEDGER_2GIB_CONVERTED") != "1",
                    reason="2 GiB of old commitlog files: DLEDGER_2GIB_CONVERTED=1")
def test_as_restart_after_a_crash_whose_reput_starts_at_2147483647_inside_an_old_commitlog_file(tmp_path):
    sc = converted_past_2gib_abort_scenario(LINE)
    w, src = written(sc, tmp_path)
    old = sorted((src / "before" / "commitlog").iterdir())
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    size = int(sc["config"]["mappedFileSizeCommitLog"])
    # 2147483647 lies in the last old file, inside a T0 body (a run of 'x' around it), and the data starts after it
    assert int(old[-1].name) <= BLANK_MAX < int(old[-1].name) + size == int(data[0].name), (old[-1], data[0])
    with (old[-1]).open("rb") as f:
        f.seek(BLANK_MAX - int(old[-1].name) - 60)
        assert f.read(120) == b"x" * 120, "2147483647 inside a T0 body"
    t9 = w["queuesAfterLoad"]["T9/0"]
    assert int(t9["maxPhysicOffset"]) == BLANK_MAX, t9   # the cut left the fillPreBlank unit only
    text = as_restart(src, tmp_path / "ours")
    same_files_as_the_broker(src, tmp_path / "ours")
    assert f"sets the reput at {BLANK_MAX} (where a queue the cut left with fillPreBlank units only" in text, \
        text[-3000:]
    assert "inside an old commitlog file (a store converted in place" in text and \
        f"sends it on to {int(data[0].name)} " in text, text[-3000:]
    # the broker's reput from the data file's start put T9's cut unit back behind its fillPreBlank unit
    units = first_queue_file(src, "T9/0")
    assert units[:20] == FILL_PRE_BLANK_UNIT, "T9's fillPreBlank unit"
    assert int.from_bytes(units[20:28], "big") > int(data[0].name), "T9's cut unit put back"
    # its keys indexed twice (the walk, then the reput from the data file's start), the prepared ones' once (below
    # the index's endPhyOffset for the reput): the header's indexCount 1 + 10 + 2
    (index,) = sorted((src / "expected" / "index").iterdir())
    assert int.from_bytes(index.read_bytes()[36:40], "big") == 13, "T9's keys indexed again"
    # verify's units lost (its reference, the rebuild, holds every message's unit): all but T9's last
    p = verify_restart(src, tmp_path)
    held, queued = held_units(src), queued_messages(sc)
    assert held == 1 and p is not None and p["units_lost"] == queued - held, (held, queued, p and p["notes"])


# Where the Writer's layout of converted_past_2gib_abort_scenario puts 2147483647: in the T0 record of queue offset
# 511303 (the 72nd message of its 1998th batch), which starts at 2147482315, 1244 bytes into its body (the record's
# 88-byte header before it).  The test checks the bytes there.
EMBED_T0 = 511303
EMBED_AT_BODY = BLANK_MAX - 2147482315 - 88


def converted_past_2gib_embedded_scenario(line: str) -> dict:
    """``<line>-dledger-abort-converted-past-2gib-embedded``: :func:`converted_past_2gib_abort_scenario` whose T0
    body around 2147483647 holds, from there, a well-formed message (:func:`embedded_message`), where no message of
    the log starts: ``doRecheckReputOffsetFromCq`` sets the reput there, and ``DLedgerCommitLog``'s check reads that
    message."""
    return with_embedded_message(converted_past_2gib_abort_scenario(line), EMBED_T0, EMBED_AT_BODY,
                                  f"{line}-dledger-abort-converted-past-2gib-embedded")


@pytest.mark.skipif(os.environ.get("DLEDGER_2GIB_CONVERTED") != "1",
                    reason="2 GiB of old commitlog files: DLEDGER_2GIB_CONVERTED=1")
def test_crash_restart_whose_reput_at_2147483647_reads_a_message_embedded_in_an_old_body(tmp_path):
    """The reput set at 2147483647 inside an old T0 body where the body's bytes hold a well-formed T5 message: the
    5.5.1 broker dispatches it (T5/0's unit at 2147483647; the index skips it, below its endPhyOffset), its next
    check, on the body's 'x' bytes after it, fails and ``doReput`` jumps to the old file's end, the first data file,
    as without it.  ``rebuild --as-restart`` reads the message after the walk's records
    (``QueueCut.inside_records``): the broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's units
    lost; leaving it out loses T5's queue file."""
    sc = converted_past_2gib_embedded_scenario(LINE)
    w, src = written(sc, tmp_path)
    old = sorted((src / "before" / "commitlog").iterdir())
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    msg = embedded_message(BLANK_MAX)
    with (old[-1]).open("rb") as f:
        f.seek(BLANK_MAX - int(old[-1].name) - EMBED_AT_BODY - 88)
        record = f.read(88 + 4096)
    assert struct.unpack(">iiiiiq", record[:28])[::5] == (4189, EMBED_T0), "the T0 record around 2147483647"
    assert record[88 + EMBED_AT_BODY:88 + EMBED_AT_BODY + len(msg)] == msg, "the embedded message at 2147483647"
    assert record[88 + EMBED_AT_BODY + len(msg):88 + EMBED_AT_BODY + len(msg) + 8] == b"x" * 8
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left the fillPreBlank unit
    assert "T5/0" not in w["queuesAfterLoad"], w["queuesAfterLoad"]
    # what the broker's reput did: T5/0's one unit, the embedded message (its offset, size, no tags code)
    t5 = first_queue_file(src, "T5/0")
    assert t5[:20] == struct.pack(">qiq", BLANK_MAX, len(msg), 0) and not any(t5[20:]), t5[:40]
    # then the jump to the old file's end: T9's cut unit put back from the first data file, as without the message
    units = first_queue_file(src, "T9/0")
    assert units[:20] == FILL_PRE_BLANK_UNIT, "T9's fillPreBlank unit"
    assert int.from_bytes(units[20:28], "big") > int(data[0].name), "T9's cut unit put back"
    (index,) = sorted((src / "expected" / "index").iterdir())
    assert int.from_bytes(index.read_bytes()[36:40], "big") == 13, "E5 not indexed (below endPhyOffset)"
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"parses 1 message(s) ({BLANK_MAX} to {BLANK_MAX + len(msg)})" in text and \
        f"sends it on to {int(data[0].name)} " in text, text[-3000:]




def past_2gib_embedded_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-embedded``: :func:`past_2gib_abort_scenario` whose last T0 body holds, from
    2147483647 on, a well-formed message (:func:`embedded_message`) where no entry or message starts."""
    return with_embedded_message(past_2gib_abort_scenario(line), EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                                  f"{line}-dledger-abort-past-2gib-embedded")


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_reads_a_message_embedded_in_an_entry(tmp_path):
    """The reput set at 2147483647 inside the last T0 entry's body, whose bytes there hold a well-formed T5 message:
    the 5.5.1 broker dispatches it (T5/0's unit at 2147483647, its keys indexed with its own store time: no record
    before it was), and its next check, on the 'x' bytes after it, fails: ``doReput`` jumps to the end of what
    ``getData`` gave.  ``rebuild --as-restart`` reads the message after the walk's records
    (``QueueCut.inside_records``): the broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's units
    lost; leaving it out loses T5's queue file and its keys."""
    sc = past_2gib_embedded_scenario(LINE)
    w, src = written(sc, tmp_path)
    msg = embedded_message(BLANK_MAX)
    record = t0_record_at_2147483647(src)
    assert record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)] == msg, "the message at 2147483647"
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left the fillPreBlank unit
    # what the broker's reput did: T5/0's unit at its field, its keys indexed there
    assert_embedded_t5_dispatched(src, msg)
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"parses 1 message(s) ({BLANK_MAX} to {BLANK_MAX + len(msg)})" in text, text[-3000:]


@pytest.mark.skipif(os.environ.get("DLEDGER_2GIB_CONVERTED") != "1",
                    reason="2 GiB of old commitlog files: DLEDGER_2GIB_CONVERTED=1")
def test_as_restart_after_a_crash_whose_reput_goes_on_from_an_old_file_before_the_walks_data_file(tmp_path):
    """The -two-files store (:func:`broker_dledger_scenarios.converted_past_2gib_two_files_abort_scenario`): the
    reput set at 2147483647 in the last old file goes on at the first data file, before the walk's (the second):
    it walks the first data file's records (T0's units put, after fillPreBlank units), then the walk's again (T9's
    cut unit put back)."""
    sc = converted_past_2gib_two_files_abort_scenario(LINE)
    w, src = written(sc, tmp_path)
    old = sorted((src / "before" / "commitlog").iterdir())
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    size = int(sc["config"]["mappedFileSizeCommitLog"])
    assert len(data) == 2 and int(old[-1].name) <= BLANK_MAX < int(old[-1].name) + size == int(data[0].name), \
        (old[-1], data)
    t9 = w["queuesAfterLoad"]["T9/0"]
    assert int(t9["maxPhysicOffset"]) == BLANK_MAX, t9   # the cut left the fillPreBlank unit only
    text = as_restart(src, tmp_path / "ours")
    assert f"every entry from data file {data[1].name} " in text, text[-3000:]   # the walk from the second
    same_files_as_the_broker(src, tmp_path / "ours")
    assert f"sends it on to {int(data[0].name)} " in text and \
        f"the start's reput from {int(data[0].name)}, before data file {data[1].name}" in text, text[-3000:]
    # the broker's reput put T9's cut unit back and the first data file's T0 units (none of the old files' T0)
    units = first_queue_file(src, "T9/0")
    assert units[:40] == (FILL_PRE_BLANK_UNIT) * 2, "T9's fillPreBlank units"
    assert int.from_bytes(units[40:48], "big") > int(data[1].name) and units[60:80] == bytes(20), \
        "T9's cut unit put back, the first data file's T9 unit dropped"
    t0 = [int.from_bytes(b[i:i + 8], "big") for f in sorted((src / "expected" / "consumequeue" / "T0" / "0").iterdir())
          for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20) if b[i + 8:i + 12] != bytes(4)]
    real = [o for o in t0 if o > 0]
    assert real and min(real) >= int(data[0].name) and max(real) < int(data[1].name), "T0's first data file units"
    # verify's units lost (its reference, the rebuild, holds every message's unit): the old files' T0 units and T9's
    # first two (every queued message but the first data file's T0 ones and T9's last)
    p = verify_restart(src, tmp_path)
    held, queued = held_units(src), queued_messages(sc)
    assert held == len(real) + 1 and p is not None and p["units_lost"] == queued - held, \
        (held, queued, p and p["notes"])


@pytest.mark.skipif(os.environ.get("DLEDGER_2GIB_CONVERTED") != "1",
                    reason="2 GiB of old commitlog files: DLEDGER_2GIB_CONVERTED=1")
def test_as_restart_after_a_crash_whose_reput_goes_on_at_the_next_old_commitlog_file(tmp_path):
    """The -next-old store (:func:`broker_dledger_scenarios.converted_past_2gib_next_old_abort_scenario`): the
    reput set at 2147483647 in an old file but the last goes on at the next (the last) old file, walks its T0
    records as the base CommitLog wrote them (their units put), then the data file's (T9's cut unit put back)."""
    sc = converted_past_2gib_next_old_abort_scenario(LINE)
    w, src = written(sc, tmp_path)
    old = sorted((src / "before" / "commitlog").iterdir())
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    size = int(sc["config"]["mappedFileSizeCommitLog"])
    assert int(old[-2].name) <= BLANK_MAX < int(old[-1].name) == int(old[-2].name) + size, (old[-2:], data)
    assert int(old[-1].name) + size == int(data[0].name), (old[-1], data)
    t9 = w["queuesAfterLoad"]["T9/0"]
    assert int(t9["maxPhysicOffset"]) == BLANK_MAX, t9   # the cut left the fillPreBlank unit only
    text = as_restart(src, tmp_path / "ours")
    same_files_as_the_broker(src, tmp_path / "ours")
    assert f"sends it on to {int(old[-1].name)} " in text, text[-3000:]
    # the broker's reput put the last old file's T0 units and T9's cut unit back
    units = first_queue_file(src, "T9/0")
    assert units[:20] == FILL_PRE_BLANK_UNIT, "T9's fillPreBlank unit"
    assert int.from_bytes(units[20:28], "big") > int(data[0].name), "T9's cut unit put back"
    t0 = [int.from_bytes(b[i:i + 8], "big") for f in sorted((src / "expected" / "consumequeue" / "T0" / "0").iterdir())
          for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20) if b[i + 8:i + 12] != bytes(4)]
    real = [o for o in t0 if o > 0]
    assert real and min(real) >= int(old[-1].name) and max(real) < int(data[0].name), \
        "the last old file's T0 units"
    # verify's units lost (its reference, the rebuild, holds every message's unit)
    p = verify_restart(src, tmp_path)
    held, queued = held_units(src), queued_messages(sc)
    assert held == len(real) + 1 and p is not None and p["units_lost"] == queued - held, \
        (held, queued, p and p["notes"])
