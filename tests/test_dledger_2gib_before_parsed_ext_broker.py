"""A 5.5.1 DLedger crash restart whose start's reput, set at 2147483647 inside an entry of a data file before the
walk's, parses a message there for a queue the cut left ``fillPreBlank`` units only, then goes on before the walk's
data file and appends a record of queue offset 0 there to that queue, with ext files, checked against the broker
(``DLEDGER_2GIB=1`` only: some 2.3 GB of data files, its ``before/`` copy as much).

``-past-2gib-before-t9-first-parsed-ext`` (:func:`past_2gib_before_t9_first_parsed_ext_scenario`):
``-past-2gib-before-t9-first-parsed``
(:func:`test_dledger_2gib_before_queues_broker.past_2gib_before_t9_first_parsed_scenario`: a well-formed T9 message of
queue offset 5 at 2147483647) with ``enableConsumeQueueExt=true``.  ``ConsumeQueue.putMessagePositionInfoWrapper``
puts an ext unit (``ConsumeQueueExt.put``: the request's tags code and store time, no bitmap) for every record it is
handed before ``putMessagePositionInfo`` drops its unit or puts it: T9's ext units are the walk's T9 record's (the cut
keeps the ext files), the parsed message's (its unit appended at 20, past the max and the write position, holding
that second ext unit's address), the 23rd data file's T9 record's (queue offset 0: appended at 40, holding the
third's) and the walk's again (dropped: queue offset 1 below the write position 60).  ``rebuild --as-restart``
replays T9's queue by that rule, the parsed unit first (:func:`store_format.dledger_crash_before.appended_cut`), each
unit holding the address of the ext unit its record got in reput order; the rebuild's own dispatch puts the ext units
in that order (the parsed message read between the walk's records and the reput's pass).

``-past-2gib-before-t9-first-parsed-batch`` (:func:`past_2gib_before_t9_first_parsed_batch_scenario`): the same with
the message at 2147483647 for ``B9/0``, a BatchCQ topic's queue, and a last B9 message the cut takes with its only
file: the shape "a message parsed there for a batch queue the cut left with no file" does not arise.
``BatchConsumeQueue.truncateDirtyLogicFiles`` leaves such a queue's max at ``processOffset - 1`` (its
``correctMinOffset`` sets no -1), above 2147483647, and ``doRecheckReputOffsetFromCq`` takes the queues' largest
max: the reput is set there, in the walk's data file, and the B9 message at 2147483647 is never parsed.
``rebuild --as-restart`` says so and writes ``consumequeue/`` and ``index/`` byte for byte.
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
    as_restart_matches_broker,
    retargeted,
    verify_restart,
    with_embedded_message,
    written,
)
from broker_dledger_files import (
    ext_appended,
    ext_figures_as_the_broker,
    ext_orphaned_as_the_broker,
    ext_recovered_end,
)
from test_dledger_2gib_again_broker import EXT_FILE_SIZE, ext_units
from test_dledger_2gib_before_more_broker import past_2gib_before_t9_first_scenario
from test_dledger_2gib_before_queues_broker import PARSED_QUEUE_OFFSET, past_2gib_before_t9_first_parsed_scenario

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

LONG_MIN = -2**63
STORE_TIME = 1_700_000_000_001   # broker_dledger_2gib.embedded_message's store timestamp


def past_2gib_before_t9_first_parsed_ext_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-parsed-ext`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_queues_broker.past_2gib_before_t9_first_parsed_scenario` with
    ``enableConsumeQueueExt=true`` (ext files of :data:`test_dledger_2gib_again_broker.EXT_FILE_SIZE` bytes)."""
    sc = past_2gib_before_t9_first_parsed_scenario(line)
    return {**sc, "name": f"{sc['name']}-ext",
            "config": {**sc["config"], "enableConsumeQueueExt": "true",
                       "mappedFileSizeConsumeQueueExt": str(EXT_FILE_SIZE)}}


def _units(src, topic: str) -> list[tuple[int, int, int]]:  # noqa: ANN001
    files = sorted((src / "expected" / "consumequeue" / topic / "0").iterdir())
    return [struct.unpack(">qiq", b[i:i + 20]) for f in files for b in (f.read_bytes(),)
            for i in range(0, len(b) - 19, 20)]


def test_crash_restart_with_ext_whose_reput_before_the_walk_appends_a_queue_offset_0_record_after_a_parsed_unit(
        tmp_path):
    """The cut leaves T9 one ``fillPreBlank`` unit (max 2147483647) and the walk's T9 ext unit; the 5.5.1 broker's
    reput set at 2147483647 parses the T9 message there (queue offset 5): its ext unit second (tags code 0: no tags,
    the message's store time), its unit appended at 20 holding that address; it goes on at the 23rd data file: that
    file's T9 record's ext unit third, its unit (queue offset 0: no order check) at 40 holding that address; the
    walk's T9 record's ext unit again fourth, its unit dropped (queue offset 1, below 60).  ``rebuild --as-restart``
    writes ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for byte and ``verify``'s units lost are those
    the broker's queues do not hold (the parsed unit no message of the log's), T9's ext units appended and orphaned
    the broker's."""
    sc = past_2gib_before_t9_first_parsed_ext_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left fillPreBlank units only
    msg = retargeted(BLANK_MAX, b"T9", PARSED_QUEUE_OFFSET)
    t9 = _units(src, "T9")
    assert struct.pack(">qiq", *t9[0]) == FILL_PRE_BLANK_UNIT, t9[:4]
    assert t9[1] == (BLANK_MAX, len(msg), LONG_MIN + 20), ("the parsed unit at 20, its ext unit the second", t9[:4])
    assert t9[2] == (int(data[22].name) + ENTRY_HEADER_SIZE, t9[2][1], LONG_MIN + 40), \
        ("the 23rd file's T9 unit at 40, its ext unit the third", t9[:4])
    assert not any(any(u) for u in t9[3:]), ("the walk's T9 unit dropped", t9[:5])
    ext = ext_units(src, "T9")
    assert len(ext) == 4 and ext[0] == ext[3] and len({ext[0], ext[1], ext[2]}) == 3, ext
    # CqExtUnit: size, tags code, store time, bitmap size (the parsed message has no tags: code 0)
    assert struct.unpack(">hqqh", ext[1]) == (20, 0, STORE_TIME, 0), ext[1].hex()
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=1, ext=True)
    assert "then the walk's units by the same rule: T9/0 at 20, T9/0 at 40" in text, text[-3000:]
    p = verify_restart(src, tmp_path / "again")
    assert p is not None
    # T9's ext figures the broker's: its four ext units put, the first and the last (the walk's record's, its units
    # cut and dropped) pointed at by no unit below the write position
    orphaned = ext_orphaned_as_the_broker(p, w, src, check=False)
    appended = {f["queue"]: f["ext_units_appended"] for f in p["queues"]}
    assert orphaned["T9/0"] == (2, 2) and appended["T9/0"] == ext_appended(w, src, "T9/0", ext_recovered_end(
        src, "T9/0")) == 4, (orphaned, appended)
    # every ext queue's (T0's 23590 appended, none orphaned)
    assert ext_figures_as_the_broker(p, w, src)["T0/0"] == (23590, 23590, 0, 0)


def past_2gib_before_t9_first_parsed_batch_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-parsed-batch`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_queues_broker.past_2gib_before_t9_first_parsed_scenario` whose message at
    2147483647 goes to ``B9/0``, a BatchCQ topic's queue, with a last ``B9/0`` message after the log's last T9 one
    (past the short ``processOffset``: the cut takes its only unit and file)."""
    sc = past_2gib_before_t9_first_scenario(LINE)
    sc = {**sc, "messages": [*sc["messages"], {"topic": "B9", "queueId": 0, "bodySize": 100}], "batchTopics": ["B9"]}
    return with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                                 f"{line}-dledger-abort-past-2gib-before-t9-first-parsed-batch",
                                 msg=retargeted(BLANK_MAX, b"B9", PARSED_QUEUE_OFFSET))


def test_a_batch_queue_the_cut_left_with_no_file_sets_the_reput_past_2147483647(tmp_path):
    """The shape 'a message parsed at 2147483647 for a batch queue the cut left with no file, the reput going on before
    the walk's data file' does not arise: ``BatchConsumeQueue.truncateDirtyLogicFiles`` leaves B9/0 (its only unit
    cut) no file and its max ``processOffset - 1`` (no reset to -1), above 2147483647, so
    ``doRecheckReputOffsetFromCq`` (the queues' largest max) sets the reput there, in the walk's data file: the B9
    message at 2147483647 is never parsed (B9/0 holds no unit of it)."""
    sc = past_2gib_before_t9_first_parsed_batch_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load = w["queuesAfterLoad"]
    b9 = load["B9/0"]
    assert b9["type"] == "BatchConsumeQueue" and not b9["files"], b9
    assert int(b9["maxPhysicOffset"]) > int(data[23].name) > BLANK_MAX, b9
    assert int(b9["maxPhysicOffset"]) == max(int(v["maxPhysicOffset"]) for v in load.values()), load
    assert int(load["T9/0"]["maxPhysicOffset"]) == BLANK_MAX, load["T9/0"]   # fillPreBlank units only, as before
    bcq = src / "expected" / "batchconsumequeue" / "B9" / "0"
    assert not any(any(f.read_bytes()) for f in bcq.iterdir()), "the B9 message at 2147483647 never parsed"
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="")
    said = f"sets the reput at {b9['maxPhysicOffset']} (processOffset - 1, where a batch queue the cut emptied"
    assert said in text, text[-3000:]
    ours = tmp_path / "ours" / "batchconsumequeue" / "B9" / "0"
    assert not ours.is_dir() or not any(any(f.read_bytes()) for f in ours.iterdir())
