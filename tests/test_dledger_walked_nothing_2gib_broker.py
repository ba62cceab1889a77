"""``verify`` of a 5.5.1 DLedger crash store past 2 GiB whose recovery walk dispatches nothing and whose start's reput
the cut sets at 2147483647, inside an entry, where its check parses a message, checked against the broker
(``DLEDGER_2GIB=1`` only: some 2.15 GB of data files, as much again in ``before/``; minutes each, run them one at a
time with ``-k``).

``5.5.1-dledger-abort-propcrc-kept-past-2gib-embedded`` (:func:`embedded_scenario`): the ``-propcrc-kept-past-2gib``
store (:func:`broker_dledger_walked_nothing_inside_scenarios.walked_nothing_past_2gib_scenario`:
``forceVerifyPropCRC=true``, the queues kept, T9's queue file planted with a ``fillPreBlank`` unit and the last T9
message's unit) whose last T0 body holds, from 2147483647 on, a well-formed T5 message (keys ``E5``,
:func:`broker_dledger_2gib.embedded_message`).  ``dledgerRecoverAbnormally`` walks nothing (its check fails at the
22nd data file's first entry), ``truncateDirtyLogicFiles`` at that file's start leaves T9 with its ``fillPreBlank``
unit only (max 2147483647, the largest) and T0 its units of the earlier files; ``doRecheckReputOffsetFromCq`` sets the
reput at 2147483647, where ``DLedgerCommitLog``'s check parses the T5 message: ``doReput`` dispatches it onto the
queues as the cut left them (T5/0's unit at 0, its keys indexed), its next check fails on the body's 'x' bytes and it
jumps to the end of the bytes ``getData`` handed, the log's end: every unit of the 22nd data file stays lost.

``-embedded-committed`` (:func:`embedded_committed_scenario`): the same with DLedger's checkpoint one entry behind the
log's end, its committed position the last T9 entry's start, past 2147483647: ``getData`` hands the bytes up to it, so
after the T5 message the reput jumps there, waits for the group's commit after ``commitLog.start`` and dispatches the
T9 entry: T9's cut unit is put back (its offset past the queue's max 2147483647), the T0 units between the 22nd data
file's start and it stay lost (dispatched by no one).

``-committed`` (:func:`committed_scenario`): that checkpoint without the T5 message: the check at 2147483647 fails on
the body's 'x' bytes and the reput jumps to the committed position at once, then puts T9's cut unit back alike.

The broker's queues after ``load()`` and after the reput, its T5 unit and its index are asserted first; then
``verify`` on the store as the restart found it predicts that restart (units lost, units put again, index keys).
"""
from __future__ import annotations

import contextlib
import io
import json
import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    EMBED_T0_DATA,
    LINE,
    NEEDS_2GIB,
    assert_embedded_t5_dispatched,
    embedded_message,
    held_units,
    queued_messages,
    t0_record_at_2147483647,
    with_embedded_message,
    written,
)
from broker_dledger_walked_nothing_inside_scenarios import PAST_2GIB_T9_LAST, walked_nothing_past_2gib_scenario

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()


def embedded_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded``: above."""
    sc = walked_nothing_past_2gib_scenario(line)
    return with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-embedded")


def committed_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-committed``: above."""
    sc = walked_nothing_past_2gib_scenario(line)
    return {**sc, "dledgerCommittedBack": 1, "name": f"{sc['name']}-committed"}


def embedded_committed_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-committed``: above."""
    sc = embedded_scenario(line)
    return {**sc, "dledgerCommittedBack": 1, "name": f"{sc['name']}-committed"}


def _as_the_broker(sc: dict, tmp_path, embedded: bool = True):  # noqa: ANN001, ANN202
    """The broker writes ``sc`` and restarts it; asserts what it wrote, so that the store is the case: 22 data files,
    the cut at the last one's start (the walk dispatched nothing), below 2147483647 and the log's end; after ``load()``
    T9 with its ``fillPreBlank`` unit only (max 2147483647, the largest), T0 with its units of the earlier files, no
    T5 queue; the T5 message at 2147483647 inside the last T0 body; after the reput T5/0's one unit (the message's,
    its keys indexed: :func:`broker_dledger_2gib.assert_embedded_t5_dispatched`) and T0's write position as
    ``load()`` left it (``embedded`` False: the 'x' bytes there, no T5 queue, no index key).  Returns the writer's
    report, the scenario's folder, the message and T0's cut units."""
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 22 and cut == int(data[-1].name) < BLANK_MAX < PAST_2GIB_T9_LAST < end, (cut, end)
    msg = embedded_message(BLANK_MAX)
    record = t0_record_at_2147483647(src)
    at = record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)]
    assert at == (msg if embedded else b"x" * len(msg)), "the bytes at 2147483647"
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert set(loaded) == {"T0/0", "T9/0"}, loaded
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX and int(loaded["T9/0"]["maxOffset"]) == 20, loaded
    assert int(loaded["T0/0"]["maxPhysicOffset"]) < cut, loaded["T0/0"]
    t0 = [int.from_bytes(b[i:i + 8], "big") for f in sorted((src / "before" / "consumequeue" / "T0" / "0").iterdir())
          for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20) if int.from_bytes(b[i + 8:i + 12], "big")]
    cut_t0 = sum(o >= cut for o in t0)
    assert cut_t0 == 11207 and int(loaded["T0/0"]["maxOffset"]) == 20 * (len(t0) - cut_t0), (cut_t0, loaded["T0/0"])
    assert after["T0/0"] == loaded["T0/0"], after["T0/0"]   # no T0 unit put back
    if not embedded:
        assert "T5/0" not in after and _index_keys(src) == 0, after
        return w, src, msg, cut_t0
    assert int(after["T5/0"]["maxOffset"]) == 20 and int(after["T5/0"]["maxPhysicOffset"]) == BLANK_MAX + len(msg)
    assert_embedded_t5_dispatched(src, msg)
    return w, src, msg, cut_t0


def _verify(src, tmp_path, monkeypatch, line: str = LINE) -> tuple[dict, str, object]:  # noqa: ANN001
    """``verify --json`` (as the ``line`` broker) on the store as the restart found it: its next-start prediction (no
    note), the crash note and the DLedger crash plan it made."""
    from pipelines.cli import main
    from pipelines.verify import compare_store
    plans = []
    real = compare_store.dledger_crash_on_disk

    def capture(*args):  # noqa: ANN002, ANN202
        plans.append(real(*args))
        return plans[-1]
    monkeypatch.setattr(compare_store, "dledger_crash_on_disk", capture)
    out = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(out):
        main(["verify", "--store", str(src / "before"), "--config", str(src / "broker.conf"), "--broker-version",
              bh.BROKER_VERSION_ARG[line], "--engine", "local", "--work", str(tmp_path / "verify"), "--json"])
    report = json.loads(out.getvalue())
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    note = next(n for n in p["notes"] if n.startswith("DLedger store after a crash"))
    (crash, _why), = plans
    return p, note, crash


def _index_keys(src) -> int:  # noqa: ANN001
    """The keys the broker's index files hold (``index/`` as the restart left it: the header's indexCount less 1)."""
    return sum(struct.unpack(">i", f.read_bytes()[36:40])[0] - 1 for f in (src / "expected" / "index").iterdir())


def test_verify_predicts_a_message_parsed_at_2147483647_then_the_jump_to_the_logs_end(tmp_path, monkeypatch) -> None:
    """``-embedded``: what the broker wrote first (T5's unit, E5 indexed, no other unit put: the jump after the T5
    message goes to the log's end); then verify predicts the reput set at 2147483647 parsing the message
    (``QueueCut.inside_records``, its key ``E5`` at its PHYSICALOFFSET field) and going on at the log's end: every
    unit of the 22nd data file lost (T0's cut ones, T9's), none put again, the one index key the broker's index
    holds."""
    sc = embedded_scenario()
    w, src, msg, cut_t0 = _as_the_broker(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    after = w["queuesAfterDispatch"]
    assert after["T9/0"] == w["queuesAfterLoad"]["T9/0"], after["T9/0"]   # T9's cut unit not put back
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    lost = queued_messages(sc) - held_units(src, ends=after, leave_out="T5")
    assert p["units_lost"] == lost == cut_t0 + 2 and p["units_dispatched_again"] == 0, (p["units_lost"], lost, note)
    assert p["index_keys_put_again"] == _index_keys(src) == 1, (p["index_keys_put_again"], p["notes"])
    assert f"sets it at {BLANK_MAX} (where a queue the cut left with fillPreBlank units only" in note, note
    assert "where its check parses 1 message(s), then fails" in note and f"getData hands, {end};" in note, note
    assert crash.walked_nothing and crash.process_offset == cut and crash.reput_from == end, crash
    assert crash.cut is not None and crash.cut.inside_from == BLANK_MAX and crash.gap == (cut, end), crash
    assert crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),) and crash.inside_keys == (BLANK_MAX,)


def _t9_entry_committed_before(src, end: int) -> int:  # noqa: ANN001
    """Asserts that DLedger's checkpoint is one entry behind: its committed position the last T9 entry's start, which
    ends the log at ``end``; returns that position."""
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    t9_entry = PAST_2GIB_T9_LAST - ENTRY_HEADER_SIZE
    with data[-1].open("rb") as f:
        f.seek(t9_entry - int(data[-1].name))
        head = f.read(ENTRY_HEADER_SIZE)
    index = int.from_bytes(head[8:16], "big")
    assert int.from_bytes(head[:4], "big") == 1 and int.from_bytes(head[24:32], "big") == t9_entry, head.hex()
    assert t9_entry + int.from_bytes(head[4:8], "big") == end, (t9_entry, end)
    assert int(bh.read_conf(src / "before" / "dledger-n0" / "checkpoint")["committedIndex"]) == index - 1
    return t9_entry


@pytest.mark.parametrize("embedded", [True, False], ids=["embedded-committed", "committed"])
def test_verify_predicts_a_reput_set_at_2147483647_then_the_jump_to_the_committed_position(tmp_path, monkeypatch,
                                                                                          embedded: bool) -> None:
    """``-embedded-committed`` and ``-committed``: what the broker wrote first (DLedger's committed position the last
    T9 entry's start, past 2147483647; with the T5 message its unit and E5 as above; T9's cut unit put back at its
    place, after its ``fillPreBlank`` unit: the reput jumped to the committed position and walked the T9 entry once
    the group committed it; T0's units between the cut and it not put back); then verify predicts the reput going on
    at the committed position, the records between the cut and it dispatched by no one (T0's cut units and T9's
    first lost; the T9 entry past the committed position, where the reference rebuild stops, not counted), the
    index keys the broker's index holds."""
    sc = embedded_committed_scenario() if embedded else committed_scenario()
    w, src, msg, cut_t0 = _as_the_broker(sc, tmp_path, embedded)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    t9_entry = _t9_entry_committed_before(src, end)
    after = w["queuesAfterDispatch"]
    assert int(after["T9/0"]["maxOffset"]) == 40 and int(after["T9/0"]["maxPhysicOffset"]) == end, after["T9/0"]
    t9 = (src / "expected" / "consumequeue" / "T9" / "0" / f"{0:020d}").read_bytes()
    assert struct.unpack(">qi", t9[20:32]) == (PAST_2GIB_T9_LAST, 193), t9[:40].hex()   # T9's cut unit back
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    lost = queued_messages(sc) - held_units(src, ends=after, leave_out="T5")
    assert p["units_lost"] == lost == cut_t0 + 1 and p["units_dispatched_again"] == 0, (p["units_lost"], lost, note)
    assert p["index_keys_put_again"] == _index_keys(src) == int(embedded), (p["index_keys_put_again"], p["notes"])
    parsed = "parses 1 message(s), then fails" if embedded else "fails"
    assert f"where its check {parsed} and it jumps to the end of the bytes getData hands, {t9_entry};" in note, note
    assert crash.walked_nothing and crash.process_offset == cut and crash.reput_from == t9_entry, crash
    assert crash.cut is not None and crash.cut.inside_from == BLANK_MAX and crash.gap == (cut, t9_entry), crash
    records = ((BLANK_MAX, BLANK_MAX + len(msg)),) if embedded else ()
    assert crash.cut.inside_records == records and crash.inside_keys == tuple(a for a, _b in records), crash.cut
