"""``verify`` and ``rebuild --as-restart`` of a 5.5.1 DLedger crash store past 2 GiB whose recovery walk dispatches
nothing and whose start's reput the cut sets at 2147483647, inside an entry, where its check reads a blank's header 48
bytes further and then a message, checked against the broker (``DLEDGER_2GIB=1`` only: some 2.15 GB of data files, as
much again in ``before/``; minutes to write).

``5.5.1-dledger-abort-propcrc-kept-past-2gib-embedded-blank-48`` (:func:`blank_scenario`): the
``-propcrc-kept-past-2gib`` store
(:func:`broker_dledger_walked_nothing_inside_scenarios.walked_nothing_past_2gib_scenario`: ``forceVerifyPropCRC=true``,
the queues kept, T9's queue file planted with a ``fillPreBlank`` unit and the last T9 message's unit) whose last T0
body holds 'x' bytes at 2147483647, 48 bytes further a blank's header (:data:`broker_dledger_2gib.EMPTY_BLANK`: the
total size 8, ``CommitLog.BLANK_MAGIC_CODE``) and right after it a well-formed T5 message
(:func:`broker_dledger_2gib.embedded_message`, keys ``E5``).  The walk dispatches nothing, the cut at the 22nd data
file's start leaves T9 with its ``fillPreBlank`` unit only (max 2147483647, the largest) and
``doRecheckReputOffsetFromCq`` sets the reput there.  ``DLedgerCommitLog.checkMessageAndReturnSize`` there reads 'x'
bytes as neither a message's nor DLedger's blank magic and checks 48 bytes on (``DLedgerEntry.BODY_OFFSET``), where
the base check reads ``BLANK_MAGIC_CODE``: an empty request (size 0, success) whose ``bufferSize`` it sets to 48.
``doReput`` takes that size (> 0, success): it dispatches the empty request (topic "" queue 0: a unit of zeros in
``consumequeue/0/``, a queue the store holds no file of) and moves the reput 48 bytes on while the buffer stands past
the blank's two ints, where the next check parses the T5 message (T5/0's unit, E5 indexed), then fails on the 'x'
bytes after it and jumps to the end of the bytes ``getData`` handed, the log's end (the reput 8 bytes behind the
buffer after the blank, its read count too: ``reputFromOffset += result.getSize() - readSize`` lands on that end all
the same).

``-embedded-blank-48-committed`` (:func:`blank_committed_scenario`): the same with DLedger's checkpoint one entry
behind the log's end, its committed position the last T9 entry's start: the jump after the message goes there, and
once the group commits the rest the reput puts T9's cut unit back.

What the broker wrote is asserted first; then ``verify`` on the store as the restart found it predicts the restart
(the blank's empty request and the message among ``QueueCut.inside_records``, the units lost, the key indexed).
"""
from __future__ import annotations

import base64
import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    EMBED_T0_DATA,
    EMPTY_BLANK,
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
from test_dledger_walked_nothing_2gib_broker import _index_keys, _t9_entry_committed_before, _verify

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()


def blank_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-blank-48``: above."""
    sc = walked_nothing_past_2gib_scenario(line)
    sc = with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA + ENTRY_HEADER_SIZE + len(EMPTY_BLANK),
                               f"{sc['name']}-embedded-blank-48")
    at, found = EMBED_AT_BODY_DATA + ENTRY_HEADER_SIZE, 0
    messages = []
    for m in sc["messages"]:   # the one body with bytes of its own: the blank's header into it
        batch = []
        for b in m.get("batch", ()):
            if "body" in b:
                body = bytearray(base64.b64decode(b["body"]))
                assert body[at:at + len(EMPTY_BLANK)] == b"x" * len(EMPTY_BLANK)
                body[at:at + len(EMPTY_BLANK)] = EMPTY_BLANK
                b, found = {"body": base64.b64encode(bytes(body)).decode()}, found + 1
            batch.append(b)
        messages.append({**m, "batch": batch} if "batch" in m else m)
    assert found == 1
    return {**sc, "messages": messages}


def blank_committed_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-blank-48-committed``: :func:`blank_scenario` with
    DLedger's checkpoint one entry behind the log's end (its committed position the last T9 entry's start)."""
    sc = blank_scenario(line)
    return {**sc, "dledgerCommittedBack": 1, "name": f"{sc['name']}-committed"}


_BLANK_AT = BLANK_MAX + ENTRY_HEADER_SIZE   # the blank's header: 48 bytes past 2147483647
_MSG_AT = _BLANK_AT + len(EMPTY_BLANK)   # the T5 message right after it


def _as_the_broker(sc: dict, tmp_path):  # noqa: ANN001, ANN202
    """The broker writes ``sc`` and restarts it; asserts what it wrote, so that the store is the case: 22 data files,
    the cut at the last one's start, below 2147483647; after ``load()`` T9 with its ``fillPreBlank`` unit only (max
    2147483647, the largest), T0 with its units of the earlier files; 'x' bytes at 2147483647, the blank's header 48
    bytes further, the T5 message after it; after the reput the empty request's unit (zeros) in topic "" queue 0's
    new file, T5/0's one unit at the message's PHYSICALOFFSET field, E5 indexed, no T0 unit put back.  Returns the
    writer's report, the scenario's folder, the message and T0's cut units."""
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 22 and cut == int(data[-1].name) < BLANK_MAX < PAST_2GIB_T9_LAST < end, (cut, end)
    msg = embedded_message(BLANK_MAX)
    record = t0_record_at_2147483647(src)
    at = 88 + EMBED_AT_BODY_DATA   # 2147483647 in the record
    assert record[at:at + ENTRY_HEADER_SIZE] == b"x" * ENTRY_HEADER_SIZE, "'x' bytes at 2147483647"
    assert record[at + ENTRY_HEADER_SIZE:at + ENTRY_HEADER_SIZE + 8] == EMPTY_BLANK, "the blank 48 bytes further"
    assert record[at + 56:at + 56 + len(msg)] == msg, "the T5 message after it"
    assert record[at + 56 + len(msg):at + 56 + len(msg) + 56] == b"x" * 56, "'x' bytes after it"
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert set(loaded) == {"T0/0", "T9/0"}, loaded
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX and int(loaded["T9/0"]["maxOffset"]) == 20, loaded
    assert int(loaded["T0/0"]["maxPhysicOffset"]) < cut, loaded["T0/0"]
    t0 = [int.from_bytes(b[i:i + 8], "big") for f in sorted((src / "before" / "consumequeue" / "T0" / "0").iterdir())
          for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20) if int.from_bytes(b[i + 8:i + 12], "big")]
    cut_t0 = sum(o >= cut for o in t0)
    assert cut_t0 == 11207 and int(loaded["T0/0"]["maxOffset"]) == 20 * (len(t0) - cut_t0), (cut_t0, loaded["T0/0"])
    assert after["T0/0"] == loaded["T0/0"], after["T0/0"]   # no T0 unit put back
    # the empty request: topic "" queue 0 (consumequeue/0/), a new file holding one unit of zeros
    assert (after["/0"]["files"], int(after["/0"]["maxOffset"]), int(after["/0"]["maxPhysicOffset"])) == (
        [f"{0:020d}"], 20, 0), after["/0"]
    empty = src / "expected" / "consumequeue" / "0" / f"{0:020d}"
    assert empty.stat().st_size == int(sc["config"]["mappedFileSizeConsumeQueue"]) and not any(empty.read_bytes())
    assert int(after["T5/0"]["maxOffset"]) == 20 and int(after["T5/0"]["maxPhysicOffset"]) == BLANK_MAX + len(msg)
    assert_embedded_t5_dispatched(src, msg)
    return w, src, msg, cut_t0


def test_verify_predicts_a_blanks_empty_request_and_a_message_at_2147483647_then_the_logs_end(tmp_path,
                                                                                             monkeypatch) -> None:
    """``-embedded-blank-48``: what the broker wrote first (the empty request's unit, T5's, E5; T9's cut unit not put
    back: the jump went to the log's end); then verify's plan: the reput set at 2147483647, its check dispatching the
    blank's empty request (a record of no bytes at the blank) and the T5 message 56 bytes on, going on at the log's
    end; every unit of the 22nd data file lost, the one key indexed."""
    sc = blank_scenario()
    w, src, msg, cut_t0 = _as_the_broker(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    after = w["queuesAfterDispatch"]
    assert after["T9/0"] == w["queuesAfterLoad"]["T9/0"], after["T9/0"]   # T9's cut unit not put back
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    lost = queued_messages(sc) - held_units(src, ends=after, leave_out="T5")
    assert p["units_lost"] == lost == cut_t0 + 2 and p["units_dispatched_again"] == 0, (p["units_lost"], lost, note)
    assert p["index_keys_put_again"] == _index_keys(src) == 1, (p["index_keys_put_again"], p["notes"])
    assert "where its check parses 1 message(s) and 1 blank(s) 48 bytes further" in note, note
    assert f"getData hands, {end};" in note, note
    assert crash.walked_nothing and crash.process_offset == cut and crash.reput_from == end, crash
    assert crash.cut is not None and crash.cut.inside_from == BLANK_MAX and crash.gap == (cut, end), crash
    assert crash.cut.inside_records == ((_BLANK_AT, _BLANK_AT), (_MSG_AT, _MSG_AT + len(msg))), crash.cut
    assert crash.inside_keys == (BLANK_MAX,) and not crash.cut.inside_placed.whole, crash.cut


def test_verify_predicts_a_blanks_empty_request_and_a_message_then_the_committed_position(tmp_path,
                                                                                         monkeypatch) -> None:
    """``-embedded-blank-48-committed``: what the broker wrote first (as above, and T9's cut unit put back after its
    ``fillPreBlank`` unit: the jump went to the committed position, the last T9 entry's start, and the reput walked
    that entry once the group committed it); then verify's plan goes on there, the records between the cut and it
    dispatched by no one (T0's cut units and T9's first lost)."""
    sc = blank_committed_scenario()
    w, src, msg, cut_t0 = _as_the_broker(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    t9_entry = _t9_entry_committed_before(src, end)
    after = w["queuesAfterDispatch"]
    assert int(after["T9/0"]["maxOffset"]) == 40 and int(after["T9/0"]["maxPhysicOffset"]) == end, after["T9/0"]
    t9 = (src / "expected" / "consumequeue" / "T9" / "0" / f"{0:020d}").read_bytes()
    assert struct.unpack(">qi", t9[20:32]) == (PAST_2GIB_T9_LAST, 193), t9[:40].hex()   # T9's cut unit back
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    lost = queued_messages(sc) - held_units(src, ends=after, leave_out="T5")
    assert p["units_lost"] == lost == cut_t0 + 1 and p["units_dispatched_again"] == 0, (p["units_lost"], lost, note)
    assert p["index_keys_put_again"] == _index_keys(src) == 1, (p["index_keys_put_again"], p["notes"])
    assert "parses 1 message(s) and 1 blank(s) 48 bytes further" in note, note
    assert f"getData hands, {t9_entry};" in note, note
    assert crash.walked_nothing and crash.process_offset == cut and crash.reput_from == t9_entry, crash
    assert crash.cut is not None and crash.cut.inside_from == BLANK_MAX and crash.gap == (cut, t9_entry), crash
    assert crash.cut.inside_records == ((_BLANK_AT, _BLANK_AT), (_MSG_AT, _MSG_AT + len(msg))), crash.cut
