"""A crash restart of an ordinary store (no DLedger) over a queue whose only consume queue file is all zeros, on the
4.9.8 and 5.3.3 brokers, whose ``CommitLog.recoverAbnormally`` has no accelerated start: it walks from the last
commitlog file whose first record's store timestamp is at most the checkpoint's ``getMinTimestamp()``
(``min(physicMsgTimestamp, logicsMsgTimestamp) - 3000``, ``isMappedFileMatchedRecover``), else from the first file.
The 5.5.1 accelerated case is :mod:`test_restart_zeros_loaded_queue_broker`.

The shape (4 KiB commitlog files): puts 0 and 1 to T0/0 in file 0, T1/0 fillers until one opens file 1, puts 2
and 3 to T0/0 in file 1, then a 4 s pause and a last put to T1/0: the checkpoint's timestamps are the last put's,
so file 1's first record (stored about 4 s earlier) matches and the walk starts there, after the queue's first
two records.  T0/0's four units zeroed (``zeroQueueTail``: its one file stays at its full length), the queue
folders kept (``keepQueues``), an ``abort`` file.  ``ConsumeQueue.recover`` keeps the file at write position 0;
the walk's ``putMessagePositionInfo`` finds it (``getLastMappedFile``: no new file, so no ``fillPreBlank``) and
appends put 2's unit (queue offset 2: the mismatch with position 0 is only logged) at 0 and put 3's at 20.
``verify`` on ``before/`` must predict that (:func:`store_format.consumequeue.loaded_state`: a loaded file at write
position 0 is a file), not 40 and 60 after ``fillPreBlank`` units.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

SIZE = 4096   # mappedFileSizeCommitLog
PAUSE_MS = 4000   # past the checkpoint's 3 s: the walk starts at the file opened before the pause
# flushCommitLogLeastPages=0: each flush (every 500 ms) sets the checkpoint's physicMsgTimestamp (MappedFileQueue.flush
# takes the store timestamp with 0 pages only); with the default 4 pages these small stores leave it 0, and no file
# matches: the walk starts at the first file
CONFIG = {"mappedFileSizeCommitLog": str(SIZE), "mappedFileSizeConsumeQueue": "600", "maxHashSlotNum": "101",
          "maxIndexNum": "400", "flushCommitLogLeastPages": "0"}
BLANK_MAGIC = 0xCBD43194


def _t0(i: int) -> dict:
    return {"topic": "T0", "queueId": 0, "bodySize": 100, "keys": f"K{i}",
            "uniqKey": f"7F00000100002A9F00000000{i:08X}"}


def _filler(i: int, size: int = 1000) -> dict:
    return {"topic": "T1", "queueId": 0, "bodySize": size, "uniqKey": f"7F00000100002A9F00000001{i:08X}"}


def walk_shaped(first: list[dict], fillers: int, later: list[dict], last: dict) -> list[dict]:
    """``first`` in commitlog file 0, ``fillers`` T1/0 puts of 1000 bytes (enough to open file 1), ``later``, a
    :data:`PAUSE_MS` pause and ``last``: a crash restart's walk starts at file 1 on 4.9.8 and 5.3.3."""
    return [*first, *(_filler(i) for i in range(fillers)), *later, {"pauseMs": PAUSE_MS}, last]


def _scenarios(line: str) -> list[dict]:
    return [{"name": f"{line}-zeros-loaded-crash", "abort": True, "keepQueues": True, "keepBefore": True,
             "messages": walk_shaped([_t0(0), _t0(1)], 5, [_t0(2), _t0(3)], _filler(9, 100)), "config": CONFIG,
             "zeroQueueTail": [{"path": "consumequeue/T0/0", "units": 4, "unitSize": 20}]}]


LINES = ("4.9.8", "5.3.3")
SCENARIOS = {line: _scenarios(line) for line in LINES}
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store(s) with a queue whose only file is zeros, crash-restarted", threads=2)


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker's restart found it (``before/``) and what it did, with our ``verify`` of it."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_checked, every=True)


def records(commitlog: Path) -> list[dict]:
    """Every record of a commitlog folder (``offset``, ``size``, ``topic``, ``queueId``, ``queueOffset``,
    ``storeTimestamp``), read by their totalSize up to each file's blank or zeros (v1 records, IPv4 hosts, as the
    harness puts them)."""
    out = []
    for f in sorted(commitlog.iterdir()):
        data, base, at = f.read_bytes(), int(f.name), 0
        while at + 8 <= len(data):
            total = int.from_bytes(data[at:at + 4], "big")
            if total <= 0 or int.from_bytes(data[at + 4:at + 8], "big") == BLANK_MAGIC:
                break
            body = int.from_bytes(data[at + 84:at + 88], "big")
            tlen = data[at + 88 + body]
            out.append({"offset": base + at, "size": total, "queueId": int.from_bytes(data[at + 12:at + 16], "big"),
                        "queueOffset": int.from_bytes(data[at + 20:at + 28], "big"),
                        "storeTimestamp": int.from_bytes(data[at + 56:at + 64], "big"),
                        "topic": data[at + 89 + body:at + 89 + body + tlen].decode()})
            at += total
    return out


def walk_starts_at_file_1(d: Path) -> None:
    """The checkpoint the restart found (``before/checkpoint``: physicMsgTimestamp, logicsMsgTimestamp) makes
    ``isMappedFileMatchedRecover`` pick file 1, the last: its first record stored at least 3 s before both."""
    cp = (d / "before" / "checkpoint").read_bytes()
    least = min(int.from_bytes(cp[0:8], "big"), int.from_bytes(cp[8:16], "big")) - 3000
    recs = records(d / "before" / "commitlog")
    first = next(r for r in recs if r["offset"] >= SIZE)
    assert recs[-1]["offset"] < 2 * SIZE and first["offset"] == SIZE and 0 < first["storeTimestamp"] <= least, (
        first, least)


def units(path: Path) -> list[tuple[int, int]]:
    """(commitlog offset, size) of every 20-byte unit of a consume queue file, zeros included."""
    data = path.read_bytes()
    return [(int.from_bytes(data[i:i + 8], "big"), int.from_bytes(data[i + 8:i + 12], "big", signed=True))
            for i in range(0, len(data) - 19, 20)]


def queue_entry(v: dict, queue: str) -> dict:
    """``verify``'s restart prediction of a consume queue, with no note: the report answered and says it."""
    assert v["code"] in (0, 1) and v["report"] is not None, v["stderr"]
    p = v["report"]["restart"]
    assert p is not None and not v["report"]["restart_note"], v["report"].get("restart_note")
    q = {(x["layout"], x["queue"]): x for x in p["queues"]}.get(("consumequeue", queue))
    assert q is not None, f"verify does not list {queue}"
    return q


@pytest.mark.parametrize("line", LINES)
def test_the_broker_appended_the_walk_s_units_at_the_loaded_file_s_start(runs, line: str) -> None:
    """What the broker wrote: puts 0 and 1 in file 0, 2 and 3 in file 1; ``before/``'s T0/0 is file 0 of zeros;
    after the restart it holds puts 2 and 3 at 0 and 20 (the walk from file 1: no unit of puts 0 and 1, no
    ``fillPreBlank`` unit), nothing after; the queue ends at 40."""
    run = runs[f"{line}-zeros-loaded-crash"]
    d, w = Path(run["scenario"]["dir"]), run["written"]
    walk_starts_at_file_1(d)
    t0 = [(r["offset"], r["size"]) for r in records(d / "before" / "commitlog") if r["topic"] == "T0"]
    assert len(t0) == 4 and t0[1][0] < SIZE <= t0[2][0] < 2 * SIZE, t0
    f = f"{0:020d}"
    before = d / "before" / "consumequeue" / "T0" / "0"
    assert [p.name for p in before.iterdir()] == [f] and not (before / f).read_bytes().strip(b"\0")
    after = units(d / "expected" / "consumequeue" / "T0" / "0" / f)
    assert after[:2] == t0[2:] and set(after[2:]) == {(0, 0)}, after[:3]
    assert w["queuesAfterLoad"]["T0/0"]["maxOffset"] == 40, w["queuesAfterLoad"]["T0/0"]


@pytest.mark.parametrize("line", LINES)
def test_verify_predicts_the_appends_onto_the_loaded_empty_file(runs, line: str) -> None:
    """``verify``'s T0/0: the walk's two units appended, write position and max physical offset the broker's, the
    walk from file 1."""
    run = runs[f"{line}-zeros-loaded-crash"]
    q = queue_entry(run["verify"], "T0/0")
    s = run["written"]["queuesAfterLoad"]["T0/0"]
    assert (q["write_position"], q["max_physic_offset"]) == (s["maxOffset"], s["maxPhysicOffset"]), (q, s)
    assert q["units_appended_by_recovery"] == 2, q
    assert run["verify"]["report"]["restart"]["abnormal_dispatch_from"] == SIZE
