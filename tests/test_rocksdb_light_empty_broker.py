"""A multi-dispatch request naming an EMPTY queue (``INNER_MULTI_DISPATCH`` ``",%LMQ%a"``) in a RocksDB consume
queue store (``storeType=defaultRocksDB``, ``enableLmq=true``), as ``RocksDBConsumeQueueStore.dispatchLMQ`` puts it
(5.5.1 and 5.3.3 alike): ``String.split(",")`` drops trailing empty parts only, so a leading or inner one is a queue
name; "" is no ``MixAll.isLmq`` name, so its unit keeps the record's queue id, under topic "" (a key whose topic
length is 0), and the ``offset`` family gets that queue's max (:func:`store_format.rocksdb_cq.light_rows`).

The harness writes such a store with the puts under ``enableLmq=false`` (``putSettings``): with it the put path
(``LmqDispatch``) writes ``INNER_MULTI_QUEUE_OFFSET`` itself, appending no offset for a name that is no ``%LMQ%``
one, so an empty name gets an empty offset, which ``Long.parseLong`` refuses (that request is refused as not
derivable: tests/test_rocksdb_light_refusal.py).  The restart's reput (``enableLmq=true``) then rebuilds the database
from the messages as the client wrote them.

First what the broker wrote, then our rebuild's key/value set (both column families, key for key) and the messages
table's light units.  By default 5.5.1; ``PIPELINES_FULL_SUITE=1`` adds 5.3.3 (and 4.9.8's file queues).

The same messages in a store of consume queue files (``<line>-light-empty-files``, ``enableMultiDispatch=true``,
``enableLmq=false``): ``ConsumeQueue.multiDispatchLmqQueue`` puts the empty name's units into the queue of topic ""
under the record's queue id, whose files land in ``consumequeue/<queueId>/`` (``consumequeue/<topic>/<queueId>``
with an empty topic), where a topic's queue folders would be, by the file queue's put rule.  4.9.8's put
(``MultiDispatch.wrapMultiDispatch``) writes ``INNER_MULTI_QUEUE_OFFSET`` itself from its own table (key
``<name>-<queueId>``, 0 for a queue it has not seen), so the commitlog holds 0, 1, ... for topic "" there, not the
client's offsets.  Our rebuild writes the broker's ``consumequeue/`` and ``index/`` byte for byte
(:func:`store_format.walkresult.light_units_put`, :func:`store_format.consumequeue.cq_queue_folder`); ``--as-restart``
writes it as the 5.5.1, 5.3.3 and 4.9.8 restarts do (:mod:`store_format.empty_topic_restart`).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages
from broker_rocksdb_runs import database, same_databases

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

FULL = os.environ.get("PIPELINES_FULL_SUITE", "") not in ("", "0")
LINES = ("5.5.1", "5.3.3") if FULL else ("5.5.1",)

# (INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET, the record's queue id), each put after a plain message
REQUESTS = [
    (",%LMQ%a", "0,0", 1),          # a leading empty name: ("", 1) at 0, %LMQ%a at 0
    ("%LMQ%a,,%LMQ%b", "1,4,0", 0),  # an inner one: ("", 0) at 4
    (",%LMQ%a,", "9,2", 1),         # the trailing empty part dropped (two names, two offsets): ("", 1) at 9
    (",", "3", 0),                  # no name at all, one offset: the counts differ, no light unit
    (",x", "5,6", 0),               # ("", 0) at 5, after 4 in commitlog order: that queue's max; x/0 at 6
]
# the units of topic "" each request above asks for: (queue id, queue offset) per request index
EMPTY_UNITS = {0: [(1, 0)], 1: [(0, 4)], 2: [(1, 9)], 4: [(0, 5)]}


def _messages() -> list[dict]:
    g = Messages(141, ["T0", "T1"], queues=2)
    out = [g.one()]                        # the record at offset 0 (a rebuild into an empty database skips it)
    for n, o, q in REQUESTS:
        out.append(g.one())
        out.append(g.one(queueId=q, properties={"INNER_MULTI_DISPATCH": n, "INNER_MULTI_QUEUE_OFFSET": o}))
    out.append(g.one())
    return out


def empty_name_scenarios(line: str) -> list[dict]:
    """The RocksDB store and the file queues' one of broker line ``line``."""
    base = {"mappedFileSizeCommitLog": str(32 * 1024), "maxHashSlotNum": "101", "maxIndexNum": "400"}
    return [{"name": f"{line}-rocksdb-light-empty", "messages": _messages(),
             "config": {**base, "storeType": "defaultRocksDB", "enableLmq": "true", "enableMultiDispatch": "false"},
             "putSettings": {"enableLmq": "false"}},
            {"name": f"{line}-light-empty-files", "messages": _messages(),
             "config": {**base, "enableLmq": "false", "enableMultiDispatch": "true"}}]


SCENARIOS = {line: empty_name_scenarios(line) for line in LINES}
if FULL:   # 4.9.8: file queues alone (ConsumeQueue.multiDispatchLmqQueue is the same there)
    SCENARIOS["4.9.8"] = [sc for sc in empty_name_scenarios("4.9.8") if sc["name"].endswith("-files")]
CASES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs
         if sc["config"].get("storeType") == "defaultRocksDB"]
FILES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs
         if sc["name"].endswith("-files")]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "RocksDB store(s) with empty light queue names", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker wrote it, and our rebuild of it with tables (every scenario once)."""
    bh.written_once(request, _RUNS, STORES, every=True, then=lambda r: r.update(rebuild=bh.rebuild(
        Path(r["scenario"]["dir"]), bh.BROKER_VERSION_ARG[r["line"]], "--tables",
        str(Path(r["scenario"]["dir"]) / "tables"))))
    return _RUNS[request.node.callspec.params["name"]]


def _units(default: dict[bytes, bytes]) -> dict[tuple[str, int, int], bytes]:
    """Every unit of a default family: (topic, queue id, queue offset) -> value."""
    from store_format.rocksdb_cq import CQ_KEY_TAIL, split_key

    out = {}
    for k, v in default.items():
        topic, tail = split_key(k) or ("?", b"")
        _c, qid, _c2, qoff = CQ_KEY_TAIL.unpack(tail)
        out[(topic, qid, qoff)] = v
    return out


def _requests_at(own: list[int]) -> list[int]:
    """The commitlog offsets of the requests' records, from every own unit's commitlog offset (put order: message 0,
    then (plain, request) pairs, then the last plain one; ``own`` without message 0's where it starts at 1)."""
    own = sorted(own)
    return own[1 if own[0] else 2::2][:len(REQUESTS)]


def _requests_by_offset(units: dict[tuple[str, int, int], bytes]) -> list[int]:
    """The requests' records' offsets in a default family (a rebuild into an empty database: no unit of offset 0)."""
    return _requests_at([int.from_bytes(v[:8], "big") for (t, _q, _o), v in units.items() if t in ("T0", "T1")])


@pytest.mark.parametrize("name", CASES)
def test_the_broker_puts_units_under_topic_empty_with_the_record_s_queue_id(written, name):
    """What the broker wrote: a unit of topic "" for each empty name whose offset pairs up, under the record's own
    queue id at its listed offset, valued as the record's own unit; the offset family's max of each ("", queue id)
    the last of its units in commitlog order."""
    from store_format.rocksdb_cq import OFFSET_VALUE, offset_key

    db = database(Path(written["scenario"]["dir"]) / "expected" / "consumequeue")
    units = _units(db["default"])
    at = _requests_by_offset(units)
    empty = {(q, o): int.from_bytes(v[:8], "big") for (t, q, o), v in units.items() if t == ""}
    assert empty == {u: at[i] for i, us in EMPTY_UNITS.items() for u in us}
    own_values = {v for (t, _q, _o), v in units.items() if t in ("T0", "T1")}
    assert all(units[("", q, o)] in own_values for q, o in empty)
    for qid in (0, 1):
        last = max((phy, o) for (q, o), phy in empty.items() if q == qid)
        assert OFFSET_VALUE.unpack(db["offset"][offset_key("", qid)]) == last


@pytest.mark.parametrize("name", CASES)
def test_rebuild_holds_the_broker_s_key_value_set(written, name):
    """Both column families of our database hold exactly the broker's keys and values, topic "" among them."""
    d = bh.rebuilt_dir(written)
    same_databases(d / "expected" / "consumequeue", d / "ours" / "consumequeue")


@pytest.mark.parametrize("name", CASES)
def test_messages_table_lists_the_broker_s_light_units(written, name):
    """The messages table's light units (queue name, queue id, queue offset, record) are the broker's: every unit of
    its database but the records' own."""
    from pipelines.tables.runs import snapshot

    d = bh.rebuilt_dir(written)
    broker = {(t, q, o, int.from_bytes(v[:8], "big"))
              for (t, q, o), v in _units(database(d / "expected" / "consumequeue")["default"]).items()
              if t not in ("T0", "T1")}
    ours = set()
    for r in snapshot(str(d / "tables")).read_arrow("messages").to_pylist():
        for n, q, u in zip(r["lmq_queues"] or [], r["lmq_queue_ids"] or [], r["lmq_consume_queue_offsets"] or []):
            if u is not None:
                ours.add((n, q, u, r["commitlog_offset"]))
    assert ("", 1, 0) in {b[:3] for b in broker} and ours == broker


def _file_units(path: Path) -> dict[int, int]:
    """A consume queue file's units: queue offset -> commitlog offset (20-byte units; blank and zeroed ones left
    out)."""
    data = path.read_bytes()
    out = {}
    for i in range(len(data) // 20):
        phy, size = int.from_bytes(data[20 * i:20 * i + 8], "big"), int.from_bytes(data[20 * i + 8:20 * i + 12], "big")
        if size and size != 0x7FFFFFFF:
            out[i] = phy
    return out


@pytest.mark.parametrize("name", FILES)
def test_the_file_queues_put_empty_names_into_consumequeue_queue_id(written, name):
    """What the broker wrote with file queues: each empty name's unit in the queue of topic "", whose file lies at
    ``consumequeue/<queueId>/00000000000000000000`` (no topic folder), by the file queue's put rule: queue 1's at 0
    and, asked for 9, at the write position 1 (``ConsumeQueue.putMessagePositionInfo`` appends it there); queue 0's
    at 4 (``fillPreBlank`` units before it) and 5 on 5.x, at 0 and 1 on 4.9.8, whose put wrote its own offsets into
    the records (module docstring; the commitlog's ``INNER_MULTI_QUEUE_OFFSET`` values asserted first)."""
    d = Path(written["scenario"]["dir"])
    carried = [re.findall(rb"INNER_MULTI_QUEUE_OFFSET\x01([0-9,]*)", f.read_bytes())
               for f in sorted((d / "store" / "commitlog").iterdir())]
    client = [o.encode() for _n, o, _q in REQUESTS]
    assert [o for found in carried for o in found] == (
        [b"0,0", b"0,0,0", b"1,1", b"", b"1,0"] if written["line"] == "4.9.8" else client)
    cq = d / "expected" / "consumequeue"
    own = [phy for t in ("T0", "T1") for q in (0, 1) for f in sorted((cq / t / str(q)).iterdir())
           for phy in _file_units(f).values()]
    at = _requests_at(own)
    files = {qid: cq / str(qid) / "00000000000000000000" for qid in (0, 1)}
    assert all(f.is_file() for f in files.values()), sorted(str(p.relative_to(cq)) for p in cq.rglob("*"))
    first = 0 if written["line"] == "4.9.8" else 4
    assert _file_units(files[1]) == {0: at[0], 1: at[2]} and _file_units(files[0]) == {first: at[1], first + 1: at[4]}


@pytest.mark.parametrize("name", FILES)
def test_rebuild_writes_the_broker_s_files(written, name):
    """Our rebuild's ``consumequeue/`` (topic ""'s ``consumequeue/<queueId>/`` files among them) and ``index/`` are the
    broker's, byte for byte: the same files, the same bytes."""
    d = bh.rebuilt_dir(written)
    exp, ours = d / "expected" / "consumequeue", d / "ours" / "consumequeue"
    names = sorted(str(p.relative_to(exp)) for p in exp.rglob("*") if p.is_file())
    assert "0/00000000000000000000" in names
    assert names == sorted(str(p.relative_to(ours)) for p in ours.rglob("*") if p.is_file())
    for rel in names:
        bh.same_bytes((exp / rel).read_bytes(), (ours / rel).read_bytes(), f"consumequeue/{rel}")
    exp_idx, our_idx = sorted((d / "expected" / "index").iterdir()), sorted((d / "ours" / "index").iterdir())
    assert exp_idx and len(our_idx) == len(exp_idx)
    for i, (e, o) in enumerate(zip(exp_idx, our_idx)):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i}")


@pytest.mark.parametrize("name", FILES)
def test_messages_table_lists_topic_empty_units_of_the_broker_s_files(written, name):
    """The messages table's light units of name "" are the broker's topic "" units: (queue id, queue offset, record)
    of every unit in ``consumequeue/<queueId>/``, the queue offset the one the put rule gave it (on 5.x the request
    asking for 9 is listed at 1, where its unit lies)."""
    from pipelines.tables.runs import snapshot

    d = bh.rebuilt_dir(written)
    broker = {(qid, at, phy) for qid in (0, 1) for at, phy in
              _file_units(d / "expected" / "consumequeue" / str(qid) / "00000000000000000000").items()}
    ours = set()
    for r in snapshot(str(d / "tables")).read_arrow("messages").to_pylist():
        for n, q, u in zip(r["lmq_queues"] or [], r["lmq_queue_ids"] or [], r["lmq_consume_queue_offsets"] or []):
            if n == "" and u is not None:
                ours.add((q, u, r["commitlog_offset"]))
    assert len(broker) == 4 and ours == broker


@pytest.mark.parametrize("name", FILES)
def test_as_restart_writes_the_broker_s_files(written, name):
    """The broker's restart of the store (its queue folders deleted: ``expected/``) reopens topic "" as any queue:
    ``rebuild --as-restart`` writes its ``consumequeue/`` byte for byte on 5.5.1, 5.3.3 and 4.9.8
    (:mod:`store_format.empty_topic_restart`; a start over such files: tests/test_light_empty_reopen_broker.py, on
    5.3.3 tests/test_light_empty_restart_533_broker.py)."""
    d, version = Path(written["scenario"]["dir"]), bh.BROKER_VERSION_ARG[written["line"]]
    code, _, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(d / "ours-restart"), "--as-restart",
                           "--config", str(d / "broker.conf"), "--broker-version", version, "--split-size", "4k",
                           "--no-tables"])
    assert code == 0, err[-2000:]
    exp, ours = d / "expected" / "consumequeue", d / "ours-restart" / "consumequeue"
    names = sorted(str(p.relative_to(exp)) for p in exp.rglob("*") if p.is_file())
    assert "0/00000000000000000000" in names
    assert names == sorted(str(p.relative_to(ours)) for p in ours.rglob("*") if p.is_file())
    for rel in names:
        bh.same_bytes((exp / rel).read_bytes(), (ours / rel).read_bytes(), f"consumequeue/{rel}")


@pytest.mark.parametrize("name", FILES)
def test_verify_compares_topic_empty_files_with_the_broker_s(written, name, tmp_path):
    """``verify`` of the store with the broker's own ``consumequeue/`` and ``index/``: identical, every broker file
    counted (topic ""'s among them: files straight in ``consumequeue/<queueId>/``, which a start does not load as a
    queue, compared as files); with topic "" queue 1's unit at 1 zeroed it reports that file differing, and ``repair``
    writes the broker's bytes back."""
    d, version = Path(written["scenario"]["dir"]), bh.BROKER_VERSION_ARG[written["line"]]
    broker_files = [p for p in (d / "expected" / "consumequeue").rglob("*") if p.is_file()]
    store = bh.broker_store(d, tmp_path / "store")
    report = bh.verified(store, d / "broker.conf", version)
    assert report["identical"] and report["counts"]["consume_queue"]["identical"] == len(broker_files), report["counts"]
    damaged = store / "consumequeue" / "1" / "00000000000000000000"
    data = bytearray(damaged.read_bytes())
    assert int.from_bytes(data[20:28], "big") > 0
    data[20:40] = bytes(20)
    damaged.write_bytes(bytes(data))
    report = bh.verified(store, d / "broker.conf", version)
    assert not report["identical"] and report["counts"]["consume_queue"]["differs"] == 1, report["counts"]
    assert [r["path"] for r in report["consume_queue"] if r["status"] != "identical"] == ["1/00000000000000000000"]
    code, _out, err = bh.cli(["repair", "--store", str(store), "--config", str(d / "broker.conf"), "--broker-version",
                              version, "--split-size", "4k", "--force"])
    assert code == 0, err[-2000:]
    bh.same_bytes((d / "expected" / "consumequeue" / "1" / "00000000000000000000").read_bytes(), damaged.read_bytes(),
                  "the repaired consumequeue/1/00000000000000000000")
