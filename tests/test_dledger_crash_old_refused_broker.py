"""A 5.x DLedger crash restart of a store converted in place whose start's reput (``recheckReputOffsetFromCq=true``,
every queue empty after a walk that queued nothing: the min offset, the first old ``commitlog/`` file's) meets a
record its message check refuses in that old file (a flipped byte of its magic code, ``damageMagic``).

``DLedgerCommitLog.getData`` below ``dividedCommitlogOffset`` is the base ``CommitLog.getData``: the old file's bytes
to its end, no committed position cutting them; ``DLedgerCommitLog.checkMessageAndReturnSize`` on the record fails
(size -1: neither its magic code nor, 48 bytes further, its born host and port read as a record), so
``DefaultMessageStore.ReputMessageService.doReput`` jumps to that old file's end and goes on at the next one: the
rest of that file gets no unit (:func:`store_format.dledger_crash_before.earlier_own_units`).  Written by the 5.5.1
broker through the JVM harness in ``tests/broker/`` (this module writes its one store itself): what the broker's
restart wrote, ``rebuild --as-restart`` byte for byte and ``verify``'s units lost.
"""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_runs import LINES, _as_restart, _dledger_prediction, _queued, _same_tree, _units
from broker_dledger_scenarios import (
    THOROUGH_CHECKPOINT,
    converted_old_reput_abort_scenarios,
    converted_queued_nothing_abort_scenario,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

_LINES_5 = [ln for ln in LINES if not ln.startswith("4")]
DAMAGED_PUT = 3   # the fourth old record, in the first old commitlog file
EXT_DAMAGED_PUT = 2   # the third old record, a T7/0 one
_MAGICS = (-626843481, -626843477)   # MessageDecoder.MESSAGE_MAGIC_CODE and MESSAGE_MAGIC_CODE_V2


def old_magic_scenario(line: str) -> dict:
    """``<line>-dledger-abort-converted-prepared-old-magic``: the ``-converted-prepared`` store (35 keyed messages
    in about 1.3 old commitlog files, then 40 prepared ones in the data files; DLedger's checkpoint three entries
    back) with a byte of the fourth old record's magic code flipped before the crash restart."""
    (sc,) = converted_queued_nothing_abort_scenario(line)
    return {**sc, "config": {**sc["config"], **THOROUGH_CHECKPOINT}, "damageMagic": DAMAGED_PUT, "reportQueues": True,
            "name": f"{line}-dledger-abort-converted-prepared-old-magic"}


def old_magic_ext_scenario(line: str) -> list[dict]:
    """``<line>-dledger-abort-converted-cut-emptied-ext-old-magic`` (5.5.1): the ``-converted-cut-emptied-ext``
    store (its first six old messages to T7/0, ext files of 10 units; the 5.5.1 cut deletes T7/0's only file, every
    queue empty) with a byte of the third old record's magic code flipped: the reput from the first old file puts
    ext units for T7's first two old records only (the rest of that file skipped), so the walk's T7 units put back
    point at ext units counted from two old records, not six."""
    return [{**sc, "damageMagic": EXT_DAMAGED_PUT, "name": f"{sc['name']}-old-magic"}
            for sc in converted_old_reput_abort_scenarios(line) if sc["name"].endswith("-cut-emptied-ext")]


STORES = bh.Stores({ln: [old_magic_scenario(ln)] for ln in _LINES_5},
                   "converted DLedger store(s)")


@pytest.fixture(scope="module")
def written(request, tmp_path_factory) -> dict:  # noqa: ANN001
    if not STORES.scenarios:
        pytest.skip("a 5.x line only: DLEDGER_LINES=5.5.1")
    return bh.write_lines(request, STORES, tmp_path_factory.mktemp("old-magic"))


def _old_file_records(old: Path) -> list[int]:
    """The record starts of an old commitlog file up to its blank (or the damaged magic code)."""
    data = old.read_bytes()
    at, out = 0, []
    while at + 8 <= len(data):
        size, magic = struct.unpack(">ii", data[at:at + 8])
        if size <= 0 or magic not in _MAGICS:   # the blank (its own magic code) or a damaged record
            break
        out.append(at)
        at += size
    return out


@pytest.mark.parametrize("line", _LINES_5)
def test_as_restart_after_a_crash_whose_reput_meets_a_bad_magic_code_in_an_old_commitlog_file(line, written,
                                                                                              tmp_path):
    """The broker's restart: every queue empty after the walk, the reput from the first old file, its check
    refusing the fourth old record (bad magic code) and jumping to that old file's end: the first three records
    and the second old file's ones get their units, the rest of the first old file none, then the data files
    (prepared messages: none).  ``rebuild --as-restart`` on the store as the restart found it writes the broker's
    consumequeue/ and index/ byte for byte; ``verify`` loses no unit the broker holds."""
    name = f"{line}-dledger-abort-converted-prepared-old-magic"
    r = written[name]
    w = r["written"]
    assert w.get("ok"), w.get("error")
    src = Path(r["scenario"]["dir"])
    old = sorted((src / "before" / "commitlog").iterdir())
    assert len(old) == 2, old
    damaged = int(w["damagedMagicRecord"])
    first = _old_file_records(old[0])   # the walk of the first old file stops at the damaged record
    data = old[0].read_bytes()
    assert damaged == int(old[0].name) + first[-1] + struct.unpack(">i", data[first[-1]:first[-1] + 4])[0] \
        and len(first) == DAMAGED_PUT, (first, damaged)
    # the DLedger check there reads 48 bytes further too (the born host and port): no record either
    assert struct.unpack(">i", data[damaged + 52:damaged + 56])[0] not in (*_MAGICS, -875286124)
    # what the broker put: the first old file's records before the damaged one and every record of the second
    # (fillPreBlank units, offset 0 and size 2147483647, before a queue's first unit past the skipped records)
    put = sorted(u[1] for u in _units(src / "expected" / "consumequeue") if u[2] != 2**31 - 1)
    second = [int(old[1].name) + a for a in _old_file_records(old[1])]
    assert put == sorted([int(old[0].name) + a for a in first] + second), (put, first, second)
    assert len(put) < _queued(r["scenario"]), "the rest of the first old file gets no unit"
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert "it begins in the old commitlog files" in err, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    p = _dledger_prediction(src, name, line, tmp_path)
    assert p["units_lost"] == 0, p
