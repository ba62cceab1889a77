"""``verify`` and ``rebuild --as-restart`` of a 5.5.1 DLedger crash store past 2 GiB whose recovery walk dispatches
nothing and whose start's reput the cut sets at 2147483647, inside an entry, where its check parses a message for a
BatchCQ topic the store holds no queue file of, checked against the broker (``DLEDGER_2GIB=1`` only: some 2.15 GB of
data files, as much again in ``before/``; minutes).

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

The broker's queues and its B5 unit and index key are asserted first; then ``verify``'s prediction and plan, and the
B5 file the rebuild's dispatch rule writes for the parsed record, byte for byte.
"""
from __future__ import annotations

import os
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
    embedded_message,
    log_bytes,
    t0_record_at_2147483647,
    with_embedded_message,
    written,
)
from broker_dledger_walked_nothing_inside_scenarios import walked_nothing_past_2gib_scenario
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

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store,
              pytest.mark.skipif(os.environ.get("DLEDGER_2GIB") != "1", reason="a 2 GiB store: DLEDGER_2GIB=1")]

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
