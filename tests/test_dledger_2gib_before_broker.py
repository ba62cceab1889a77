"""A 5.5.1 DLedger crash restart of a store that is not converted, whose start's reput is set at 2147483647 inside
an entry of a data file before the one the recovery's walk started at, checked against the broker (``DLEDGER_2GIB=1``
only: some 2.3 GB of data files of 100,000,000 bytes, its ``before/`` copy as much; under a minute here).

``-past-2gib-before`` (:func:`past_2gib_before_abort_scenario`): the walk starts at the 24th data file and queues
one T9 message past its short ``processOffset``; the cut leaves T9's queue with ``fillPreBlank`` units only (its max
2147483647), ``doRecheckReputOffsetFromCq`` sets the reput there, inside a T0 body of the 22nd data file,
``DLedgerCommitLog``'s check fails and ``doReput`` jumps to the end of what ``getData`` gave, that file's end: the reput
goes on at the 23rd data file, before the walk's, and walks its records, then the walk's again (the
reput-before-the-walk rule after a cut, :func:`store_format.dledger_crash_reput_before.reput_before_walk`; T9 drops the
23rd file's record by its queue offset, :func:`store_format.dledger_crash_old.dropped_before`).

``-past-2gib-at-walk`` (:func:`past_2gib_at_walk_abort_scenario`): the same jump lands exactly at the walk's data
file (the 23rd), from which the reput walks the walk's records again.

``-past-2gib-committed-inside`` (:func:`past_2gib_committed_inside_abort_scenario`): ``-past-2gib-before`` with
DLedger's checkpoint behind, its committed position inside the 22nd data file past 2147483647: ``getData``'s bytes end
there, so the jump lands there, the reput waits for the group's commits after ``commitLog.start`` and then walks from
there: the rest of the 22nd file's records first, then the 23rd's, then the walk's again.

``-past-2gib-before-embedded`` (:func:`past_2gib_before_embedded_scenario`): ``-past-2gib-before`` with a well-formed
T5 message at 2147483647, inside the T0 body there: the broker's reput dispatches it (after the walk and the cut), its
next check fails on the body's bytes after it, and it goes on at the 23rd data file as without it.
``-past-2gib-before-embedded-t0`` (:func:`past_2gib_before_embedded_t0_scenario`): with a T0 message of queue offset
0 after the T5 one, whose unit T0's queue takes first, the 23rd data file's T0 units appended after it (the order
the broker dispatches them in: the rebuild reads the parsed messages between the walk's records and the reput's
pass, ``store.then_pieces``' ``after``).

``rebuild --as-restart`` on the store as the restart found it must write the broker's ``consumequeue/`` and ``index/``
byte for byte, and ``verify``'s units lost must be those the broker's queues do not hold.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    EMBED_T0_DATA,
    LINE,
    NEEDS_2GIB,
    PAST_2GIB_FILLER,
    PAST_2GIB_FULL,
    as_restart,
    as_restart_matches_broker,
    embedded_message,
    held_units,
    past_2gib_before_abort_scenario,
    past_2gib_before_embedded_scenario,
    queued_messages,
    record_queue,
    same_files_as_the_broker,
    t0_record_at_2147483647,
    verify_restart,
    with_embedded_message,
    written,
)
from broker_dledger_scenarios import PAST_2GIB_FILE

from store_format.dledger import ENTRY_HEADER_SIZE
from store_format.layout import OFF_PHYSICAL_OFFSET

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()


def past_2gib_at_walk_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-at-walk`` (5.5.1, ``DLEDGER_2GIB=1``): the first 22 data files of
    :func:`past_2gib_before_abort_scenario`, then a 23rd (from 2,200,000,000) of ten small prepared T1 messages and
    a T9 message (keys ``K9``, queue offset 1).  The walk starts at the 23rd, the cut leaves T9's queue with its
    ``fillPreBlank`` unit only, the reput set at 2147483647 inside the 22nd data file jumps to its end: exactly the
    walk's data file's start, from which it walks the walk's records again (T9's cut unit put back, its keys
    indexed again)."""
    sc = past_2gib_before_abort_scenario(line)
    k = next(n for n, m in enumerate(sc["messages"]) if n > 0 and m.get("topic") == "T9")   # the 23rd file's first
    small = [m for m in sc["messages"][k:] if m.get("tranType") == "prepared" and m["bodySize"] == 100]
    messages = [*sc["messages"][:k], *small, sc["messages"][-1]]
    return {**sc, "messages": messages, "name": f"{line}-dledger-abort-past-2gib-at-walk"}


COMMITTED_BEFORE_FILLER = 1000   # -committed-inside: the T0 entries after the committed one in the 22nd data file


def past_2gib_committed_inside_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-committed-inside`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`past_2gib_before_abort_scenario` with DLedger's checkpoint lowered (``dledgerCommittedBack``: a crash
    before the group committed them) to the T0 entry that ends ``COMMITTED_BEFORE_FILLER`` entries before the 22nd
    data file's last (the short T0 message), past 2147483647.  The reput set at 2147483647 jumps to the end of what
    ``getData`` gave, the committed position; once DLedger commits the rest after ``commitLog.start`` it puts the
    22nd file's remaining T0 units (1000, the short one last; ``fillPreBlank`` units before them), then goes on as in
    ``-past-2gib-before`` (the 23rd file's T9 unit dropped, its T0 units put, T9's cut unit back)."""
    sc = past_2gib_before_abort_scenario(line)
    entries = [m for msg in sc["messages"] if "topic" in msg for m in msg.get("batch", [msg])]
    filler = next(n for n, m in enumerate(entries) if m.get("bodySize") == PAST_2GIB_FILLER)
    return {**sc, "dledgerCommittedBack": len(entries) - 1 - filler + COMMITTED_BEFORE_FILLER,
            "name": f"{line}-dledger-abort-past-2gib-committed-inside"}


FILL_PRE_BLANK = bytes(8) + BLANK_MAX.to_bytes(4, "big") + bytes(8)


def _data_files(src):  # noqa: ANN001, ANN202
    """The store's data files, checked to hold 2147483647 inside a T0 body (a run of 'x') of the 22nd."""
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert all(int(f.name) == k * PAST_2GIB_FILE for k, f in enumerate(data)), data
    assert int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    with data[21].open("rb") as f:
        f.seek(BLANK_MAX - int(data[21].name) - 60)
        assert f.read(120) == b"x" * 120, "2147483647 inside a T0 body"
    return data


def _first_entry(data_file) -> tuple[str, int, int]:  # noqa: ANN001
    """The topic, queue id and commitlog offset of the message in the first entry of ``data_file``."""
    with data_file.open("rb") as f:
        head = f.read(8192)
    record = head[ENTRY_HEADER_SIZE:]
    return (*record_queue(lambda at, n: record[at:at + n], 0),
            int.from_bytes(record[OFF_PHYSICAL_OFFSET:OFF_PHYSICAL_OFFSET + 8], "big"))


def _units(src, topic: str) -> list[bytes]:  # noqa: ANN001
    """The 20-byte units of the broker's queue ``topic``/0, its files in order."""
    files = sorted((src / "expected" / "consumequeue" / topic / "0").iterdir())
    return [b[i:i + 20] for f in files for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20)]


def _index_count(src) -> int:  # noqa: ANN001
    (index,) = sorted((src / "expected" / "index").iterdir())
    return int.from_bytes(index.read_bytes()[36:40], "big")


def test_crash_restart_whose_reput_at_2147483647_goes_on_at_a_data_file_before_the_walks(tmp_path):
    """The reput set at 2147483647 inside the 22nd data file goes on at the 23rd, before the walk's (the 24th): the
    5.5.1 broker drops the 23rd file's T9 unit, puts its T0 units (after ``fillPreBlank`` units), then puts T9's cut
    unit back and indexes its keys again; ``rebuild --as-restart`` writes its ``consumequeue/`` and ``index/`` byte
    for byte and ``verify``'s units lost are every queued message's but those (the first 22 files' T0 units and
    T9's first two lost)."""
    sc = past_2gib_before_abort_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = _data_files(src)
    assert len(data) == 24, data
    # the 23rd data file starts with the second T9 message, the 24th (the walk's) with a prepared T1 one
    assert _first_entry(data[22]) == ("T9", 0, int(data[22].name) + ENTRY_HEADER_SIZE), _first_entry(data[22])
    assert _first_entry(data[23])[:2] == ("T1", 0), _first_entry(data[23])
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left fillPreBlank units only
    # what the broker's reput did: T9's two fillPreBlank units, the 23rd file's T9 unit dropped, the cut unit back
    t9 = _units(src, "T9")
    assert t9[:2] == [FILL_PRE_BLANK] * 2, t9[:3]
    assert int.from_bytes(t9[2][:8], "big") > int(data[23].name) and not any(b"".join(t9[3:])), \
        "T9's cut unit put back, the 23rd data file's T9 unit dropped"
    t0 = [int.from_bytes(u[:8], "big") for u in _units(src, "T0") if u[8:12] not in (bytes(4), FILL_PRE_BLANK[8:12])]
    assert len(t0) == 23590 and min(t0) > int(data[22].name) and max(t0) < int(data[23].name), \
        "T0's units: the 23rd data file's, none of the earlier files'"
    assert _index_count(src) == 13, "the header's indexCount: 1, then P0-P9 and K9 by the walk, K9 again"
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"every entry from data file {data[23].name} " in text, text[-3000:]
    assert f"sends it on to {int(data[22].name)} " in text and \
        f"the start's reput from {int(data[22].name)}, before data file {data[23].name}" in text and \
        "T9/0 drop every record before the walk's data file" in text, text[-3000:]
    assert held_units(src) == len(t0) + 1


def test_crash_restart_whose_reput_at_2147483647_goes_on_at_the_walks_data_file(tmp_path):
    """The reput set at 2147483647 inside the 22nd data file goes on at the 23rd, the walk's: the 5.5.1 broker walks
    the walk's records again from its start (T9's cut unit put back, its keys indexed again) and nothing before;
    ``rebuild --as-restart`` byte for byte and ``verify``'s units lost (all but T9's last)."""
    sc = past_2gib_at_walk_abort_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = _data_files(src)
    assert len(data) == 23, data
    assert _first_entry(data[22])[:2] == ("T1", 0), _first_entry(data[22])   # the walk's: a prepared T1 message
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left the fillPreBlank unit
    t9 = _units(src, "T9")
    assert t9[0] == FILL_PRE_BLANK and int.from_bytes(t9[1][:8], "big") > int(data[22].name), t9[:2]
    assert not (src / "expected" / "consumequeue" / "T0").exists(), "no T0 unit: nothing before the walk's file"
    assert _index_count(src) == 13, "the header's indexCount: 1, then P0-P9 and K9 by the walk, K9 again"
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"every entry from data file {data[22].name} " in text and \
        f"sends it on to {int(data[22].name)} " in text and "before data file" not in text, text[-3000:]
    assert held_units(src) == 1


def _committed_entry(src, data_file) -> tuple[int, int]:  # noqa: ANN001
    """DLedger's committed entry in ``src/before`` (the checkpoint's ``committedIndex``) and its end, read from its
    ``index/`` unit (magic code, pos, size, index, term) and checked against its header in ``data_file``."""
    index = int(bh.read_conf(src / "before" / "dledger-n0" / "checkpoint")["committedIndex"])
    first = sorted((src / "before" / "dledger-n0" / "index").iterdir())[0]
    with first.open("rb") as f:
        f.seek(index * 32)
        unit = f.read(32)
    pos, size = int.from_bytes(unit[4:12], "big"), int.from_bytes(unit[12:16], "big")
    assert int.from_bytes(unit[16:24], "big") == index, (index, unit.hex())
    with data_file.open("rb") as f:
        f.seek(pos - int(data_file.name))
        head = f.read(ENTRY_HEADER_SIZE)
    assert int.from_bytes(head[4:8], "big") == size and int.from_bytes(head[8:16], "big") == index and \
        int.from_bytes(head[24:32], "big") == pos, (index, pos, head.hex())
    return index, pos + size


def test_crash_restart_whose_reput_at_2147483647_goes_on_at_the_committed_position(tmp_path):
    """DLedger's committed position inside the 22nd data file past 2147483647: the reput set there jumps to it, and
    once the group commits the rest the 5.5.1 broker puts the 22nd file's T0 units past it (after ``fillPreBlank``
    units), drops the 23rd file's T9 unit, puts its T0 units, then puts T9's cut unit back; ``rebuild --as-restart``
    writes its ``consumequeue/`` and ``index/`` byte for byte and ``verify``'s units lost are every queued message's
    but those."""
    sc = past_2gib_committed_inside_abort_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = _data_files(src)
    assert len(data) == 24, data
    assert _first_entry(data[22]) == ("T9", 0, int(data[22].name) + ENTRY_HEADER_SIZE), _first_entry(data[22])
    # the committed entry: a T0 one of the 22nd data file, ending past 2147483647, 1000 entries before its last
    index, committed = _committed_entry(src, data[21])
    assert BLANK_MAX < committed < int(data[22].name), committed
    assert index == 1 + PAST_2GIB_FULL - COMMITTED_BEFORE_FILLER, index   # after the first T9 message, T0's ones
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX
    t9 = _units(src, "T9")
    assert t9[:2] == [FILL_PRE_BLANK] * 2, t9[:3]
    assert int.from_bytes(t9[2][:8], "big") > int(data[23].name) and not any(b"".join(t9[3:])), \
        "T9's cut unit put back, the 23rd data file's T9 unit dropped"
    t0 = [int.from_bytes(u[:8], "big") for u in _units(src, "T0") if u[8:12] not in (bytes(4), FILL_PRE_BLANK[8:12])]
    assert min(t0) == committed + ENTRY_HEADER_SIZE, (min(t0), committed)
    assert len(t0) == COMMITTED_BEFORE_FILLER + 23590 and max(t0) < int(data[23].name), \
        "T0's units: the 22nd data file's past the committed position and the 23rd's"
    assert _index_count(src) == 13, "the header's indexCount: 1, then P0-P9 and K9 by the walk, K9 again"
    text = as_restart(src, tmp_path / "ours")
    same_files_as_the_broker(src, tmp_path / "ours")
    # verify's units lost: the committed records' units (its reference, a rebuild, ends at the committed position)
    # that the broker's queues lack: every queued message up to the committed entry (no unit below it held)
    entries = [m for msg in sc["messages"] if "topic" in msg for m in msg.get("batch", [msg])]
    committed_queued = sum(m.get("tranType") != "prepared" for m in entries[:index + 1])
    held_below = sum(size not in (0, BLANK_MAX) and offset < committed
                     for topic in ("T0", "T9") for u in _units(src, topic)
                     for offset, size in ((int.from_bytes(u[:8], "big"), int.from_bytes(u[8:12], "big")),))
    assert held_below == 0 and committed_queued == index + 1, (held_below, committed_queued)
    p = verify_restart(src, tmp_path)
    assert p is not None and p["units_lost"] == committed_queued - held_below, (p and p["units_lost"], p and p["notes"])
    assert f"sends it on to {committed} " in text and \
        f"the start's reput from {committed}, before data file {data[23].name}" in text and \
        "T9/0 drop every record before the walk's data file" in text, text[-3000:]
    assert held_units(src) == len(t0) + 1


def test_crash_restart_whose_reput_at_2147483647_parses_a_message_then_goes_on_before_the_walks_data_file(tmp_path):
    """The reput set at 2147483647 inside the 22nd data file, where a T0 body holds a well-formed T5 message: after
    the walk (the 24th data file) and the cut, the 5.5.1 broker dispatches that message (T5/0's one unit; its keys
    below the index's ``endPhyOffset``), its next check fails on the body's 'x' bytes after it and it goes on at the
    23rd data file as in ``-past-2gib-before``.  ``rebuild --as-restart`` reads the message between the walk's
    records and the reput's pass (``store.then_pieces``' ``after``): the broker's ``consumequeue/`` and ``index/``
    byte for byte, and ``verify``'s units lost (T5's unit no message of the log's)."""
    sc = past_2gib_before_embedded_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and all(int(f.name) == k * PAST_2GIB_FILE for k, f in enumerate(data)), data
    assert int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    msg = embedded_message(BLANK_MAX)
    record, at = t0_record_at_2147483647(src), 88 + EMBED_AT_BODY_DATA
    assert record[at - 60:at] == b"x" * 60 and record[at:at + len(msg) + 8] == msg + b"x" * 8, \
        "the message at 2147483647"
    assert _first_entry(data[22]) == ("T9", 0, int(data[22].name) + ENTRY_HEADER_SIZE), _first_entry(data[22])
    assert _first_entry(data[23])[:2] == ("T1", 0), _first_entry(data[23])
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left fillPreBlank units only
    assert "T5/0" not in w["queuesAfterLoad"], w["queuesAfterLoad"]
    # what the broker's reput did: T5/0's one unit, the embedded message (its offset, size, no tags code) ...
    t5 = _units(src, "T5")
    assert t5[0] == struct.pack(">qiq", BLANK_MAX, len(msg), 0) and not any(b"".join(t5[1:])), t5[:2]
    # ... then, from the 23rd data file, the rest as without it
    t9 = _units(src, "T9")
    assert t9[:2] == [FILL_PRE_BLANK] * 2, t9[:3]
    assert int.from_bytes(t9[2][:8], "big") > int(data[23].name) and not any(b"".join(t9[3:])), \
        "T9's cut unit put back, the 23rd data file's T9 unit dropped"
    t0 = [int.from_bytes(u[:8], "big") for u in _units(src, "T0") if u[8:12] not in (bytes(4), FILL_PRE_BLANK[8:12])]
    assert len(t0) == 23590 and min(t0) > int(data[22].name) and max(t0) < int(data[23].name), \
        "T0's units: the 23rd data file's, none of the earlier files'"
    assert _index_count(src) == 13, "E5 not indexed (below endPhyOffset): 1, then P0-P9 and K9 by the walk, K9 again"
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"parses 1 message(s) ({BLANK_MAX} to {BLANK_MAX + len(msg)})" in text and \
        f"sends it on to {int(data[22].name)} " in text and \
        f"the start's reput from {int(data[22].name)}, before data file {data[23].name}" in text, text[-3000:]
    assert held_units(src, leave_out="T5") == len(t0) + 1


def past_2gib_before_embedded_t0_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-embedded-t0`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`past_2gib_before_embedded_scenario` whose T5 message is followed by a T0 one of queue offset 0 (keys
    ``E0``, its PHYSICALOFFSET field where it starts), then the body's 'x' bytes."""
    t5 = embedded_message(BLANK_MAX)
    t0 = embedded_message(BLANK_MAX + len(t5), props=b"KEYS\x01E0\x02")
    assert t0.count(b"\x02T5") == 1   # the topic's length byte and name
    return with_embedded_message(past_2gib_before_abort_scenario(line), EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                                 f"{line}-dledger-abort-past-2gib-before-embedded-t0",
                                 msg=t5 + t0.replace(b"\x02T5", b"\x02T0"))


def test_crash_restart_whose_reput_at_2147483647_parses_a_t0_message_before_the_earlier_files_t0_records(tmp_path):
    """As the test above with a T0 message of queue offset 0 after the T5 one: the 5.5.1 broker puts its unit first,
    in a new file of T0's queue at 0 (T0's queue had no file), then appends the 23rd data file's 23590 T0 units
    after it, at the write position whatever their queue offsets (506829 on), instead of in a file where those fall
    after ``fillPreBlank`` units as without it: reading the parsed messages anywhere but between the walk's records
    and the reput's pass fails on T0's queue.  ``rebuild --as-restart`` byte for byte; ``verify``'s units lost (its
    reference holds a unit for every message of the log, T5's and T0's embedded ones none)."""
    sc = past_2gib_before_embedded_t0_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    t5 = embedded_message(BLANK_MAX)
    at = BLANK_MAX + len(t5)
    with data[21].open("rb") as f:
        f.seek(at - int(data[21].name))
        t0_msg = f.read(len(t5) + 8)
    assert t0_msg[:-8] == embedded_message(at, props=b"KEYS\x01E0\x02").replace(b"\x02T5", b"\x02T0") and \
        t0_msg[-8:] == b"x" * 8, "the T0 message after the T5 one"
    assert "T0/0" not in w["queuesAfterLoad"], w["queuesAfterLoad"]   # the walk wrote no T0 unit
    assert _units(src, "T5")[0] == struct.pack(">qiq", BLANK_MAX, len(t5), 0)
    # T0's queue: one file, the embedded message's unit first, then the 23rd data file's
    assert sorted(p.name for p in (src / "expected" / "consumequeue" / "T0" / "0").iterdir()) == [f"{0:020d}"]
    t0 = _units(src, "T0")
    assert t0[0] == struct.pack(">qiq", at, len(t5), 0), t0[:2]
    real = [int.from_bytes(u[:8], "big") for u in t0[1:] if any(u)]
    assert len(real) == 23590 and real == sorted(real) and min(real) > int(data[22].name) and \
        max(real) < int(data[23].name) and not any(b"".join(t0[1 + len(real):])), "the 23rd file's T0 units after it"
    t9 = _units(src, "T9")
    assert t9[:2] == [FILL_PRE_BLANK] * 2 and int.from_bytes(t9[2][:8], "big") > int(data[23].name), t9[:3]
    assert _index_count(src) == 13, "E5 and E0 not indexed (below endPhyOffset)"
    text = as_restart(src, tmp_path / "ours")
    same_files_as_the_broker(src, tmp_path / "ours")
    assert f"parses 2 message(s) ({BLANK_MAX} to {at}, {at} to {at + len(t5)})" in text, text[-3000:]
    # verify's units lost: every queued message's unit but those the broker's queues hold, T5's and T0's embedded
    # ones no message's of the log
    held = held_units(src, ends=w["queuesAfterDispatch"], leave_out="T5") - 1
    p = verify_restart(src, tmp_path)
    assert held == 23590 + 1 and p is not None and p["units_lost"] == queued_messages(sc) - held, \
        (held, p and p["notes"])
