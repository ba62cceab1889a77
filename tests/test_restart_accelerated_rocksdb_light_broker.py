"""``verify`` on a 5.5.1 RocksDB consume queue store (``storeType=defaultRocksDB``, ``enableAcceleratedRecovery=true``,
``recheckReputOffsetFromCq=true``, ``enableMultiDispatch``/``enableLmq``) whose kept database's max-physical-offset
checkpoint lies at a NORMAL message planted in the last record's body that also carries a multi-dispatch request
(``INNER_MULTI_DISPATCH`` :data:`LIGHT` at ``INNER_MULTI_QUEUE_OFFSET`` :data:`LIGHT_QUEUE_OFFSET`) and a key
(:data:`KEY`), followed by a planted prepared message ending with the host: the recovery's walk
(``CommitLog.recoverAbnormally`` from ``RocksDBConsumeQueueStore.getDispatchFromPhyOffset``) accepts both, and
``RocksDBConsumeQueueStore.putMessagePosition0`` puts the first one's own unit and its light unit
(``dispatchLMQ``); the second reput from offset 0 (``DefaultMessageStore.doRecheckReputOffsetFromCq``) parses the
host whole.  Checked against the broker's own restart (4 KiB commitlog files; an ``abort`` file; the database kept,
``rocksdbCqCheckpoint``).

Both with the full suite only (``PIPELINES_FULL_SUITE=1``):

* ``5.5.1-rocksdb-accel-kept-planted-light-crash``: 39 messages and a host (T0/0, no key, no property) holding the
  planted messages (:func:`planted_light`).
* ``5.5.1-rocksdb-accel-kept-planted-light-nolmq-crash``: the same with ``enableLmq=false`` (``enableMultiDispatch``
  still on): ``dispatchLMQ`` puts no light unit.
* ``5.5.1-rocksdb-accel-kept-planted-light-text-crash``: the planted message's tags (:data:`BAD_TAGS`) and key not
  valid UTF-8: its units' tags code is Java's hash of the tags as they decode (U+FFFD for the bad byte).
* ``5.5.1-rocksdb-accel-kept-planted-light-slash-crash``: its light queue :data:`SLASHED`, a name holding the path
  separator, which ``dispatchLMQ`` puts as any other (the file queues' 5.x dispatch skips it).
* ``5.5.1-rocksdb-accel-kept-planted-light-slash0-crash``: the same at light queue offset 0 (which the file queues'
  skip never parses: the walk reads it all the same).
* ``5.5.1-rocksdb-accel-kept-planted-light-topic-crash``: its topic (:data:`BAD_TOPIC`) not valid UTF-8: its own
  unit goes to the queue of that topic as it decodes, keyed by that text's UTF-8 bytes.

First what the broker did, then ``verify``'s prediction of that restart.
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
from test_restart_accelerated_planted_broker import (
    ADD,
    BODY_AT,
    HOST,
    HOST_BODY,
    HOST_SIZE,
    PHYSICAL_OFFSET_AT,
    PREPARED,
    SYSFLAG_AT,
)
from test_restart_reput_before_recovery_more_broker import INDEX, SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

PLANTED_QUEUE_OFFSET = 1000   # the planted message's own T0/0 unit: far above T0/0's units
LIGHT = "%LMQ%w9"             # its light queue (queue 0), which no other record reaches
LIGHT_QUEUE_OFFSET = 7        # its unit's queue offset there
KEY = "KL"
SLASHED = "%LMQ%w/9"          # -slash: a light queue name holding the path separator


def light_props(light: str = LIGHT, offset: int = LIGHT_QUEUE_OFFSET) -> bytes:
    """The multi-dispatch request's properties: ``light`` at ``offset``."""
    return f"INNER_MULTI_DISPATCH\x01{light}\x02INNER_MULTI_QUEUE_OFFSET\x01{offset}\x02".encode()


LIGHT_PROPS = light_props()


def _slashed_props(offset: int = LIGHT_QUEUE_OFFSET) -> bytes:
    """-slash, -slash0: the key and :data:`SLASHED` at ``offset``."""
    return f"KEYS\x01{KEY}\x02".encode() + light_props(SLASHED, offset)


PROPS = f"KEYS\x01{KEY}\x02".encode() + LIGHT_PROPS
BAD_TAGS = b"t\xff"          # -text: tags and a key that are not valid UTF-8 (one byte Java decodes as U+FFFD)
TEXT_PROPS = b"KEYS\x01K\xff\x02TAGS\x01" + BAD_TAGS + b"\x02" + LIGHT_PROPS


BAD_TOPIC = b"T\xff"         # -topic: the planted message's topic not valid UTF-8 (as long as T0)


def java_hash(text: str) -> int:
    """``String.hashCode`` (a signed int) of ``text``, over its UTF-16 code units."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def planted_light(props: bytes = PROPS, topic: bytes = b"T0") -> bytes:
    """A whole normal message of ``topic``'s queue 0 (queue offset :data:`PLANTED_QUEUE_OFFSET`, a short body,
    ``props``), then the 88-byte header of a prepared T0/0 message whose body is the host's 'h' bytes after it to the
    host body's end, its topic and properties the host's (T0, none): it ends where the host does."""
    light = embedded_message(0, body=b"light!", props=props, topic=topic, queue_offset=PLANTED_QUEUE_OFFSET)
    second = ADD + len(light)                       # the prepared message's offset in the host record
    body = BODY_AT + HOST_BODY - second - BODY_AT   # the host body's bytes after its header
    assert body > 0, body
    tail = bytearray(embedded_message(0, body=b"h" * body, props=b"", topic=b"T0"))
    assert second + len(tail) == HOST_SIZE, (second, len(tail))
    struct.pack_into(">i", tail, SYSFLAG_AT, PREPARED)
    return light + bytes(tail[:BODY_AT])


def _scenarios() -> dict[str, list[dict]]:
    conf = {"storeType": "defaultRocksDB", "mappedFileSizeCommitLog": str(SIZE), "recheckReputOffsetFromCq": "true",
            "enableAcceleratedRecovery": "true", "enableMultiDispatch": "true", "enableLmq": "true", **INDEX}
    p = Messages(212, ["T0", "T1", "T2"])
    host = {"topic": "T0", "queueId": 0, "body": base64.b64encode(b"h" * HOST_BODY).decode()}
    sc = {"name": "5.5.1-rocksdb-accel-kept-planted-light-crash", "abort": True, "keepBefore": True,
          "keepQueues": True, "messages": [*(p.one() for _ in range(HOST)), host], "config": conf,
          "plantBytes": {"put": HOST, "add": ADD, "offsetFieldAt": PHYSICAL_OFFSET_AT,
                         "bytes": base64.b64encode(planted_light()).decode()},
          "rocksdbCqCheckpoint": {"put": HOST, "add": ADD}}
    off = {**sc, "name": "5.5.1-rocksdb-accel-kept-planted-light-nolmq-crash", "config": {**conf, "enableLmq": "false"}}
    text = {**sc, "name": "5.5.1-rocksdb-accel-kept-planted-light-text-crash",
            "plantBytes": {**sc["plantBytes"], "bytes": base64.b64encode(planted_light(TEXT_PROPS)).decode()}}
    topic = {**sc, "name": "5.5.1-rocksdb-accel-kept-planted-light-topic-crash",
             "plantBytes": {**sc["plantBytes"], "bytes": base64.b64encode(planted_light(topic=BAD_TOPIC)).decode()}}
    slash = {**sc, "name": "5.5.1-rocksdb-accel-kept-planted-light-slash-crash", "plantBytes": {
        **sc["plantBytes"], "bytes": base64.b64encode(planted_light(_slashed_props())).decode()}}
    slash0 = {**sc, "name": "5.5.1-rocksdb-accel-kept-planted-light-slash0-crash", "plantBytes": {
        **sc["plantBytes"], "bytes": base64.b64encode(planted_light(_slashed_props(0))).decode()}}
    return {"5.5.1": [sc, off, text, topic, slash, slash0]}


# with the full suite only (about 13 s: the broker's stores and two verify runs)
SCENARIOS = {line: kept for line, scs in _scenarios().items() if (kept := bh.bounded(scs, ("-crash",)))}
NAMES = bh.params_or_skip([pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs],
                          "full suite only: PIPELINES_FULL_SUITE=1")
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "RocksDB store(s), each restarted after a crash", threads=1)


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it, and our ``verify`` of ``<dir>/before`` (once)."""
    return bh.written_once(request, _RUNS, STORES, every=True, then=bh.restart_checked)


def _props(r: dict) -> bytes:
    if r["scenario"]["name"].endswith(("-slash-crash", "-slash0-crash")):
        return _slashed_props(_light_offset(r))
    return TEXT_PROPS if r["scenario"]["name"].endswith("-text-crash") else PROPS


def _light_queue(r: dict) -> str:
    """The planted message's light queue."""
    return SLASHED if r["scenario"]["name"].endswith(("-slash-crash", "-slash0-crash")) else LIGHT


def _light_offset(r: dict) -> int:
    """Its light unit's queue offset (-slash0: 0)."""
    return 0 if r["scenario"]["name"].endswith("-slash0-crash") else LIGHT_QUEUE_OFFSET


def _topic(r: dict) -> str:
    """The planted message's topic as Java decodes it (-topic: U+FFFD for the bad byte)."""
    return BAD_TOPIC.decode("utf-8", errors="replace") if r["scenario"]["name"].endswith("-topic-crash") else "T0"


def _light(r: dict) -> bool:
    """Whether the run's broker config has ``enableLmq`` (-nolmq: ``enableMultiDispatch`` alone)."""
    return r["scenario"]["config"]["enableLmq"] == "true"


@pytest.mark.parametrize("name", NAMES)
def test_the_walk_put_the_planted_message_s_own_and_light_units(runs, name: str) -> None:
    """The broker's own files: the walk began at the planted message (the database's checkpoint) and accepted both
    planted messages (the commitlog kept to the host's end); the restart's database holds every unit the first life's
    did, unchanged, and two more (-nolmq: the first alone), both the planted message's (its commitlog offset the
    host's, its physicalOffset field; its size; its tags code: 0 without tags, -text Java's hash of the decoded tags;
    its store time): T0/0 (-topic: its decoded topic's queue 0) at :data:`PLANTED_QUEUE_OFFSET` and :data:`LIGHT`/0
    at :data:`LIGHT_QUEUE_OFFSET`, that light queue's max entry.  The second reput put the host's unit (T0/0 queue
    offset 0) after them: T0/0's max entry is the host's.  The index: the new file holds the planted message's
    :data:`KEY` (-text: its key and its tags) at the host's offset alone: the second reput's records all lie below
    that file's ``endPhyOffset`` (``IndexService.buildIndex`` skips them), the host has no key."""
    from broker_rocksdb_runs import added_units, parsed_database
    from test_restart_reput_before_recovery_more_broker import _key_offsets

    from store_format.rocksdb_cq import cq_key, cq_value
    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    assert w.get("ok"), w.get("error")
    host = _records(d)[-1]
    assert host["size"] == HOST_SIZE, host
    assert w["plantedAt"] == w["rocksdbCqCheckpoint"] == host["offset"] + ADD and host["offset"] % SIZE, (w, host)
    assert w["maxPhyOffset"] == host["offset"] + host["size"], "the walk did not accept the planted messages"
    size = len(embedded_message(0, body=b"light!", props=_props(r), topic=b"T0"))
    tags_code = java_hash(BAD_TAGS.decode("utf-8", errors="replace")) if _props(r) == TEXT_PROPS else 0
    value = cq_value(host["offset"], size, tags_code, 1_700_000_000_001)
    light = {cq_key(_light_queue(r), 0, _light_offset(r)): value} if _light(r) else {}
    assert added_units(d) == {cq_key(_topic(r), 0, PLANTED_QUEUE_OFFSET): value, **light}
    after, cp_after = parsed_database(d / "expected" / "consumequeue")
    assert after["T0/0"].max == (host["offset"], 0), ("T0/0's max entry is not the host's", after["T0/0"].max)
    if _light(r):
        light_q = f"{_light_queue(r)}/0"
        assert after[light_q].max == (host["offset"], _light_offset(r)), after[light_q]
    else:
        assert f"{LIGHT}/0" not in after, after[f"{LIGHT}/0"]
    assert cp_after == host["offset"] + host["size"], (cp_after, host)
    names = [{f.name for f in (d / which / "index").iterdir()} for which in ("before", "expected")]
    assert names[0] and not names[0] & names[1], names
    assert len(_key_offsets(d, "before")) > 1
    keys = 2 if _props(r) == TEXT_PROPS else 1   # its key (-text: and its tags, 5.5.1's topic#T#tags key)
    assert _key_offsets(d).tolist() == [host["offset"]] * keys, "not the walk's keys alone"


@pytest.mark.parametrize("name", NAMES)
def test_verify_predicts_the_walk_s_light_unit(runs, name: str) -> None:
    """``verify`` on ``<dir>/before`` (the database kept): the cut at the host's end, the checkpoint after, queue by
    queue the max and min entries of the database the broker's restart left and the units above the max (T0/0: the
    planted one; :data:`LIGHT`/0 a new queue), the index files deleted and every key of the broker's new index
    file."""
    from broker_rocksdb_runs import kept_database_as_predicted
    from test_restart_reput_before_recovery_more_broker import _key_offsets
    r = runs[name]
    d = Path(r["scenario"]["dir"])
    p, listed = kept_database_as_predicted(r)
    own = f"{_topic(r)}/0"
    if own == "T0/0":   # the planted unit left above T0/0's max
        assert listed[own]["units_truncated"] == 1, listed.get(own)
    else:               # a queue of its own
        assert listed[own]["max_entry_after"][1] == PLANTED_QUEUE_OFFSET, listed.get(own)
    if _light(r):
        light_q = f"{_light_queue(r)}/0"
        assert listed[light_q]["max_entry_after"][1] == _light_offset(r), listed.get(light_q)
    else:   # not listed at all (queues_as_predicted: listed without entries at most)
        assert f"{LIGHT}/0" not in listed, listed[f"{LIGHT}/0"]
    names = [{f.name for f in (d / which / "index").iterdir()} for which in ("before", "expected")]
    assert set(p["index_files_deleted"]) == names[0] - names[1], (p["index_files_deleted"], names)
    assert p["index_keys_put_again"] == len(_key_offsets(d)), (p["index_keys_put_again"], p["notes"])


@pytest.mark.parametrize("name", NAMES)
def test_the_walk_s_units_are_the_broker_s_new_keys_and_values(runs, name: str) -> None:
    """The units ``verify`` puts for the walk (:func:`store_format.restart_reput.walk_units` from the planted message
    to the cut): exactly the keys and values the broker's restart added to the database, the light unit among them."""
    from broker_rocksdb_runs import added_units, walked_units_as_entries
    r = runs[name]
    ours = walked_units_as_entries(r)
    assert ours == added_units(Path(r["scenario"]["dir"])), ours
