"""``rebuild --as-restart`` where a 5.5.1 ``enableAcceleratedRecovery`` recovery begins inside a record (the
checkpoint's logicsPhysicalOffset a few bytes into it), accepts nothing there and cuts the commitlog at that offset,
and the start's second reput (``recheckReputOffsetFromCq=true``) walks the commitlog again from its min offset up
to that cut.  Checked against the broker's own restarts (4 KiB commitlog files; ``consumequeue/`` and ``index/``
deleted; an ``abort`` file).

``CommitLog.recoverAbnormally`` positions its first file's buffer at the checkpoint's offset, whose check fails at
once (no magic code there): ``processOffset`` is that offset, ``truncateDirtyFiles`` sets the file's write position
there.  ``doRecheckReputOffsetFromCq`` finds every queue empty and sets the reput at the min offset; its walk of the
cut's file from the file's start reads ``CommitLog.getData``'s slice up to the cut, and the record crossing it reads
past the slice's limit (``checkMessageAndReturnSize``: size -1), which ends the reput at the cut: that record is
neither queued nor indexed, every record before it is, with every key (the recovery indexed none).

* ``5.5.1-accel-inside-crash``: 40 single messages, the checkpoint 5 bytes into put 30's record.
* ``5.5.1-accel-inside-first-crash``: the same messages, the checkpoint 5 bytes into the third file, inside its
  first record: the reput queues the first two files only.
* ``5.5.1-accel-inside-magic-crash``: the checkpoint 5 bytes into put 33's record, put 31's magic code (in the
  same file, not its first record) damaged: the reput's parse of that file stops at put 31 (a master moves the
  reput to its slice's end, the cut), so it never reaches the cut; nothing from put 31 on is queued.

First what the broker did (its cut inside a record, its units, its index keys), then ``rebuild --as-restart`` on
``<dir>/before``: ``consumequeue/`` and ``index/`` byte for byte, and ``verify``'s restart prediction on
``<dir>/before`` (the cut, the second reput from the min offset: its unit and key counts).
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages
from test_restart_reput_before_recovery_more_broker import (
    INDEX,
    SIZE,
    _key_offsets,
    _queued_offsets,
    _second_reput_predicted,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()


def _scenarios() -> dict[str, list[dict]]:
    accel = {"mappedFileSizeCommitLog": str(SIZE), "recheckReputOffsetFromCq": "true",
             "enableAcceleratedRecovery": "true", **INDEX}
    g = Messages(188, ["T0", "T1", "T2"])
    singles = [g.one() for _ in range(40)]
    inside = {"name": "5.5.1-accel-inside-crash", "abort": True, "keepBefore": True, "messages": singles,
              "checkpointLogicsPhysicalOffset": {"put": 30, "add": 5}, "config": accel}
    return {"5.5.1": [inside,
                      {**inside, "name": "5.5.1-accel-inside-first-crash",
                       "checkpointLogicsPhysicalOffset": {"set": 2 * SIZE, "add": 5}},
                      {**inside, "name": "5.5.1-accel-inside-magic-crash", "damageMagic": 31,
                       "checkpointLogicsPhysicalOffset": {"put": 33, "add": 5}}]}


# -first (the checkpoint inside a file's first record) with the full suite only: -inside crosses the cut with a record
# the same way, inside its file
SCENARIOS = {line: bh.bounded(scs, ("-inside-first-crash",)) for line, scs in _scenarios().items()}
NAMES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store(s), each restarted after a crash", threads=1)


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it, our ``--as-restart`` rebuild and ``verify`` (once)."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_rebuilt_and_verified, every=True)


BLANK_MAGIC = bytes.fromhex("cbd43194")


def _records(d: Path) -> list[dict]:
    """Every record of ``d/before/commitlog`` by its totalSize, one of a damaged magic code too (offset, size,
    ``magic_ok``), up to each file's blank or zeros."""
    out = []
    for f in sorted((d / "before" / "commitlog").iterdir()):
        data, base, pos = f.read_bytes(), int(f.name), 0
        while pos + 8 <= len(data):
            total = int.from_bytes(data[pos:pos + 4], "big")
            if total <= 0 or data[pos + 4:pos + 8] == BLANK_MAGIC:
                break
            out.append({"offset": base + pos, "size": total,
                        "magic_ok": data[pos + 4:pos + 8] == bytes.fromhex("daa320a7")})
            pos += total
    return out


@pytest.mark.parametrize("name", NAMES)
def test_the_broker_cut_inside_a_record_and_queued_the_records_before_it(runs, name: str) -> None:
    """The broker's own files: the cut at the checkpoint's offset inside a record, every record before that one
    queued and indexed (before the damaged magic code's, with it), none from there on."""
    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    recs = _records(d)
    cut = w["maxPhyOffset"]
    assert cut == w["checkpointLogicsPhysicalOffset"], (cut, w["checkpointLogicsPhysicalOffset"])
    crossing = [x for x in recs if x["offset"] < cut < x["offset"] + x["size"]]
    assert len(crossing) == 1 and crossing[0]["offset"] == cut - 5, "the cut lies inside no record"
    if "-first-" in name:
        assert crossing[0]["offset"] == 2 * SIZE
    stop = crossing[0]["offset"]
    damaged = [x["offset"] for x in recs if not x["magic_ok"]]
    if "-magic-" in name:   # the damaged magic code lies in the cut's file, after its first record
        stop = w["damagedMagicRecord"]
        assert damaged == [stop] and stop % SIZE and stop - stop % SIZE == cut - cut % SIZE, (damaged, cut)
    else:
        assert not damaged
    before = [x["offset"] for x in recs if x["offset"] < stop]
    assert before and _queued_offsets(d) == before, "the broker queued other records than every one before the stop"
    # every record has a key (its uniqKey): the index holds those of the queued records alone
    assert sorted(set(_key_offsets(d).tolist())) == before


@pytest.mark.parametrize("name", NAMES)
def test_as_restart_gives_the_broker_s_files(runs, name: str) -> None:
    """``consumequeue/`` and ``index/``: the broker's restart's files byte for byte."""
    bh.restart_files_are_the_broker_s(runs[name])


@pytest.mark.parametrize("name", NAMES)
def test_verify_predicts_the_second_reput_up_to_the_cut(runs, name: str) -> None:
    """``verify`` on ``<dir>/before``: the broker's cut, and what the second reput from the commitlog's min offset
    writes up to it: every unit of the broker's queues, every key of its index."""
    _second_reput_predicted(runs[name])
