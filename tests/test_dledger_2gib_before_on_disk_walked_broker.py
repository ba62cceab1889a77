"""A 5.5.1 DLedger crash restart whose start's reput, set at 2147483647 inside an entry of a data file before the
walk's, goes on before the walk's data file and appends a record of queue offset 0 to a queue that was on disk
before the walk holding the walk's first unit too (``DLEDGER_2GIB=1`` only: some 2.3 GB of data files, its
``before/`` copy as much), checked against the broker.

``-past-2gib-before-t9-first-on-disk-walked`` (:func:`on_disk_walked_scenario`): ``-past-2gib-before-t9-first-on-disk``
(``tests/test_dledger_2gib_before_on_disk_broker.py``) whose T9 consume queue file on disk holds, after its
``fillPreBlank`` unit, the walk's T9 unit (queue offset 1) at 20, zeros after: as if the broker had flushed it before
the crash (the harness's ``plantUnits`` names the walk's record by its put).  ``ConsumeQueue.recover`` loads both
units (max: the walk's unit's end, write position 40); the walk's ``putMessagePositionInfo`` skips that unit (its end
at or below the max: "Maybe try to build consume queue repeatedly"); ``truncateDirtyLogicFiles(processOffset)`` keeps
the ``fillPreBlank`` unit (offset 0, below it) and stops at the walk's unit (at or past it): max 2147483647, write
position 20, the state ``-on-disk`` leaves.  The reput from 2147483647 then appends the 23rd data file's T9 unit
(queue offset 0) at 20 and drops the walk's, as there.  ``verify`` (:func:`store_format.dledger_crash_before.
appended_before` with ``QueueCut.held_cut`` from ``QueuesOnDisk.max_after_cut``, which dispatches the walk's units
onto the loaded files before the cut) predicts it; ``rebuild --as-restart`` writes the broker's files byte for byte.
"""
from __future__ import annotations

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    FILL_PRE_BLANK_UNIT,
    LINE,
    NEEDS_2GIB,
    as_restart_matches_broker,
    verify_restart,
    written,
)
from broker_dledger_scenarios import PAST_2GIB_FILE
from test_dledger_2gib_before_more_broker import past_2gib_before_t9_first_scenario

from store_format.dledger import ENTRY_HEADER_SIZE
from store_format.layout import OFF_QUEUE_OFFSET

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

CQ_FILE = 6_000_000   # past_2gib_before_abort_scenario's mappedFileSizeConsumeQueue
T9_FILE = f"consumequeue/T9/0/{0:020d}"


def on_disk_walked_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-on-disk-walked`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_more_broker.past_2gib_before_t9_first_scenario` whose store holds, when it
    restarts, T9's first consume queue file with one ``fillPreBlank`` unit, then the unit of the last put (the walk's
    T9 record: its commitlog offset, its size, tags code 0 as the puts' T9 messages carry no tags), then zeros
    (``plantUnits``, after the harness deleted the queue folders)."""
    sc = past_2gib_before_t9_first_scenario(line)
    assert sc["messages"][-1]["topic"] == "T9"
    units = [{"offset": 0, "size": BLANK_MAX, "tagsCode": 0}, {"put": len(sc["messages"]) - 1, "tagsCode": 0}]
    return {**sc, "name": sc["name"] + "-on-disk-walked",
            "plantUnits": {T9_FILE: {"fileSize": CQ_FILE, "units": units}}}


def _units(root, topic: str) -> list[bytes]:  # noqa: ANN001
    files = sorted((root / "consumequeue" / topic / "0").iterdir())
    return [b[i:i + 20] for f in files for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20)]


def test_crash_restart_whose_queue_on_disk_holds_the_walks_unit_too(tmp_path):
    """The 5.5.1 broker loads T9's on-disk ``fillPreBlank`` unit and the walk's unit after it (max that unit's end,
    write position 40), its walk skips that unit and its cut leaves T9 as ``-on-disk`` does (max 2147483647, write
    position 20); the reput from 2147483647 appends the 23rd data file's T9 unit (queue offset 0) at 20, the walk's
    unit dropped.  ``verify`` on the store as that restart found it predicts T9's state after the load, its unit lost,
    every queue's units lost and the index keys put again as the broker's files show them; ``rebuild --as-restart``
    writes ``consumequeue/`` and ``index/`` byte for byte."""
    sc = on_disk_walked_scenario(LINE)
    w, src = written(sc, tmp_path)
    # what the broker found: only T9's planted file on disk, a fillPreBlank unit, the walk's T9 record's unit, zeros
    queues = sorted(p.relative_to(src / "before").as_posix() for p in (src / "before" / "consumequeue").rglob("*")
                    if p.is_file())
    assert queues == [T9_FILE], queues
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and all(int(f.name) == k * PAST_2GIB_FILE for k, f in enumerate(data)), data
    assert int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    planted = (src / "before" / T9_FILE).read_bytes()
    walk_unit = planted[20:40]
    at, size = int.from_bytes(walk_unit[:8], "big"), int.from_bytes(walk_unit[8:12], "big")
    assert len(planted) == CQ_FILE and planted[:20] == FILL_PRE_BLANK_UNIT and not any(planted[40:])
    with data[23].open("rb") as f:   # the walk's data file: the unit names its T9 record of queue offset 1
        f.seek(at - int(data[23].name))
        record = f.read(size)
    assert int(data[23].name) < at and int.from_bytes(record[:4], "big") == size and b"\x02T9" in record and \
        int.from_bytes(record[OFF_QUEUE_OFFSET:OFF_QUEUE_OFFSET + 8], "big") == 1, (at, size, record[:40].hex())
    assert at >= int(w["truncateDirtyLogicFilesAt"]), (at, w["truncateDirtyLogicFilesAt"])   # past the cut
    # after the load, the walk and the cut: the fillPreBlank unit only (the walk's unit cut again); the reput
    # starts at the least max the queues kept (recheckReputOffsetFromCq): T9's, 2147483647, the only queue
    load = w["queuesAfterLoad"]
    assert sorted(load) == ["T9/0"], sorted(load)
    assert (int(load["T9/0"]["maxPhysicOffset"]), int(load["T9/0"]["maxOffset"]), load["T9/0"]["files"]) == (
        BLANK_MAX, 20, [f"{0:020d}"]), load["T9/0"]
    t9 = _units(src / "expected", "T9")   # the 23rd file's T9 unit appended at 20 (the reput before the walk's file)
    assert t9[0] == FILL_PRE_BLANK_UNIT and int.from_bytes(t9[1][:8], "big") == int(data[22].name) + \
        ENTRY_HEADER_SIZE and not any(b"".join(t9[2:])), ("the 23rd file's T9 unit appended, the walk's dropped",
                                                           [u.hex() for u in t9[:3]])
    assert t9[1][12:] == walk_unit[12:], "the puts' T9 units' tags code, as planted"
    # verify: units lost (all queues) and index keys as the broker's files hold them; T9's own state and unit lost
    as_restart_matches_broker(src, tmp_path, sc, w)
    p = verify_restart(src, tmp_path / "again")
    assert p is not None
    (q,) = [q for q in p["queues"] if q["queue"] == "T9/0"]
    t9_messages = sum(m.get("topic") == "T9" for m in sc["messages"])
    held = sum(int.from_bytes(u[8:12], "big") not in (0, BLANK_MAX) for u in t9)
    assert (q["max_physic_offset"], q["write_position"], q["units_lost"]) == (
        BLANK_MAX, 20, t9_messages - held), (q, p["notes"])
