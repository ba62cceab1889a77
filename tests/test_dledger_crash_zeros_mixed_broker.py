"""DLedger crash restarts whose store holds a queue of one consume queue file of zeros (named 0) that the recovery's
walk writes both a record's own units and light ones into (``%LMQ%q1``, queue 0: messages put to that topic itself and
messages multi-dispatched to it, ``enableMultiDispatch``/``enableLmq``), checked against the broker.

``-small-zeros-mixed`` is :mod:`test_dledger_crash_zeros_broker`'s ``-small`` store (200 small messages over two data
files, the 5.5.1 walk from the last one, the cut at its short ``processOffset``) with messages 12, 185 and 190 put to
``%LMQ%q1`` itself (own queue offsets 0, 1, 2; each body 5 bytes shorter: the same layout) and messages 10, 188, 195 and
199 also to ``%LMQ%q1`` (light queue offsets 0-3, bodies shorter by the properties), ``consumequeue/%LMQ%q1/0/0``
planted all zeros.  The walk's ``putMessagePositionInfo`` (no ``fillPreBlank``: ``MappedFile.isFirstCreateInQueue``)
puts own unit 1 at 0 (expected at 20: "logic queue order maybe wrong"), light unit 1 at 20, own unit 2 at 40, drops
light unit 2 (its queue offset * 20, 40, below the write position 60: "Build consume queue repeatedly") and puts light
unit 3 (past ``processOffset``) at 60; the cut takes that one and the start's reput puts it back at 60.  The queue
offset check reads the write position each unit leaves, own and light units alike
(``store_format.consumequeue_recovery.dispatch_units``).

``-small-zeros-mixed-clean`` is the same log restarted cleanly, its queues written anew from the log's start: the
broker's consume queues as a dispatch from the start writes them (``verify``'s reference, a rebuild, holds those units;
a mixed queue's rule drops some units there too), the units lost counted against it.  On 5.3.3
(``DLEDGER_LINES=5.3.3,5.5.1``) the walk starts at the first data file and nothing is cut.
"""
from __future__ import annotations

import base64
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_2gib import BLANK_MAX
from broker_dledger_inside_scenarios import LIGHT_PROPS
from test_dledger_crash_zeros_broker import _units, _verify, _zeros_planted, zeros_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
LINES = [ln for ln in bh.lines_from_env("DLEDGER_LINES", LINE) if ln.startswith(("5.3", "5.5"))]
MIXED = "%LMQ%q1/0"
OWN_PUTS = (12, 185, 190)          # put to %LMQ%q1 itself: own queue offsets 0, 1, 2
LIGHT_PUTS = (10, 188, 195, 199)   # multi-dispatched to %LMQ%q1: light queue offsets 0-3


def _own(m: dict) -> dict:
    """Message ``m`` put to %LMQ%q1/0 itself, its body shorter by the topic's 5 more bytes."""
    return {**m, "topic": "%LMQ%q1", "queueId": 0,
            "body": base64.b64encode(base64.b64decode(m["body"])[:-5]).decode()}


def _light(m: dict, offset: int) -> dict:
    """Message ``m`` also to %LMQ%q1 (light queue offset ``offset``), its body shorter by the properties."""
    return {**m, "body": base64.b64encode(base64.b64decode(m["body"])[:-LIGHT_PROPS]).decode(),
            "properties": {"INNER_MULTI_DISPATCH": "%LMQ%q1", "INNER_MULTI_QUEUE_OFFSET": str(offset)}}


def mixed_scenarios(line: str) -> list[dict]:
    """``<line>-dledger-abort-small-zeros-mixed`` and its ``-clean`` twin (module docstring)."""
    sc = zeros_scenarios(line)[0]
    msgs = list(sc["messages"])
    for k, i in enumerate(LIGHT_PUTS):
        msgs[i] = _light(msgs[i], k)
    for i in OWN_PUTS:
        msgs[i] = _own(msgs[i])
    mixed = {**sc, "messages": msgs, "config": {**sc["config"], "enableMultiDispatch": "true", "enableLmq": "true"},
             "plantFiles": {f"consumequeue/{MIXED}/{0:020d}": sc["plantFiles"][f"consumequeue/T0/0/{0:020d}"]},
             "name": sc["name"].replace("-zeros-kept", "-zeros-mixed")}
    clean = {k: v for k, v in mixed.items() if k not in ("abort", "plantFiles")}
    return [mixed, {**clean, "name": mixed["name"] + "-clean"}]


SCENARIOS = {ln: mixed_scenarios(ln) for ln in LINES}
STORES = bh.Stores(SCENARIOS, "DLedger crash restart with a mixed queue of zeros on disk", threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _offsets(src: Path) -> list[int]:
    """The commitlog offsets of the log's message records in put order (DLedger entries: a 48-byte header, then the
    record; a blank entry, whose record's magic code is not a message's, left out)."""
    from store_format.dledger import ENTRY_HEADER_SIZE
    from store_format.layout import MAGIC_V1, MAGIC_V2, OFF_MAGIC
    out = []
    for f in sorted((src / "before" / "dledger-n0" / "data").iterdir()):
        data, at = f.read_bytes(), 0
        while at + ENTRY_HEADER_SIZE + 8 <= len(data) and (size := int.from_bytes(data[at + 4:at + 8], "big")) > 0:
            magic = int.from_bytes(data[at + ENTRY_HEADER_SIZE + OFF_MAGIC:at + ENTRY_HEADER_SIZE + OFF_MAGIC + 4],
                                   "big", signed=True)
            if magic in (MAGIC_V1, MAGIC_V2):
                out.append(int(f.name) + at + ENTRY_HEADER_SIZE)
            at += size
    return out


def _held(src: Path, w: dict) -> dict[str, set[tuple[int, int]]]:
    """Per queue, the broker's units after its restart below the queue's ``maxOffset`` (neither zeros nor
    ``fillPreBlank`` ones): (commitlog offset, size)."""
    return {q: {u for u in _units(src, q, int(v["maxOffset"])) if u[1] not in (0, BLANK_MAX)}
            for q, v in w["queuesAfterDispatch"].items()}


def _verify_as_the_broker(src: Path, tmp_path: Path, w: dict, clean: dict, line: str) -> dict:
    """``verify`` on ``src/before``: the units lost per queue (the clean twin's units, a dispatch from the log's start,
    that the crash restart's queues lack) and the index keys put again as the broker's files hold them."""
    got = _verify(src, tmp_path, line)
    p = got["restart"]
    assert p is not None, got.get("restart_note")
    ref, held = _held(Path(clean["scenario"]["dir"]), clean["written"]), _held(src, w)
    lost = {q: len(units - held.get(q, set())) for q, units in ref.items()}
    predicted = {q["queue"]: q["units_lost"] for q in p["queues"]}
    assert {q: n for q, n in predicted.items() if n} == {q: n for q, n in lost.items() if n}, (predicted, lost)
    assert p["units_lost"] == sum(lost.values()), (p["units_lost"], lost)
    keys = sum(int.from_bytes(f.read_bytes()[36:40], "big") - 1 for f in (src / "expected" / "index").iterdir())
    assert p["index_keys_put_again"] == keys, (keys, p["index_keys_put_again"], p["notes"])
    return p


def test_the_walk_puts_own_and_light_units_onto_a_file_of_zeros_by_the_queue_offset_check(written, tmp_path):
    """``-small-zeros-mixed`` (5.5.1): the broker's %LMQ%q1/0 after the load (the walk and the cut) is the planted file
    holding own unit 1 at 0 (no ``fillPreBlank`` unit), light unit 1 at 20 and own unit 2 at 40, light unit 2 dropped
    (its queue offset * 20 below the write position), light unit 3 cut (past ``processOffset``); after the reput that
    one at 60.  The clean twin's queue holds the units of messages 10, 12, 190 and 199 (a dispatch from the start
    drops the others by the same check).  ``verify`` predicts the units lost per queue and the index keys put again
    as the broker's files hold them."""
    name = f"{LINE}-dledger-abort-small-zeros-mixed"
    r, clean = written[name], written[f"{name}-clean"]
    sc, w, src = r["scenario"], r["written"], Path(r["scenario"]["dir"])
    _zeros_planted(src, MIXED)
    offsets = _offsets(src)
    assert len(offsets) == len(sc["messages"]), len(offsets)
    po = int(w["truncateDirtyLogicFilesAt"])
    walk_from = int(sorted((src / "before" / "dledger-n0" / "data").iterdir())[-1].name)
    at = {offsets[i]: i for i in (*OWN_PUTS, *LIGHT_PUTS)}
    load, after = w["queuesAfterLoad"][MIXED], w["queuesAfterDispatch"][MIXED]
    units = _units(src, MIXED, int(after["maxOffset"]))
    assert [at.get(o) for o, _s in units] == [185, 188, 190, 199], units
    assert offsets[185] >= walk_from and offsets[190] < po <= offsets[199], (walk_from, po)
    assert (load["files"], int(load["maxOffset"]), int(load["maxPhysicOffset"])) == (
        [f"{0:020d}"], 60, units[2][0] + units[2][1]), load
    held_clean = _held(Path(clean["scenario"]["dir"]), clean["written"])[MIXED]
    assert sorted(at.get(o) for o, _s in held_clean) == [10, 12, 190, 199], held_clean
    _verify_as_the_broker(src, tmp_path, w, clean, LINE)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.3")] or [pytest.param(
    "5.3.3", marks=pytest.mark.skip(reason="5.3.3: DLEDGER_LINES=5.3.3,5.5.1"))])
def test_533_walks_the_mixed_queue_from_the_first_data_file(written, tmp_path, line):
    """5.3.3 (``DLEDGER_LINES``): the walk from the first data file puts %LMQ%q1/0's units onto the file of zeros from
    0 as a dispatch from the start does (light unit 0, own unit 0: no queue offset check for 0, then the check) and
    nothing is cut: the clean twin's units.  ``verify`` predicts the units lost and the index keys put again."""
    name = f"{line}-dledger-abort-small-zeros-mixed"
    r, clean = written[name], written[f"{name}-clean"]
    w, src = r["written"], Path(r["scenario"]["dir"])
    _zeros_planted(src, MIXED)
    assert int(w["truncateDirtyLogicFilesAt"]) == -1, w["truncateDirtyLogicFilesAt"]
    assert _held(src, w)[MIXED] == _held(Path(clean["scenario"]["dir"]), clean["written"])[MIXED]
    _verify_as_the_broker(src, tmp_path, w, clean, line)
