"""A 5.5.1 DLedger crash restart whose start's reput, set at 2147483647 inside an entry of a log past 2 GiB, meets
bytes there that ``DLedgerCommitLog.checkMessageAndReturnSize`` reads neither as a record nor as DLedger's blank (the
int 4 bytes in not a message or blank magic code, the int there not -1), so that it runs the base check 48 bytes
further, checked against the broker (``DLEDGER_2GIB=1`` only: the store holds some 2.15 GB of data, its ``before/``
copy as much, and the broker takes minutes to write it).

The ``-embedded-48`` store (:func:`past_2gib_embedded_48_scenario`): :func:`past_2gib_abort_scenario`'s last T0
body holds 'x' bytes at 2147483647 and a well-formed T5 message 48 bytes further, whose PHYSICALOFFSET field says
2147483647 (not where it starts).  The broker dispatches it (a request whose ``bufferSize`` is its size + 48, whose
``commitLogOffset`` is that field), then checks on at its end, on the body's 'x' bytes, where the base check 48
bytes further fails and ``doReput`` jumps to the end of what ``getData`` gave
(:func:`store_format.dledger_reput_inside.reput_inside_entry`).  ``rebuild --as-restart`` on the store as the
restart found it must write the broker's ``consumequeue/`` and ``index/`` byte for byte, and ``verify``'s units
lost count from the broker's queues.

The ``-embedded-blank-48`` store: a blank's header 48 bytes further, its empty request dispatched, then a message.
The ``-embedded-to-entry`` store (:func:`past_2gib_embedded_to_entry_scenario`): a message from 2147483647 to the
T0 entry's end, where the last T9 entry starts: the check there runs the base check 48 bytes further, on T9's
message, and the reput walks the entries on from there (T9's cut unit put back, its keys indexed again).
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    EMBED_T0_DATA,
    EMPTY_BLANK,
    FILL_PRE_BLANK_UNIT,
    LINE,
    NEEDS_2GIB,
    T0_TAIL,
    T9_ENTRY,
    as_restart_matches_broker,
    assert_embedded_t5_dispatched,
    embedded_message,
    entry_bound_message,
    first_queue_file,
    past_2gib_embedded_blank_48_scenario,
    past_2gib_embedded_to_entry_scenario,
    t0_record_at_2147483647,
    with_embedded_message,
    written,
)
from broker_dledger_scenarios import past_2gib_abort_scenario

from store_format.dledger import ENTRY_HEADER_SIZE, ENTRY_MAGIC, OFF_ENTRY_POS

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store]

bh.skip_without_tools()


def past_2gib_embedded_48_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-embedded-48``: :func:`past_2gib_abort_scenario` whose last T0 body holds
    its 'x' bytes at 2147483647 and, 48 bytes further, a well-formed T5 message (:func:`embedded_message`, its
    PHYSICALOFFSET field 2147483647)."""
    return with_embedded_message(past_2gib_abort_scenario(line), EMBED_T0_DATA, EMBED_AT_BODY_DATA + ENTRY_HEADER_SIZE,
                                 f"{line}-dledger-abort-past-2gib-embedded-48")


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_parses_a_message_48_bytes_further(tmp_path):
    """The reput set at 2147483647 inside the last T0 entry's body, 'x' bytes there, a well-formed T5 message 48
    bytes further: the 5.5.1 broker dispatches it, its unit holding its PHYSICALOFFSET field (2147483647), not its
    start (2147483695), and its keys indexed at that offset; the next check, on the 'x' bytes after it, fails and
    ``doReput`` jumps.  ``rebuild --as-restart`` reads the message from its start after the walk's records
    (``QueueCut.inside_records``): the broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's units
    lost."""
    sc = past_2gib_embedded_48_scenario(LINE)
    w, src = written(sc, tmp_path)
    msg = embedded_message(BLANK_MAX)
    record = t0_record_at_2147483647(src)
    at = 88 + EMBED_AT_BODY_DATA   # 2147483647 in the record
    # DLedgerCommitLog's check at 2147483647: neither int a magic code nor -1, so the base check 48 bytes further
    assert record[at:at + 48] == b"x" * 48, "'x' bytes at 2147483647"
    assert record[at + 48:at + 48 + len(msg)] == msg, "the message 48 bytes further"
    assert record[at + 48 + len(msg):at + 48 + len(msg) + 56] == b"x" * 56, "'x' bytes after it"
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left the fillPreBlank unit
    assert "T5/0" not in w["queuesAfterLoad"], w["queuesAfterLoad"]   # a queue the walk did not write
    # what the broker's reput did: T5/0's unit at its field, its keys indexed there
    assert_embedded_t5_dispatched(src, msg)
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    start = BLANK_MAX + ENTRY_HEADER_SIZE
    assert f"parses 1 message(s) ({start} to {start + len(msg)})" in text, text[-3000:]


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_dispatches_a_blanks_empty_request_48_bytes_further(tmp_path):
    """The reput set at 2147483647 inside the last T0 entry's body, 'x' bytes there, a blank's header 48 bytes
    further: the 5.5.1 broker dispatches its empty request (topic "" queue 0: the unit (0, 0, 0) in
    ``consumequeue/0/``), moves the reput 48 bytes on (the request's ``bufferSize``) while the buffer stands past the
    blank's two ints, 56 bytes past 2147483647, where its next check parses the T5 message there (T5/0's unit), then
    fails on the 'x' bytes after it and jumps.  ``rebuild --as-restart``: the broker's ``consumequeue/`` (the empty
    request's file too) and ``index/`` byte for byte, and verify's units lost."""
    sc = past_2gib_embedded_blank_48_scenario(LINE)
    w, src = written(sc, tmp_path)
    msg = embedded_message(BLANK_MAX)
    record = t0_record_at_2147483647(src)
    at = 88 + EMBED_AT_BODY_DATA   # 2147483647 in the record
    assert record[at:at + 48] == b"x" * 48, "'x' bytes at 2147483647"
    assert record[at + 48:at + 56] == EMPTY_BLANK, "the blank's header 48 bytes further"
    assert record[at + 56:at + 56 + len(msg)] == msg, "the message after it"
    assert record[at + 56 + len(msg):at + 56 + len(msg) + 56] == b"x" * 56, "'x' bytes after it"
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left the fillPreBlank unit
    assert "T5/0" not in w["queuesAfterLoad"], w["queuesAfterLoad"]
    # what the broker's reput did: the empty request's unit, all zeros, in topic "" queue 0's first file
    empty = src / "expected" / "consumequeue" / "0" / f"{0:020d}"
    size = int(sc["config"]["mappedFileSizeConsumeQueue"])
    assert empty.is_file() and empty.stat().st_size == size and not any(empty.read_bytes()), "the empty request"
    # what the broker's reput did: T5/0's unit at its field, its keys indexed there
    assert_embedded_t5_dispatched(src, msg)
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    start = BLANK_MAX + 56
    assert (f'parses 2 message(s) (a blank at {BLANK_MAX + 48}, its empty request to topic "" queue 0, {start} to '
            f"{start + len(msg)})") in text, text[-3000:]
    # the same store already holding topic "" queue 0's file with other bytes: the broker writes the unit over its
    # first 20 bytes and keeps the rest (store_format.empty_request_held, checked against the broker with files
    # planted in tests/test_empty_request_held_broker.py); no warning about held queue files (it never loads them)
    held = src / "before" / "consumequeue" / "0" / f"{0:020d}"
    held.parent.mkdir(parents=True)
    held.write_bytes(b"\x05" * 20 + b"\x01" + bytes(size - 21))
    code, out, err = bh.cli(["rebuild", "--store", str(src / "before"), "--out", str(tmp_path / "held"),
                             "--config", str(src / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[LINE],
                             "--engine", "local", "--no-tables", "--as-restart"])
    assert code == 0 and "warning: the store holds" not in err, err[-2000:]
    got = (tmp_path / "held" / "consumequeue" / "0" / f"{0:020d}").read_bytes()
    assert got == bytes(20) + held.read_bytes()[20:], got[:40].hex()



@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_parses_a_message_up_to_an_entry_and_walks_on_from_it(tmp_path):
    """The reput set at 2147483647 inside the last T0 entry's body, a well-formed T5 message there that ends at that
    entry's end, where the last T9 message's entry starts: the 5.5.1 broker dispatches the T5 message (T5/0's unit
    at its PHYSICALOFFSET field, T9's message's offset, and E5 indexed there: not below the index's endPhyOffset,
    K9's), then checks on at the T9 entry's start, whose two ints are DLedger's entry magic and size (neither a
    message magic code nor -1), so the base check 48 bytes further parses T9's message (a request of its size +
    48): the reput walks the entries on from there like any reput, puts T9's cut unit back behind its
    ``fillPreBlank`` unit and indexes K9 again, after E5.  ``rebuild --as-restart`` reads the T5 message after the
    walk's records, then the entries from the T9 entry's start again (``QueueCut.inside_records``,
    ``QueueCut.reput``): the broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's units lost."""
    sc = past_2gib_embedded_to_entry_scenario(LINE)
    w, src = written(sc, tmp_path)
    msg = entry_bound_message()
    record = t0_record_at_2147483647(src, len(T0_TAIL) + ENTRY_HEADER_SIZE)
    at = 88 + EMBED_AT_BODY_DATA   # 2147483647 in the record
    assert record[at:at + len(msg)] == msg, "the T5 message from 2147483647 to the T0 record's end"
    head = record[4189:4189 + ENTRY_HEADER_SIZE]   # the next entry's header: its magic, its own position
    assert struct.unpack(">i", head[:4])[0] == ENTRY_MAGIC and \
        struct.unpack(">q", head[OFF_ENTRY_POS:OFF_ENTRY_POS + 8])[0] == T9_ENTRY, head
    t9 = w["queuesAfterLoad"]["T9/0"]
    assert int(t9["maxPhysicOffset"]) == BLANK_MAX, t9   # the cut left the fillPreBlank unit only
    assert "T5/0" not in w["queuesAfterLoad"], w["queuesAfterLoad"]
    # what the broker's reput did: T5/0's one unit, then T9's cut unit put back (its queue's write position past it)
    t9_at = T9_ENTRY + ENTRY_HEADER_SIZE
    t5 = first_queue_file(src, "T5/0")
    assert t5[:20] == struct.pack(">qiq", t9_at, len(msg), 0) and not any(t5[20:]), t5[:40]
    units = first_queue_file(src, "T9/0")
    assert units[:20] == FILL_PRE_BLANK_UNIT, "T9's fillPreBlank unit"
    assert int.from_bytes(units[20:28], "big") == t9_at, units[20:40]
    after = w["queuesAfterDispatch"]["T9/0"]   # its write position past that unit (the cut's was at it)
    assert int(after["maxOffset"]) == 40 and int(after["maxPhysicOffset"]) > T9_ENTRY, after
    # the index: K9 (the walk), E5 (its field at K9's offset, not below endPhyOffset), K9 again (the reput): three
    # entries at that offset (indexCount starts at 1)
    (index,) = sorted((src / "expected" / "index").iterdir())
    header = struct.unpack(">qqqqii", index.read_bytes()[:40])
    assert header[2:4] == (t9_at, t9_at) and header[5] == 4, header
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"parses 1 message(s) ({BLANK_MAX} to {T9_ENTRY})" in text and f"sends it on to {T9_ENTRY} " in text, \
        text[-3000:]
    assert f"and indexes the record at {t9_at} again" in text, text[-3000:]


def index_entry_offsets(src) -> list[int]:  # noqa: ANN001
    """The commitlog offsets of the broker's one index file's entries, in put order (after the 40-byte header and
    the hash slots: each entry a key hash, that offset, a time difference and the previous entry's number)."""
    (index,) = sorted((src / "expected" / "index").iterdir())
    data = index.read_bytes()
    count = struct.unpack(">i", data[36:40])[0]
    slots = int(next(ln for ln in (src / "broker.conf").read_text().splitlines()
                     if ln.startswith("maxHashSlotNum=")).split("=")[1])
    at = 40 + 4 * slots   # past the header and the hash slots
    return [struct.unpack(">q", data[at + 20 * k + 4:at + 20 * k + 12])[0] for k in range(1, count)]


@NEEDS_2GIB
def test_crash_restart_whose_reput_parses_a_message_keyed_above_the_last_indexed_record(tmp_path):
    """The -embedded-to-entry layout whose T5 message's PHYSICALOFFSET field lies one byte above the last T9 record
    (K9, the walk's last indexed record) and whose keys are ``E5 E6``: the 5.5.1 broker indexes E5 and E6 at that
    field (not below the index's endPhyOffset, K9's), which moves endPhyOffset past K9, so when its reput walks the T9
    entry again K9 is below it and ``IndexService.buildIndex`` skips it: the index holds K9, E5, E6, not K9 again.
    ``rebuild --as-restart``: the broker's ``consumequeue/`` and ``index/`` byte for byte, without claiming that K9 is
    indexed again; ``verify``: the keys put (3) and the units lost (:mod:`store_format.dledger_inside_index`)."""
    t9_at = T9_ENTRY + ENTRY_HEADER_SIZE
    sc = past_2gib_embedded_to_entry_scenario(LINE, t9_at + 1, "embedded-above-last-indexed", b"E5 E6")
    w, src = written(sc, tmp_path)
    msg = entry_bound_message(t9_at + 1, b"E5 E6")
    record = t0_record_at_2147483647(src, len(T0_TAIL) + ENTRY_HEADER_SIZE)
    at = 88 + EMBED_AT_BODY_DATA   # 2147483647 in the record
    assert record[at:at + len(msg)] == msg, "the T5 message from 2147483647 to the T0 record's end"
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX, w["queuesAfterLoad"]["T9/0"]
    # what the broker's reput did: T5/0's unit at its field, T9's cut unit put back behind its fillPreBlank unit
    t5 = first_queue_file(src, "T5/0")
    assert t5[:20] == struct.pack(">qiq", t9_at + 1, len(msg), 0) and not any(t5[20:]), t5[:40]
    units = first_queue_file(src, "T9/0")
    assert units[:20] == FILL_PRE_BLANK_UNIT and int.from_bytes(units[20:28], "big") == t9_at, units[:40]
    # the index: K9 (the walk), then E5 and E6 at the T5 field; K9 not again
    assert index_entry_offsets(src) == [t9_at, t9_at + 1, t9_at + 1]
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"sends it on to {T9_ENTRY} " in text and "indexes the record at" not in text, text[-3000:]
