"""``rebuild --as-restart`` and ``verify`` where a 5.5.1 ``enableAcceleratedRecovery`` recovery begins inside a
record at a well-formed message planted there (the checkpoint's logicsPhysicalOffset the planted bytes' offset),
accepts it, and the start's second reput (``recheckReputOffsetFromCq=true``) parses the record holding it instead.
Checked against the broker's own restart (4 KiB commitlog files; ``consumequeue/`` and ``index/`` deleted; an
``abort`` file).

``CommitLog.recoverAbnormally`` positions its first file's buffer at the checkpoint's offset, where the planted
message (a prepared transaction message of no key, its body CRC right) passes ``checkMessageAndReturnSize``: the
recovery accepts and dispatches it, which queues nothing (``CommitLogDispatcherBuildConsumeQueue`` skips a prepared
message) and indexes nothing (no key).  ``doRecheckReputOffsetFromCq`` finds every queue empty and sets the reput at
the min offset; ``doReput`` parses the planted bytes' file from its start (no CRC check) and reads the record holding
them whole: it queues and indexes that record, which the recovery never accepted.

* ``5.5.1-accel-planted-crash``: 40 single messages, the last one (``HOST``, no key) with a planted message's
  header :data:`ADD` bytes into its record, inside its body, the host's own body bytes, topic and (empty) properties
  the rest of it: the planted message ends where the host does (the recovery's walk then meets the zeros after it
  and ends there); the reput reads the host whole (its header untouched, no CRC check) and queues it.
* ``5.5.1-accel-planted-short-crash`` (full suite only): a planted message of :data:`SHORT` bytes there, ending inside
  the host's body: the recovery's next check meets no magic code and cuts the commitlog there; the reput's slice
  ends at that cut, inside the host, which is neither queued nor indexed
  (:func:`store_format.restart_reput.reput_data_end`).
* ``5.5.1-accel-planted-keyed-crash``: the host with the key K9, which the planted message (its
  physicalOffset field the host's offset) shares: the recovery indexes it at that field's value, the reput indexes
  nothing below it (``IndexService.buildIndex``: the index file's ``endPhyOffset``) and then the host
  (``SecondReput.walk_first``).

First what the broker did, then ``rebuild --as-restart`` on ``<dir>/before``: ``consumequeue/`` and ``index/``
byte for byte, and ``verify``'s restart prediction (the cut, the second reput's unit and key counts).
"""
from __future__ import annotations

import base64
import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_2gib import embedded_message
from broker_layout_scenarios import Messages
from test_restart_accelerated_inside_broker import _records
from test_restart_reput_before_recovery_more_broker import (
    INDEX,
    SIZE,
    _key_offsets,
    _queued_offsets,
    _second_reput_predicted,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

HOST = 39            # the put whose record holds the planted message (the last one)
HOST_BODY = 600      # its body's length ('h' bytes); it has no property
HOST_SIZE = 693      # its record's size as the 5.5.1 broker writes it (the first test checks it)
KEYED_HOST_SIZE = 701   # -keyed: with the key K9 ("KEYS", 8 bytes of properties)
ADD = 120            # the planted message's offset in that record: inside its body
BODY_AT = 88         # a message's body (after its 4-byte bodyLength at 84)
PREPARED = 4         # MessageSysFlag.TRANSACTION_PREPARED_TYPE
SYSFLAG_AT = 36      # the sysFlag field in a message
PHYSICAL_OFFSET_AT = 28   # its physicalOffset field (-keyed: the harness writes the host's offset there)
SHORT = 200          # -short: the planted message's length


def planted(total: int | None = None, host_size: int = HOST_SIZE) -> bytes:
    """The header (88 bytes) of a prepared transaction message for T0/0 whose body is the host's 'h' bytes after it,
    to the host body's end, the host's topic and properties its own (none; -keyed: the host's keys), so that it ends
    where the host (``host_size`` bytes) does; ``total``: a whole message that long (topic T0, no property), ending
    inside the host's body, where the recovery's next check meets 'h' bytes (no magic code)."""
    if total is None:
        props = bytes(host_size - BODY_AT - HOST_BODY - len(embedded_message(0, body=b"", props=b"", topic=b"T0"))
                      + BODY_AT)   # placeholders as long as the host's properties, which stay in place
        msg = bytearray(embedded_message(0, body=b"h" * (HOST_BODY - ADD), props=props, topic=b"T0"))
        assert len(msg) == host_size - ADD
        msg = msg[:BODY_AT]
    else:
        tail = len(embedded_message(0, body=b"", props=b"", topic=b"T0")) - BODY_AT
        msg = bytearray(embedded_message(0, body=b"h" * (total - BODY_AT - tail), props=b"", topic=b"T0"))
        assert len(msg) == total
    struct.pack_into(">i", msg, SYSFLAG_AT, PREPARED)
    return bytes(msg)


def _scenarios() -> dict[str, list[dict]]:
    accel = {"mappedFileSizeCommitLog": str(SIZE), "recheckReputOffsetFromCq": "true",
             "enableAcceleratedRecovery": "true", **INDEX}
    g = Messages(212, ["T0", "T1", "T2"])
    messages = [g.one() for _ in range(HOST)]
    messages.append({"topic": "T0", "queueId": 0, "body": base64.b64encode(b"h" * HOST_BODY).decode()})
    sc = {"name": "5.5.1-accel-planted-crash", "abort": True, "keepBefore": True, "messages": messages,
          "plantBytes": {"put": HOST, "add": ADD, "bytes": base64.b64encode(planted()).decode()},
          "checkpointLogicsPhysicalOffset": {"put": HOST, "add": ADD}, "config": accel}
    keyed = [*messages[:-1], {**messages[-1], "keys": "K9"}]
    return {"5.5.1": [sc, {**sc, "name": "5.5.1-accel-planted-short-crash",
                           "plantBytes": {**sc["plantBytes"], "bytes": base64.b64encode(planted(SHORT)).decode()}},
                      {**sc, "name": "5.5.1-accel-planted-keyed-crash", "messages": keyed,
                       "plantBytes": {**sc["plantBytes"], "offsetFieldAt": PHYSICAL_OFFSET_AT,
                                      "bytes": base64.b64encode(planted(host_size=KEYED_HOST_SIZE)).decode()}}]}


# -short (the recovery's walk ends inside the host, the reput's slice ends there) with the full suite only
SCENARIOS = {line: bh.bounded(scs, ("-planted-short-crash",))
             for line, scs in _scenarios().items()}
NAMES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs]
UNKEYED = [p for p in NAMES if "-keyed-" not in p.values[0]]
KEYED = [p for p in NAMES if "-keyed-" in p.values[0]]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store(s), each restarted after a crash", threads=1)


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it, our ``--as-restart`` rebuild and ``verify`` (once)."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_rebuilt_and_verified, every=True)


@pytest.mark.parametrize("name", UNKEYED)
def test_the_broker_accepted_the_planted_message_and_its_reput_parsed_the_host(runs, name: str) -> None:
    """The broker's own files: the planted message inside the last record's body, where the checkpoint points; the
    cut at the planted message's end (the recovery accepted it); every record before the host queued and indexed;
    the host queued (it has no key) where the cut is its end, though the recovery never read it, and not where the
    cut lies inside it (-short)."""
    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    recs = _records(d)
    host = recs[-1]
    assert host["size"] == HOST_SIZE, f"the host record is {host['size']} bytes: set HOST_SIZE"
    assert w["plantedAt"] == w["checkpointLogicsPhysicalOffset"] == host["offset"] + ADD, w
    assert w["plantedAt"] % SIZE > ADD, "the host record is its file's first"
    total = int.from_bytes((d / "before" / "commitlog" / f"{w['plantedAt'] - w['plantedAt'] % SIZE:020d}")
                           .read_bytes()[w["plantedAt"] % SIZE:][:4], "big")
    assert w["maxPhyOffset"] == w["plantedAt"] + total, (w, total)
    offsets = [x["offset"] for x in recs if x["offset"] <= host["offset"]]
    if "-short-" in name:
        assert host["offset"] < w["maxPhyOffset"] < host["offset"] + host["size"], "the cut lies outside the host"
        offsets.pop()
    else:
        assert w["maxPhyOffset"] == host["offset"] + host["size"], "the planted message ends elsewhere than the host"
    assert _queued_offsets(d) == offsets, "the broker queued other records than every one up to the cut"
    assert sorted(set(_key_offsets(d).tolist())) == [o for o in offsets if o != host["offset"]]


@pytest.mark.parametrize("name", NAMES)
def test_as_restart_gives_the_broker_s_files(runs, name: str) -> None:
    """``consumequeue/`` and ``index/``: the broker's restart's files byte for byte."""
    bh.restart_files_are_the_broker_s(runs[name])


@pytest.mark.parametrize("name", NAMES)
def test_verify_predicts_the_second_reput_over_the_host(runs, name: str) -> None:
    """``verify`` on ``<dir>/before``: the broker's cut, and what the second reput from the commitlog's min offset
    writes up to it: every unit of the broker's queues, every key of its index."""
    _second_reput_predicted(runs[name])


@pytest.mark.parametrize("name", KEYED)
def test_the_broker_indexed_the_planted_key_then_the_host_alone(runs, name: str) -> None:
    """-keyed: the planted message carries the host's key (its physicalOffset field the host's offset).  The broker's
    recovery indexed it, and its reput, skipping every record below that offset (``IndexService.buildIndex``:
    the last index file's ``endPhyOffset``), indexed the host alone: the index holds the key twice at the host's
    offset, no other record's; the reput queued every record, the host too."""
    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    recs = _records(d)
    host = recs[-1]
    assert host["size"] == KEYED_HOST_SIZE, f"the host record is {host['size']} bytes: set KEYED_HOST_SIZE"
    assert w["plantedAt"] == w["checkpointLogicsPhysicalOffset"] == host["offset"] + ADD, w
    assert w["maxPhyOffset"] == host["offset"] + host["size"], (w, host)
    assert _queued_offsets(d) == [x["offset"] for x in recs]
    assert _key_offsets(d).tolist() == [host["offset"]] * 2, "the broker indexed other records"
