"""``verify`` of a 5.5.1 DLedger crash store past 2 GiB whose recovery walk dispatches nothing and whose start's
reput, set at 2147483647 by the cut inside an entry of a data file that is not the last, goes on inside that file:
at DLedger's committed position there, or at an entry's start right after a message its check parsed; checked
against the broker (``DLEDGER_2GIB=1`` only: some 2.2 GB of data files each, as much again in ``before/``; about half
a minute each to write).

The stores (:mod:`broker_dledger_walked_nothing_next_file`, the ``-next-file`` layout: 2147483647 inside a T0 body of
the 22nd data file, the walk from its start, T9 left its ``fillPreBlank`` unit only): ``-committed-in-file``,
DLedger's checkpoint 100 entries before the 22nd file's end: ``getData`` cuts the bytes it hands there
(``truncate``), the check fails on the 'x' bytes and ``doReput`` jumps to that committed position, an entry's start,
where it waits for the group's commit and walks the entries on (the 22nd file's last 100, the 23rd's);
``-to-entry``, a T5 message from 2147483647 to the T0 record's end (its last bytes the T0 record's own tail): the
check parses it and then meets the next entry's start, from which the reput walks the entries (the 22nd file's
T0 entries after it, the 23rd's); ``-to-entry-t0-past``, that message for T0 (queue offset 600000) with a
PHYSICALOFFSET field that makes its unit end where the third T0 record from that entry ends: appended at T0's write
position, its max drops those three (``putMessagePositionInfo``: ``offset + size <= maxPhysicOffset``);
``-to-entry-t0-past-ext``, that store with ``enableConsumeQueueExt=true`` (an ext unit put for every T0 record handed
over, the dropped ones too).

What the broker wrote is asserted first (where the reput went on, read from the T0 units it appended, the queues
after ``load()`` and after the reput, the index keys); then ``verify`` on the store as the restart found it predicts
that restart (units lost and put again, index keys, the plan's gap and max).  ``rebuild --as-restart`` does not
apply: it rebuilds the queues from no file, so no cut sets the reput at 2147483647.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    NEEDS_2GIB,
    held_units,
    log_bytes,
    queued_messages,
    t0_record_at_2147483647,
    written,
)
from broker_dledger_walked_nothing_next_file import (
    EMBEDDED_T0_QUEUE_OFFSET,
    FIRST_NEXT_T0,
    IN_FILE_BACK,
    LAST_T9,
    NEXT_FILE,
    NEXT_T0,
    T0_ENTRY,
    TO_ENTRY_DROPPED,
    next_file_committed_in_file_scenario,
    next_file_to_entry_scenario,
    next_file_to_entry_t0_past_ext_scenario,
    next_file_to_entry_t0_past_scenario,
    to_entry_message,
    to_entry_t0_field,
)
from test_dledger_walked_nothing_2gib_broker import _verify
from test_dledger_walked_nothing_2gib_next_file_broker import _entry, _ext_orphans, _index_keys_below

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

CUT = NEXT_FILE - 100_000_000   # processOffset: the 22nd data file's start, where the walk starts
T0_RECORD = T0_ENTRY - ENTRY_HEADER_SIZE
SCENARIOS = {"committed-in-file": next_file_committed_in_file_scenario, "to-entry": next_file_to_entry_scenario,
             "to-entry-t0-past": next_file_to_entry_t0_past_scenario,
             "to-entry-t0-past-ext": next_file_to_entry_t0_past_ext_scenario}
MESSAGES = {"committed-in-file": b"", "to-entry": to_entry_message(BLANK_MAX),
            "to-entry-t0-past": to_entry_message(to_entry_t0_field(), b"T0", EMBEDDED_T0_QUEUE_OFFSET)}
MESSAGES["to-entry-t0-past-ext"] = MESSAGES["to-entry-t0-past"]


def _appended(src, queue: str, loaded: dict, after: dict, size: int) -> list[tuple[int, int, int]]:  # noqa: ANN001
    """The units (offset, size, tags code) the broker's reput appended to ``queue``: from its write position after
    ``load()`` to the one after the reput (consume queue files of ``size`` bytes)."""
    lo, hi = int(loaded[queue]["maxOffset"]), int(after[queue]["maxOffset"])
    folder = src / "expected" / "consumequeue" / queue
    data = b"".join((folder / f"{f:020d}").read_bytes() for f in range(lo - lo % size, hi, size))
    return [struct.unpack(">qiq", data[i:i + 20]) for i in range(lo % size, lo % size + hi - lo, 20)]


def _as_the_broker(kind: str, tmp_path):  # noqa: ANN001, ANN202
    """The broker writes the ``kind`` store and restarts it; asserts what it wrote: 23 data files, the cut at the
    22nd's start; the bytes at 2147483647; after ``load()`` T9 with its ``fillPreBlank`` unit only and T0 with its
    units of the earlier files; after the reput T0's units appended at its write position (the parsed one first with
    ``-to-entry-t0-past``), the first record's an entry's first (where the reput went on: DLedger's committed
    position, the end of the parsed message), every entry's T0 record from there to the log's end but those the
    parsed unit's max drops, T9's two, and the index keys.  Returns the scenario, the writer's report, the
    scenario's folder, where the reput went on, DLedger's committed position before the restart and the T0 units
    dropped."""
    sc = SCENARIOS[kind]()
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert [int(f.name) for f in data[-2:]] == [CUT, NEXT_FILE] and len(data) == 23, [f.name for f in data[-3:]]
    assert cut == CUT < BLANK_MAX < NEXT_FILE < LAST_T9 < end, (cut, end)
    msg = MESSAGES[kind]
    record = t0_record_at_2147483647(src)
    at = record[88 + EMBED_AT_BODY_DATA:]
    assert at == (msg[:len(at)] if msg else b"x" * len(at)), ("the bytes at 2147483647", at[:56])
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX and int(loaded["T9/0"]["maxOffset"]) == 20, loaded
    assert int(loaded["T0/0"]["maxPhysicOffset"]) < cut, loaded["T0/0"]
    size = int(sc["config"]["mappedFileSizeConsumeQueue"])
    t0 = _appended(src, "T0/0", loaded, after, size)
    parsed = kind.startswith("to-entry-t0-past")
    field = to_entry_t0_field()
    # with ext files each unit appended holds the address of the ext unit put for it, after every one of the records
    # handed over before it (the dropped ones too), from the ext end recover left
    ext_at = int(loaded["T0/0"]["extMaxOffset"]) if kind.endswith("-ext") else None
    tags = [t for _o, _s, t in t0]
    t0 = [(o, s) for o, s, _t in t0]
    if parsed:   # the parsed unit first, at the write position
        assert t0[0] == (field, len(msg)) and tags[0] == (0 if ext_at is None else ext_at - 2**63), (t0[0], tags[0])
        t0, tags = t0[1:], tags[1:]
    dropped = TO_ENTRY_DROPPED if parsed else 0
    on = t0[0][0] - ENTRY_HEADER_SIZE - dropped * T0_ENTRY   # where the reput went on: an entry's start
    head = _entry(src, on)
    last = CUT + 23601 * T0_ENTRY   # the 22nd file's last entry: the shorter T0 one, DLedger's 100-byte blank after
    last_size = int.from_bytes(_entry(src, last)[4:8], "big")
    assert last + last_size == NEXT_FILE - 100 and (last - on) % T0_ENTRY == 0, (last, last_size, on)
    committed_index = int(bh.read_conf(src / "before" / "dledger-n0" / "checkpoint")["committedIndex"])
    if kind == "committed-in-file":   # the committed position: the committed entry's end, IN_FILE_BACK entries
        # before the 22nd file's end
        assert committed_index == int.from_bytes(head[8:16], "big") - 1, committed_index
        assert on == last - (IN_FILE_BACK - 1) * T0_ENTRY and BLANK_MAX < on, (on, last)
        committed = on
    else:   # the parsed message ends where the entry starts; the whole log committed
        assert on == BLANK_MAX + len(msg) and committed_index == int.from_bytes(
            log_bytes(src, LAST_T9 - ENTRY_HEADER_SIZE, 16)[8:16], "big"), (on, committed_index)
        committed = end
    if parsed:   # the dropped ones: the T0 records from there ending at or below the parsed unit's end (the last
        # exactly at it)
        assert on + ENTRY_HEADER_SIZE + (dropped - 1) * T0_ENTRY + T0_RECORD == field + len(msg), field
    # every T0 record from there on but the dropped ones: the 22nd file's, its shorter last one, the 23rd's
    in_file = (last - on) // T0_ENTRY   # the full T0 entries from there to the 22nd file's last
    assert t0 == [(on + ENTRY_HEADER_SIZE + k * T0_ENTRY, T0_RECORD) for k in range(dropped, in_file)] + [
        (last + ENTRY_HEADER_SIZE, last_size - ENTRY_HEADER_SIZE)] + [
        (FIRST_NEXT_T0 + k * T0_ENTRY, T0_RECORD) for k in range(NEXT_T0)], (len(t0), t0[:2], t0[-2:])
    assert tags == ([0] * len(t0) if ext_at is None else
                    [ext_at + 20 * (1 + dropped + k) - 2**63 for k in range(len(t0))]), tags[:2]
    if ext_at is not None:   # an ext unit for each record handed over: the parsed one, the dropped ones, the rest
        assert int(after["T0/0"]["extMaxOffset"]) - ext_at == 20 * (1 + dropped + len(t0)), after["T0/0"]
    t9 = _appended(src, "T9/0", loaded, after, size)
    assert [o for o, _s, _t in t9] == [NEXT_FILE + ENTRY_HEADER_SIZE, LAST_T9], t9
    if kind == "to-entry":   # T5/0, a new queue: its unit at 0
        t5 = (src / "expected" / "consumequeue" / "T5" / "0" / f"{0:020d}").read_bytes()
        assert struct.unpack(">qi", t5[:12]) == (BLANK_MAX, len(msg)), t5[:20].hex()
    keys = _index_keys_below(src, end + 1)   # E5 (a parsed message's) and K9
    assert keys == ([int.from_bytes(msg[28:36], "big")] if msg else []) + [LAST_T9], keys
    return sc, w, src, on, committed, dropped


@pytest.mark.parametrize("kind", list(SCENARIOS))
def test_verify_predicts_the_reput_going_on_inside_the_data_file(kind: str, tmp_path, monkeypatch) -> None:
    """What the broker wrote first (above); then verify's plan: the reput set at 2147483647 goes on where the broker's
    did, the records from the cut to there dispatched by no one; the units lost (those and T9's unit the planted file
    lacks, the T0 units the parsed unit's max drops), the units put again (the records from there to DLedger's
    committed position, where the reference rebuild stops) and the index keys below that position are the broker's."""
    sc, w, src, on, committed, dropped = _as_the_broker(kind, tmp_path)
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    parsed = kind.startswith("to-entry-t0-past")
    msg = MESSAGES[kind]
    assert crash.walked_nothing and crash.process_offset == CUT and crash.reput_from == on, crash
    assert crash.gap == (CUT, on) and crash.cut is not None and crash.cut.inside_from == BLANK_MAX, crash
    field = int.from_bytes(msg[28:36], "big") if msg else 0
    assert crash.cut.drops_to == ({("T0", 0): field + len(msg)} if parsed else {}), crash.cut.drops_to
    # every queued message's unit (the reference holds one each, up to the committed position) but those the
    # broker's queues hold; the parsed T0 unit held being no record's, T5's not counted
    lost = queued_messages(sc) - held_units(src, ends=after, leave_out="T5") + parsed
    assert p["units_lost"] == lost, (p["units_lost"], lost, note)
    size = int(sc["config"]["mappedFileSizeConsumeQueue"])
    # the records' units the reput appended, below the committed position
    again = [o for q in ("T0/0", "T9/0") for o, _s, _t in _appended(src, q, loaded, after, size)[
        parsed and q == "T0/0":] if o < committed]
    assert p["units_dispatched_again"] == len(again), (p["units_dispatched_again"], len(again), note)
    keys = _index_keys_below(src, committed)
    assert p["index_keys_put_again"] == len(keys), (p["index_keys_put_again"], keys, p["notes"])
    how = ("fails and it jumps to the end of the bytes getData hands" if kind == "committed-in-file" else
           "parses 1 message(s), then meets an entry's start")
    assert f"{how}, {on}" in note and f"the records from {CUT} to {on} are dispatched by no one" in note, note
    if parsed:
        assert f"T0/0's parsed unit ends at {field + len(msg)}, past there" in note, note
    if kind.endswith("-ext"):   # every ext unit the reput put, those no kept unit points at orphaned
        figures = {f["queue"]: f for f in p["queues"]}
        for q in ("T0/0", "T9/0"):
            n = (int(after[q]["extMaxOffset"]) - int(loaded[q]["extMaxOffset"])) // 20
            got = (figures[q]["ext_units_appended"], figures[q]["ext_units_orphaned"])
            assert got == (n, _ext_orphans(src, q, after[q])) and n > 0, (q, got, n)
