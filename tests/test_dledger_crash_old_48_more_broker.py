"""A converted store's old-file refusal whose DLedger check 48 bytes further parses a message the start's reput
dispatches where :mod:`test_dledger_crash_old_48_broker` refused it.

``<line>-dledger-abort-converted-prepared-old-magic-48-keyed``: the ``-old-magic-48`` store whose planted T5 message
(keys ``E5``) holds a PHYSICALOFFSET field above every record of the log (:data:`ABOVE`):
``IndexService.buildIndex`` puts ``E5`` at that field (the request's ``commitLogOffset``, not below the index's
``endPhyOffset``, which the walk's last indexed record left) and moves ``endPhyOffset`` there, so it skips every
record after it (the rest of the old files and the walk's records again, its last indexed one too).
``<line>-dledger-abort-converted-cut-emptied-ext-old-magic-48-t7`` (5.5.1): the ``-cut-emptied-ext-old-magic-48``
store whose planted message goes to T7/0 at queue offset 2 (the refused record's own), the queue the walk wrote and
the cut left with no file (``ConsumeQueue.correctMinOffset``: max -1): the reput writes T7/0 anew from the first old
file, its first two old records, the parsed message (its ext unit first), then the walk's records, each appended at
the write position with its ext unit's address.
Written by the 5.5.1 (and 5.3.3 for the first) broker through the JVM harness in ``tests/broker/``: what the
broker's restart wrote, ``rebuild --as-restart`` byte for byte and ``verify``'s figures.
"""
from __future__ import annotations

import base64
import contextlib
import io
import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_2gib import embedded_message
from broker_dledger_files import ext_appended, ext_orphaned_as_the_broker, ext_recovered_end
from broker_dledger_runs import (
    BROKER_LINE,
    LINES,
    _as_restart,
    _dledger_prediction,
    _same_files,
    _same_tree,
    _units,
    _units_held,
)
from test_dledger_crash_old_48_broker import FIELD, _index_offsets
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
ABOVE = 2**40   # the keyed store's planted PHYSICALOFFSET field: above every record of the log
KEYED = embedded_message(ABOVE)
T7 = embedded_message(0, topic=b"T7", queue_offset=EXT_DAMAGED_PUT)   # its field: the refused record's offset


def more_48_scenarios(line: str) -> list[dict]:
    """The keyed store on every 5.x line, the T7 one on 5.5.1 (its cut: module docstring)."""
    sc = old_magic_scenario(line)
    out = [{**sc, "name": f"{sc['name']}-48-keyed",
            "plantBytes": {"put": DAMAGED_PUT, "add": 48, "bytes": base64.b64encode(KEYED).decode()}}]
    if line.startswith("5.5"):
        out += [{**e, "name": f"{e['name']}-48-t7",
                 "plantBytes": {"put": EXT_DAMAGED_PUT, "add": 48, "offsetFieldAt": FIELD,
                                "bytes": base64.b64encode(T7).decode()}} for e in old_magic_ext_scenario(line)]
    return out


SCENARIOS = {line: more_48_scenarios(line) for line in _LINES_5}
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "converted DLedger store(s), old-file refusal 48")


@pytest.fixture
def runs(request) -> dict[str, dict]:  # noqa: ANN001
    """Every scenario as the broker wrote and restarted it (once a session)."""
    if not SCENARIOS:
        pytest.skip("a 5.x line only: DLEDGER_LINES=5.5.1")
    return bh.written_once(request, _RUNS, STORES, every=True)


def _index_header(expected: Path) -> list[tuple[int, int]]:
    """Each index file's (beginPhyOffset, endPhyOffset), in name order."""
    return [struct.unpack(">qq", f.read_bytes()[16:32]) for f in sorted((expected / "index").iterdir())]


def _reference_keys(src: Path, line: str, tmp_path: Path, lo: int, hi: int) -> int:
    """The keys at commitlog offsets in [lo, hi) of ``verify``'s reference, the ordinary rebuild of ``before/``
    (its index of the committed records: the prepared messages' keys as it reads them)."""
    from pipelines.cli import main
    err, printed = io.StringIO(), io.StringIO()
    out = tmp_path / "reference"
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(printed):
        code = main(["rebuild", "--store", str(bh.copy_store(src / "before", tmp_path / "ref-store")), "--out",
                     str(out), "--config", str(src / "broker.conf"), "--broker-version", BROKER_LINE[line],
                     "--split-size", "4k", "--no-tables"])
    assert code == 0, err.getvalue()[-2000:]
    return sum(lo <= o < hi for o in _index_offsets(out, _slots(src)))


def _slots(src: Path) -> int:
    return int(next(ln for ln in (src / "broker.conf").read_text().splitlines()
                    if ln.startswith("maxHashSlotNum=")).split("=")[1])


@pytest.mark.parametrize("line", _LINES_5)
def test_as_restart_whose_reput_parses_a_keyed_message_above_the_index_48_bytes_past_a_refused_record(
        line, runs, tmp_path):
    """The -old-magic-48-keyed store: the broker indexes E5 at the planted field (2**40), above the index's
    endPhyOffset, and then nothing more (every record after it below the new endPhyOffset: the walk's last indexed
    record not again); T5/0's unit at the field.  ``rebuild --as-restart`` byte for byte; ``verify``'s figures."""
    name = f"{line}-dledger-abort-converted-prepared-old-magic-48-keyed"
    r = runs[name]
    w = r["written"]
    src = Path(r["scenario"]["dir"])
    old = sorted((src / "before" / "commitlog").iterdir())
    damaged = int(w["damagedMagicRecord"])
    first = _old_file_records(old[0])
    assert len(first) == DAMAGED_PUT and int(w["plantedAt"]) == damaged + 48, (first, w)
    at = damaged - int(old[0].name)
    assert old[0].read_bytes()[at + 48:at + 48 + len(KEYED)] == KEYED
    units = _units(src / "expected" / "consumequeue")
    assert [u[:3] for u in units if u[0] == "T5/0"] == [("T5/0", ABOVE, len(KEYED))], units
    offsets = _index_offsets(src / "expected", _slots(src))
    # E5 at the field, the last entry, endPhyOffset there: nothing indexed after it (the walk's last indexed record
    # not again: its offset below the field)
    assert offsets[-1] == ABOVE and offsets.count(ABOVE) == 1, offsets[-5:]
    assert _index_header(src / "expected")[-1][1] == ABOVE and min(offsets) >= int(old[1].name) + old[1].stat().st_size
    last = offsets[-2]
    assert offsets.count(last) == offsets.index(ABOVE) - offsets.index(last), "the walk's last indexed record once"
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    p = _dledger_prediction(src, name, line, tmp_path)
    # verify's keys: the walk's (from its data file, not the reput's start: the old records lie below endPhyOffset),
    # E5's, none after it (the broker's index: module docstring; its reference indexes the committed records only)
    start = int(old[1].name) + old[1].stat().st_size
    assert p["units_lost"] == 0, p
    assert p["index_keys_put_again"] == _reference_keys(src, line, tmp_path, start, 2**62) + 1, p["notes"]
    assert any("takes 1 of" in n and f"({ABOVE})" in n for n in p["notes"]), p["notes"]


@pytest.mark.parametrize("line", [ln for ln in _LINES_5 if ln.startswith("5.5")])
def test_as_restart_after_a_cut_whose_reput_parses_a_message_for_the_cut_queue_48_bytes_past_a_refused_record(
        line, runs, tmp_path):
    """The -cut-emptied-ext-old-magic-48-t7 store (5.5.1): T7/0, emptied by the cut, written anew from the first old
    file: its two old records' units, the parsed T7 message's unit (the refused record's offset, its ext unit's
    address), then the walk's three; ``rebuild --as-restart`` writes consumequeue/, consumequeue_ext/ and index/ byte
    for byte; verify's figures are the broker's."""
    name = f"{line}-dledger-abort-converted-cut-emptied-ext-old-magic-48-t7"
    r = runs[name]
    w = r["written"]
    src = Path(r["scenario"]["dir"])
    old = sorted((src / "before" / "commitlog").iterdir())
    damaged = int(w["damagedMagicRecord"])
    first = _old_file_records(old[0])
    assert len(first) == EXT_DAMAGED_PUT and int(w["plantedAt"]) == damaged + 48
    assert int(w["truncateDirtyLogicFilesAt"]) >= 0, w
    at = damaged - int(old[0].name)
    msg = T7[:FIELD] + struct.pack(">q", damaged) + T7[FIELD + 8:]
    assert old[0].read_bytes()[at + 48:at + 48 + len(msg)] == msg
    units = _units(src / "expected" / "consumequeue")
    t7 = [u for u in units if u[0] == "T7/0"]
    assert [u[1] for u in t7[:3]] == [int(old[0].name) + a for a in first] + [damaged], (t7, first)
    assert len(t7) == EXT_DAMAGED_PUT + 4 and all(u[1] >= int(old[1].name) for u in t7[3:]), t7
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
    p = _dledger_prediction(src, name, line, tmp_path)
    assert any("takes 0 of" in n for n in p["notes"]), p["notes"]   # E5 below endPhyOffset
    assert (p["units_dispatched_again"], p["units_lost"]) == (_units_held(src / "expected" / "consumequeue") - 1, 0), p
    ours = {f["queue"]: f["ext_units_appended"] for f in p["queues"]}
    broker = {q: ext_appended(w, src, q, ext_recovered_end(src, q)) for q in ("T7/0",)}
    assert {q: ours.get(q, 0) for q in broker} == broker, (ours, broker)
    # the ext units no unit points at: the walk's, which the cut kept (the parsed one's pointed at by its unit)
    orphaned = ext_orphaned_as_the_broker(p, w, src, check=False)
    assert all(v == b for v, b in orphaned.values()) and orphaned["T7/0"][1] > 0, orphaned
