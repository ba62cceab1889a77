"""``verify`` of a 5.5.1 DLedger crash store past 2 GiB whose recovery walk dispatches nothing and whose start's
reput, set at 2147483647 by the cut inside an entry of a data file that is not the last, goes on at that file's end,
the next data file's start, before DLedger's committed position; checked against the broker (``DLEDGER_2GIB=1``
only: some 2.2 GB of data files each, as much again in ``before/``; minutes each).

The stores (:mod:`broker_dledger_walked_nothing_next_file`): ``-next-file``, the check at 2147483647 fails on a T0
body's 'x' bytes and ``doReput`` jumps to the end of the bytes ``getData`` hands, the 22nd data file's end
(``reputFromOffset += result.getSize() - readSize``); ``-next-file-embedded``, a T5 message parsed there first (a
new queue); ``-next-file-embedded-t0``, a T0 message (a queue the store holds files of: its unit appended at the
write position the cut left, the 23rd file's T0 units after it); ``-next-file-roll``, DLedger's blank magic there
(``DLedgerCommitLog.checkMessageAndReturnSize``: size 0, success) and ``doReput`` rolls
(``DLedgerCommitLog.rollNextFile``) to the same place; ``-next-file-committed``, the jump with DLedger's committed
position one entry behind the log's end. ``-next-file-ext`` and ``-next-file-embedded-t0-ext``: the jump and the T0
message with ext files (``enableConsumeQueueExt=true``): each unit appended holds the address of the ext unit
``putMessagePositionInfoWrapper`` put for it after the ext end ``recover`` left. From the 23rd data file's start the
reput walks the entries: T9's units of queue offsets 1 and 2 appended after its ``fillPreBlank`` unit, T0's units of
that file at T0's write position as the cut left it (their queue offsets past it: ``putMessagePositionInfo`` appends
them all the same), the 22nd file's units (T0's, and T9's queue offset 0 the planted file replaced) lost.

What the broker wrote is asserted first (its data files, the bytes at 2147483647, the queues after ``load()`` and
after the reput, the units appended and the index keys); then ``verify`` on the store as the restart found it
predicts that restart (units lost and put again, index keys, ext units appended and orphaned, the plan's jump).
``rebuild --as-restart`` does not apply: it rebuilds the queues from no file, so no cut sets the reput at
2147483647.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    NEEDS_2GIB,
    embedded_message,
    held_units,
    log_bytes,
    queued_messages,
    retargeted,
    t0_record_at_2147483647,
    written,
)
from broker_dledger_walked_nothing_next_file import (
    CHECKPOINT_AT,
    EMBEDDED_T0_QUEUE_OFFSET,
    LAST_T9,
    LAST_T9_RECORD,
    NEXT_FILE,
    NEXT_T0,
    NEXT_T9,
    T0_ENTRY,
    T9_RECORD,
    T9_SIZE,
    next_file_committed_scenario,
    next_file_embedded_scenario,
    next_file_embedded_t0_ext_scenario,
    next_file_embedded_t0_scenario,
    next_file_ext_scenario,
    next_file_roll_scenario,
    next_file_scenario,
)
from test_dledger_walked_nothing_2gib_broker import _verify

from store_format.dledger import ENTRY_BLANK_MAGIC, ENTRY_HEADER_SIZE, ENTRY_MAGIC, OFF_ENTRY_POS

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

CUT = NEXT_FILE - 100_000_000   # processOffset: the 22nd data file's start, where the walk starts
T0_RECORD = T0_ENTRY - ENTRY_HEADER_SIZE
CUT_T0 = 23601 + 1    # the 22nd data file's T0 entries: 23601 and the last, shorter one
SCENARIOS = {"jump": next_file_scenario, "embedded": next_file_embedded_scenario, "roll": next_file_roll_scenario,
             "committed": next_file_committed_scenario, "embedded-t0": next_file_embedded_t0_scenario,
             "ext": next_file_ext_scenario, "embedded-t0-ext": next_file_embedded_t0_ext_scenario}


def _message(kind: str) -> bytes:
    """The message planted at 2147483647 in the ``kind`` store (b"": none)."""
    return {"embedded": embedded_message(BLANK_MAX),
            "embedded-t0": retargeted(BLANK_MAX, b"T0", EMBEDDED_T0_QUEUE_OFFSET)}.get(kind.removesuffix("-ext"), b"")


def _entry(src, at: int) -> bytes:  # noqa: ANN001
    """The DLedger entry header at ``at``, checked to be one that starts there."""
    head = log_bytes(src, at, ENTRY_HEADER_SIZE)
    assert int.from_bytes(head[:4], "big", signed=True) == ENTRY_MAGIC, (at, head.hex())
    assert int.from_bytes(head[OFF_ENTRY_POS:OFF_ENTRY_POS + 8], "big") == at, (at, head.hex())
    return head


def _index_keys_below(src, end: int) -> list[int]:  # noqa: ANN001
    """The PHYSICALOFFSET of each key the broker's index files (``expected/index``) hold below ``end``."""
    out = []
    for f in sorted((src / "expected" / "index").iterdir()):
        b = f.read_bytes()
        n = struct.unpack(">i", b[36:40])[0]
        base = 40 + 4 * int(bh.read_conf(src / "broker.conf").get("maxHashSlotNum", "5000000"))
        out += [o for i in range(1, n) for o in struct.unpack(">q", b[base + 20 * i + 4:base + 20 * i + 12])
                if o < end]
    return out


def _ext_orphans(src, queue: str, after: dict) -> int:  # noqa: ANN001
    """The broker's ext units of ``queue`` (``consumequeue_ext/``, 20 bytes each: no filter bitmap) below its ext
    end (``after``: the writer's ``queuesAfterDispatch`` row) that no unit of its consume queue below its write
    position points at."""
    end, write = int(after["extMaxOffset"]), int(after["maxOffset"])
    assert end % 20 == 0, end
    units = b"".join(f.read_bytes() for f in sorted((src / "expected" / "consumequeue" / queue).iterdir()))[:write]
    pointed = {t + 2**63 for i in range(0, write, 20) for (t,) in [struct.unpack(">q", units[i + 12:i + 20])]
               if t < -2**62}
    assert all(a < end for a in pointed), (queue, end)
    return end // 20 - len(pointed)


def _as_the_broker(kind: str, tmp_path):  # noqa: ANN001, ANN202
    """The broker writes the ``kind`` store and restarts it; asserts what it wrote, so that the store is the case:
    23 data files, the 22nd ending with DLedger's blank and the 23rd starting with the T9 entry of queue offset 1;
    the checkpoint's ``logicsPhysicalOffset`` inside the 22nd (the walk starts there) and the cut at its start;
    the bytes at 2147483647; after ``load()`` T9 with its ``fillPreBlank`` unit only (max 2147483647, the largest)
    and T0 with its units of the earlier files; after the reput T9's units of queue offsets 1 and 2 at 20 and 40
    and T0's units of the 23rd data file appended at its write position.  Returns the scenario, the writer's report
    and the scenario's folder."""
    sc = SCENARIOS[kind]()
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert [int(f.name) for f in data[-2:]] == [CUT, NEXT_FILE] and len(data) == 23, [f.name for f in data[-3:]]
    assert cut == CUT < BLANK_MAX < NEXT_FILE < LAST_T9 < end and int(w["checkpointLogicsPhysicalOffset"]) == (
        CHECKPOINT_AT), (cut, end, w["checkpointLogicsPhysicalOffset"])
    blank = log_bytes(src, NEXT_FILE - 100, 8)   # the 22nd file's last 100 bytes: DLedger's blank (preAppend)
    assert struct.unpack(">ii", blank) == (ENTRY_BLANK_MAGIC, 100), blank.hex()
    _entry(src, NEXT_FILE)
    last = _entry(src, LAST_T9 - ENTRY_HEADER_SIZE)   # the log's last entry: DLedger's committed index below it?
    committed_index = int(bh.read_conf(src / "before" / "dledger-n0" / "checkpoint")["committedIndex"])
    assert committed_index == int.from_bytes(last[8:16], "big") - (kind == "committed"), committed_index
    record = t0_record_at_2147483647(src)
    at = record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + 56]
    msg = _message(kind)
    expect = msg[:56] if msg else struct.pack(">i", ENTRY_BLANK_MAGIC) + b"x" * 52 if kind == "roll" else b"x" * 56
    assert at == expect, ("the bytes at 2147483647", at)
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert set(loaded) == {"T0/0", "T9/0"}, loaded
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX and int(loaded["T9/0"]["maxOffset"]) == 20, loaded
    assert int(loaded["T0/0"]["maxPhysicOffset"]) < cut, loaded["T0/0"]
    t9 = (src / "expected" / "consumequeue" / "T9" / "0" / f"{0:020d}").read_bytes()
    assert [struct.unpack(">qi", t9[i:i + 12]) for i in (20, 40)] == [(NEXT_T9, T9_RECORD), (LAST_T9, LAST_T9_RECORD)]
    assert int(after["T9/0"]["maxOffset"]) == 60 and int(after["T9/0"]["maxPhysicOffset"]) == LAST_T9 + LAST_T9_RECORD
    wp = int(loaded["T0/0"]["maxOffset"])   # T0's write position after the cut: the 23rd file's units there
    size = int(sc["config"]["mappedFileSizeConsumeQueue"])
    t0 = (src / "expected" / "consumequeue" / "T0" / "0" / f"{wp - wp % size:020d}").read_bytes()[wp % size:]
    # with ext files ConsumeQueueExt.put first: each unit appended holds its ext unit's address (decorate), after
    # every T0 unit's ext unit, the cut ones too
    parsed = kind.startswith("embedded-t0")
    ext_at = int(loaded["T0/0"]["extMaxOffset"]) if kind.split("-")[-1] == "ext" else None
    tags = [0] * (NEXT_T0 + parsed) if ext_at is None else [ext_at + 20 * k - 2**63 for k in range(NEXT_T0 + parsed)]
    if parsed:   # the parsed T0 unit first, at the write position (its queue offset past it)
        assert t0[:20] == struct.pack(">qiq", BLANK_MAX, len(msg), tags[0]) and EMBEDDED_T0_QUEUE_OFFSET * 20 > wp
        t0, wp, tags = t0[20:], wp + 20, tags[1:]
    assert int(after["T0/0"]["maxOffset"]) == wp + 20 * NEXT_T0, after["T0/0"]
    first_t0 = NEXT_FILE + T9_SIZE + ENTRY_HEADER_SIZE
    assert [struct.unpack(">qiq", t0[i:i + 20]) for i in range(0, 20 * NEXT_T0, 20)] == [
        (first_t0 + k * T0_ENTRY, T0_RECORD, tags[k]) for k in range(NEXT_T0)], t0[:40].hex()
    after_them = struct.unpack(">qi", t0[20 * NEXT_T0:20 * NEXT_T0 + 12])   # a cut unit's bytes, past the max
    assert CUT <= after_them[0] < NEXT_FILE and after_them[1] == T0_RECORD, after_them
    queue_offset = struct.unpack(">q", log_bytes(src, first_t0 + 20, 8))[0]   # its QUEUEOFFSET field
    assert queue_offset * 20 > wp, (queue_offset, wp)   # past the write position: appended all the same
    if kind == "embedded":   # T5/0, a new queue: its unit at 0
        t5 = (src / "expected" / "consumequeue" / "T5" / "0" / f"{0:020d}").read_bytes()
        assert t5[:20] == struct.pack(">qiq", BLANK_MAX, len(msg), 0) and not any(t5[20:40]), t5[:40].hex()
    else:
        assert "T5/0" not in after, after
    keys = _index_keys_below(src, end + 1)   # the broker's keys: E5 (a parsed message's) and K9
    assert keys == ([BLANK_MAX] if msg else []) + [LAST_T9], keys
    return sc, w, src


@pytest.mark.parametrize("kind", list(SCENARIOS))
def test_verify_predicts_the_reput_going_on_at_the_next_data_file(kind: str, tmp_path, monkeypatch) -> None:
    """What the broker wrote first (above); then verify's plan: the reput set at 2147483647 goes on at the 23rd
    data file's start (after parsing the T5 message with ``-embedded``), the records from the cut to there
    dispatched by no one; the units lost (the 22nd file's T0 units and T9's unit the planted file lacks), the units
    the reput puts again (the 23rd file's, but the last T9's past the committed position with ``-committed``: the
    reference rebuild stops there) and the index keys below the committed position are the broker's."""
    sc, w, src = _as_the_broker(kind, tmp_path)
    end = int(w["maxPhyOffset"])
    committed = LAST_T9 - ENTRY_HEADER_SIZE if kind == "committed" else end   # as _as_the_broker asserted
    after = w["queuesAfterDispatch"]
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    past = kind == "committed"   # the last T9 message lies past the committed position: no unit of the reference
    # the last T9's unit in both; the parsed T0 unit held, no record's
    lost = queued_messages(sc) - held_units(src, ends=after, leave_out="T5") + kind.startswith("embedded-t0")
    assert p["units_lost"] == lost == CUT_T0 + 1, (p["units_lost"], lost, note)
    assert p["units_dispatched_again"] == NEXT_T0 + 2 - past, (p["units_dispatched_again"], note)
    keys = _index_keys_below(src, committed)
    assert p["index_keys_put_again"] == len(keys), (p["index_keys_put_again"], keys, p["notes"])
    assert crash.walked_nothing and crash.process_offset == CUT and crash.reput_from == NEXT_FILE, crash
    assert crash.end == end and crash.gap == (CUT, NEXT_FILE), crash
    records = ((BLANK_MAX, BLANK_MAX + len(_message(kind))),) if _message(kind) else ()
    assert crash.cut is not None and crash.cut.inside_from == BLANK_MAX and crash.cut.inside_records == records
    whole = {(q.topic, q.queue_id): q.parsed_at for q in crash.cut.inside_placed.whole}   # T0 replayed from the cut
    wp = int(w["queuesAfterLoad"]["T0/0"]["maxOffset"])
    assert whole == ({("T0", 0): (wp,)} if kind.startswith("embedded-t0") else {}), whole
    if kind.split("-")[-1] == "ext":   # the ext units the reput put, those no unit below the write position points at
        figures = {f["queue"]: f for f in p["queues"]}
        for q, n in (("T0/0", NEXT_T0 + kind.startswith("embedded-t0")), ("T9/0", 2)):
            assert int(after[q]["extMaxOffset"]) - int(w["queuesAfterLoad"][q]["extMaxOffset"]) == 20 * n, after[q]
            got = (figures[q]["ext_units_appended"], figures[q]["ext_units_orphaned"])
            assert got == (n, _ext_orphans(src, q, after[q])), (q, got)
    assert crash.inside_keys == tuple(a for a, _b in records), crash.inside_keys
    assert f"or reads DLedger's blank magic and rolls: either way to the next data file's start, {NEXT_FILE}" in note
    assert f"the records from {CUT} to {NEXT_FILE} are dispatched by no one" in note, note
