"""A 5.5.1 DLedger crash restart whose start's reput, set at 2147483647 inside an entry of a data file before the
walk's, parses a well-formed message there that ends exactly at the next entry's start, and walks the entries on from
there before reaching the walk's data file (``DLEDGER_2GIB=1`` only: some 2.3 GB of data files, its ``before/`` copy
as much; under two minutes).

``-past-2gib-before-embedded-to-entry`` (:func:`past_2gib_before_embedded_to_entry_scenario`): ``-past-2gib-before``
(:func:`broker_dledger_2gib.past_2gib_before_abort_scenario`) whose T0 body around 2147483647 holds, from there to the
record's end, a T5 message (:func:`broker_dledger_2gib.entry_bound_message`, its PHYSICALOFFSET field 2147483647,
keys ``E5``) whose last bytes are the T0 record's own tail: it ends where the next T0 entry of the 22nd data file
starts.  ``DLedgerCommitLog.checkMessageAndReturnSize`` reads that entry's magic and size (neither a message magic
code nor -1), runs the base check 48 bytes further on its T0 message, and the reput walks the 22nd file's remaining
entries, the 23rd's and the walk's again: the before-the-walk rule
(:func:`store_format.dledger_crash_reput_before.reput_before_walk`) from an entry's start inside an earlier data
file, after the parsed message (:func:`store_format.dledger_crash_old.inside_earlier_refusal`).
"""
from __future__ import annotations

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
    PAST_2GIB_FULL,
    T0_TAIL,
    TO_T9_ENTRY,
    as_restart_matches_broker,
    entry_bound_message,
    past_2gib_before_abort_scenario,
    t0_record_at_2147483647,
    with_embedded_message,
    written,
)
from broker_dledger_scenarios import PAST_2GIB_FILE

from store_format.dledger import ENTRY_HEADER_SIZE, ENTRY_MAGIC, OFF_ENTRY_POS

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

NEXT_ENTRY = BLANK_MAX + TO_T9_ENTRY   # the T0 entry after the one holding 2147483647 (22nd data file)
T0_AFTER = PAST_2GIB_FULL - EMBED_T0_DATA   # the T0 messages of the 22nd data file after that one (the filler last)
T0_23RD = 23590                          # the 23rd data file's T0 messages
CQ_UNITS = 300_000                       # a consume queue file's units (mappedFileSizeConsumeQueue 6,000,000)


def past_2gib_before_embedded_to_entry_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-embedded-to-entry`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`broker_dledger_2gib.past_2gib_before_abort_scenario` whose T0 body around 2147483647 holds, from there to
    its end, the T5 message :func:`broker_dledger_2gib.entry_bound_message` (PHYSICALOFFSET 2147483647) but its last
    bytes, the T0 record's own tail."""
    msg = entry_bound_message(BLANK_MAX)
    return with_embedded_message(past_2gib_before_abort_scenario(line), EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                                 f"{line}-dledger-abort-past-2gib-before-embedded-to-entry", msg=msg[:-len(T0_TAIL)])


def _units(src, topic: str) -> list[bytes]:  # noqa: ANN001
    """The 20-byte units of the broker's queue ``topic``/0, its files in order."""
    files = sorted((src / "expected" / "consumequeue" / topic / "0").iterdir())
    return [b[i:i + 20] for f in files for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20)]


def test_crash_restart_whose_reput_at_2147483647_parses_a_message_up_to_an_entry_before_the_walks_data_file(tmp_path):
    """The reput set at 2147483647 inside the 22nd data file (two before the walk's), a T5 message there ending at the
    next T0 entry's start: the 5.5.1 broker dispatches it (T5/0's one unit; E5 below the index's ``endPhyOffset``,
    the walk's K9, so not indexed), then walks the entries on from that T0 entry: T0's queue (no file before) gets the
    22nd file's remaining T0 units from there (``fillPreBlank`` units before them) and the 23rd file's, T9 drops the
    23rd file's unit (queue offset 1, below its write position) and gets its cut unit back, K9 indexed again.
    ``rebuild --as-restart`` writes ``consumequeue/`` and ``index/`` byte for byte and ``verify``'s units lost are
    those the broker's queues do not hold."""
    sc = past_2gib_before_embedded_to_entry_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and all(int(f.name) == k * PAST_2GIB_FILE for k, f in enumerate(data)), data
    assert int(data[21].name) <= BLANK_MAX < NEXT_ENTRY < int(data[22].name), data[21:23]
    msg = entry_bound_message(BLANK_MAX)
    record = t0_record_at_2147483647(src, len(T0_TAIL) + ENTRY_HEADER_SIZE)
    at = 88 + EMBED_AT_BODY_DATA   # 2147483647 in the record
    assert record[at:at + len(msg)] == msg, "the T5 message from 2147483647 to the T0 record's end"
    head = record[4189:4189 + ENTRY_HEADER_SIZE]   # the next entry's header: its magic, its own position
    assert struct.unpack(">i", head[:4])[0] == ENTRY_MAGIC and \
        struct.unpack(">q", head[OFF_ENTRY_POS:OFF_ENTRY_POS + 8])[0] == NEXT_ENTRY, head
    load = w["queuesAfterLoad"]
    assert int(load["T9/0"]["maxPhysicOffset"]) == BLANK_MAX, load   # the cut left fillPreBlank units only
    assert "T5/0" not in load and "T0/0" not in load, load   # the walk wrote neither
    # what the broker's reput did: T5/0's one unit, the embedded message (its field, size, no tags code) ...
    t5 = _units(src, "T5")
    assert t5[0] == struct.pack(">qiq", BLANK_MAX, len(msg), 0) and not any(b"".join(t5[1:])), t5[:2]
    # ... then every entry from the next T0 one: the 22nd file's remaining T0 units and the 23rd's, fillPreBlank
    # units before the first (its queue offset, in T0's second file)
    t0 = _units(src, "T0")
    real = [struct.unpack(">qiq", u) for u in t0 if u[8:12] not in (bytes(4), FILL_PRE_BLANK_UNIT[8:12])]
    assert real[0][0] == NEXT_ENTRY + ENTRY_HEADER_SIZE, real[0]
    assert len(real) == T0_AFTER + T0_23RD and [u[0] for u in real] == sorted(u[0] for u in real), len(real)
    assert sum(1 for u in real if u[0] < int(data[22].name)) == T0_AFTER, "the 22nd file's T0 units from there"
    assert max(u[0] for u in real) < int(data[23].name), "none of the walk's file (it holds no T0 message)"
    # one file of T0's queue, where its queue offset falls (CQ_UNITS units a file), fillPreBlank units up to it
    names = sorted(p.name for p in (src / "expected" / "consumequeue" / "T0" / "0").iterdir())
    base = (EMBED_T0_DATA + 1) // CQ_UNITS * CQ_UNITS
    assert names == [f"{20 * base:020d}"], names
    first = t0.index(struct.pack(">qiq", *real[0]))
    assert first == EMBED_T0_DATA + 1 - base and t0[:first] == [FILL_PRE_BLANK_UNIT] * first, first
    # T9: its fillPreBlank units, the 23rd file's unit dropped, the walk's cut unit back
    t9 = _units(src, "T9")
    assert t9[:2] == [FILL_PRE_BLANK_UNIT] * 2, t9[:3]
    assert int.from_bytes(t9[2][:8], "big") > int(data[23].name) and not any(b"".join(t9[3:])), \
        "T9's cut unit put back, the 23rd data file's T9 unit dropped"
    (index,) = sorted((src / "expected" / "index").iterdir())
    assert int.from_bytes(index.read_bytes()[36:40], "big") == 13, \
        "E5 not indexed (below endPhyOffset): 1, then P0-P9 and K9 by the walk, K9 again"
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"parses 1 message(s) ({BLANK_MAX} to {NEXT_ENTRY})" in text and f"sends it on to {NEXT_ENTRY} " in text, \
        text[-3000:]
    assert f"the start's reput from {NEXT_ENTRY}, before data file {data[23].name}" in text, text[-3000:]
