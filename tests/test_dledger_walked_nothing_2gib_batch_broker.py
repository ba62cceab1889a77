"""``verify`` of a 5.5.1 DLedger crash store past 2 GiB whose recovery walk dispatches nothing and whose start's reput
the cut sets at 2147483647, inside an entry, where its check parses a message for a BatchCQ topic, checked against the
broker (``DLEDGER_2GIB=1`` only: some 2.15 GB of data files, as much again in ``before/``; about half a minute each).

``5.5.1-dledger-abort-propcrc-kept-past-2gib-embedded-batch`` (:func:`embedded_batch_scenario`): the
``-propcrc-kept-past-2gib`` store
(:func:`broker_dledger_walked_nothing_inside_scenarios.walked_nothing_past_2gib_scenario`) with the BatchCQ topic B5
(``queue.type=BatchCQ`` in ``topics.json``) and, from 2147483647 on inside the last T0 body, a well-formed B5/0
message carrying ``INNER_NUM`` 3 and ``INNER_BASE`` 7 (keys ``E5``).  ``dledgerRecoverAbnormally`` walks nothing,
``truncateDirtyLogicFiles`` at the 22nd data file's start leaves T9 with its ``fillPreBlank`` unit only (max
2147483647, the largest), ``doRecheckReputOffsetFromCq`` sets the reput there, the check parses the B5 message
(``checkMessageAndReturnSize``: its batch fields from ``INNER_BASE``/``INNER_NUM``) and ``doReput`` dispatches it:
``findOrCreateConsumeQueue`` creates B5/0 as a ``BatchConsumeQueue`` (no file, its max physical offset -1), whose
``putBatchMessagePositionInfo`` appends the 46-byte unit at the queue's start (``getLastMappedFile(0)``: the first
file at 0; no ``fillPreBlank`` units, whatever ``INNER_BASE``), and the next check fails on the body's 'x' bytes: the
reput jumps to the log's end, every unit of the 22nd data file lost.

``-embedded-batch-held`` and ``-embedded-batch-emptied`` (:func:`planted_batch_scenario`): B5/0's file planted with
one unit, of the first T9 record (below the cut: ``BatchConsumeQueue.truncateDirtyLogicFiles`` keeps it, write
position 46, max its start) or of the last one (past it: the file deleted, max ``processOffset - 1``, which
``correctMinOffset`` keeps); the parsed unit starts past either max, so ``putBatchMessagePositionInfo`` appends it at
the write position, 46, or at 0 in the file ``getLastMappedFile`` creates (no queue offset check).

The broker's queues, its B5 file and index key are asserted first; then ``verify``'s prediction and plan, and the
B5 file the model writes (the rebuild's dispatch rule on a new queue; the plan's replay on one on disk), byte for
byte.
"""
from __future__ import annotations

import base64
import struct

import broker_harness as bh
import numpy as np
import pyarrow.fs as pafs
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    EMBED_T0_DATA,
    LINE,
    NEEDS_2GIB,
    embedded_message,
    log_bytes,
    t0_record_at_2147483647,
    with_embedded_message,
    written,
)
from broker_dledger_walked_nothing_inside_scenarios import PAST_2GIB_T9_LAST, walked_nothing_past_2gib_scenario
from test_dledger_walked_nothing_2gib_broker import _index_keys, _verify

from store_format.batchconsumequeue import (
    DEFAULT_BCQ_FILE_SIZE,
    assign_batch_positions,
    build_bcq_file,
    new_batch_states,
)
from store_format.config import BrokerConfig
from store_format.dledger_inside_units import parsed_units
from store_format.store_layouts import store_batch_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

CUT_T0 = 11207            # T0's units in the 22nd data file (the cut takes them)
INNER_BASE, INNER_NUM = 7, 3


def batch_message() -> bytes:
    """The B5/0 message at 2147483647 (its PHYSICALOFFSET field there, queue offset ``INNER_BASE``)."""
    props = f"INNER_NUM\x01{INNER_NUM}\x02INNER_BASE\x01{INNER_BASE}\x02KEYS\x01E5\x02".encode()
    return embedded_message(BLANK_MAX, props=props, topic=b"B5", queue_offset=INNER_BASE)


def embedded_batch_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-batch``: above."""
    sc = walked_nothing_past_2gib_scenario(line)
    sc = with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-embedded-batch",
                               batch_message())
    return {**sc, "batchTopics": ["B5"]}


BCQ_FILE = 46 * 100       # mapperFileSizeBatchConsumeQueue of the -held and -emptied stores
T9_FIRST = (48, 193)      # the first T9 record: its offset and size


def planted_batch_scenario(tag: str, line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-batch-<tag>``: :func:`embedded_batch_scenario` with B5/0's
    batch consume queue file planted (``mapperFileSizeBatchConsumeQueue`` :data:`BCQ_FILE`) holding one unit (base 0,
    batch size 1), of the first T9 record (``-held``: below the cut, which leaves it) or of the last one
    (``-emptied``: past the cut, which deletes the file, its max ``processOffset - 1``)."""
    sc = embedded_batch_scenario(line)
    at, size = T9_FIRST if tag == "held" else (PAST_2GIB_T9_LAST, 193)
    unit = struct.pack(">qiqqqhii", at, size, 0, 1_700_000_000_000, 0, 1, -1, 0)
    plant = {**sc["plantFiles"], f"batchconsumequeue/B5/0/{0:020d}":
             base64.b64encode(unit + bytes(BCQ_FILE - len(unit))).decode()}
    return {**sc, "plantFiles": plant, "config": {**sc["config"], "mapperFileSizeBatchConsumeQueue": str(BCQ_FILE)},
            "name": f"{sc['name']}-{tag}"}


def _files(root) -> dict:  # noqa: ANN001
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_message_for_a_new_batch_queue_parsed_at_2147483647(tmp_path, monkeypatch) -> None:
    """What the broker wrote first (the cut at the 22nd data file's start; after ``load()`` T0 and T9 only, T9's max
    2147483647; the B5 message at 2147483647; after the reput B5/0 a batch queue of one unit at 0, the message's, its
    batch fields ``INNER_BASE``/``INNER_NUM``, E5 indexed; T0 as ``load()`` left it); then verify predicts the
    reput set at 2147483647 parsing the message and going on at the log's end (the cut units lost, none put again, the
    one index key), its plan leaving B5 to the rebuild's own dispatch (a new queue), whose rule puts the parsed unit
    where the broker did: its file byte for byte (``--as-restart`` deletes the queues, so it never meets this cut)."""
    sc = embedded_batch_scenario()
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 22 and cut == int(data[-1].name) < BLANK_MAX < end, (cut, end)
    msg = batch_message()
    record = t0_record_at_2147483647(src)
    assert record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)] == msg, "the bytes at 2147483647"
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert set(loaded) == {"T0/0", "T9/0"}, loaded
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX and int(loaded["T9/0"]["maxOffset"]) == 20, loaded
    assert set(after) == {"T0/0", "T9/0", "B5/0"} and after["T0/0"] == loaded["T0/0"], after
    assert after["B5/0"]["type"] == "BatchConsumeQueue", after["B5/0"]
    bcq = _files(src / "expected" / "batchconsumequeue")
    assert list(bcq) == [f"B5/0/{0:020d}"], list(bcq)
    unit = bcq[f"B5/0/{0:020d}"]
    assert struct.unpack(">qiqqqh", unit[:38]) == (BLANK_MAX, len(msg), 0, 1_700_000_000_001, INNER_BASE,
                                                   INNER_NUM), unit[:46].hex()
    assert not any(unit[46:]), "one unit"
    assert _index_keys(src) == 1, "E5 indexed"
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    assert p["units_lost"] == CUT_T0 + 2 and p["units_dispatched_again"] == 0, (p["units_lost"], note)
    assert p["index_keys_put_again"] == 1, (p["index_keys_put_again"], p["notes"])
    assert crash.walked_nothing and crash.reput_from == end and crash.gap == (cut, end), crash
    assert crash.cut is not None and crash.cut.inside_from == BLANK_MAX, crash.cut
    assert crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),) and crash.inside_keys == (BLANK_MAX,)
    assert not crash.cut.inside_placed.whole, crash.cut.inside_placed   # B5: the rebuild's own dispatch's
    # the model's B5 file: the parsed record's unit (the store's BatchCQ topics, as the rebuild reads them) put by
    # the rebuild's dispatch rule on a new batch queue, the broker's file byte for byte
    batch = store_batch_topics(pafs.LocalFileSystem(), str(src / "before"), "before", broker_version="5.5")
    assert batch == {"B5"}, batch
    (u,) = parsed_units(lambda at, n: log_bytes(src, at, n), crash.cut.inside_records,
                        BrokerConfig(brokerVersion="5.5", batch_topics=batch))
    assert (u.topic, u.queue_id, u.batch, u.own) == ("B5", 0, True, True), u
    positions = assign_batch_positions(np.zeros(1, np.int64), np.array([u.offset]), np.array([u.base]),
                                       np.array([u.batch_size]), new_batch_states(1))
    ours = build_bcq_file(0, DEFAULT_BCQ_FILE_SIZE, positions, np.array([u.offset]), np.array([u.size]),
                          np.array([u.tags_code]), np.array([u.store_time]), np.array([u.base]),
                          np.array([u.batch_size]))
    bh.same_bytes(unit, ours.tobytes(), f"batchconsumequeue/B5/0/{0:020d}")


@pytest.mark.parametrize("tag", ["held", "emptied"])
def test_a_message_for_a_batch_queue_on_disk_parsed_at_2147483647(tmp_path, monkeypatch, tag: str) -> None:
    """What the broker wrote first (B5/0's planted file in ``before/``; after ``load()`` ``-held``: its unit kept, the
    write position 46, the max that unit's start, 48; ``-emptied``: no file, the max ``processOffset - 1``; after the
    reput the parsed unit at 46 after the planted one, or at 0 in a new file, whatever ``INNER_BASE``); then
    verify's plan replays B5 from the state the cut left (``putBatchMessagePositionInfo``: no queue offset check)
    and its file, the file the cut left with the plan's unit written, is the broker's byte for byte."""
    sc = planted_batch_scenario(tag)
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    assert cut < BLANK_MAX < end and T9_FIRST[0] < cut < PAST_2GIB_T9_LAST, (cut, end)
    msg = batch_message()
    record = t0_record_at_2147483647(src)
    assert record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)] == msg, "the bytes at 2147483647"
    planted = (src / "before" / "batchconsumequeue" / "B5" / "0" / f"{0:020d}").read_bytes()
    at = T9_FIRST[0] if tag == "held" else PAST_2GIB_T9_LAST
    assert len(planted) == BCQ_FILE and struct.unpack(">qi", planted[:12]) == (at, 193) and not any(planted[46:])
    loaded, after = w["queuesAfterLoad"]["B5/0"], w["queuesAfterDispatch"]["B5/0"]
    held = tag == "held"
    assert loaded["type"] == "BatchConsumeQueue", loaded
    assert (loaded["files"], int(loaded["maxOffset"]), int(loaded["maxPhysicOffset"])) == (
        ([f"{0:020d}"], 46, T9_FIRST[0]) if held else ([], 0, cut - 1)), loaded
    position = 46 if held else 0
    assert (after["files"], int(after["maxOffset"]), int(after["maxPhysicOffset"])) == (
        [f"{0:020d}"], position + 46, BLANK_MAX), after
    bcq = _files(src / "expected" / "batchconsumequeue")
    assert list(bcq) == [f"B5/0/{0:020d}"], list(bcq)
    broker = bcq[f"B5/0/{0:020d}"]
    assert broker[:position] == planted[:position], "the kept unit"
    assert struct.unpack(">qiqqqh", broker[position:position + 38]) == (
        BLANK_MAX, len(msg), 0, 1_700_000_000_001, INNER_BASE, INNER_NUM), broker[position:position + 46].hex()
    assert not any(broker[position + 46:]), "no unit after it"
    assert _index_keys(src) == 1, "E5 indexed"
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    assert p["units_lost"] == CUT_T0 + 2 and p["units_dispatched_again"] == 0, (p["units_lost"], note)
    assert p["index_keys_put_again"] == 1, (p["index_keys_put_again"], p["notes"])
    assert crash.cut is not None and crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),), crash.cut
    assert (("B5", 0) in crash.cut.held_emptied) == (not held), crash.cut.held_emptied
    (q,) = crash.cut.inside_placed.whole   # the plan: B5 replayed from the state the cut left
    assert (q.topic, q.parsed_at, q.opened) == ("B5", (position,), () if held else (0,)), q
    # the file as the plan writes it: the bytes the cut left (a file staying; none: a new file of zeros) with the
    # plan's units, its batch fields
    ours = np.frombuffer(planted if held else bytes(BCQ_FILE), np.uint8).copy()
    for (pos, offset, size, tags), (stored, base, num) in zip(q.units, q.batch_fields):
        unit = build_bcq_file(0, BCQ_FILE, np.array([pos]), np.array([offset]), np.array([size]), np.array([tags]),
                              np.array([stored]), np.array([base]), np.array([num]), trim=True)
        ours[pos:pos + 46] = unit[pos:pos + 46]
    bh.same_bytes(broker, ours.tobytes(), f"batchconsumequeue/B5/0/{0:020d}")
