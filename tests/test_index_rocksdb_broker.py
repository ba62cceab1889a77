"""The 5.5 RocksDB message index (``indexRocksDBEnable=true``) written by the published RocketMQ 5.5.1
store through the JVM harness in ``tests/broker/``, against our rebuild's ``rocksdbstore/``
(:mod:`store_format.index_rocksdb`, :mod:`pipelines.index_rocksdb`).

The broker's database is the one its dispatch filled while the messages were put (``IndexRocksDBStore``,
kept across the harness's restart, whose reput adds to it): every column family's key/value set must be
ours, read with ``rocksdict``; then the broker's ``queryMessage`` (``indexFileReadEnable=false``, so it
asks ``IndexRocksDBStore.queryOffset``) answers every (topic, key) and unique key alike on our database
and on its own.  ``transRocksDBEnable=true`` too: the harness's store has no ``TransMessageRocksDBStore``
(the broker's controller hands it one), so both ``trans`` families are empty, and the rebuild must say in
one warning line that it does not rebuild that family.

Our database is built three ways (at 4 KiB splits), each checked alike: as the rebuild does (``ours``:
many split files whose keys overlap, ingested at once, then compacted), ingesting two files at a time
(``ours-groups``: a compaction of each group's key range), and with the compactions left out
(``ours-ingested``: the split files as RocksDB's ingestion placed them, overlapping ones in level 0 with
their own sequence numbers), which the broker's older RocksDB must read as it reads any file of ours
that no compaction rewrote (one whose keys overlap no other file's).

``verify`` on the broker's own store (its commitlog with the queues and the database the broker wrote) finds
the index family identical to the rebuild's; on a copy with some keys deleted, one added at an offset inside the
commitlog where no record starts and one past the commitlog's end, it names the deleted ones as missing, the
first added as not derived (an error) and the second apart (not an error); ``repair`` plans nothing for it and
says in a note that it leaves the database alone.

One store by default (``mixed``: batches, delayed and transactional messages incl. rolled back ones, a long
topic, plus messages with several, repeated and non-ASCII keys, tags, and one without a unique key; with
``indexFileWriteEnable=false``, the RocksDB index alone);
``RDBIDX_FULL=1`` adds ``plain`` and ``lmq``.
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import layout_scenarios
from broker_scenarios import query_pairs

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
rd = pytest.importorskip("rocksdict")

LINE = "5.5.1"
TOPICS = ["T0", "T1", "%RETRY%cg1", "LongTopic-" + "x" * 190]
TRANS_WARNING = "transRocksDBEnable=true: the trans family of rocksdbstore/ is not rebuilt"


def _body(n: int) -> str:
    return base64.b64encode(bytes(range(n % 200 + 20))).decode()


# several keys in one KEYS value (split on single spaces, empty tokens and repeats dropped), non-ASCII
# keys and tags, and a message without UNIQ_KEY (the broker indexes nothing of it)
EXTRA = [
    {"topic": "T0", "queueId": 1, "body": _body(1), "keys": "k1 k2  k1 ", "tags": "TagA",
     "uniqKey": "7F00000100002A9F00000000FF01"},
    {"topic": "T1", "queueId": 0, "body": _body(2), "keys": "键 ключ 🔑k", "tags": "标签",
     "uniqKey": "7F00000100002A9F00000000FF02"},
    {"topic": TOPICS[3], "queueId": 2, "body": _body(3), "keys": "long-topic-key",
     "uniqKey": "7F00000100002A9F00000000FF03"},
    {"topic": "T0", "queueId": 0, "body": _body(4), "keys": "no-uniq-key", "tags": "TagB"},
    {"topic": "T1", "queueId": 3, "body": _body(5), "uniqKey": "7F00000100002A9F00000000FF05"},
]


def _config(which: str) -> dict[str, str]:
    # mixed: the RocksDB index alone (indexFileWriteEnable=false: no index files, the RocksDB index still
    # written, as CommitLogDispatcherBuildIndex reads messageIndexEnable for it); plain and lmq: both
    only_rocksdb = {"indexFileWriteEnable": "false"} if which == "mixed" else {}
    return {"indexRocksDBEnable": "true", "transRocksDBEnable": "true", **only_rocksdb,
            "mappedFileSizeCommitLog": str(32 * 1024), "maxHashSlotNum": "101", "maxIndexNum": "400"}


def _scenarios() -> list[dict]:
    scs = layout_scenarios(LINE, "rdbidx", 41, TOPICS, {w: _config(w) for w in ("plain", "mixed", "lmq")})
    mixed = next(sc for sc in scs if sc["name"].endswith("-mixed"))
    mixed["messages"] = mixed["messages"] + EXTRA
    return [mixed] + ([sc for sc in scs if sc is not mixed] if os.environ.get("RDBIDX_FULL") else [])


SCENARIOS = _scenarios()
_RUNS: dict[str, dict] = {}
STORES = bh.Stores({LINE: SCENARIOS}, "RocksDB index store(s)", threads=1)
OURS = ("ours", "ours-groups", "ours-ingested")


def _rebuild_variants(d: Path) -> dict:
    """``rebuild`` into ``d/ours``, ``d/ours-groups`` (ingesting two split files at a time) and
    ``d/ours-ingested`` (no compaction); the first rebuild's result."""
    from unittest import mock

    first = bh.rebuild(d, bh.BROKER_VERSION_ARG[LINE])
    assert first["code"] == 0, first["stderr"][-2000:]
    with mock.patch("pipelines.index_rocksdb._ingest_files", return_value=2):
        groups = bh.rebuild(d, bh.BROKER_VERSION_ARG[LINE], "--out", str(d / "ours-groups"))
    with mock.patch("pipelines.index_rocksdb._compact"):
        ingested = bh.rebuild(d, bh.BROKER_VERSION_ARG[LINE], "--out", str(d / "ours-ingested"))
    for got in (groups, ingested):
        assert got["code"] == 0, got["stderr"][-2000:]
    return first


def _levels(path: Path) -> list[int]:
    """The level of each table file of the database's index family."""
    copy = path.parent / f"{path.parent.name}-levels-{path.name}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(path, copy)
    db = rd.Rdict(str(copy), options=rd.Options(raw_mode=True), access_type=rd.AccessType.read_only(),
                  column_families={f: rd.Options(raw_mode=True) for f in ("timer", "trans")})
    try:
        return [f["level"] for f in db.live_files() if f["start_key"][:1] == b"\0"]
    finally:
        db.close()


def _families(path: Path) -> dict[str, dict[bytes, bytes]]:
    from pipelines.index_rocksdb import read_message_rocksdb

    copy = path.parent / f"{path.parent.name}-read-{path.name}"   # read-only opening may still write a LOG
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(path, copy)
    return read_message_rocksdb(copy)


def _read_request(d: Path, which: str, work: Path, pairs: list[tuple[str, str]]) -> dict:
    """The broker's queries on a copy of the store with the broker's (``expected``) or our ``rocksdbstore/``,
    answered by the RocksDB index (``indexFileReadEnable=false``, no consume queue or index files)."""
    copy = work / f"read-{d.name}-{which}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(d / "store", copy)
    shutil.copytree(d / which / "rocksdbstore", copy / "rocksdbstore")
    return {"store": copy, "config": {**bh.read_conf(d / "broker.conf"), "indexFileReadEnable": "false"},
            "queries": pairs}


@pytest.fixture
def written(request, tmp_path_factory):
    name = request.node.callspec.params["name"]
    if not _RUNS:
        work = tmp_path_factory.mktemp("rdbidx")
        written = bh.write_lines(request, STORES, work)
        for n, w in written.items():
            r = _RUNS[n] = {"dir": Path(w["scenario"]["dir"]), "written": w["written"]}
            if r["written"].get("ok"):
                r["rebuild"] = _rebuild_variants(r["dir"])
        ok = [(_RUNS[sc["name"]]["dir"], query_pairs(sc)) for sc in SCENARIOS if _RUNS[sc["name"]]["written"].get("ok")]
        which = ("expected", *OURS)
        answers = bh.read_stores(LINE, [_read_request(d, w, work, pairs) for d, pairs in ok for w in which], work)
        for i, (d, _pairs) in enumerate(ok):
            _RUNS[d.name]["answers"] = dict(zip(which, answers[len(which) * i:len(which) * (i + 1)]))
    r = _RUNS[name]
    if not r["written"].get("ok"):
        pytest.fail(f"the broker's writer failed on {name}: {r['written'].get('error')}")
    return r


CASES = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS]


@pytest.mark.parametrize("variant", OURS)
@pytest.mark.parametrize("name", CASES)
def test_key_value_sets_match_broker(written, name, variant):
    """Every column family of our ``rocksdbstore/`` (each way it is built) holds exactly the broker's keys
    and values; the broker's index holds every kind of key (K, T, U) and its last-offset records, and
    (``mixed``) no key of the message put without a unique key."""
    exp = _families(written["dir"] / "expected" / "rocksdbstore")
    ours = _families(written["dir"] / variant / "rocksdbstore")
    assert sorted(exp) == sorted(ours) == ["default", "timer", "trans"]
    index = exp["default"]
    assert b"lastOffsetPy" in index and b"lastStoreTimeStamp" in index
    for kind in (b"@K@", b"@T@", b"@U@"):
        assert any(kind in k for k in index), kind
    if name.endswith("-mixed"):   # the messages of EXTRA
        assert any(b"@K@k2@" in k for k in index) and any("@K@🔑k@".encode() in k for k in index)
        assert not any(b"no-uniq-key" in k for k in index)
    for family in exp:
        e, o = exp[family], ours[family]
        missing, extra = sorted(set(e) - set(o)), sorted(set(o) - set(e))
        assert not missing and not extra, f"{family}: keys only the broker has {missing[:3]}, only ours {extra[:3]}"
        wrong = [k for k in e if e[k] != o[k]]
        assert not wrong, f"{family}: {len(wrong)} value(s) differ, first key {wrong[0]!r}: {e[wrong[0]]!r} vs " \
                          f"{o[wrong[0]]!r}"


@pytest.mark.parametrize("variant", OURS)
@pytest.mark.parametrize("name", CASES)
def test_broker_queries_alike_on_our_database(written, name, variant):
    """The broker's ``queryMessage`` over the RocksDB index answers every (topic, key) and unique key of
    the scenario alike on our database (each way it is built) and on its own, and finds messages."""
    exp = [a for a in written["answers"]["expected"] if a["kind"] == "query"]
    ours = [a for a in written["answers"][variant] if a["kind"] == "query"]
    assert exp and ours == exp
    assert sum(len(a["byKey"]) + len(a["byUniqKey"]) for a in exp) > len(exp) // 2


@pytest.mark.parametrize("name", CASES)
def test_index_files_are_the_broker_s(written, name):
    """The ``index/`` files beside the database: the broker's, byte for byte, in name order; none with
    ``indexFileWriteEnable=false`` (``mixed``), where the database above still holds every key."""
    def files(which: str) -> list[bytes]:
        folder = written["dir"] / which / "index"
        return [p.read_bytes() for p in sorted(folder.iterdir())] if folder.is_dir() else []
    expected = files("expected")
    assert (not expected) == name.endswith("-mixed")
    assert files("ours") == expected


@pytest.mark.parametrize("name", CASES)
def test_split_files_are_folded_into_one_sorted_run(written, name):
    """The rebuild's database has no level 0 file left (the broker's ``createIndexCFOptions`` stops writes at
    20 of them) and holds fewer files than the splits gave; ``ours-ingested`` (what the broker read above)
    kept the overlapping split files in level 0, as RocksDB's ingestion put them."""
    d = written["dir"]
    ours, ingested = _levels(d / "ours" / "rocksdbstore"), _levels(d / "ours-ingested" / "rocksdbstore")
    assert ours and 0 not in ours and 0 not in _levels(d / "ours-groups" / "rocksdbstore")
    assert ingested.count(0) > 1 and len(ours) < len(ingested)


@pytest.mark.parametrize("name", CASES)
def test_trans_family_not_rebuilt_is_said_once(written, name):
    """``transRocksDBEnable=true``: one warning line names the trans family as not rebuilt."""
    lines = [ln for ln in written["rebuild"]["stderr"].splitlines() if TRANS_WARNING in ln]
    assert len(lines) == 1, written["rebuild"]["stderr"][-2000:]


@pytest.mark.skipif(not os.environ.get("RDBIDX_FULL"), reason="RDBIDX_FULL=1: a second rebuild")
@pytest.mark.parametrize("name", CASES[:1])
def test_rebuild_over_a_database_says_it_replaces_it(written, name):
    """A second rebuild into the same ``--out`` (``--overwrite``) replaces ``rocksdbstore/`` and says in one
    line that its timer and trans families are not rebuilt; the key/value set is again the broker's."""
    again = bh.rebuild(written["dir"], bh.BROKER_VERSION_ARG[LINE], "--overwrite")
    assert again["code"] == 0, again["stderr"][-2000:]
    lines = [ln for ln in again["stderr"].splitlines() if "rocksdbstore/ is replaced at the commit" in ln]
    assert len(lines) == 1, again["stderr"][-2000:]
    d = written["dir"]
    assert _families(d / "ours" / "rocksdbstore") == _families(d / "expected" / "rocksdbstore")


@pytest.mark.parametrize("name", CASES[:1])
def test_jdk_decoding_path_gives_the_same_entries(written, name):
    """The per-record path for text that is not valid UTF-8 (the JDK's decoding, then ``getBytes``) gives,
    on valid text, the kernel's entries: every segment of the broker's commitlog walked once as is and
    once with every record marked as bad text; both are the broker's index keys."""
    import dataclasses

    import numpy as np

    from store_format import commitlog as cl
    from store_format.config import load_broker_config
    from store_format.index_rocksdb import index_rocksdb_entries

    d = written["dir"]
    config = load_broker_config((d / "broker.conf").read_text() + "\nbrokerVersion=5.5\n")
    fast: set[bytes] = set()
    slow: set[bytes] = set()
    for seg in sorted((d / "store" / "commitlog").iterdir()):
        data = seg.read_bytes()
        res = cl.walk_range(lambda pos, n, data=data: data[pos:pos + n], int(seg.name), len(data),
                            cl.WalkState.at_slice_start(0, len(data)), len(data) + 1, config)
        fast |= set(index_rocksdb_entries(res).keys.to_pylist())
        rec = res.rec.copy()
        rec[:, cl.R_FLAGS] |= cl.F_TEXT_BAD
        slow |= set(index_rocksdb_entries(dataclasses.replace(res, rec=rec)).keys.to_pylist())
    broker = set(_families(d / "expected" / "rocksdbstore")["default"]) - {b"lastOffsetPy", b"lastStoreTimeStamp"}
    assert fast and slow == fast == broker
    assert any(np.frombuffer(k, np.uint8).max() >= 0x80 for k in slow)   # non-ASCII text went through both


def _verify(store: Path, d: Path) -> tuple[int, dict]:
    from pipelines.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(["verify", "--store", str(store), "--config", str(d / "broker.conf"), "--broker-version", "5.5",
                     "--split-size", "4k", "--engine", "local", "--json"])
    assert code in (0, 1) and "Traceback" not in err.getvalue(), err.getvalue()[-3000:]
    return code, json.loads(out.getvalue())


@pytest.mark.parametrize("name", CASES[:1])
def test_verify_checks_the_index_family(written, name, tmp_path):
    """``verify`` on the broker's store: the index family matches (every entry the rebuild derives, held with
    the same value, nothing else); after deleting three keys from a copy and adding one inside the commitlog's
    range (at a record's offset + 1) and one past its end: three missing, one not derived, one apart."""
    d = written["dir"]
    store = tmp_path / "store"
    shutil.copytree(d / "store", store)
    for area in ("consumequeue", "index", "rocksdbstore"):
        if (d / "expected" / area).is_dir():
            shutil.copytree(d / "expected" / area, store / area)
    broker = _families(d / "expected" / "rocksdbstore")["default"]
    keys = sorted(k for k in broker if k not in (b"lastOffsetPy", b"lastStoreTimeStamp"))
    code, report = _verify(store, d)
    got = report["rocksdb_index"]
    assert got is not None and got["status"] == "identical", got
    assert got["derived"] == got["matched"] == len(keys) and got["unexpected"] == got["missing"] == 0
    assert code == 0 and report["identical"], report["summary"]
    assert got["store_last_offset_py"] == int.from_bytes(broker[b"lastOffsetPy"], "big")
    assert not any("is not compared: its" in n for n in report["not_checked"])
    assert any(n.startswith("rocksdbstore/: the trans and timer families") for n in report["not_checked"])

    gone = keys[::len(keys) // 3][:3]
    end = sum(p.stat().st_size for p in (store / "commitlog").iterdir())
    inside = gone[0][:-8] + (int.from_bytes(gone[0][-8:], "big") + 1).to_bytes(8, "big")
    past = gone[1][:-8] + (end + 100).to_bytes(8, "big")
    db = rd.Rdict(str(store / "rocksdbstore"), options=rd.Options(raw_mode=True),
                  column_families={f: rd.Options(raw_mode=True) for f in ("timer", "trans")})
    try:
        for k in gone:
            del db[k]
        db[inside] = broker[gone[0]]
        db[past] = broker[gone[1]]
    finally:
        db.close()
    code, report = _verify(store, d)
    got = report["rocksdb_index"]
    assert code == 1 and not report["identical"] and got["status"] == "differs"
    assert (got["missing"], got["unexpected"], got["past_end"], got["below_min"]) == (3, 1, 1, 0), got
    assert got["matched"] == len(keys) - 3 and got["derived"] == len(keys)
    assert any(repr(inside) in e for e in got["examples"]) and any(repr(gone[0]) in e for e in got["examples"])
    from pipelines.verify import repair_store
    from store_format.config import load_broker_config
    config = load_broker_config((d / "broker.conf").read_text() + "\nbrokerVersion=5.5\n")
    result = repair_store(str(store), config, backup=None, dry_run=True, force=True, engine="local")
    said = "rocksdbstore/: the RocksDB message index differs from the rebuild's (3 missing"
    assert not result.plan.actions and any(n.startswith(said) for n in result.notes), result.notes
