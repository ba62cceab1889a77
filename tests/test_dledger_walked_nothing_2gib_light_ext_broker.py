"""``verify`` of a 5.5.1 DLedger crash store past 2 GiB with ext files (``enableConsumeQueueExt=true``) whose recovery
walk dispatches nothing and whose start's reput the cut sets at 2147483647, inside an entry, where its check parses
a message that also goes to a light queue the store holds files of, the cut leaving a file of it or none, checked
against the broker (``DLEDGER_2GIB=1`` only: some 2.15 GB of data files, as much again in ``before/``; minutes).

``5.5.1-dledger-abort-propcrc-kept-past-2gib-embedded-light-held-disk-ext`` (:func:`light_held_disk_ext_scenario`):
the ``-embedded-light-held-disk`` store
(:func:`test_dledger_walked_nothing_2gib_light_disk_broker.light_held_disk_scenario`: ``%LMQ%q1`` written before the
crash with the first and last T9 messages' light units, the T5/0 message at 2147483647 also going to it at light
queue offset 2) with ext files.  The running broker put no ext unit for a light unit (``multiDispatchLmqQueue`` calls
``putMessagePositionInfo`` alone, with the dispatch request's tags code), so the light queue has no ext file and its
units hold their tags codes (0), not ext addresses.  ``truncateDirtyLogicFiles`` at the 22nd data file's start leaves
it its first unit (write position 20); at 2147483647 the reput's check parses the T5 message:
``putMessagePositionInfoWrapper`` puts T5/0's ext unit (the first of a new ext file) and its unit holding that
address, then ``multiDispatchLmqQueue`` the light unit onto the loaded ``%LMQ%q1`` by ``putMessagePositionInfo``
from the write position and max the cut left: appended at 20, with the request's tags code 0 (the ext address is
the wrapper's local), no ext unit.  Its next check fails and it jumps to the log's end.

``-embedded-light-emptied-ext`` (:func:`light_emptied_ext_scenario`): the same with ``%LMQ%q1``'s only unit past the
cut (:func:`test_dledger_walked_nothing_2gib_light_emptied_broker.light_emptied_scenario`): the cut deletes its file,
``correctMinOffset`` sets its max to -1, and ``putMessagePositionInfo`` creates its first file at 0, 2
``fillPreBlank`` units, the light unit at 40 with tags code 0, no ext unit: as without ext files.

The broker's queues after ``load()`` and after the reput, the ``%LMQ%q1`` file before and after the restart (no ext
files for it) and T5/0's unit are asserted first; then ``verify`` on the store as the restart found it predicts that
restart (units lost, none put again, T5's one ext unit appended, none for the light queue) and its plan replays
``%LMQ%q1`` from the state the cut left (:func:`store_format.dledger_walked_nothing._placed_on_disk`): the light unit
where the broker put it with its tags code, the queue's file the broker's byte for byte.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import BLANK_MAX, LINE, NEEDS_2GIB, written
from broker_dledger_walked_nothing_inside_scenarios import PAST_2GIB_T9_LAST
from test_dledger_walked_nothing_2gib_broker import _index_keys, _verify
from test_dledger_walked_nothing_2gib_light_disk_broker import (
    CUT_T0,
    T9_FIRST,
    _units,
    light_held_disk_scenario,
    parsed_message,
)
from test_dledger_walked_nothing_2gib_light_emptied_broker import light_emptied_scenario
from test_dledger_walked_nothing_2gib_parsed_broker import LIGHT, LIGHT_QUEUE_OFFSET

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()


def _ext(sc: dict) -> dict:
    return {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true"}, "name": f"{sc['name']}-ext"}


def light_held_disk_ext_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-light-held-disk-ext``: above."""
    return _ext(light_held_disk_scenario(line=line))


def light_emptied_ext_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-light-emptied-ext``: above."""
    return _ext(light_emptied_scenario(line))


AT = 20 * LIGHT_QUEUE_OFFSET   # where the light unit goes in the emptied light queue's new file
BLANK = (0, BLANK_MAX, 0)      # a fillPreBlank unit


@pytest.mark.parametrize("emptied", [False, True], ids=["held-disk-ext", "emptied-ext"])
def test_verify_predicts_a_message_for_a_light_queue_on_disk_parsed_at_2147483647_with_ext_files(
        tmp_path, monkeypatch, emptied: bool) -> None:
    """What the broker wrote first (no ext file for ``%LMQ%q1`` before or after; its units' tags codes 0; after
    ``load()`` its first unit only, write position 20, or, emptied, no file and max -1; after the reput the parsed
    light unit at 20, or after 2 ``fillPreBlank`` units at 40, with tags code 0; T5/0's unit holding ext address 0,
    one ext unit; E5 indexed once); then verify predicts the restart (units lost, T5's one ext unit appended, the
    light queue none) and its plan's ``%LMQ%q1`` is the broker's file."""
    sc = light_emptied_ext_scenario() if emptied else light_held_disk_ext_scenario()
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    assert cut < BLANK_MAX < PAST_2GIB_T9_LAST < end, (cut, end)
    msg = parsed_message()
    name = f"{LIGHT}/0"
    before = (src / "before" / "consumequeue" / LIGHT / "0" / f"{0:020d}").read_bytes()
    first = [] if emptied else [(*T9_FIRST, 0)]   # the units the cut leaves
    assert _units(before, len(first) + 2) == [*first, (PAST_2GIB_T9_LAST, 193, 0), (0, 0, 0)], "before the crash"
    for d in ("before", "expected"):   # no ext unit for a light unit, ever
        assert not (src / d / "consumequeue_ext" / LIGHT).exists(), d
        assert (src / d / "consumequeue_ext" / "T9").is_dir(), d   # ext files on
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert (loaded[name]["files"] == []) == emptied, loaded[name]
    assert int(loaded[name]["maxPhysicOffset"]) == (-1 if emptied else sum(T9_FIRST)), loaded[name]
    assert loaded[name]["extFiles"] == [] and after[name]["extFiles"] == [], (loaded[name], after[name])
    assert after["T0/0"] == loaded["T0/0"] and after["T9/0"] == loaded["T9/0"], after   # no cut unit put back
    t5 = (src / "expected" / "consumequeue" / "T5" / "0" / f"{0:020d}").read_bytes()
    assert _units(t5, 1) == [(BLANK_MAX, len(msg), -2**63)], t5[:20].hex()   # ext address 0
    assert int(after["T5/0"]["extMaxOffset"]) == 20, after["T5/0"]
    # the light unit: at the write position or, emptied, its light queue offset's place after fillPreBlank units,
    # with the request's tags code, not T5's ext address
    unit = (BLANK_MAX, len(msg), 0)
    at = AT if emptied else 20
    light = (src / "expected" / "consumequeue" / LIGHT / "0" / f"{0:020d}").read_bytes()
    assert (int(after[name]["maxOffset"]), int(after[name]["maxPhysicOffset"])) == (at + 20, BLANK_MAX + len(msg))
    head = [BLANK] * LIGHT_QUEUE_OFFSET if emptied else first
    assert _units(light, at // 20 + 1) == [*head, unit] and not any(light[at + 20:]), light[:80].hex()
    assert _index_keys(src) == 1, "E5 indexed, once"
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    assert p["units_lost"] == CUT_T0 + 3 and p["units_dispatched_again"] == 0, (p["units_lost"], note)
    assert crash.cut is not None and crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),), crash.cut
    assert crash.cut.inside_placed.ext_put == (("T5", 0, 1),), crash.cut.inside_placed   # none for the light unit
    figures = {f["queue"]: f for f in p["queues"]}
    assert figures["T5/0"]["ext_units_appended"] == 1, figures.get("T5/0")
    assert figures.get(name, {}).get("ext_units_appended", 0) == 0, figures.get(name)
    (q,) = crash.cut.inside_placed.whole
    assert (q.topic, q.queue_id, q.parsed_at, q.units) == (LIGHT, 0, (at,), ((at, *unit),)), q
    assert q.opened == ((0,) if emptied else ()) and q.blank_until == (AT if emptied else -1), q
    planned = bytearray(len(light))
    if emptied:
        planned[:AT] = struct.pack(">qiq", *BLANK) * LIGHT_QUEUE_OFFSET
    else:
        planned[:q.walk_end] = before[:q.walk_end]
    for pos, *u in q.units:
        planned[pos:pos + 20] = struct.pack(">qiq", *u)
    bh.same_bytes(light, bytes(planned), f"consumequeue/{name}/{0:020d}")
