"""A 5.5.1 DLedger crash restart whose start's reput, set at 2147483647 inside an entry of a data file before the
walk's, goes on before the walk's data file and appends a record of queue offset 0 to a queue that was on disk
before the walk (``DLEDGER_2GIB=1`` only: some 2.3 GB of data files, its ``before/`` copy as much), checked against
the broker.

``-past-2gib-before-t9-first-on-disk`` (:func:`past_2gib_before_t9_on_disk_scenario`): ``-past-2gib-before-t9-first``
(``tests/test_dledger_2gib_before_more_broker.py``) whose store holds, when it restarts, a T9 consume queue file of one
``fillPreBlank`` unit and zeros (as a crash restart of this shape leaves it: the walk's unit cut), the other queues'
files gone.  ``ConsumeQueue.recover`` loads that unit (offset 0, size 2147483647: a unit it accepts), max 2147483647,
write position 20; the walk's T9 unit (queue offset 1) goes to 20, ``truncateDirtyLogicFiles`` cuts it again: the
state the walk alone leaves on a store without the file.  The reput from 2147483647 then does as in
``-past-2gib-before-t9-first``: it appends the 23rd data file's T9 unit (queue offset 0) at 20 and drops the walk's.
``verify`` (which reads the on-disk queue) predicts it: :func:`store_format.dledger_crash_before.appended_before`
with ``QueueCut.held_cut`` (the on-disk state after the cut, ``QueuesOnDisk.max_after_cut``); ``rebuild
--as-restart`` writes the broker's files byte for byte.

``-past-2gib-before-t9-first-on-disk-zeros``: the same with T9's file all zeros (units that never reached the disk).
``ConsumeQueue.recover`` keeps that file empty (max -1, write position 0) and, the file not created in this run
(``MappedFile.isFirstCreateInQueue``), ``putMessagePositionInfo`` writes no ``fillPreBlank`` units: the walk's T9 unit
(queue offset 1) goes at 0 ("logic queue order maybe wrong"), the cut deletes the file, no queue keeps a max, and the
reput starts at the commitlog's min offset: not the shape above.  ``verify`` predicts it
(``QueuesOnDisk.zeros_queues``, ``DLedgerCrash.anew``: every queue written anew from the reput's start, the keys from
the walk's).
"""
from __future__ import annotations

import base64

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    FILL_PRE_BLANK_UNIT,
    LINE,
    NEEDS_2GIB,
    as_restart_matches_broker,
    held_units,
    queued_messages,
    verify_restart,
    written,
)
from broker_dledger_scenarios import PAST_2GIB_FILE
from test_dledger_2gib_before_more_broker import past_2gib_before_t9_first_scenario

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

CQ_FILE = 6_000_000   # past_2gib_before_abort_scenario's mappedFileSizeConsumeQueue
T9_FILE = f"consumequeue/T9/0/{0:020d}"
ON_DISK = FILL_PRE_BLANK_UNIT + bytes(CQ_FILE - len(FILL_PRE_BLANK_UNIT))


def past_2gib_before_t9_on_disk_scenario(line: str, file: bytes = ON_DISK, name: str = "-on-disk") -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-on-disk`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_more_broker.past_2gib_before_t9_first_scenario` whose store holds, when it
    restarts, T9's first consume queue file with one ``fillPreBlank`` unit then zeros (``plantFiles``, after the
    harness deleted the queue folders); ``file``, ``name``: other bytes there, another name suffix."""
    sc = past_2gib_before_t9_first_scenario(line)
    return {**sc, "name": sc["name"] + name, "plantFiles": {T9_FILE: base64.b64encode(file).decode()}}


def _units(src, topic: str) -> list[bytes]:  # noqa: ANN001
    files = sorted((src / "expected" / "consumequeue" / topic / "0").iterdir())
    return [b[i:i + 20] for f in files for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20)]


def test_crash_restart_whose_reput_before_the_walk_appends_to_a_queue_on_disk(tmp_path):
    """The 5.5.1 broker loads T9's on-disk ``fillPreBlank`` unit, and its cut leaves that state again (max
    2147483647, write position 20); the reput appends the 23rd data file's T9 unit (queue offset 0) at 20 and drops
    the walk's (queue offset 1, below the write position then).  ``verify`` on the store as that restart found it
    predicts T9's state after the load and its unit lost, every queue's units lost and the index keys put again as
    the broker's files show them; ``rebuild --as-restart`` writes ``consumequeue/`` and ``index/`` byte for byte."""
    sc = past_2gib_before_t9_on_disk_scenario(LINE)
    w, src = written(sc, tmp_path)
    # what the broker found and wrote: only T9's planted file on disk, the data files as -past-2gib-before-t9-first's
    queues = sorted(p.relative_to(src / "before").as_posix() for p in (src / "before" / "consumequeue").rglob("*")
                    if p.is_file())
    assert queues == [T9_FILE] and (src / "before" / T9_FILE).read_bytes() == ON_DISK, queues
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and all(int(f.name) == k * PAST_2GIB_FILE for k, f in enumerate(data)), data
    assert int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load = w["queuesAfterLoad"]["T9/0"]   # after the load, the walk and the cut: the fillPreBlank unit only
    assert (int(load["maxPhysicOffset"]), int(load["maxOffset"]), load["files"]) == (BLANK_MAX, 20, [f"{0:020d}"])
    t9 = _units(src, "T9")
    assert t9[0] == FILL_PRE_BLANK_UNIT and int.from_bytes(t9[1][:8], "big") == int(data[22].name) + \
        ENTRY_HEADER_SIZE and not any(b"".join(t9[2:])), ("the 23rd file's T9 unit appended, the walk's dropped",
                                                           [u.hex() for u in t9[:3]])
    # verify: units lost (all queues) and index keys as the broker's files hold them; T9's own state and unit lost
    as_restart_matches_broker(src, tmp_path, sc, w)
    p = verify_restart(src, tmp_path / "again")
    assert p is not None
    (q,) = [q for q in p["queues"] if q["queue"] == "T9/0"]
    t9_messages = sum(m.get("topic") == "T9" for m in sc["messages"])
    held = sum(int.from_bytes(u[8:12], "big") not in (0, BLANK_MAX) for u in t9)
    assert (q["max_physic_offset"], q["write_position"], q["units_lost"]) == (
        int(load["maxPhysicOffset"]), int(load["maxOffset"]), t9_messages - held), (q, p["notes"])


def test_crash_restart_with_an_empty_queue_file_on_disk_writes_every_queue_anew(tmp_path):
    """T9's file on disk all zeros: the 5.5.1 broker's walk puts T9's unit at 0 (no ``fillPreBlank`` unit before it),
    its cut deletes the file (no queue left a file: the reput from the commitlog's min offset, 0, puts back every
    queue from its start); ``verify`` predicts every queue's units lost (from the reput's start) and the index keys
    put again (from the walk's start) as the broker's files hold them (``DLedgerCrash.anew``)."""
    sc = past_2gib_before_t9_on_disk_scenario(LINE, bytes(CQ_FILE), "-on-disk-zeros")
    w, src = written(sc, tmp_path)
    assert (src / "before" / T9_FILE).read_bytes() == bytes(CQ_FILE)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load = w["queuesAfterLoad"]["T9/0"]   # the cut deleted the file the walk's unit went into at 0
    assert (int(load["maxPhysicOffset"]), load["files"]) == (-1, []), load
    t9 = _units(src, "T9")   # the reput from 0: the 23rd file's T9 unit at 0, no fillPreBlank unit
    assert int.from_bytes(t9[0][:8], "big") == int(data[22].name) + ENTRY_HEADER_SIZE, [u.hex() for u in t9[:2]]
    assert sorted(w["queuesAfterDispatch"]) == ["T0/0", "T8/0", "T9/0"], w["queuesAfterDispatch"]
    # verify on the store as the restart found it: every queue's units lost and the index keys put again as the
    # broker's files hold them (rebuild --as-restart starts without the file of zeros: not this restart)
    p = verify_restart(src, tmp_path)
    assert p is not None
    held = held_units(src, ends=w["queuesAfterDispatch"], leave_out="T5")
    assert p["units_lost"] == queued_messages(sc) - held, (queued_messages(sc), held, p["notes"])
    keys = sum(int.from_bytes(f.read_bytes()[36:40], "big") - 1 for f in (src / "expected" / "index").iterdir())
    assert p["index_keys_put_again"] == keys, (keys, p["index_keys_put_again"], p["notes"])
