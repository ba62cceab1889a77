"""A 5.5.1 DLedger crash restart of a store converted in place whose start's reput (``recheckReputOffsetFromCq=true``,
every queue empty after a walk that queued nothing: the min offset, the first old ``commitlog/`` file's) meets a
record its message check refuses in that old file (a flipped byte of its magic code, ``damageMagic``) where the
DLedger check 48 bytes further parses a record: a well-formed T5 message (keys ``E5``) the harness plants there
(``plantBytes``), its PHYSICALOFFSET field the refused record's offset.

``DLedgerCommitLog.checkMessageAndReturnSize`` on the refused record (its second int no magic code, its first not
DLedger's blank -1) runs the base ``CommitLog.checkMessageAndReturnSize`` 48 bytes further, which parses the planted
message: ``ReputMessageService.doReput`` dispatches it (T5/0's unit at its PHYSICALOFFSET field, the request's
``commitLogOffset``, not where it starts; ``buildIndex`` skips its keys, below the index's ``endPhyOffset``), moves
on by its size + 48, checks on there (the old record's body: no record, size -1) and jumps to the end of what
``CommitLog.getData`` gave, the old file's end: the rest of that file gets no unit
(:func:`store_format.dledger_crash_before._old_goes_on`, ``DLedgerCrash.old_parsed``).  ``-old-magic-blank-48``:
a blank's header there (total size 8, ``CommitLog.BLANK_MAGIC_CODE``) and the message right after it: the blank's
empty request first (the unit (0, 0, 0) in ``consumequeue/0/``), the reput 48 bytes on, its next check 56 bytes past
the refused record, on the message.  Written by the 5.5.1 broker through the JVM harness in ``tests/broker/`` (this
module writes its stores itself): what the broker's restart wrote, ``rebuild --as-restart`` byte for byte and
``verify``'s units lost.
"""
from __future__ import annotations

import base64
import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_2gib import EMPTY_BLANK, embedded_message
from broker_dledger_files import ext_appended, ext_orphaned_as_the_broker, ext_recovered_end
from broker_dledger_runs import LINES, _as_restart, _dledger_prediction, _same_files, _same_tree, _units, _units_held
from test_dledger_crash_old_refused_broker import (
    DAMAGED_PUT,
    EXT_DAMAGED_PUT,
    _old_file_records,
    old_magic_ext_scenario,
    old_magic_scenario,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

_LINES_5 = [ln for ln in LINES if not ln.startswith("4")]
MSG = embedded_message(0)   # its PHYSICALOFFSET field written by the harness: the refused record's offset
FIELD = 28   # the PHYSICALOFFSET field in a message
EXT = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204"}   # ext files of ten units


def old_48_scenarios(line: str) -> list[dict]:
    """``<line>-dledger-abort-converted-prepared-old-magic-48``: the ``-old-magic`` store (the fourth old record's
    magic code flipped) with :data:`MSG` planted 48 bytes into that record, over its born host and the rest of its
    header and body; ``-old-magic-blank-48``: a blank's header there and :data:`MSG` right after it."""
    sc = old_magic_scenario(line)
    stem = sc["name"]
    return [{**sc, "name": f"{stem}-48", "plantBytes": {"put": DAMAGED_PUT, "add": 48, "offsetFieldAt": FIELD,
                                                        "bytes": base64.b64encode(MSG).decode()}},
            {**sc, "name": f"{stem}-blank-48",
             "plantBytes": {"put": DAMAGED_PUT, "add": 48, "offsetFieldAt": len(EMPTY_BLANK) + FIELD,
                            "bytes": base64.b64encode(EMPTY_BLANK + MSG).decode()}},
            {**sc, "name": f"{stem}-48-ext", "config": {**sc["config"], **EXT},
             "plantBytes": {"put": DAMAGED_PUT, "add": 48, "offsetFieldAt": FIELD,
                            "bytes": base64.b64encode(MSG).decode()}}]


def cut_ext_48_scenarios(line: str) -> list[dict]:
    """``<line>-dledger-abort-converted-cut-emptied-ext-old-magic-48`` (5.5.1): the ``-cut-emptied-ext-old-magic``
    store (the 5.5.1 cut left T7/0, the queue the walk wrote, no file; the third old record, a T7/0 one, refused)
    with :data:`MSG` planted 48 bytes into the refused record."""
    return [{**sc, "name": f"{sc['name']}-48", "plantBytes": {"put": EXT_DAMAGED_PUT, "add": 48, "offsetFieldAt": FIELD,
                                                              "bytes": base64.b64encode(MSG).decode()}}
            for sc in old_magic_ext_scenario(line)]


STORES = bh.Stores({ln: [*old_48_scenarios(ln), *cut_ext_48_scenarios(ln)] for ln in _LINES_5},
                   "converted DLedger store(s)")


@pytest.fixture(scope="module")
def written(request, tmp_path_factory) -> dict:  # noqa: ANN001
    if not STORES.scenarios:
        pytest.skip("a 5.x line only: DLEDGER_LINES=5.5.1")
    return bh.write_lines(request, STORES, tmp_path_factory.mktemp("old-48"))


def _index_offsets(expected: Path, slots: int) -> list[int]:
    """The commitlog offsets of every entry of the broker's index files."""
    out = []
    for f in sorted((expected / "index").iterdir()):
        data = f.read_bytes()
        at = 40 + 4 * slots
        out += [struct.unpack(">q", data[at + 20 * k + 4:at + 20 * k + 12])[0]
                for k in range(1, struct.unpack(">i", data[36:40])[0])]
    return out


def _check(line: str, written: dict, tmp_path: Path, blank: bool, ext: bool = False) -> None:
    name = f"{line}-dledger-abort-converted-prepared-old-magic-{'blank-' if blank else ''}48{'-ext' if ext else ''}"
    r = written[name]
    w = r["written"]
    assert w.get("ok"), w.get("error")
    src = Path(r["scenario"]["dir"])
    old = sorted((src / "before" / "commitlog").iterdir())
    assert len(old) == 2, old
    damaged = int(w["damagedMagicRecord"])
    first = _old_file_records(old[0])   # up to the damaged record
    data = old[0].read_bytes()
    size = struct.unpack(">i", data[first[-1]:first[-1] + 4])[0]
    assert damaged == int(old[0].name) + first[-1] + size and len(first) == DAMAGED_PUT, (first, damaged)
    at = damaged - int(old[0].name)
    # the DLedger check there: its second int no magic code, its first (the record's size) not -1, so the base
    # check 48 bytes further, on what the harness planted: the message whose PHYSICALOFFSET field is `damaged`
    assert int(w["plantedAt"]) == damaged + 48
    head = EMPTY_BLANK if blank else b""
    msg = MSG[:FIELD] + struct.pack(">q", damaged) + MSG[FIELD + 8:]
    assert data[at + 48:at + 48 + len(head) + len(msg)] == head + msg
    assert struct.unpack(">i", data[at:at + 4])[0] > len(head) + len(msg) + 48 + 56, "the planted bytes in the record"
    # what the broker put: the first old file's records before the damaged one, T5/0's unit at the field, every
    # record of the second old file (fillPreBlank units aside)
    units = _units(src / "expected" / "consumequeue")
    t5 = [u for u in units if u[0] == "T5/0"]
    assert [u[:3] for u in t5] == [("T5/0", damaged, len(msg))] and (t5[0][3] < 0 if ext else t5[0][3] == 0), t5
    put = sorted(u[1] for u in units if u[2] != 2**31 - 1 and u[0] != "T5/0")
    second = [int(old[1].name) + a for a in _old_file_records(old[1])]
    assert put == sorted([int(old[0].name) + a for a in first] + second), (put, first, second)
    empty = src / "expected" / "consumequeue" / "0" / f"{0:020d}"
    if blank:   # the blank's empty request: topic "" queue 0's unit (0, 0, 0)
        assert empty.is_file() and not any(empty.read_bytes()), "the empty request's file"
    else:
        assert not empty.exists()
    # E5 not indexed: the message's field lies below the index's endPhyOffset (the walk indexed the data files)
    slots = int(next(ln for ln in (src / "broker.conf").read_text().splitlines()
                     if ln.startswith("maxHashSlotNum=")).split("=")[1])
    offsets = _index_offsets(src / "expected", slots)
    assert offsets and damaged not in offsets and min(offsets) > int(old[1].name), offsets[:5]
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    start = damaged + 48 + len(head)
    parsed = f"a blank at {damaged + 48}, its empty request, " if blank else ""
    assert f"refuses the record at {damaged} in an old commitlog file and, 48 bytes further" in err \
        and f"({parsed}{start} to {start + len(msg)})" in err, err[-3000:]
    _same_tree(src / "expected", tmp_path / name)
    if ext:   # T5's ext unit (its address the unit's tags code) after the old records' before it
        _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
        assert (src / "expected" / "consumequeue_ext" / "T5" / "0").is_dir()
    p = _dledger_prediction(src, name, line, tmp_path)
    assert p["units_lost"] == 0, p


@pytest.mark.parametrize("line", _LINES_5)
def test_as_restart_whose_reput_parses_a_message_48_bytes_past_a_refused_record_in_an_old_file(line, written,
                                                                                               tmp_path):
    """The broker's restart of the -old-magic-48 store: the reput from the first old file refuses its fourth record
    (bad magic code), parses the planted T5 message 48 bytes further (T5/0's unit at its PHYSICALOFFSET field, the
    refused record's offset; E5 not indexed, below endPhyOffset), fails on the old record's body after it and goes
    on at the second old file.  ``rebuild --as-restart`` writes the broker's consumequeue/ and index/ byte for byte;
    ``verify`` loses no unit the broker holds (the planted field above the log:
    :mod:`test_dledger_crash_old_48_more_broker`)."""
    _check(line, written, tmp_path, blank=False)


@pytest.mark.parametrize("line", _LINES_5)
def test_as_restart_whose_reput_dispatches_a_blank_48_bytes_past_a_refused_record_in_an_old_file(line, written,
                                                                                                 tmp_path):
    """The -old-magic-blank-48 store: a blank's header 48 bytes past the refused record, the T5 message after it:
    the broker dispatches the blank's empty request (``consumequeue/0/``'s unit (0, 0, 0)), then, its next check
    56 bytes past the record, the message; ``rebuild --as-restart`` byte for byte (the empty request's file too)."""
    _check(line, written, tmp_path, blank=True)


@pytest.mark.parametrize("line", _LINES_5)
def test_as_restart_whose_reput_parses_a_message_48_bytes_past_a_refused_record_in_an_old_file_with_ext_files(
        line, written, tmp_path):
    """The -old-magic-48 store with ext files (``enableConsumeQueueExt=true``): the broker puts T5's ext unit
    (``ConsumeQueueExt.put``) and T5/0's unit holding its address, the old records' likewise, the walk's prepared
    messages none; ``rebuild --as-restart`` writes ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for
    byte."""
    _check(line, written, tmp_path, blank=False, ext=True)


@pytest.mark.parametrize("line", [ln for ln in _LINES_5 if ln.startswith("5.5")])
def test_as_restart_after_a_cut_whose_reput_parses_a_message_48_bytes_past_a_refused_record_in_an_old_file(
        line, written, tmp_path):
    """The -cut-emptied-ext-old-magic-48 store (5.5.1): every queue empty after the cut (T7/0 left no file), the
    reput from the first old file refusing its third record (a T7/0 one), parsing the planted T5 message 48 bytes
    further (T5/0's unit at the refused record's offset, holding its ext unit's address), then on at the second old
    file: T7/0 gets its first two old records' units, then the walk's three appended after them, as without the
    message.  ``rebuild --as-restart`` writes consumequeue/, consumequeue_ext/ and index/ byte for byte; verify's
    figures are the broker's (the planted message's topic T7 instead: :mod:`test_dledger_crash_old_48_more_broker`)."""
    name = f"{line}-dledger-abort-converted-cut-emptied-ext-old-magic-48"
    r = written[name]
    w = r["written"]
    assert w.get("ok"), w.get("error")
    src = Path(r["scenario"]["dir"])
    old = sorted((src / "before" / "commitlog").iterdir())
    damaged = int(w["damagedMagicRecord"])
    first = _old_file_records(old[0])
    assert len(first) == EXT_DAMAGED_PUT and damaged < int(old[1].name) and int(w["plantedAt"]) == damaged + 48
    assert int(w["truncateDirtyLogicFilesAt"]) >= 0, w
    at = damaged - int(old[0].name)
    msg = MSG[:FIELD] + struct.pack(">q", damaged) + MSG[FIELD + 8:]
    assert old[0].read_bytes()[at + 48:at + 48 + len(msg)] == msg
    units = _units(src / "expected" / "consumequeue")
    t5 = [u for u in units if u[0] == "T5/0"]
    assert [u[:3] for u in t5] == [("T5/0", damaged, len(msg))] and t5[0][3] < 0, t5
    t7 = [u for u in units if u[0] == "T7/0"]
    assert [u[1] for u in t7[:2]] == [int(old[0].name) + a for a in first], (t7, first)
    assert len(t7) == EXT_DAMAGED_PUT + 3 and all(u[1] >= int(old[1].name) for u in t7[2:]), t7
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert f"refuses the record at {damaged} in an old commitlog file and, 48 bytes further" in err \
        and "the cut left T7/0 with no file" in err, err[-3000:]
    _same_tree(src / "expected", tmp_path / name)
    _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
    # verify's figures: the broker's, the planted T5 message (no message of the log, which verify's reference
    # rebuild holds no unit of) left out
    p = _dledger_prediction(src, name, line, tmp_path)
    assert (p["units_dispatched_again"], p["units_lost"]) == (_units_held(src / "expected" / "consumequeue") - 1, 0), p
    ours = {f["queue"]: f["ext_units_appended"] for f in p["queues"]}
    broker = {q: ext_appended(w, src, q, ext_recovered_end(src, q)) for q in ("T7/0",)}
    assert {q: ours.get(q, 0) for q in broker} == broker and ours.get("T5/0", 0) == 0, (ours, broker)
    orphaned = ext_orphaned_as_the_broker(p, w, src, check=False)
    assert all(v == b for q, (v, b) in orphaned.items() if q != "T5/0") and orphaned["T5/0"][1] == 0, orphaned
