"""A 5.5.1 DLedger crash restart whose start's reput, set at 2147483647 inside the last T0 entry of a log past 2 GiB
(:func:`broker_dledger_scenarios.past_2gib_abort_scenario`), parses a message there for a queue the recovery's walk
wrote and then goes on at an entry's start before that queue's cut units, dispatching them again, checked against the
broker (``DLEDGER_2GIB=1`` only: the store holds some 2.15 GB of data, its ``before/`` copy as much).

The ``-t9-to-entry`` store (:func:`past_2gib_t9_to_entry_scenario`): the ``-embedded-to-entry`` layout
(:func:`broker_dledger_2gib.past_2gib_embedded_to_entry_scenario`) whose message from 2147483647 to the last T9
entry's start is for T9/0, the queue the cut left with its ``fillPreBlank`` unit only.
``ConsumeQueue.truncateDirtyLogicFiles`` (rocketmq-store 5.5.1) keeps a ``fillPreBlank`` unit (offset 0, size
2147483647) like any unit below ``processOffset``: the write position after it (the first cut unit's place), the max
2147483647.  ``putMessagePositionInfo`` appends the parsed unit there (its end past that max, its queue offset not
below the write position), then drops the cut unit dispatched again (its queue offset now below the write position:
"build consume queue repeatedly").  ``-t9-to-entry-ext``: the same with ``enableConsumeQueueExt=true``, the parsed
message's ext unit after the walk's T9 one (the parsed unit holding its address), the cut record's again after it.

``DLEDGER_2GIB_CONVERTED=1``: the ``-two-files-ext`` store (:func:`converted_past_2gib_two_files_ext_scenario`), the
``-converted-past-2gib-two-files`` store with ``enableConsumeQueueExt=true`` and a T9 message at 2147483647 in the
last old file's T0 body: the reput parses it, then goes on at the first data file, before the walk's (the second).
``ConsumeQueue.putMessagePositionInfoWrapper`` puts an ext unit for every record of its own queue it dispatches before
the unit is dropped or put (``ConsumeQueueExt.put``): T9's ext units are the walk's, the parsed message's, the first
data file's T9 record's, then the walk's again, and T9's cut unit put back holds the last one's address.

``rebuild --as-restart`` on the store as the restart found it must write the broker's ``consumequeue/``,
``consumequeue_ext/`` and ``index/`` byte for byte, and ``verify``'s units lost count from the broker's queues.
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
    ENTRY_BOUND_BODY,
    LINE,
    NEEDS_2GIB,
    T0_TAIL,
    T9_ENTRY,
    as_restart_matches_broker,
    entry_bound_message,
    first_queue_file,
    first_units,
    retargeted,
    t0_record_at_2147483647,
    with_embedded_message,
    written,
)
from broker_dledger_scenarios import converted_past_2gib_two_files_abort_scenario, past_2gib_abort_scenario

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store]

bh.skip_without_tools()

BLANK = (0, BLANK_MAX, 0)
# mappedFileSizeConsumeQueueExt with ext files: the T0 ext units (the walk's 11207, the -two-files first data file's
# 23590) fill several files
EXT_FILE_SIZE = 100_000


def t9_entry_bound_message(queue_offset: int) -> bytes:
    """:func:`broker_dledger_2gib.entry_bound_message` (from 2147483647 to the last T9 entry's start) for T9/0 at
    ``queue_offset``, its PHYSICALOFFSET field 2147483647 (where it lies)."""
    msg = bytearray(entry_bound_message(BLANK_MAX))
    topic = 88 + len(ENTRY_BOUND_BODY) + 1   # past the header, the body and the topic's length byte
    assert msg[topic - 1:topic + 2] == b"\x02T5"
    msg[topic:topic + 2] = b"T9"
    msg[20:28] = queue_offset.to_bytes(8, "big")
    return bytes(msg)


def past_2gib_t9_to_entry_scenario(line: str, ext: bool = False) -> dict:
    """``<line>-dledger-abort-past-2gib-t9-to-entry`` (``ext``: ``-ext``, ``enableConsumeQueueExt=true`` with ext files
    of :data:`EXT_FILE_SIZE` bytes): :func:`past_2gib_abort_scenario` whose last T0 body holds, from 2147483647 to its
    end, :func:`t9_entry_bound_message` (T9/0, queue offset 1), ending where the last T9 message's entry (keys
    ``K9``) starts."""
    msg = t9_entry_bound_message(1)
    sc = past_2gib_abort_scenario(line)
    if ext:
        sc = {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true",
                               "mappedFileSizeConsumeQueueExt": str(EXT_FILE_SIZE)}}
    sc = with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                               f"{line}-dledger-abort-past-2gib-t9-to-entry{'-ext' if ext else ''}",
                               msg=msg[:-len(T0_TAIL)])
    *rest, t9 = sc["messages"]
    assert t9["topic"] == "T9", t9
    return {**sc, "messages": [*rest, {**t9, "keys": "K9"}]}


def check_t9_to_entry(w: dict, src, tmp_path, sc: dict, ext: bool = False) -> str:  # noqa: ANN001
    """The ``-t9-to-entry`` store (``ext``: ``-ext``) as the broker wrote and restarted it, then ``rebuild
    --as-restart`` and ``verify`` on it
    (:func:`test_crash_restart_whose_reput_parses_a_message_for_a_queue_left_with_fillpreblank_units_only`)."""
    msg = t9_entry_bound_message(1)
    record = t0_record_at_2147483647(src, len(T0_TAIL) + ENTRY_HEADER_SIZE)
    at = 88 + EMBED_AT_BODY_DATA   # 2147483647 in the record
    assert record[at:at + len(msg)] == msg, "the T9 message from 2147483647 to the T0 record's end"
    # the cut: T9/0's fillPreBlank unit kept (its write position after it, its max 2147483647), its last unit cut
    loaded = w["queuesAfterLoad"]["T9/0"]
    assert (int(loaded["maxOffset"]), int(loaded["maxPhysicOffset"])) == (20, BLANK_MAX), loaded
    # what the broker's reput did: the parsed unit at 20 (over the cut unit), the cut unit dispatched again dropped
    # (queue offset 1, below the write position 40); with ext files T9's ext units the walk's, the parsed message's
    # (its unit holding that address), then the cut record's again
    tags = 20 - 2**63 if ext else 0
    assert first_units(src, "T9", 3) == [BLANK, (BLANK_MAX, len(msg), tags), (0, 0, 0)]
    t9 = w["queuesAfterDispatch"]["T9/0"]
    assert (int(t9["maxOffset"]), int(t9["maxPhysicOffset"])) == (40, T9_ENTRY), t9
    if ext:
        units = ext_units(src, "T9")
        assert len(units) == 3 and units[0] == units[2] != units[1], units
        assert units[1] == struct.pack(">hqqh", 20, 0, 1_700_000_000_001, 0), "the parsed message's ext unit"
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=1, ext=ext)
    assert f"parses 1 message(s) ({BLANK_MAX} to {T9_ENTRY})" in text and f"sends it on to {T9_ENTRY} " in text, \
        text[-3000:]
    assert "T9/0 at 20" in text, text[-3000:]
    return text


@NEEDS_2GIB
@pytest.mark.parametrize("ext", [False, True], ids=["plain", "ext"])
def test_crash_restart_whose_reput_parses_a_message_for_a_queue_left_with_fillpreblank_units_only(tmp_path, ext):
    """The ``-t9-to-entry`` store: the reput set at 2147483647 parses a T9 message (queue offset 1) up to the last T9
    entry's start, where it goes on.  The cut left T9/0 its ``fillPreBlank`` unit only (write position 20, max
    2147483647); the 5.5.1 broker appends the parsed unit at 20, over the cut unit, then drops T9's cut unit
    dispatched again (queue offset 1, below the write position): it is lost.  With ``enableConsumeQueueExt=true``
    (``-ext``) the parsed message's ext unit follows the walk's T9 one, the parsed unit holding its address, and the
    cut record's ext unit comes again after it.  ``rebuild --as-restart``: the broker's ``consumequeue/`` (with ext
    files ``consumequeue_ext/``) and ``index/`` byte for byte, and verify's units lost."""
    sc = past_2gib_t9_to_entry_scenario(LINE, ext)
    w, src = written(sc, tmp_path)
    check_t9_to_entry(w, src, tmp_path, sc, ext)


# Where the Writer's layout of converted_past_2gib_abort_scenario puts 2147483647 (test_dledger_2gib_broker's
# EMBED_T0, EMBED_AT_BODY): in the T0 record of queue offset 511303, 1244 bytes into its body
CONVERTED_EMBED_T0 = 511303
CONVERTED_EMBED_AT_BODY = BLANK_MAX - 2147482315 - 88


def converted_past_2gib_two_files_ext_scenario(line: str, queue_offset: int = 1) -> dict:
    """``<line>-dledger-abort-converted-past-2gib-two-files-ext``: :func:`converted_past_2gib_two_files_abort_scenario`
    with ``enableConsumeQueueExt=true`` (ext files of :data:`EXT_FILE_SIZE` bytes) whose old T0 body around 2147483647
    holds, from there, a well-formed T9/0 message of ``queue_offset`` (its PHYSICALOFFSET field 2147483647, keys
    ``E5``), then the body's 'x' bytes."""
    sc = converted_past_2gib_two_files_abort_scenario(line)
    sc = {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true",
                           "mappedFileSizeConsumeQueueExt": str(EXT_FILE_SIZE)}}
    return with_embedded_message(sc, CONVERTED_EMBED_T0, CONVERTED_EMBED_AT_BODY,
                                 f"{line}-dledger-abort-converted-past-2gib-two-files-ext-{queue_offset}",
                                 msg=retargeted(BLANK_MAX, b"T9", queue_offset))


def ext_units(src, topic: str) -> list[bytes]:  # noqa: ANN001
    """The broker's ext units of ``topic``/0 (``consumequeue_ext``), in order, up to the first all-zero one (each
    20 bytes: no bitmap here)."""
    out = []
    for f in sorted((src / "expected" / "consumequeue_ext" / topic / "0").iterdir()):
        b = f.read_bytes()
        for i in range(0, len(b) - 19, 20):
            if not any(b[i:i + 20]):
                return out
            out.append(b[i:i + 20])
    return out


def check_two_files_ext(w: dict, src, tmp_path, sc: dict, queue_offset: int) -> str:  # noqa: ANN001
    """The ``-two-files-ext`` store of the T9 message of ``queue_offset`` as the broker wrote and restarted it, then
    ``rebuild --as-restart`` and ``verify`` on it
    (:func:`test_crash_restart_with_ext_whose_reput_parses_a_message_for_a_walked_queue_then_goes_on_earlier`)."""
    old = sorted((src / "before" / "commitlog").iterdir())
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    size = int(sc["config"]["mappedFileSizeCommitLog"])
    assert len(data) == 2 and int(old[-1].name) <= BLANK_MAX < int(old[-1].name) + size == int(data[0].name), \
        (old[-1], data)
    msg = retargeted(BLANK_MAX, b"T9", queue_offset)
    with old[-1].open("rb") as f:
        f.seek(BLANK_MAX - int(old[-1].name))
        assert f.read(len(msg) + 8) == msg + b"x" * 8, "the T9 message at 2147483647, then 'x' bytes"
    t9 = w["queuesAfterLoad"]["T9/0"]   # the cut left its two fillPreBlank units only
    assert (int(t9["maxOffset"]), int(t9["maxPhysicOffset"])) == (40, BLANK_MAX), t9
    # what the broker's reput did: T9's ext units the walk's, the parsed message's, the first data file's record's,
    # then the walk's again; queue offset 1: the parsed unit dropped (below the write position 40), the first data
    # file's T9 unit dropped the same, T9's cut unit put back at 40 holding the address of T9's fourth ext unit;
    # queue offset 2: the parsed unit at 40 holding the second's, the first data file's and the cut unit dropped (their
    # queue offsets below the write position 60)
    units = first_units(src, "T9", 4)
    assert units[:2] == [BLANK, BLANK] and units[3] == (0, 0, 0), units
    assert units[2][0] > int(data[1].name) and units[2][2] == 60 - 2**63 if queue_offset == 1 else \
        units[2] == (BLANK_MAX, len(msg), 20 - 2**63), units
    ext = ext_units(src, "T9")
    assert len(ext) == 4 and ext[0] == ext[3] != ext[2], ext
    assert ext[1] == struct.pack(">hqqh", 20, 0, 1_700_000_000_001, 0), "the parsed message's ext unit"
    t0 = [struct.unpack(">qiq", b[i:i + 20]) for f in sorted((src / "expected" / "consumequeue" / "T0" / "0").iterdir())
          for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20)]
    real = [u for u in t0 if u[0] > 0]
    assert len(real) == 23590 and min(u[0] for u in real) >= int(data[0].name) and \
        max(u[0] for u in real) < int(data[1].name) and all(u[2] < 0 for u in real), "T0's first data file units"
    assert first_queue_file(src, "T9/0")[60:80] == bytes(20)
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=queue_offset == 2, ext=True)
    assert f"parses 1 message(s) ({BLANK_MAX} to {BLANK_MAX + len(msg)})" in text and \
        f"sends it on to {int(data[0].name)} " in text and \
        f"the start's reput from {int(data[0].name)}, before data file {data[1].name}" in text, text[-3000:]
    return text


@pytest.mark.skipif(os.environ.get("DLEDGER_2GIB_CONVERTED") != "1",
                    reason="2 GiB of old commitlog files: DLEDGER_2GIB_CONVERTED=1")
@pytest.mark.parametrize("queue_offset", [1, 2], ids=["dropped", "appended"])
def test_crash_restart_with_ext_whose_reput_parses_a_message_for_a_walked_queue_then_goes_on_earlier(
        tmp_path, queue_offset):
    """The ``-two-files-ext`` store: the reput set at 2147483647 in the last old file parses a T9 message there, then
    goes on at the first data file, before the walk's (the second).  The 5.5.1 broker puts the parsed message's ext
    unit after the walk's T9 one, then walks the first data file (T9's record: its ext unit, its unit dropped by its
    queue offset; T0's units and ext units) and the walk's records again (T9's: its ext unit again).  Queue offset 1:
    the parsed unit dropped (below the write position the cut left after T9's two ``fillPreBlank`` units), T9's cut
    unit back at 40, holding the address of its fourth ext unit; queue offset 2: the parsed unit at 40, holding the
    second's, the cut unit dropped.  ``rebuild --as-restart``: the broker's ``consumequeue/``, ``consumequeue_ext/``
    and ``index/`` byte for byte, and verify's units lost."""
    sc = converted_past_2gib_two_files_ext_scenario(LINE, queue_offset)
    w, src = written(sc, tmp_path)
    check_two_files_ext(w, src, tmp_path, sc, queue_offset)
