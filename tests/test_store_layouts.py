"""Layouts this project does not rebuild, recognised from the store's contents when broker.conf does not
say (store_format.store_layouts): each is refused with one line naming the layout, exit code 2, in every
command that reads or writes queues, instead of being rebuilt as ordinary consume queues.  BatchCQ topics
(config/topics.json) are rebuilt into batchconsumequeue/; what cannot be rebuilt the same is refused.

The stores are copies of the broker-written golden basic-5.3.3 with what the broker would add for the
layout (paths from StorePathConfigHelper, DLedgerCommitLog, BrokerPathConfigHelper)."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from pipelines.cli import main
from store_format.store_layouts import batch_cq_topics

CASE = "basic-5.3.3"


@pytest.fixture()
def store(golden_dir: Path, tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(golden_dir / CASE / "store", root)
    return root


def _topics_json(attrs: dict[str, dict[str, str]]) -> str:
    """config/topics.json as TopicConfigManager persists it (TopicConfigSerializeWrapper)."""
    table = {name: {"attributes": a, "order": False, "perm": 6, "readQueueNums": 4, "topicFilterType": "SINGLE_TAG",
                    "topicName": name, "topicSysFlag": 0, "writeQueueNums": 4} for name, a in attrs.items()}
    return json.dumps({"dataVersion": {"counter": 3, "stateVersion": 0, "timestamp": 1700000000000},
                       "topicConfigTable": table}, indent=2)


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    """Exit code and the error lines (progress lines such as "[rebuild] plan ..." also go to stderr)."""
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, "\n".join(line for line in err.splitlines() if line.startswith("error:"))


def _commands(store: Path, tmp: Path, conf: Path) -> list[list[str]]:
    s, c = str(store), str(conf)
    return [
        ["rebuild", "--store", s, "--out", str(tmp / "out1"), "--config", c, "--engine", "local"],
        ["rebuild", "--store", s, "--out", str(tmp / "out2"), "--config", c, "--engine", "local", "--as-restart"],
        ["verify", "--store", s, "--config", c, "--engine", "local"],
        ["repair", "--store", s, "--config", c, "--engine", "local", "--dry-run"],
        ["tables", "--store", s, "--tables", str(tmp / "tables"), "--config", c],
    ]


def _units(data: bytes, size: int) -> list[tuple]:
    """The non-zero units of a file of ``size``-byte units (20: consumequeue/, 46: batchconsumequeue/)."""
    fmt = struct.Struct(">qiq" if size == 20 else ">qiqqqhii")
    return [u for u in (fmt.unpack_from(data, p) for p in range(0, len(data) - size + 1, size)) if u[1]]


def test_batch_cq_topic_is_rebuilt_into_batchconsumequeue(store: Path, tmp_path: Path, golden_dir: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """QueueTypeUtils.getCQType: a topic whose attributes give queue.type=BatchCQ gets a BatchConsumeQueue
    (batchconsumequeue/, 46-byte units), not consumequeue/.  The golden store's records of that topic are
    plain messages: one unit each, base offset = queue offset, batch size 1, in the broker's order; every
    other queue as the broker wrote it.  verify compares batchconsumequeue/ too (this store has none: every
    rebuilt file is missing, exit 1, and the next start dispatches every unit again, the batch queues' as
    well); --as-restart on this undamaged store
    writes the same files (the restart's recovery keeps the whole commitlog), also with
    recheckReputOffsetFromCq=true (its second reput adds no unit; checked against the broker in
    test_restart_layouts_broker)."""
    (store / "config").mkdir()
    topics = {"BasicTopic0": {}, "BasicTopic2": {"queue.type": "BatchCQ"}}
    (store / "config" / "topics.json").write_text(_topics_json(topics))
    conf = golden_dir / CASE / "broker.conf"
    code, err = _run(capsys, _commands(store, tmp_path, conf)[0])
    assert code == 0, err
    out, expected = tmp_path / "out1", golden_dir / CASE / "expected" / "consumequeue"
    assert not (out / "consumequeue" / "BasicTopic2").exists()
    for f in expected.rglob("*"):
        if f.is_file() and not f.relative_to(expected).parts[0] == "BasicTopic2":
            assert (out / "consumequeue" / f.relative_to(expected)).read_bytes() == f.read_bytes()
    queues = sorted((expected / "BasicTopic2").iterdir())
    assert queues
    for q in queues:
        want = [u for f in sorted(q.iterdir()) for u in _units(f.read_bytes(), 20)]
        files = sorted((out / "batchconsumequeue" / "BasicTopic2" / q.name).iterdir())
        assert [f.name for f in files] == ["0" * 20] and files[0].stat().st_size == 300_000 * 46
        got = _units(files[0].read_bytes(), 46)
        assert [u[:3] for u in got] == want
        assert [(u[4], u[5], u[6], u[7]) for u in got] == [(i, 1, -1, 0) for i in range(len(want))]
    code = main(_commands(store, tmp_path, conf)[2] + ["--json"])
    report = json.loads(capsys.readouterr().out)
    p = report["restart"]
    assert code == 1 and report["batch_consume_queue"] and p is not None and not report["restart_note"]
    rebuilt = sum(len(_units(f.read_bytes(), size)) for area, size in (("consumequeue", 20), ("batchconsumequeue", 46))
                  for f in (out / area).rglob("*") if f.is_file())
    assert rebuilt and (p["units_dispatched_again"], p["units_lost"], p["start_fails"]) == (rebuilt, 0, False)
    assert {r["status"] for r in report["batch_consume_queue"]} == {"missing"}
    assert {r["path"].split("/")[0] for r in report["batch_consume_queue"]} == {"BasicTopic2"}
    code, err = _run(capsys, _commands(store, tmp_path, conf)[1])
    assert code == 0, err
    out2 = tmp_path / "out2"
    for area in ("batchconsumequeue", "consumequeue"):
        rebuilt = sorted(p.relative_to(out) for p in (out / area).rglob("*") if p.is_file())
        assert rebuilt and rebuilt == sorted(p.relative_to(out2) for p in (out2 / area).rglob("*") if p.is_file())
        assert all((out / p).read_bytes() == (out2 / p).read_bytes() for p in rebuilt)
    recheck = tmp_path / "recheck.conf"
    recheck.write_text(conf.read_text() + "\nrecheckReputOffsetFromCq=true\n")
    shutil.rmtree(tmp_path / "out2")
    code, err = _run(capsys, _commands(store, tmp_path, recheck)[1])
    assert code == 0, err
    for area in ("batchconsumequeue", "consumequeue"):
        rebuilt = sorted(p.relative_to(out) for p in (out / area).rglob("*") if p.is_file())
        assert all((out / p).read_bytes() == (out2 / p).read_bytes() for p in rebuilt)


@pytest.mark.parametrize(("topics_json", "conf_extra", "argv_extra", "words"), [
    (_topics_json({"BasicTopic2": {"queue.type": "RocksDBCQ"}}), "", [], ["RocksDBCQ", "BasicTopic2"]),
    (_topics_json({"BasicTopic2": {"queue.type": "Batch"}}), "", [], ["queue.type=Batch", "BasicTopic2"]),
    ("{not json", "", [], ["topics.json", "not JSON"]),
    (_topics_json({"BasicTopic2": {"queue.type": "BatchCQ"}}), "", ["--broker-version", "4"],
     ["BatchCQ", "brokerVersion=4", "BasicTopic2"]),
    (_topics_json({"BasicTopic2": {"queue.type": "BatchCQ"}}), "mapperFileSizeBatchConsumeQueue=1000\n", [],
     ["mapperFileSizeBatchConsumeQueue=1000", "multiple of", "BasicTopic2"]),
], ids=["rocksdbcq", "unknown-type", "not-json", "4.x", "file-size"])
def test_batch_cq_stores_not_rebuilt_the_same_are_refused(store: Path, tmp_path: Path, golden_dir: Path,
                                                         capsys: pytest.CaptureFixture[str], topics_json: str,
                                                         conf_extra: str, argv_extra: list[str],
                                                         words: list[str]) -> None:
    """Topic tables the broker would not load or dispatch with (CQType.valueOf, queueTypeShouldBe), batch
    queues on 4.x, and a batch queue file size that is no multiple of the unit: one line, exit code 2."""
    (store / "config").mkdir()
    (store / "config" / "topics.json").write_text(topics_json)
    conf = tmp_path / "broker.conf"
    conf.write_text((golden_dir / CASE / "broker.conf").read_text() + "\n" + conf_extra)
    code, err = _run(capsys, _commands(store, tmp_path, conf)[0] + argv_extra)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert all(w in err for w in words), err
    assert not (tmp_path / "out1").exists()


def test_simple_cq_attribute_is_rebuilt(store: Path, tmp_path: Path, golden_dir: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """queue.type=SimpleCQ (TopicAttributes' default) is the ordinary consume queue: rebuilt, and identical
    to the broker's files (the expected/ of the golden case)."""
    (store / "config").mkdir()
    (store / "config" / "topics.json").write_text(_topics_json({"BasicTopic1": {"queue.type": "SimpleCQ"}}))
    code, _ = _run(capsys, ["rebuild", "--store", str(store), "--out", str(tmp_path / "out"), "--config",
                            str(golden_dir / CASE / "broker.conf"), "--engine", "local"])
    assert code == 0
    expected = golden_dir / CASE / "expected" / "consumequeue"
    for f in expected.rglob("*"):
        if f.is_file():
            assert (tmp_path / "out" / "consumequeue" / f.relative_to(expected)).read_bytes() == f.read_bytes()


@pytest.mark.parametrize(("make", "words"), [
    (lambda s: (s / "batchconsumequeue" / "BasicTopic3" / "0").mkdir(parents=True)
     or (s / "batchconsumequeue" / "BasicTopic3" / "0" / ("0" * 20)).write_bytes(bytes(46)),
     ["batchconsumequeue/", "BatchCQ", "BasicTopic3"]),
    (lambda s: (s / "dledger-n0" / "data").mkdir(parents=True), ["dledger-n0/", "DLedger"]),
    (lambda s: (s / "consumequeue_ext" / "BasicTopic0" / "0").mkdir(parents=True)
     or (s / "consumequeue_ext" / "BasicTopic0" / "0" / ("0" * 20)).write_bytes(bytes(64)),
     ["consumequeue_ext/", "ConsumeQueueExt"]),
    (lambda s: (s / "consumequeue").mkdir()
     or (s / "consumequeue" / "CURRENT").write_text("MANIFEST-000005\n")
     or (s / "consumequeue" / "MANIFEST-000005").write_bytes(b"\0" * 16),
     ["consumequeue/", "RocksDB"]),
], ids=["batchconsumequeue", "dledger", "consumequeue_ext", "rocksdb"])
def test_layouts_seen_in_the_store_are_refused(store: Path, tmp_path: Path, golden_dir: Path,
                                               capsys: pytest.CaptureFixture[str], make, words: list[str]) -> None:
    """The folders the broker creates for each layout, with a broker.conf that does not mention it."""
    make(store)
    conf = golden_dir / CASE / "broker.conf"
    for argv in _commands(store, tmp_path, conf)[:3]:
        code, err = _run(capsys, argv)
        assert code == 2 and len(err.splitlines()) == 1, (argv, err)
        for w in words:
            assert w in err, (argv, err)


def test_empty_folders_are_not_a_layout(store: Path) -> None:
    """An empty batchconsumequeue/ or consumequeue_ext/ holds no queue: not refused (the broker creates
    them lazily); a topics.json without attributes is ordinary."""
    from store_format.config import BrokerConfig
    from store_format.store import open_store
    (store / "batchconsumequeue").mkdir()
    (store / "consumequeue_ext").mkdir()
    assert batch_cq_topics(_topics_json({"A": {}})) == []
    # the "+" of an update request is not stored; getCQType does not read a stored "+queue.type"
    assert batch_cq_topics(_topics_json({"A": {"+queue.type": "BatchCQ"}})) == []
    assert open_store(str(store), BrokerConfig(mappedFileSizeCommitLog=1 << 20)).segments


@pytest.mark.parametrize(("folder", "word"),
                         [("batchconsumequeue", "BatchCQ"), ("consumequeue_ext", "ConsumeQueueExt")])
def test_dump_names_the_layout_of_a_queue_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], folder: str,
                                                word: str) -> None:
    """dump: a file of batchconsumequeue/ or consumequeue_ext/ is refused by name, even when its size is
    the consume queue file size (it would otherwise be decoded as 20-byte units)."""
    f = tmp_path / "store" / folder / "TopicB" / "0" / ("0" * 20)
    f.parent.mkdir(parents=True)
    f.write_bytes(bytes(300_000 * 20))
    code, err = _run(capsys, ["dump", str(f)])
    assert code == 2 and len(err.splitlines()) == 1 and word in err and "TopicB" in err, err


def test_ext_folder_with_ext_settings_is_not_refused(store: Path) -> None:
    """consumequeue_ext/ of a store written with enableConsumeQueueExt=true: rebuilt
    (store_format.consumequeue_ext), so the same settings open it."""
    from store_format.config import BrokerConfig
    from store_format.store import open_store
    (store / "consumequeue_ext" / "BasicTopic0" / "0").mkdir(parents=True)
    (store / "consumequeue_ext" / "BasicTopic0" / "0" / ("0" * 20)).write_bytes(bytes(64))
    assert open_store(str(store), BrokerConfig(mappedFileSizeCommitLog=1 << 20, enableConsumeQueueExt=True)).segments
