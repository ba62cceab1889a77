"""Shared steps of the 5.5.1 DLedger broker cases on logs past 2 GiB (``tests/test_dledger_2gib*_broker.py``): the
broker writes a scenario and restarts it (``written``), ``rebuild --as-restart`` of the store as that restart found it
(``as_restart``) compared byte for byte with the broker's ``consumequeue/`` and ``index/``
(``same_files_as_the_broker``) and ``consumequeue_ext/`` (``same_ext_files_as_the_broker``), ``verify``'s next-start
prediction (``verify_restart``) against the units the broker's queues hold (``held_units``, ``queued_messages``), and
a well-formed message record to embed in a body (``embedded_message``, ``with_embedded_message``), and the
``-embedded-to-entry`` store, whose embedded message ends at the last T9 entry's start
(``past_2gib_embedded_to_entry_scenario``), and the ``-past-2gib-before`` stores, whose reput set at 2147483647 goes on
before the walk's data file (``past_2gib_before_abort_scenario``, ``past_2gib_before_embedded_scenario``)."""
from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import struct
import zlib
from collections.abc import Callable

import broker_harness as bh
import pytest
from broker_dledger_scenarios import (
    PAST_2GIB_BATCH,
    PAST_2GIB_DATA0_T0,
    PAST_2GIB_FILE,
    THOROUGH_CHECKPOINT,
    config,
    past_2gib_abort_scenario,
)

from store_format.dledger import ENTRY_HEADER_SIZE
from store_format.layout import (
    BORN_HOST_OFFSET,
    HOST_V4_LEN,
    HOST_V6_LEN,
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
    OFF_MAGIC,
    OFF_QUEUE_ID,
    OFF_SYSFLAG,
    PREPARED_TX_OFFSET_LEN,
    RECONSUME_TIMES_LEN,
    STORE_TIMESTAMP_LEN,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
)

LINE = "5.5.1"
# the 2 GiB stores (some 2.15-2.3 GB of data files each, their before/ copies as much): DLEDGER_2GIB=1 only
NEEDS_2GIB = pytest.mark.skipif(os.environ.get("DLEDGER_2GIB") != "1", reason="a 2 GiB store: DLEDGER_2GIB=1")
BLANK_MAX = 2**31 - 1
FILL_PRE_BLANK_UNIT = bytes(8) + BLANK_MAX.to_bytes(4, "big") + bytes(8)   # ConsumeQueue.fillPreBlank's unit
# Where the DLedger layout of past_2gib_abort_scenario puts 2147483647: in the last T0 entry (queue offset 506827, the
# 11207th of the 22nd data file, at 2147479822), 3689 bytes into its body (the entry's 48-byte header and the record's
# 88 bytes before it); t0_record_at_2147483647 checks the bytes there.
EMBED_T0_DATA = 21 * 23601 + 11206
EMBED_AT_BODY_DATA = BLANK_MAX - 2147479822 - 48 - 88


def written(sc: dict, tmp_path, line: str = LINE):  # noqa: ANN001, ANN202
    """The ``line`` broker writes ``sc`` (and restarts it) under ``tmp_path``: its report and the scenario's folder."""
    name = sc["name"]
    bh.build()
    w = bh.write_stores(line, [{**sc, "dir": str(tmp_path / name)}], tmp_path, timeout=3600)[name]
    assert w.get("ok"), w.get("error")
    return w, tmp_path / name


def as_restart(src, ours) -> str:  # noqa: ANN001
    """``rebuild --as-restart`` of ``src/before`` into ``ours`` (exit 0): what it printed on stderr."""
    from pipelines.cli import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["rebuild", "--store", str(src / "before"), "--out", str(ours),
                     "--config", str(src / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[LINE],
                     "--engine", "local", "--no-tables", "--as-restart"])
    text = err.getvalue()
    assert code == 0, text[-3000:]
    return text


def same_files_as_the_broker(src, ours) -> None:  # noqa: ANN001
    """``ours``' ``consumequeue/`` and ``index/`` are the broker's (``src/expected``) byte for byte, the same files."""
    for sub in ("consumequeue", "index"):
        exp = sorted(p for p in (src / "expected" / sub).rglob("*") if p.is_file())
        got = sorted(p for p in (ours / sub).rglob("*") if p.is_file())
        if sub == "consumequeue":
            assert [p.relative_to(ours / sub) for p in got] == [p.relative_to(src / "expected" / sub) for p in exp]
        assert len(got) == len(exp), (sub, got, exp)
        for e, o in zip(exp, got):
            bh.same_bytes(e.read_bytes(), o.read_bytes(), f"{sub}/{o.relative_to(ours / sub)}")


def same_ext_files_as_the_broker(src, ours) -> None:  # noqa: ANN001
    """``ours``' ``consumequeue_ext/`` (``enableConsumeQueueExt=true``) is the broker's (``src/expected``) byte for
    byte, the same files."""
    exp_dir, got_dir = src / "expected" / "consumequeue_ext", ours / "consumequeue_ext"
    exp = sorted(p for p in exp_dir.rglob("*") if p.is_file())
    got = sorted(p for p in got_dir.rglob("*") if p.is_file())
    assert exp, "the broker wrote no ext file"
    assert [p.relative_to(got_dir) for p in got] == [p.relative_to(exp_dir) for p in exp]
    for e, o in zip(exp, got):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"consumequeue_ext/{e.relative_to(exp_dir)}")


def verify_restart(src, tmp_path) -> dict | None:  # noqa: ANN001
    """``verify --json`` of ``src/before``: its next-start prediction (``restart``)."""
    from pipelines.cli import main
    out = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(out):
        main(["verify", "--store", str(src / "before"), "--config", str(src / "broker.conf"), "--broker-version",
              bh.BROKER_VERSION_ARG[LINE], "--engine", "local", "--work", str(tmp_path / "verify"), "--json"])
    return json.loads(out.getvalue())["restart"]


def queued_messages(sc: dict) -> int:
    """The messages of ``sc`` that get a queue unit (a batch counts each of its messages; prepared ones none)."""
    return sum(len(m.get("batch", [m])) for m in sc["messages"] if m.get("tranType") != "prepared" and "topic" in m)


def held_units(src, ends: dict | None = None, leave_out: str = "") -> int:  # noqa: ANN001
    """The units the broker's queues (``src/expected/consumequeue``) hold: neither zeros nor ``fillPreBlank`` ones;
    with ``ends`` (the harness's ``queuesAfterDispatch``) only those below each queue's ``maxOffset`` (a cut unit
    past it stays as bytes only), and none of topic ``leave_out`` or of topic "" (``consumequeue/0/``: a blank's
    empty request)."""
    cq = src / "expected" / "consumequeue"
    sizes = [int.from_bytes(b[i + 8:i + 12], "big") for f in cq.rglob("*")
             if f.is_file() and len(f.relative_to(cq).parts) == 3 and f.relative_to(cq).parts[0] != leave_out
             for b in (f.read_bytes(),)
             for i in range(0, len(b) - 19, 20)
             if ends is None or int(f.name) + i < int(ends[f"{f.parent.parent.name}/{f.parent.name}"]["maxOffset"])]
    return sum(size not in (0, BLANK_MAX) for size in sizes)


def as_restart_matches_broker(src, tmp_path, sc: dict, w: dict, leave_out: str = "T5", parsed: int = 0,  # noqa: ANN001
                              ext: bool = False, index_keys: bool = True, light: int = 0) -> str:
    """``rebuild --as-restart`` of ``src/before``: the broker's ``consumequeue/`` and ``index/`` byte for byte (with
    ``ext`` its ``consumequeue_ext/`` too); and ``verify``'s units lost: every queued message's unit (its reference,
    a rebuild, holds one for each) but those the broker's queues hold, embedded messages not being messages of the
    log: the units of topic ``leave_out`` and ``parsed`` more in other queues; ``light``: the light units of the log's
    messages (each a unit of the reference's too); with ``index_keys`` (the default),
    ``verify``'s index keys put again: the keys the broker's index files hold (``index/`` was deleted before the
    restart, so all are the restart's).  Returns the rebuild's progress."""
    text = as_restart(src, tmp_path / "ours")
    same_files_as_the_broker(src, tmp_path / "ours")
    if ext:
        same_ext_files_as_the_broker(src, tmp_path / "ours")
    p = verify_restart(src, tmp_path)
    # the units the broker's queues hold: below each queue's write position once its reput caught up (a cut unit
    # past it stays as bytes only), the embedded messages' left out
    held = held_units(src, ends=w["queuesAfterDispatch"], leave_out=leave_out) - parsed
    queued = queued_messages(sc) + light
    assert p is not None and p["units_lost"] == queued - held, (held, queued, p and p["notes"])
    if index_keys:
        keys = sum(struct.unpack(">i", f.read_bytes()[36:40])[0] - 1 for f in (src / "expected" / "index").iterdir())
        assert p["index_keys_put_again"] == keys, (keys, p["index_keys_put_again"], p["notes"])
    return text


def embedded_message(offset: int, body: bytes = b"embedded!!", props: bytes = b"KEYS\x01E5\x02", *,
                     topic: bytes = b"T5", queue_offset: int = 0) -> bytes:
    """A message record as the base ``CommitLog`` encodes one (``MessageExtEncoder``, IPv4 hosts, no flag, not a
    transaction) for T5/0 at queue offset 0 and commitlog offset ``offset``: by default a 10-byte body and the keys
    ``E5``; ``body``, ``props``: others (the properties string's bytes); ``topic``, ``queue_offset``: another
    topic's queue 0, another queue offset."""
    total = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + len(body) + 1 + len(topic) + 2 + len(props)
    host = bytes([127, 0, 0, 1])
    return b"".join([
        struct.pack(">iiIiiqqiq", total, MAGIC_V1, zlib.crc32(body) & 0x7FFFFFFF, 0, 0, queue_offset, offset, 0,
                    1_700_000_000_000),
        host, struct.pack(">iq", 40000, 1_700_000_000_001), host, struct.pack(">iiqi", 10911, 0, 0, len(body)),
        body, bytes([len(topic)]), topic, struct.pack(">h", len(props)), props])


def with_embedded_message(sc: dict, t0: int, at_body: int, name: str, msg: bytes | None = None) -> dict:
    """``sc`` whose T0 message of queue offset ``t0`` gets a 4096-byte body of 'x' holding, ``at_body`` bytes in
    (2147483647 in the log), a well-formed message (:func:`embedded_message`; ``msg``: other bytes there, within the
    body), named ``name``."""
    msg = embedded_message(BLANK_MAX) if msg is None else msg
    body = bytearray(b"x" * 4096)
    assert at_body + len(msg) <= len(body), (at_body, len(msg))
    body[at_body:at_body + len(msg)] = msg
    k = 0
    messages = []
    for m in sc["messages"]:
        if m.get("topic") == "T0" and k <= t0 < k + len(m["batch"]):
            batch = list(m["batch"])
            batch[t0 - k] = {"body": base64.b64encode(bytes(body)).decode()}
            m = {**m, "batch": batch}
        k += len(m.get("batch", ())) if m.get("topic") == "T0" else 0
        messages.append(m)
    return {**sc, "messages": messages, "name": name}


def t0_record_at_2147483647(src, extra: int = 0) -> bytes:  # noqa: ANN001
    """The T0 record whose body holds 2147483647 in a store of
    :func:`broker_dledger_scenarios.past_2gib_abort_scenario`'s layout, as the broker wrote it into ``src/before``:
    its 88 header bytes and 4096-byte body, and ``extra`` bytes after.  Checks that no data file went (the broker
    deletes some on a nearly full disk) and the record's size and queue offset."""
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert int(data[0].name) == 0, "the broker deleted data files (its disk past diskMaxUsedSpaceRatio): free disk"
    (last,) = [f for f in data if int(f.name) <= BLANK_MAX < int(f.name) + PAST_2GIB_FILE]
    with last.open("rb") as f:
        f.seek(BLANK_MAX - int(last.name) - EMBED_AT_BODY_DATA - 88)
        record = f.read(88 + 4096 + extra)
    assert struct.unpack(">iiiiiq", record[:28])[::5] == (4189, EMBED_T0_DATA), "the T0 record around 2147483647"
    return record


def first_queue_file(src, queue: str) -> bytes:  # noqa: ANN001
    """The broker's first consume queue file of ``queue`` ("T5/0"): ``src/expected/consumequeue/T5/0/000...0``."""
    return (src / "expected" / "consumequeue" / queue / f"{0:020d}").read_bytes()


def assert_embedded_t5_dispatched(src, msg: bytes) -> None:  # noqa: ANN001
    """What the 5.5.1 broker's reput did with the T5 message ``msg`` (:func:`embedded_message`, its PHYSICALOFFSET
    field 2147483647) its check parsed near 2147483647 in the data-file store: T5/0's one unit at that field with
    the message's size and no tags code; T9's queue still with its ``fillPreBlank`` unit first; the message's keys
    indexed at that offset with its own store time, no record having been indexed before (the index header: one hash
    slot, one entry, indexCount starting at 1)."""
    t5 = first_queue_file(src, "T5/0")
    assert t5[:20] == struct.pack(">qiq", BLANK_MAX, len(msg), 0) and not any(t5[20:]), t5[:40]
    assert first_queue_file(src, "T9/0")[:20] == FILL_PRE_BLANK_UNIT, "T9's fillPreBlank unit"
    (index,) = sorted((src / "expected" / "index").iterdir())
    assert struct.unpack(">qqqqii", index.read_bytes()[:40]) == (
        1_700_000_000_001, 1_700_000_000_001, BLANK_MAX, BLANK_MAX, 1, 2), "E5 indexed"


_TOPIC_AT = 88 + 10 + 1   # embedded_message's topic (after its 88-byte header, 10-byte body and the topic's length)


def retargeted(offset: int, topic: bytes, queue_offset: int) -> bytes:
    """:func:`broker_dledger_2gib.embedded_message` at commitlog offset ``offset`` with another two-letter topic and
    queue offset (fields the message check and the CRC do not cover)."""
    msg = bytearray(embedded_message(offset))
    assert len(topic) == 2 and msg[_TOPIC_AT:_TOPIC_AT + 2] == b"T5"
    msg[20:28] = queue_offset.to_bytes(8, "big")
    msg[_TOPIC_AT:_TOPIC_AT + 2] = topic
    return bytes(msg)


def with_messages(sc: dict, name: str, messages: list[bytes]) -> dict:
    """``sc`` whose last T0 body holds ``messages`` one after the other from 2147483647 on
    (:func:`broker_dledger_2gib.with_embedded_message`'s body with them in place of its one message)."""
    one = embedded_message(BLANK_MAX)
    sc = with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, name)
    run = b"".join(messages)
    assert EMBED_AT_BODY_DATA + len(run) < 4096
    out, found = [], 0
    for m in sc["messages"]:
        batch = []
        for b in m.get("batch", ()):
            body = base64.b64decode(b["body"]) if "body" in b else b""
            if body[EMBED_AT_BODY_DATA:EMBED_AT_BODY_DATA + len(one)] == one:
                found += 1
                body = body[:EMBED_AT_BODY_DATA] + run + body[EMBED_AT_BODY_DATA + len(run):]
                b = {"body": base64.b64encode(body).decode()}
            batch.append(b)
        out.append({**m, "batch": batch} if "batch" in m else m)
    assert found == 1
    return {**sc, "messages": out}


def log_bytes(src, at: int, n: int) -> bytes:  # noqa: ANN001
    """``n`` bytes of the DLedger log of ``src/before`` at commitlog offset ``at``."""
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    (f,) = [f for f in data if int(f.name) <= at < int(f.name) + PAST_2GIB_FILE]
    with f.open("rb") as h:
        h.seek(at - int(f.name))
        return h.read(n)


def first_units(src, topic: str, n: int) -> list[tuple[int, int, int]]:  # noqa: ANN001
    """The first ``n`` units of the broker's queue ``topic``/0 (its first file)."""
    b = (src / "expected" / "consumequeue" / topic / "0" / f"{0:020d}").read_bytes()
    return [struct.unpack(">qiq", b[i:i + 20]) for i in range(0, 20 * n, 20)]


# a blank's header as the base CommitLog writes one (its total size, CommitLog.BLANK_MAGIC_CODE), put 48 bytes past
# 2147483647; its total size fits the bytes left, so the base check there reads it as a blank
EMPTY_BLANK = struct.pack(">ii", 8, MAGIC_BLANK)


def past_2gib_embedded_blank_48_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-embedded-blank-48``: :func:`past_2gib_abort_scenario` whose last T0 body
    holds its 'x' bytes at 2147483647, a blank's header 48 bytes further (:data:`EMPTY_BLANK`) and right after it,
    56 bytes past 2147483647, a well-formed T5 message (:func:`embedded_message`, its PHYSICALOFFSET field
    2147483647)."""
    sc = with_embedded_message(past_2gib_abort_scenario(line), EMBED_T0_DATA, EMBED_AT_BODY_DATA + 56,
                               f"{line}-dledger-abort-past-2gib-embedded-blank-48")
    messages = []
    for m in sc["messages"]:   # the one message with bytes of its own: the blank's header into its body
        batch = [dict(b, body=_with_blank(b["body"])) if "body" in b else b for b in m.get("batch", ())]
        messages.append({**m, "batch": batch} if "batch" in m else m)
    return {**sc, "messages": messages}


def _with_blank(body64: str) -> str:
    body = bytearray(base64.b64decode(body64))
    at = EMBED_AT_BODY_DATA + ENTRY_HEADER_SIZE
    assert body[at:at + len(EMPTY_BLANK)] == b"x" * len(EMPTY_BLANK)
    body[at:at + len(EMPTY_BLANK)] = EMPTY_BLANK
    return base64.b64encode(bytes(body)).decode()


# the last T0 record ends this many bytes past 2147483647, where the last T9 message's entry starts (its tail after
# the body: the topic's length byte, "T0", a properties length of 0)
TO_T9_ENTRY = 4189 - 88 - EMBED_AT_BODY_DATA
T9_ENTRY = BLANK_MAX + TO_T9_ENTRY
T0_TAIL = b"\x02T0\x00\x00"
# a T5 message from 2147483647 to that entry: its last bytes are the T0 record's tail, which its properties string
# ends with ("KEYS\x01E5", then "T0\x00\x00": no name-value separator, a pair string2messageProperties skips)
ENTRY_BOUND_PROPS = b"KEYS\x01E5" + T0_TAIL
ENTRY_BOUND_BODY = (b"embedded!!" * 31)[:TO_T9_ENTRY - 88 - 1 - 2 - 2 - len(ENTRY_BOUND_PROPS)]


def entry_bound_message(field: int = T9_ENTRY + ENTRY_HEADER_SIZE, keys: bytes = b"E5") -> bytes:
    """The T5 message of :func:`past_2gib_embedded_to_entry_scenario`, :data:`TO_T9_ENTRY` bytes long, its
    PHYSICALOFFSET field ``field`` (by default the last T9 message's offset, 48 bytes past its entry's start), its
    keys ``keys`` (space-separated; by default ``E5``)."""
    props = b"KEYS\x01" + keys + T0_TAIL
    body = ENTRY_BOUND_BODY[:len(ENTRY_BOUND_BODY) + len(ENTRY_BOUND_PROPS) - len(props)]
    msg = embedded_message(field, body, props)
    assert len(msg) == TO_T9_ENTRY and msg.endswith(T0_TAIL), len(msg)
    return msg


def past_2gib_embedded_to_entry_scenario(line: str, field: int = T9_ENTRY + ENTRY_HEADER_SIZE,
                                         name: str = "embedded-to-entry", keys: bytes = b"E5") -> dict:
    """``<line>-dledger-abort-past-2gib-<name>`` (by default ``-embedded-to-entry``): :func:`past_2gib_abort_scenario`
    whose last T0 body holds, from 2147483647 to its end, a well-formed T5 message (:func:`entry_bound_message`, its
    PHYSICALOFFSET field ``field``, its keys ``keys``) whose last bytes are the T0 record's own tail, so that it ends
    where the last T9 message's entry starts; that T9 message has the keys ``K9``."""
    msg = entry_bound_message(field, keys)
    sc = with_embedded_message(past_2gib_abort_scenario(line), EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                               f"{line}-dledger-abort-past-2gib-{name}", msg=msg[:-len(T0_TAIL)])
    *rest, t9 = sc["messages"]
    assert t9["topic"] == "T9", t9
    return {**sc, "messages": [*rest, {**t9, "keys": "K9"}]}


def record_queue(read: Callable[[int, int], bytes], at: int) -> tuple[str, int]:
    """The topic and queue id of the message record at ``at`` (the fields ``MessageDecoder`` reads in order, past
    the hosts and the body), for a record whose queue no unit shows (a prepared message's)."""
    def i(off: int, n: int) -> int:
        return int.from_bytes(read(at + off, n), "big", signed=True)
    flag = i(OFF_SYSFLAG, 4)
    off = BORN_HOST_OFFSET + (HOST_V6_LEN if flag & SYSFLAG_BORNHOST_V6 else HOST_V4_LEN) + STORE_TIMESTAMP_LEN
    off += (HOST_V6_LEN if flag & SYSFLAG_STOREHOST_V6 else HOST_V4_LEN) + RECONSUME_TIMES_LEN + PREPARED_TX_OFFSET_LEN
    off += 4 + i(off, 4)
    width = 2 if i(OFF_MAGIC, 4) == MAGIC_V2 else 1
    n = i(off, width) & (0xFFFF if width == 2 else 0xFF)
    return read(at + off + width, n).decode("utf-8", "replace"), i(OFF_QUEUE_ID, 4)


PAST_2GIB_FULL = 22 * 23601   # the T0 entries that, after a first T9 message, fill the first 22 data files
# the body of a last T0 message that leaves the 22nd data file 100 bytes (2563 left after its 23601 T0 entries, a T0
# entry 141 bytes more than its body): no T9 entry (241 bytes) fits, the next message goes to the 23rd
PAST_2GIB_FILLER = 2563 - 141 - 100


def past_2gib_before_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before`` (5.5.1; some 2.3 GB of data: ``DLEDGER_2GIB=1`` only): a store that is
    not converted, with data files of 100,000,000 bytes: a T9 message, then T0 messages (4096-byte bodies, batches of
    256) filling the first 22 data files (2147483647 inside the body of a T0 entry of the 22nd; a last T0 message of a
    2322-byte body leaves it no room for another entry), then, as the data files of
    :func:`broker_dledger_scenarios.converted_past_2gib_two_files_abort_scenario`, a 23rd data file (from 2,200,000,000)
    of a T9 message, 23590 T0 messages and prepared T1 messages (4096-byte bodies) until one no longer fits, and a 24th
    of the rest of those, ten small prepared T1 messages and a last T9 message (keys ``K9``); restarted after a crash
    with ``recheckReputOffsetFromCq=true``.  The walk starts at the 24th (its first message at or below the checkpoint's
    ``logicsPhysicalOffset``) and queues the last T9 message only (after two ``fillPreBlank`` units: its queue offset is
    2), which lies past the short ``processOffset``: the cut leaves T9's queue with its two ``fillPreBlank`` units only
    (its max 2147483647), so ``doRecheckReputOffsetFromCq`` sets the reput there, inside the 22nd data file, two files
    before the walk's.  ``DLedgerCommitLog``'s check fails on the body's bytes and ``doReput`` jumps to the end of what
    ``getData`` gave, that file's end: the reput goes on at the 23rd data file, before the walk's, drops its T9 unit
    (queue offset 1, below T9's write position: "Build consume queue repeatedly"), puts its T0 units (``fillPreBlank``
    units before them) and then walks the walk's records again, putting T9's cut unit back and indexing its keys
    again."""
    conf = {**config(line), **THOROUGH_CHECKPOINT, "mappedFileSizeCommitLog": str(PAST_2GIB_FILE),
            "mappedFileSizeConsumeQueue": "6000000", "maxIndexNum": "4000"}
    messages: list[dict] = [{"topic": "T9", "queueId": 0, "bodySize": 100}]
    for k in range(0, PAST_2GIB_FULL, PAST_2GIB_BATCH):
        messages.append({"topic": "T0", "queueId": 0,
                         "batch": [{"bodySize": 4096}] * min(PAST_2GIB_BATCH, PAST_2GIB_FULL - k)})
    messages.append({"topic": "T0", "queueId": 0, "bodySize": PAST_2GIB_FILLER})
    messages.append({"topic": "T9", "queueId": 0, "bodySize": 100})   # its unit a repeat for the reput
    for n in range(0, PAST_2GIB_DATA0_T0, PAST_2GIB_BATCH):
        messages.append({"topic": "T0", "queueId": 0,
                         "batch": [{"bodySize": 4096}] * min(PAST_2GIB_BATCH, PAST_2GIB_DATA0_T0 - n)})
    messages += [{"topic": "T1", "queueId": 0, "bodySize": 4096, "tranType": "prepared"} for _ in range(30)]
    messages += [{"topic": "T1", "queueId": 0, "bodySize": 100, "tranType": "prepared", "keys": f"P{k}"}
                 for k in range(10)]
    messages.append({"topic": "T9", "queueId": 0, "bodySize": 100, "keys": "K9"})   # indexed again by the reput
    return {"config": conf, "messages": messages, "abort": True, "reportQueues": True,
            "name": f"{line}-dledger-abort-past-2gib-before"}


def past_2gib_before_embedded_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-embedded`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`past_2gib_before_abort_scenario` whose T0 body around 2147483647 holds, from there, a well-formed T5
    message (:func:`broker_dledger_2gib.embedded_message`, keys ``E5``) where no entry or message starts."""
    return with_embedded_message(past_2gib_before_abort_scenario(line), EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                                 f"{line}-dledger-abort-past-2gib-before-embedded")
