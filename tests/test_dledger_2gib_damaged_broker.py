"""A 5.5.1 DLedger crash restart whose ``dledgerRecoverAbnormally`` walk ends early at a damaged message (a body
byte flipped: its CRC check fails there, DLedger's own recovery keeps the log) and whose start's reput, set at
2147483647 inside an entry of a log past 2 GiB (a queue the cut left with ``fillPreBlank`` units only), parses a
well-formed message there that ends at an entry's start, then walks the entries on from there: the walk's cut
record again, then the damaged message and the records after it, which its check (no CRC) dispatches.  Checked
against the broker (``DLEDGER_2GIB=1`` only: the store holds some 2.15 GB of data, its ``before/`` copy as much).

The ``-embedded-to-entry-damaged`` store (:func:`past_2gib_embedded_to_entry_damaged_scenario`): the
``-embedded-to-entry`` store (``tests/test_dledger_2gib_inside_broker.py``; its scenario in ``broker_dledger_2gib``)
with three messages after its last T9 message: a T8 message (keys ``K8``) whose body byte is flipped, a T8 message
(``K8b``) and a T9 message (``K9b``); ``-embedded-to-entry-damaged-unkeyed``: that store with its last T9 message
without keys (no record from the T9 entry on to index again).

The ``-past-2gib-before-embedded-damaged`` store (:func:`past_2gib_before_embedded_damaged_scenario`): the
``-past-2gib-before-embedded`` store (its scenario in ``broker_dledger_2gib``) with those three messages after its last
T9 message: the reput set at 2147483647 parses the T5 message there, then goes on at the 23rd data file, before the
walk's (the 24th), and walks the earlier records, the walk's again, then the damaged message and the rest.

The ``-embedded-to-damaged`` store (:func:`past_2gib_embedded_to_damaged_scenario`): the reput set at 2147483647
parses a message there that ends at the damaged message's entry, where the walk ended, and goes on from there.
The ``-embedded-past-damaged`` store (:func:`past_2gib_embedded_past_damaged_scenario`): the walk ends at a damaged
message in the data file holding 2147483647, and the reput set there parses a message, then jumps to that file's end,
past the damaged message: the records between are never dispatched.
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
    T0_TAIL,
    T9_ENTRY,
    TO_T9_ENTRY,
    as_restart_matches_broker,
    embedded_message,
    entry_bound_message,
    first_queue_file,
    log_bytes,
    past_2gib_before_embedded_scenario,
    past_2gib_embedded_to_entry_scenario,
    t0_record_at_2147483647,
    with_embedded_message,
    written,
)
from broker_dledger_scenarios import PAST_2GIB_BATCH, PAST_2GIB_FILE, past_2gib_abort_scenario

from store_format.dledger import ENTRY_HEADER_SIZE
from store_format.layout import MAGIC_V1

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store]

bh.skip_without_tools()

# the messages after the last T9 one: the first damaged (its put's index: damageMessage)
AFTER_T9 = [{"topic": "T8", "queueId": 0, "bodySize": 100, "keys": "K8"},
            {"topic": "T8", "queueId": 0, "bodySize": 100, "keys": "K8b"},
            {"topic": "T9", "queueId": 0, "bodySize": 100, "keys": "K9b"}]


def past_2gib_embedded_to_entry_damaged_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-embedded-to-entry-damaged``: the ``-embedded-to-entry`` store
    (:func:`past_2gib_embedded_to_entry_scenario`) with :data:`AFTER_T9` after its last T9 message, the first of
    them damaged (a body byte flipped: ``damageMessage``)."""
    sc = past_2gib_embedded_to_entry_scenario(line)
    return {**sc, "messages": [*sc["messages"], *AFTER_T9], "damageMessage": len(sc["messages"]),
            "name": f"{line}-dledger-abort-past-2gib-embedded-to-entry-damaged"}


def _reput_walked_on_to_the_damaged_message(w: dict, src, t9_size: int) -> tuple[int, int, int]:  # noqa: ANN001
    """Asserts what the broker wrote in a ``-embedded-to-entry-damaged`` store whose last T9 message is ``t9_size``
    bytes: the T5 message from 2147483647 to the T0 record's end; the walk ended at the damaged message, the entry
    right after the last T9 one (its short processOffset below 2147483647, T8's queue not written, T9's cut unit
    taken: its fillPreBlank unit only) while DLedger kept the log; then the reput: T5/0's one unit at its field (the
    T9 message's offset), T8/0's two units (the damaged message's first), T9's cut unit put back, then K9b's.
    Returns the T9 message's offset, the damaged message's and K9b's."""
    msg = entry_bound_message()
    record = t0_record_at_2147483647(src, len(T0_TAIL) + ENTRY_HEADER_SIZE)
    at = 88 + EMBED_AT_BODY_DATA   # 2147483647 in the record
    assert record[at:at + len(msg)] == msg, "the T5 message from 2147483647 to the T0 record's end"
    t9_at = T9_ENTRY + ENTRY_HEADER_SIZE
    damaged = int(w["damagedRecord"])
    assert damaged == t9_at + t9_size + ENTRY_HEADER_SIZE, w["damagedRecord"]
    assert int(w["truncateDirtyLogicFilesAt"]) < BLANK_MAX, w["truncateDirtyLogicFilesAt"]
    loaded = w["queuesAfterLoad"]
    assert "T8/0" not in loaded and "T5/0" not in loaded, loaded
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX, loaded   # the fillPreBlank unit only
    assert int(w["maxPhyOffset"]) == int(w["dledgerCommittedPos"]) > damaged, w   # DLedger kept the log
    t5 = first_queue_file(src, "T5/0")
    assert t5[:20] == struct.pack(">qiq", t9_at, len(msg), 0) and not any(t5[20:]), t5[:40]
    k8b = damaged + 201 + ENTRY_HEADER_SIZE
    k9b = k8b + 202 + ENTRY_HEADER_SIZE
    t8 = first_queue_file(src, "T8/0")
    assert t8[:40] == struct.pack(">qiqqiq", damaged, 201, 0, k8b, 202, 0) and not any(t8[40:]), t8[:60]
    t9 = first_queue_file(src, "T9/0")
    assert t9[:60] == FILL_PRE_BLANK_UNIT + struct.pack(">qiqqiq", t9_at, t9_size, 0, k9b, 202, 0) and \
        not any(t9[60:]), t9[:80]
    assert int(w["maxPhyOffset"]) == k9b + 202
    return t9_at, damaged, k9b


@NEEDS_2GIB
def test_crash_restart_whose_walk_ends_at_a_damaged_message_and_reput_at_2147483647_walks_on_to_it(tmp_path):
    """The walk ends at the damaged T8 message (its body CRC), past the last T9 entry; the cut at its short
    ``processOffset`` leaves T9's queue with its ``fillPreBlank`` unit only, and the reput set at 2147483647 inside the
    last T0 entry's body parses the T5 message there, which ends where the last T9 entry starts.  The 5.5.1 broker
    dispatches the T5 message after the walk's records (T5/0's unit at its PHYSICALOFFSET field), then walks the
    entries on from the T9 entry: T9's cut unit put back, K9 indexed again, then the damaged message (its check
    reads no CRC) and the two after it: T8/0's two units, T9's third unit, K8, K8b and K9b indexed after K9.
    ``rebuild --as-restart`` reads the walk's records to the damaged message, then the T5 message, then the entries
    from the T9 entry's start to the log's end: the broker's ``consumequeue/`` and ``index/`` byte for byte, and
    verify's units lost."""
    sc = past_2gib_embedded_to_entry_damaged_scenario(LINE)
    w, src = written(sc, tmp_path)
    t9_at, damaged, k9b = _reput_walked_on_to_the_damaged_message(w, src, 201)
    # the index: K9 (the walk), E5 (its field at K9's offset), K9 again, K8, K8b, K9b (the reput): five keys, six
    # entries (indexCount starts at 1), the last at K9b's offset
    (index,) = sorted((src / "expected" / "index").iterdir())
    header = struct.unpack(">qqqqii", index.read_bytes()[:40])
    assert header[2:] == (t9_at, k9b, 5, 7), header
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    walk_end = damaged - ENTRY_HEADER_SIZE   # the damaged message's entry
    assert f"parses 1 message(s) ({BLANK_MAX} to {T9_ENTRY})" in text and f"ends its walk at {walk_end} " in text, \
        text[-3000:]


def past_2gib_embedded_to_entry_damaged_unkeyed_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-embedded-to-entry-damaged-unkeyed``: the ``-embedded-to-entry-damaged`` store
    (:func:`past_2gib_embedded_to_entry_damaged_scenario`) whose last T9 message has no keys: no record the walk
    dispatched from the T9 entry on has a key to index again (and no ext file: no ext unit to put again)."""
    sc = past_2gib_embedded_to_entry_damaged_scenario(line)
    k = sc["damageMessage"] - 1
    t9 = {key: v for key, v in sc["messages"][k].items() if key != "keys"}
    assert t9["topic"] == "T9", t9
    return {**sc, "messages": [*sc["messages"][:k], t9, *sc["messages"][k + 1:]],
            "name": f"{line}-dledger-abort-past-2gib-embedded-to-entry-damaged-unkeyed"}


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_walks_on_to_a_damaged_message_with_nothing_to_index_again(
        tmp_path):
    """As the ``-embedded-to-entry-damaged`` case, the last T9 message without keys: the walk's records from the T9
    entry on have no key to index again and there is no ext file, yet the broker's reput still dispatches the parsed
    T5 message (its keys E5 at its PHYSICALOFFSET field, the T9 message's offset) before it walks the entries on from
    the T9 entry: T9's cut unit put back, then the damaged message and the two after it, K8, K8b and K9b indexed
    after E5.  ``rebuild --as-restart`` reads the walk's records to the damaged message, the T5 message, then the
    entries from the T9 entry's start to the log's end (read in one pass, E5 would come after K9b's offset and
    ``buildIndex`` would drop it): the broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's units
    lost."""
    sc = past_2gib_embedded_to_entry_damaged_unkeyed_scenario(LINE)
    w, src = written(sc, tmp_path)
    (t9_size,) = struct.unpack(">i", log_bytes(src, T9_ENTRY + ENTRY_HEADER_SIZE, 4))
    assert t9_size == 201 - len(b"KEYS\x01K9\x02"), t9_size   # the -damaged store's T9 message without its keys
    t9_at, damaged, k9b = _reput_walked_on_to_the_damaged_message(w, src, t9_size)
    # the index: E5 (its field: the T9 message's offset), then K8, K8b, K9b: four keys, four entries (indexCount
    # starts at 1), the first at the T9 message's offset, the last at K9b's
    (index,) = sorted((src / "expected" / "index").iterdir())
    header = struct.unpack(">qqqqii", index.read_bytes()[:40])
    assert header[2:] == (t9_at, k9b, 4, 5), header
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"parses 1 message(s) ({BLANK_MAX} to {T9_ENTRY})" in text and \
        f"ends its walk at {damaged - ENTRY_HEADER_SIZE} " in text, text[-3000:]


def past_2gib_before_embedded_damaged_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-embedded-damaged``: the ``-past-2gib-before-embedded`` store
    (:func:`broker_dledger_2gib.past_2gib_before_embedded_scenario`) with :data:`AFTER_T9` after its last T9 message
    (keys ``K9``), the first of them damaged (a body byte flipped)."""
    sc = past_2gib_before_embedded_scenario(line)
    return {**sc, "messages": [*sc["messages"], *AFTER_T9], "damageMessage": len(sc["messages"]),
            "name": f"{line}-dledger-abort-past-2gib-before-embedded-damaged"}


def _units(src, topic: str) -> list[bytes]:  # noqa: ANN001
    """The 20-byte units of the broker's queue ``topic``/0, its files in order."""
    files = sorted((src / "expected" / "consumequeue" / topic / "0").iterdir())
    return [b[i:i + 20] for f in files for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20)]


@NEEDS_2GIB
def test_crash_restart_whose_walk_ends_at_a_damaged_message_and_reput_at_2147483647_goes_on_before_the_walk(
        tmp_path):
    """The walk from the 24th data file ends at the damaged T8 message, past the last T9 one (``K9``); the cut leaves
    T9's queue with its two ``fillPreBlank`` units only, and the reput set at 2147483647 inside the 22nd data file
    parses the T5 message there, fails on the body's bytes after it and goes on at the 23rd data file, before the
    walk's.  The 5.5.1 broker dispatches the T5 message after the walk's records, then walks the 23rd file's records
    (its T9 unit dropped by its queue offset, its T0 units put), then the walk's again (T9's cut unit back, ``K9``
    indexed again), then the damaged message (its check reads no CRC) and the two after it.  ``rebuild
    --as-restart`` reads the walk's records to the damaged message, the T5 message, then the records from the 23rd
    data file to the log's end: the broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's units
    lost."""
    sc = past_2gib_before_embedded_damaged_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and all(int(f.name) == k * PAST_2GIB_FILE for k, f in enumerate(data)), data
    assert int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    msg = embedded_message(BLANK_MAX)
    record, at = t0_record_at_2147483647(src), 88 + EMBED_AT_BODY_DATA
    assert record[at:at + len(msg) + 8] == msg + b"x" * 8, "the message at 2147483647, 'x' bytes after it"
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left fillPreBlank units only
    loaded = w["queuesAfterLoad"]
    assert "T5/0" not in loaded and "T8/0" not in loaded, loaded   # the walk ended before T8's messages
    t9 = _units(src, "T9")
    k9 = int.from_bytes(t9[2][:8], "big")
    damaged = int(w["damagedRecord"])
    assert k9 > int(data[23].name) and damaged == k9 + 201 + ENTRY_HEADER_SIZE, (k9, damaged)
    assert int(w["maxPhyOffset"]) == int(w["dledgerCommittedPos"]) > damaged, w   # DLedger kept the log
    k8b = damaged + 201 + ENTRY_HEADER_SIZE
    k9b = k8b + 202 + ENTRY_HEADER_SIZE
    # what the broker's reput did: T5/0's unit; T9's two fillPreBlank units, the 23rd file's T9 unit dropped, the cut
    # unit back, then K9b's; T8/0's two units, the damaged message's first; the 23rd file's T0 units
    assert _units(src, "T5")[0] == struct.pack(">qiq", BLANK_MAX, len(msg), 0)
    assert t9[:4] == [FILL_PRE_BLANK_UNIT] * 2 + [struct.pack(">qiq", k9, 201, 0), struct.pack(">qiq", k9b, 202, 0)] \
        and not any(b"".join(t9[4:])), t9[:5]
    t8 = _units(src, "T8")
    assert t8[:2] == [struct.pack(">qiq", damaged, 201, 0), struct.pack(">qiq", k8b, 202, 0)] and \
        not any(b"".join(t8[2:])), t8[:3]
    t0 = [int.from_bytes(u[:8], "big") for u in _units(src, "T0")
          if u[8:12] not in (bytes(4), FILL_PRE_BLANK_UNIT[8:12])]
    assert len(t0) == 23590 and min(t0) > int(data[22].name) and max(t0) < int(data[23].name), \
        "T0's units: the 23rd data file's, none of the earlier files'"
    assert int(w["maxPhyOffset"]) == k9b + 202
    # the index: 1, then P0-P9 and K9 by the walk, K9 again, K8, K8b, K9b (E5 below endPhyOffset)
    (index,) = sorted((src / "expected" / "index").iterdir())
    header = struct.unpack(">qqqqii", index.read_bytes()[:40])
    assert header[3] == k9b and header[5] == 16, header
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"parses 1 message(s) ({BLANK_MAX} to {BLANK_MAX + len(msg)})" in text and \
        f"sends it on to {int(data[22].name)} " in text and \
        f"the start's reput from {int(data[22].name)}, before data file {data[23].name}" in text and \
        f"ends its walk at {damaged - ENTRY_HEADER_SIZE} " in text, text[-3000:]
    # the queues the walk wrote drop the earlier files' records: T9's (T0's none there), not T8's, past the walk
    assert "; T9/0 drop every record before the walk's data file" in text, text[-3000:]


# the last T9 message's tail (keys K9): the topic's length byte and name, the properties' length and string; a message
# whose header lies at 2147483647 and whose body runs to just before it reads its topic and keys from it
T9_TAIL = b"\x02T9" + struct.pack(">h", 8) + b"KEYS\x01K9\x02"
# from 2147483647 to the damaged message's entry: the T0 record's rest, the last T9 entry (its 201-byte message)
TO_DAMAGED_ENTRY = TO_T9_ENTRY + ENTRY_HEADER_SIZE + 201


def spanning_header(offset: int, queue_id: int = 1) -> bytes:
    """The 88 header bytes (through the body's length) of a message :data:`TO_DAMAGED_ENTRY` bytes long from
    2147483647 (:func:`broker_dledger_2gib.embedded_message`'s fields, queue ``queue_id``, queue offset 0, its
    PHYSICALOFFSET field ``offset``), whose body runs over the T0 record's rest and the last T9 entry to that T9
    message's tail (:data:`T9_TAIL`): a T9 message with the keys ``K9`` that ends where the damaged message's entry
    starts."""
    body = TO_DAMAGED_ENTRY - 88 - len(T9_TAIL)
    host = bytes([127, 0, 0, 1])
    head = b"".join([struct.pack(">iiIiiqqiq", TO_DAMAGED_ENTRY, MAGIC_V1, 0, queue_id, 0, 0, offset, 0,
                                 1_700_000_000_000),
                     host, struct.pack(">iq", 40000, 1_700_000_000_001), host, struct.pack(">iiqi", 10911, 0, 0, body)])
    assert len(head) == 88
    return head


def past_2gib_embedded_to_damaged_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-embedded-to-damaged``: :func:`broker_dledger_scenarios.past_2gib_abort_scenario`
    whose last T0 body holds at 2147483647 the header of a message (:func:`spanning_header`, its PHYSICALOFFSET field
    the last T9 message's offset) that ends where the entry after the last T9 one starts, the last T9 message with
    the keys ``K9``, then :data:`AFTER_T9`, the first damaged (a body byte flipped)."""
    sc = with_embedded_message(past_2gib_abort_scenario(line), EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                               f"{line}-dledger-abort-past-2gib-embedded-to-damaged",
                               msg=spanning_header(T9_ENTRY + ENTRY_HEADER_SIZE))
    *rest, t9 = sc["messages"]
    assert t9["topic"] == "T9", t9
    messages = [*rest, {**t9, "keys": "K9"}]
    return {**sc, "messages": [*messages, *AFTER_T9], "damageMessage": len(messages)}


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_parses_a_message_that_ends_at_the_damaged_messages_entry(tmp_path):
    """The walk ends at the damaged T8 message's entry; the cut leaves T9's queue with its ``fillPreBlank`` unit only
    (K9's unit cut) and the reput set at 2147483647 parses a T9 message of queue 1 (keys ``K9`` from the last T9
    message's tail) that ends at the damaged message's entry, where the walk ended: the 5.5.1 broker dispatches it
    (T9/1's unit at its PHYSICALOFFSET field, K9 indexed again there), then walks the entries on from that entry,
    the damaged message (its check reads no CRC) and the two after it: T8/0's two units, K9b's unit appended at
    T9/0's write position (where K9's cut unit was: that one stays cut), K8, K8b and K9b indexed after K9.
    ``rebuild --as-restart`` reads the walk's records to the damaged message's entry, the parsed message, then the
    entries from there to the log's end: the broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's
    units lost."""
    sc = past_2gib_embedded_to_damaged_scenario(LINE)
    w, src = written(sc, tmp_path)
    t9_at = T9_ENTRY + ENTRY_HEADER_SIZE
    damaged = int(w["damagedRecord"])
    assert damaged == t9_at + 201 + ENTRY_HEADER_SIZE == BLANK_MAX + TO_DAMAGED_ENTRY + ENTRY_HEADER_SIZE, damaged
    parsed = log_bytes(src, BLANK_MAX, TO_DAMAGED_ENTRY + 8)
    assert parsed[:88] == spanning_header(t9_at) and parsed[-8 - len(T9_TAIL):-8] == T9_TAIL, parsed.hex()
    assert parsed[-8:-4] == log_bytes(src, T9_ENTRY, 4), "the damaged message's entry right after it"
    assert int(w["truncateDirtyLogicFilesAt"]) < BLANK_MAX, w["truncateDirtyLogicFilesAt"]
    loaded = w["queuesAfterLoad"]
    assert "T8/0" not in loaded and "T9/1" not in loaded, loaded
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX, loaded   # the fillPreBlank unit only
    assert int(w["maxPhyOffset"]) == int(w["dledgerCommittedPos"]) > damaged, w   # DLedger kept the log
    k8b = damaged + 201 + ENTRY_HEADER_SIZE
    k9b = k8b + 202 + ENTRY_HEADER_SIZE
    t91 = (src / "expected" / "consumequeue" / "T9" / "1" / f"{0:020d}").read_bytes()
    assert t91[:20] == struct.pack(">qiq", t9_at, TO_DAMAGED_ENTRY, 0) and not any(t91[20:]), t91[:40]
    t8 = first_queue_file(src, "T8/0")
    assert t8[:40] == struct.pack(">qiqqiq", damaged, 201, 0, k8b, 202, 0) and not any(t8[40:]), t8[:60]
    t9 = first_queue_file(src, "T9/0")
    assert t9[:40] == FILL_PRE_BLANK_UNIT + struct.pack(">qiq", k9b, 202, 0) and not any(t9[40:]), t9[:60]
    # the index: K9 (the walk), K9 (the parsed message, at its field), K8, K8b, K9b: four keys, five entries
    (index,) = sorted((src / "expected" / "index").iterdir())
    header = struct.unpack(">qqqqii", index.read_bytes()[:40])
    assert header[2:] == (t9_at, k9b, 4, 6), header
    text = as_restart_matches_broker(src, tmp_path, sc, w, parsed=1)
    walk_end = damaged - ENTRY_HEADER_SIZE
    assert f"parses 1 message(s) ({BLANK_MAX} to {walk_end})" in text and f"ends its walk at {walk_end} " in text, \
        text[-3000:]


LONG_TOPIC = "LongTopic-" + "x" * 190   # a V2 record (2-byte topic length): a data file it starts is never a walk's
# the 22nd data file after its last T9 entry and the damaged T8 one: T0 entries (4237 bytes) up to 2065 bytes before
# its end, then one of 1965 bytes (a 1824-byte body), leaving 100 bytes, where no entry fits
PAST_DAMAGED_T0 = 12394
PAST_DAMAGED_FILLER = 2065 - 141 - 100
JUMP_TO = 22 * PAST_2GIB_FILE   # the 23rd data file's start


def past_2gib_embedded_past_damaged_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-embedded-past-damaged``:
    :func:`broker_dledger_scenarios.past_2gib_abort_scenario` whose last T0 body holds at 2147483647 a well-formed T5
    message (keys ``E5``, its PHYSICALOFFSET field the 23rd data file's start), then 'x' bytes; its last T9 message
    with the keys ``K9``, then a T8 message (``K8``) whose body byte is flipped, T0 messages that fill the 22nd data
    file, and a 23rd data file of a message of a topic longer than 127 bytes (a V2 record: the walk never starts at
    that file), a T8 message (``K8b``) and a T9 one (``K9b``)."""
    sc = with_embedded_message(past_2gib_abort_scenario(line), EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                               f"{line}-dledger-abort-past-2gib-embedded-past-damaged", msg=embedded_message(JUMP_TO))
    *rest, t9 = sc["messages"]
    assert t9["topic"] == "T9", t9
    messages = [*rest, {**t9, "keys": "K9"}]
    damaged = len(messages)
    messages.append(AFTER_T9[0])
    for k in range(0, PAST_DAMAGED_T0, PAST_2GIB_BATCH):
        messages.append({"topic": "T0", "queueId": 0,
                         "batch": [{"bodySize": 4096}] * min(PAST_2GIB_BATCH, PAST_DAMAGED_T0 - k)})
    messages.append({"topic": "T0", "queueId": 0, "bodySize": PAST_DAMAGED_FILLER})
    messages += [{"topic": LONG_TOPIC, "queueId": 0, "bodySize": 100}, *AFTER_T9[1:]]
    return {**sc, "messages": messages, "damageMessage": damaged}


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_parses_a_message_then_jumps_past_the_damaged_message(tmp_path):
    """The walk from the 22nd data file (the 23rd starts with a V2 record) ends at the damaged T8 message, right after
    the last T9 entry; the cut leaves T9's queue with its ``fillPreBlank`` unit only, and the reput set at 2147483647
    parses the T5 message there, fails on the 'x' bytes after it and jumps to the end of the bytes ``getData`` gave,
    the 22nd file's end: the 23rd data file's start, past the damaged message.  The 5.5.1 broker dispatches the T5
    message (its keys E5 at its PHYSICALOFFSET field), never the damaged message nor the T0 records after it, then the
    23rd file's records: K8b's unit in T8/0 after a ``fillPreBlank`` unit, K9b's at T9/0's write position (over K9's
    cut unit, which stays cut), K8b and K9b indexed after E5.  ``rebuild --as-restart`` reads the walk's records to
    the damaged message, the T5 message, then the 23rd data file: the broker's ``consumequeue/`` and ``index/`` byte
    for byte, and verify's units lost."""
    sc = past_2gib_embedded_past_damaged_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 23 and all(int(f.name) == k * PAST_2GIB_FILE for k, f in enumerate(data)), data
    msg = embedded_message(JUMP_TO)
    record, at = t0_record_at_2147483647(src), 88 + EMBED_AT_BODY_DATA
    assert record[at:at + len(msg) + 8] == msg + b"x" * 8, "the message at 2147483647, 'x' bytes after it"
    t9_at = T9_ENTRY + ENTRY_HEADER_SIZE
    damaged = int(w["damagedRecord"])
    assert damaged == t9_at + 201 + ENTRY_HEADER_SIZE, damaged
    assert log_bytes(src, JUMP_TO - 100, 4) == b"\xff" * 4, "the 22nd data file ends in a DLedger blank"
    assert int(w["truncateDirtyLogicFilesAt"]) < BLANK_MAX, w["truncateDirtyLogicFilesAt"]
    loaded = w["queuesAfterLoad"]
    assert "T8/0" not in loaded and "T5/0" not in loaded, loaded
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX, loaded   # the fillPreBlank unit only
    assert int(w["maxPhyOffset"]) == int(w["dledgerCommittedPos"]) > JUMP_TO, w   # DLedger kept the log
    assert first_queue_file(src, "T5/0")[:20] == struct.pack(">qiq", JUMP_TO, len(msg), 0)
    t8 = first_queue_file(src, "T8/0")
    k8b = int.from_bytes(t8[20:28], "big")
    k9b = k8b + 202 + ENTRY_HEADER_SIZE
    assert JUMP_TO < k8b and t8[:40] == FILL_PRE_BLANK_UNIT + struct.pack(">qiq", k8b, 202, 0) and \
        not any(t8[40:]), t8[:60]
    t9 = first_queue_file(src, "T9/0")
    assert t9[:40] == FILL_PRE_BLANK_UNIT + struct.pack(">qiq", k9b, 202, 0) and not any(t9[40:]), t9[:60]
    assert int(w["maxPhyOffset"]) == k9b + 202
    # the index: K9 (the walk), E5 (at the 23rd data file's start), K8b, K9b: four entries, K8 never
    (index,) = sorted((src / "expected" / "index").iterdir())
    header = struct.unpack(">qqqqii", index.read_bytes()[:40])
    assert header[2:] == (t9_at, k9b, 4, 5), header
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"every entry from data file {data[21].name} " in text and \
        f"parses 1 message(s) ({BLANK_MAX} to {BLANK_MAX + len(msg)})" in text and \
        f"sends it on to {JUMP_TO} " in text and f"ends its walk at {damaged - ENTRY_HEADER_SIZE} " in text, \
        text[-3000:]
