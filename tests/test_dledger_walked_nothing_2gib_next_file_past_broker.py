"""``verify`` of a 5.5.1 DLedger crash store past 2 GiB whose recovery walk dispatches nothing and whose start's
reput, set at 2147483647 by the cut inside an entry of a data file that is not the last, parses a T0 message there
(a queue the store holds files of) whose unit ends past that file's end, then goes on at the next data file's start;
checked against the broker (``DLEDGER_2GIB=1`` only: some 2.2 GB of data files each, as much again in ``before/``;
about half a minute each to write).

The stores (:mod:`broker_dledger_walked_nothing_next_file`): ``-next-file-embedded-t0-past-end``, the
``-next-file-embedded-t0`` store whose T0 message's PHYSICALOFFSET field (the unit's offset: the check does not compare
it with where the message lies) makes its unit end exactly where the 23rd data file's fifth T0 unit ends;
``-past-all``, the field one byte past the last T9 record's start; ``-past-end-ext``, the first with
``enableConsumeQueueExt=true``.  ``putMessagePositionInfo`` appends the parsed unit at T0's write position (its
max then that unit's end), and from the 23rd data file's start drops each T0 unit ending at or below that max (the
fifth one too: ``offset + size <= maxPhysicOffset``), appending the rest after it; ``IndexService.buildIndex`` puts
``E5`` at the field and, with ``-past-all``, skips ``K9``, below the ``endPhyOffset`` that left.

What the broker wrote is asserted first (the bytes at 2147483647, the queues after ``load()`` and after the reput, the
T0 units appended and the index keys); then ``verify`` on the store as the restart found it predicts that restart
(units lost and put again, index keys, ext units appended and orphaned, the plan's max that drops them).
``rebuild --as-restart`` does not apply: it rebuilds the queues from no file, so no cut sets the reput at
2147483647.
"""
from __future__ import annotations

import struct

import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    NEEDS_2GIB,
    held_units,
    log_bytes,
    queued_messages,
    retargeted,
    t0_record_at_2147483647,
    written,
)
from broker_dledger_walked_nothing_next_file import (
    EMBEDDED_T0_QUEUE_OFFSET,
    FIRST_NEXT_T0,
    LAST_T9,
    LAST_T9_RECORD,
    NEXT_FILE,
    NEXT_T0,
    NEXT_T9,
    PAST_END_DROPPED,
    T0_ENTRY,
    T9_RECORD,
    next_file_embedded_t0_past_all_scenario,
    next_file_embedded_t0_past_end_ext_scenario,
    next_file_embedded_t0_past_end_scenario,
    past_end_field,
)
from test_dledger_walked_nothing_2gib_broker import _verify
from test_dledger_walked_nothing_2gib_next_file_broker import _entry, _ext_orphans, _index_keys_below

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

CUT = NEXT_FILE - 100_000_000   # processOffset: the 22nd data file's start, where the walk starts
T0_RECORD = T0_ENTRY - ENTRY_HEADER_SIZE
CUT_T0 = 23601 + 1    # the 22nd data file's T0 entries: 23601 and the last, shorter one
FIELDS = {"past-end": past_end_field(), "past-all": LAST_T9 + 1, "past-end-ext": past_end_field()}
SCENARIOS = {"past-end": next_file_embedded_t0_past_end_scenario, "past-all": next_file_embedded_t0_past_all_scenario,
             "past-end-ext": next_file_embedded_t0_past_end_ext_scenario}


def _as_the_broker(kind: str, tmp_path):  # noqa: ANN001, ANN202
    """The broker writes the ``kind`` store and restarts it; asserts what it wrote: 23 data files, the cut at the
    22nd's start and the 23rd starting with an entry; at 2147483647 the T0 message whose PHYSICALOFFSET field is
    ``FIELDS[kind]``; after ``load()`` T9 with its ``fillPreBlank`` unit only and T0 with its units of the earlier
    files; after the reput T0's parsed unit at its write position, then the 23rd file's T0 units that end past that
    unit's end (the others, the one ending exactly there too, dropped), T9's units of queue offsets 1 and 2 at 20 and
    40, and the index keys.  Returns the scenario, the writer's report, the scenario's folder and the number of T0
    units of the 23rd file dropped."""
    sc = SCENARIOS[kind]()
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert [int(f.name) for f in data[-2:]] == [CUT, NEXT_FILE] and len(data) == 23, [f.name for f in data[-3:]]
    assert cut == CUT < BLANK_MAX < NEXT_FILE < LAST_T9 < end, (cut, end)
    _entry(src, NEXT_FILE)
    field, msg = FIELDS[kind], retargeted(FIELDS[kind], b"T0", EMBEDDED_T0_QUEUE_OFFSET)
    record = t0_record_at_2147483647(src, len(msg))
    assert record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)] == msg, "the bytes at 2147483647"
    assert struct.unpack(">q", msg[28:36]) == (field,) and field + len(msg) > NEXT_FILE, field   # PHYSICALOFFSET
    # the 23rd file's T0 records, read from the log: each one's start and size
    starts = [FIRST_NEXT_T0 + k * T0_ENTRY for k in range(NEXT_T0)]
    t0_records = [(o, struct.unpack(">i", log_bytes(src, o, 4))[0]) for o in starts]
    assert all(size == T0_RECORD for _o, size in t0_records), t0_records
    dropped = sum(o + size <= field + len(msg) for o, size in t0_records)
    assert dropped == (PAST_END_DROPPED if kind.startswith("past-end") else NEXT_T0), dropped
    if kind.startswith("past-end"):   # the last dropped unit ends exactly at the parsed unit's end
        assert sum(t0_records[dropped - 1]) == field + len(msg), (t0_records[dropped - 1], field)
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert set(loaded) == {"T0/0", "T9/0"} and set(after) == {"T0/0", "T9/0"}, (loaded, after)
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX and int(loaded["T9/0"]["maxOffset"]) == 20, loaded
    assert int(loaded["T0/0"]["maxPhysicOffset"]) < cut, loaded["T0/0"]
    t9 = (src / "expected" / "consumequeue" / "T9" / "0" / f"{0:020d}").read_bytes()
    assert [struct.unpack(">qi", t9[i:i + 12]) for i in (20, 40)] == [(NEXT_T9, T9_RECORD), (LAST_T9, LAST_T9_RECORD)]
    assert int(after["T9/0"]["maxOffset"]) == 60, after["T9/0"]
    wp = int(loaded["T0/0"]["maxOffset"])
    size = int(sc["config"]["mappedFileSizeConsumeQueue"])
    t0 = (src / "expected" / "consumequeue" / "T0" / "0" / f"{wp - wp % size:020d}").read_bytes()[wp % size:]
    kept = t0_records[dropped:]
    ext_at = int(loaded["T0/0"]["extMaxOffset"]) if kind.endswith("-ext") else None
    # with ext files every unit handed over gets an ext unit first (ConsumeQueueExt.put), the dropped ones' too
    tags = [0] * (1 + NEXT_T0) if ext_at is None else [ext_at + 20 * k - 2**63 for k in range(1 + NEXT_T0)]
    assert t0[:20] == struct.pack(">qiq", field, len(msg), tags[0]), t0[:20].hex()   # the parsed unit, at wp
    assert [struct.unpack(">qiq", t0[20 + 20 * i:40 + 20 * i]) for i in range(len(kept))] == [
        (o, s, tags[1 + dropped + i]) for i, (o, s) in enumerate(kept)], t0[20:80].hex()
    assert int(after["T0/0"]["maxOffset"]) == wp + 20 * (1 + len(kept)), after["T0/0"]
    assert int(after["T0/0"]["maxPhysicOffset"]) == max([field + len(msg), *(o + s for o, s in kept)]), after["T0/0"]
    if ext_at is not None:   # the ext units of all 21: the parsed unit's and the 23rd file's, dropped or not
        assert int(after["T0/0"]["extMaxOffset"]) - ext_at == 20 * (1 + NEXT_T0), after["T0/0"]
    keys = _index_keys_below(src, end + 1)   # E5 at the field; K9 unless below the endPhyOffset E5 left
    assert keys == [field] + ([LAST_T9] if LAST_T9 >= field else []), keys
    return sc, w, src, dropped


@pytest.mark.parametrize("kind", list(SCENARIOS))
def test_verify_predicts_the_next_files_units_a_parsed_units_max_drops(kind: str, tmp_path, monkeypatch) -> None:
    """What the broker wrote first (above); then verify's plan: the reput set at 2147483647 parses the T0 message, goes
    on at the 23rd data file's start, and T0's max the parsed unit left drops the 23rd file's T0 units ending at or
    below it: those and the 22nd file's T0 units (and T9's unit the planted file lacks) lost, the rest and T9's two
    put again, the index keys and (ext files) the ext units appended and orphaned the broker's."""
    sc, w, src, dropped = _as_the_broker(kind, tmp_path)
    after = w["queuesAfterDispatch"]
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    field = FIELDS[kind]
    end = field + len(retargeted(field, b"T0", EMBEDDED_T0_QUEUE_OFFSET))
    assert crash.walked_nothing and crash.process_offset == CUT and crash.reput_from == NEXT_FILE, crash
    assert crash.cut is not None and crash.cut.drops_to == {("T0", 0): end}, crash.cut.drops_to
    # every queued message's unit (the reference holds one each) but those the broker's queues hold, the parsed
    # T0 unit held being no record's
    lost = queued_messages(sc) - held_units(src, ends=after) + 1
    assert p["units_lost"] == lost == CUT_T0 + 1 + dropped, (p["units_lost"], lost, note)
    assert p["units_dispatched_again"] == NEXT_T0 - dropped + 2, (p["units_dispatched_again"], note)
    keys = _index_keys_below(src, int(w["maxPhyOffset"]))
    assert p["index_keys_put_again"] == len(keys), (p["index_keys_put_again"], keys, p["notes"])
    if kind.endswith("-ext"):   # every ext unit the reput put (21 and T9's 2), those no kept unit points at orphaned
        figures = {f["queue"]: f for f in p["queues"]}
        for q, n in (("T0/0", 1 + NEXT_T0), ("T9/0", 2)):
            got = (figures[q]["ext_units_appended"], figures[q]["ext_units_orphaned"])
            assert got == (n, _ext_orphans(src, q, after[q])), (q, got)
    assert f"T0/0's parsed unit ends at {end}, past there: putMessagePositionInfo drops" in note, note
    assert f"the records from {CUT} to {NEXT_FILE} are dispatched by no one" in note, note
