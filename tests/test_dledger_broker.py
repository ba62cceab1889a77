"""DLedger stores (``enableDLegerCommitLog=true``) written by the published RocketMQ store through the
JVM harness in ``tests/broker/``, rebuilt by ``python -m pipelines rebuild``, compared byte for byte
with what the broker rebuilt from the same ``dledger-n0/data`` (and, for a store converted in place,
the legacy ``commitlog/`` before it): the plain and converted stores (rebuild, ``--as-restart``, verify, lookups and
tables, unclean shutdowns).

The scenarios (:mod:`broker_dledger_scenarios`): several 64 KiB data files ending in DLedger blanks,
keys and tags, batches, delayed messages, transactions, and a converted store. The rebuild runs with
the smallest split size (4 KiB), so that most splits start inside a DLedger entry and the scan has to
find the next one. ``test_broker_wrote_a_dledger_store`` checks the harness itself: what the broker
wrote, and that its own rebuild dispatched every message (no comparison can then pass on nothing).

The broker writes every store once a pytest session (:mod:`broker_dledger_runs`), for this module and
:mod:`test_dledger_crash_broker` and :mod:`test_dledger_crash_damaged_broker` (the crash restarts).
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_runs import (
    _RUNS,
    BROKER_LINE,
    CASES,
    LINES,
    _as_restart,
    _files,
    _queued,
    _same_files,
    _same_tree,
    _units,
    _verify,
    written_run,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()


@pytest.fixture
def written(request, tmp_path_factory):
    """The scenario as the broker wrote it (every scenario written, and rebuilt, once a pytest session)."""
    return written_run(request, tmp_path_factory)


@pytest.mark.parametrize("line,name", CASES)
def test_broker_wrote_a_dledger_store(written, line, name):
    """The harness itself: DLedger data over several files, the checkpoint the restart read, and for a
    converted store the legacy commitlog ending where DLedger's data begins."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    store = d / "store"
    data = sorted((store / "dledger-n0" / "data").iterdir())
    file_size = int(written["scenario"]["config"]["mappedFileSizeCommitLog"])
    assert len(data) >= 2 and all(p.stat().st_size == file_size for p in data)
    assert (store / "dledger-n0" / "index").is_dir()
    checkpoint = bh.read_conf(store / "dledger-n0" / "checkpoint")
    assert int(checkpoint["committedIndex"]) == w["dledgerCommittedIndex"] == w["dledgerEndIndex"]
    assert w["maxPhyOffset"] == w["dledgerCommittedPos"] > int(data[-1].name)
    legacy = sorted((store / "commitlog").iterdir()) if (store / "commitlog").is_dir() else []
    if any("switchToDLedger" in m for m in written["scenario"]["messages"]):
        assert legacy, "a converted store keeps its ordinary commitlog files"
        assert w["dividedCommitlogOffset"] == int(legacy[-1].name) + file_size == int(data[0].name)
    else:
        assert not legacy and w["dividedCommitlogOffset"] == int(data[0].name) == 0
    conf = bh.read_conf(d / "broker.conf")
    assert conf["enableDLegerCommitLog"] == "true" and "{port}" not in conf["dLegerPeers"]
    # the broker's rebuild dispatched every message a consume queue takes (not prepared, not rolled back)
    units = 0
    for f in (d / "expected" / "consumequeue").rglob("*"):
        data = f.read_bytes() if f.is_file() else b""
        units += sum(1 for i in range(0, len(data) - 19, 20) if int.from_bytes(data[i + 8:i + 12], "big"))
    assert units == _queued(written["scenario"]) > 0


@pytest.mark.parametrize("line,name", CASES)
def test_consume_queues_match_broker(written, line, name):
    d = bh.rebuilt_dir(written)
    exp = d / "expected" / "consumequeue"
    assert any((exp / f).stat().st_size for f in _files(exp)), "the broker dispatched nothing"
    _same_files(d / "expected", d / "ours", "consumequeue", written=True)


@pytest.mark.parametrize("line,name", CASES)
def test_index_files_match_broker(written, line, name):
    d = bh.rebuilt_dir(written)
    exp_idx = sorted((d / "expected" / "index").iterdir())
    our_idx = sorted((d / "ours" / "index").iterdir())
    if not written["written"]["indexNamesUnique"]:
        pytest.skip("the broker created two index files in one millisecond (one overwrote the other)")
    assert exp_idx, "the broker wrote no index file"
    assert len(our_idx) == len(exp_idx), f"index file count {len(our_idx)} != broker's {len(exp_idx)}"
    for i, (e, o) in enumerate(zip(exp_idx, our_idx)):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i} ({o.name} vs broker's {e.name})")


@pytest.mark.parametrize("line", LINES)
def test_entries_past_the_committed_index_rebuild_and_as_restart(written, line, tmp_path, request):
    """A checkpoint whose committedIndex is behind the log's end (entries written, not yet committed
    by the group): the broker's store, loaded on it, ends the commitlog at the position our rebuild
    reads up to; a plain rebuild's consume queues are the broker's without the units at or past it (not yet
    dispatched), and --as-restart's are all of them: it assumes the node leads (a group of one commits them at its
    clean restart and the reput dispatches to the log's end)."""

    from store_format.store import load_config_for, open_store
    src = Path(written["scenario"]["dir"])
    store = tmp_path / "store"
    bh.copy_store(src / "store", store)
    end = int(bh.read_conf(store / "dledger-n0" / "checkpoint")["endIndex"])
    committed = end - 7
    (store / "dledger-n0" / "checkpoint").write_text(f"committedIndex={committed}\nendIndex={end}\n")
    broker_conf = bh.read_conf(src / "broker.conf")
    answer = bh.read_stores(line, [{"store": bh.copy_store(store, tmp_path / "broker-copy"),
                                    "config": broker_conf, "commitlog": True}], tmp_path)[0]
    broker_end = next(a for a in answer if a["kind"] == "commitlog")["maxPhyOffset"]
    st = open_store(str(store), load_config_for(str(src / "broker.conf")))
    assert st.dledger is not None and st.dledger.uncommitted
    assert st.dledger.committed_pos == broker_end, "the committed position differs from the broker's"
    from pipelines.cli import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["rebuild", "--store", str(store), "--out", str(tmp_path / "ours"), "--config",
                     str(src / "broker.conf"), "--broker-version", BROKER_LINE[line], "--split-size", "4k",
                     "--no-tables"])
    assert code == 0, err.getvalue()[-2000:]
    expected = [u for u in _units(src / "expected" / "consumequeue") if u[1] < broker_end]
    assert 0 < len(expected) < len(_units(src / "expected" / "consumequeue"))
    assert _units(tmp_path / "ours" / "consumequeue") == expected
    # a clean restart's reput goes on to the log's end once the node leads (a group of one commits the rest; checked
    # against the broker in test_dledger_restart_uncommitted_broker): the broker's rebuild's units, all of them
    code, stderr = _as_restart(store, tmp_path / "restart", src, line)
    assert code == 0, stderr[-2000:]
    assert "once the node leads" in stderr, stderr[-2000:]
    assert _units(tmp_path / "restart" / "consumequeue") == _units(src / "expected" / "consumequeue")


@pytest.mark.parametrize("line,name", [c for c in CASES if c.values[1].endswith(("-plain", "-converted"))])
def test_as_restart_matches_the_broker_restart(written, line, name, tmp_path):
    """The broker's restart (consumequeue/ and index/ deleted, DLedger's recovery, the reput from the
    commitlog's min offset; 5.x with recheckReputOffsetFromCq=true) wrote expected/: --as-restart on the
    same store writes the same files."""
    src = Path(written["scenario"]["dir"])
    code, err = _as_restart(src / "store", tmp_path / "ours", src, line)
    assert code == 0, err[-2000:]
    assert "DLedger's recovery" in err
    _same_tree(src / "expected", tmp_path / "ours")


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_without_recheck_writes_nothing_as_the_broker(written, line, tmp_path):
    """5.x without recheckReputOffsetFromCq: the broker's restart wrote no consume queue or index file
    (its reput starts at the committed position); --as-restart writes none either, and says why."""
    r = _RUNS[f"{line}-dledger-norecheck"]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    assert not _files(src / "expected" / "consumequeue") and not _files(src / "expected" / "index")
    code, err = _as_restart(src / "store", tmp_path / "ours", src, line)
    assert code == 0, err[-2000:]
    assert "recheckReputOffsetFromCq=true" in err and "no consume queue or index file" in err
    assert not _files(tmp_path / "ours" / "consumequeue") and not _files(tmp_path / "ours" / "index")


@pytest.mark.parametrize("line", LINES)
def test_as_restart_after_a_damaged_entry(written, line, tmp_path):
    """A committed entry near the end whose header is damaged (its pos field): the broker's recovery
    (DLedgerMmapFileStore.recover, run by the broker's own load on a copy) ends the committed data before
    it; --as-restart finds the same committed position, reports the cut, and writes the broker's own
    rebuild without the units at or past it."""

    from store_format.dledger import ENTRY_HEADER_SIZE, OFF_ENTRY_POS
    src = Path(written["scenario"]["dir"])
    store = bh.copy_store(src / "store", tmp_path / "store")
    data = sorted((store / "dledger-n0" / "data").iterdir())
    last = data[-1]
    buf = bytearray(last.read_bytes())
    entries, rel = [], 0     # the last file's entries (its first starts at 0)
    while rel + ENTRY_HEADER_SIZE <= len(buf) and int.from_bytes(buf[rel:rel + 4], "big", signed=True) == 1:
        entries.append(rel)
        rel += int.from_bytes(buf[rel + 4:rel + 8], "big")
    assert len(entries) >= 3
    victim = entries[-2]
    buf[victim + OFF_ENTRY_POS:victim + OFF_ENTRY_POS + 8] = (12345).to_bytes(8, "big")
    last.write_bytes(bytes(buf))
    answer = bh.read_stores(line, [{"store": bh.copy_store(store, tmp_path / "broker-copy"),
                                    "config": bh.read_conf(src / "broker.conf"), "commitlog": True}], tmp_path)[0]
    broker_end = next(a for a in answer if a["kind"] == "commitlog")["maxPhyOffset"]
    assert broker_end == int(last.name) + victim, "the broker's recovery ends the committed data at the damage"
    code, err = _as_restart(store, tmp_path / "ours", src, line)
    assert code == 0, err[-2000:]
    assert "committed index" in err and f"position {broker_end}" in err
    expected = [u for u in _units(src / "expected" / "consumequeue") if u[1] < broker_end]
    assert 0 < len(expected) < len(_units(src / "expected" / "consumequeue"))
    assert _units(tmp_path / "ours" / "consumequeue") == expected


@pytest.mark.parametrize("line", LINES)
def test_verify_predicts_a_dledger_restart(written, line, tmp_path):
    """verify finds the broker's own files identical to the rebuild, and predicts that the next start
    writes nothing back; with consumequeue/ and index/ deleted it predicts what the broker's own restart
    did on that store: every unit dispatched again (4.9.8; 5.x with recheckReputOffsetFromCq=true), or,
    on 5.x without it, none, every unit lost (the broker's restart wrote no file: expected/ is empty)."""

    src = Path(written["scenario"]["dir"])
    store = bh.broker_store(src, tmp_path / "store")
    code, report = _verify(store, src, line)
    assert code == 0 and report["restart"] is not None, report.get("restart_note")
    p = report["restart"]
    assert p["dledger"] and p["units_lost"] == 0 and p["units_dispatched_again"] == 0
    cases = [(written, True)]
    if not line.startswith("4"):
        cases.append((_RUNS[f"{line}-dledger-norecheck"], False))
    for r, rebuilds in cases:
        src = Path(r["scenario"]["dir"])
        store = bh.copy_store(src / "store", tmp_path / f"bare-{rebuilds}")
        code, report = _verify(store, src, line)
        p = report["restart"]
        units = len(_units(src / "expected" / "consumequeue"))
        assert code == 1 and p is not None and p["dledger"]
        if rebuilds:
            assert units > 0 and (p["units_dispatched_again"], p["units_lost"]) == (units, 0)
        else:
            queued = _queued(r["scenario"])
            assert units == 0 and (p["units_dispatched_again"], p["units_lost"]) == (0, queued) and queued > 0


@pytest.mark.parametrize("line,name", [c for c in CASES if c.values[1].endswith(("-plain", "-converted"))])
def test_lookups_match_broker_query_on_a_dledger_store(written, line, name, tmp_path):
    """Every key and unique key of the store, looked up through our index files and our Delta tables,
    gives the offsets the broker's own queryMessage gives on its own DLedger store (after the client's
    filters, as test_conformance_broker does for plain stores); validate passes on its tables (records
    follow entry headers, not each other), and its audit applies DLedger's rule, naming the data files."""

    from broker_scenarios import query_pairs

    from pipelines.cli import main
    from pipelines.lookup import lookup_index_keys, lookup_keys
    from store_format.store import load_config_for
    src = Path(written["scenario"]["dir"])
    d = bh.rebuilt_dir(written)
    broker_store = bh.broker_store(src, tmp_path / "broker-store")
    pairs = query_pairs(written["scenario"])
    assert pairs, "the scenario has keys"
    answers = bh.read_stores(line, [{"store": broker_store, "config": bh.read_conf(src / "broker.conf"),
                                     "queries": pairs}], tmp_path)[0]
    queries = [a for a in answers if a["kind"] == "query"]
    assert len(queries) == len(pairs)
    tables = tmp_path / "tables"
    conf = ["--config", str(src / "broker.conf"), "--broker-version", BROKER_LINE[line]]
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        assert main(["tables", "--store", str(d / "store"), "--tables", str(tables), *conf]) == 0
    config = load_config_for(str(src / "broker.conf"), brokerVersion=BROKER_LINE[line])
    by_index = lookup_index_keys(str(d / "ours" / "index"), str(d / "store"), config, pairs)
    by_tables = lookup_keys(str(tables), pairs)
    found = 0
    for a in queries:
        want = sorted(set(a["byKey"]) | {u["offset"] for u in a["byUniqKey"] if u["topic"] == a["topic"]})
        found += len(want)
        key = (a["topic"], a["key"])
        assert sorted(r["commitlog_offset"] for r in by_index[key].rows) == want, f"lookup --index {key}"
        assert sorted(r["commitlog_offset"] for r in by_tables[key].rows) == want, f"lookup (tables) {key}"
    assert found > 0
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        assert main(["validate", "--tables", str(tables)]) == 0, "validate fails on a DLedger store's tables"
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(["audit", "--tables", str(tables), "--as-of", "2030-01-01T00:00:00Z"])
    text = out.getvalue()
    assert code == 0, err.getvalue()
    assert "cleanup rule     DLedger" in text, text
    assert f"fileReservedTime + 1 = {config.fileReservedTime + 1} h" in text, text
    # years later every data file but the last has expired: they go at 04:00, named as DLedger's files;
    # not on a 5.x converted store (its rounds never delete the last old file, and DLedger waits for it)
    data = sorted(p.name for p in (src / "store" / "dledger-n0" / "data").iterdir())
    old = (src / "store" / "commitlog").is_dir() and any((src / "store" / "commitlog").iterdir())
    going = [n for n in data if f"  dledger-n0/data/{n}  " in text]
    assert going == ([] if old and not line.startswith("4") else data[:-1]), text


@pytest.mark.parametrize("line", LINES)
def test_as_restart_after_an_unclean_shutdown(written, line, tmp_path):
    """The broker restarted after a crash (an abort file: recoverAbnormally), consumequeue/ and index/
    deleted. 4.9.8's DLedgerCommitLog recovers both ways alike. 5.x's dledgerRecoverAbnormally dispatches
    the entries itself, from the last data file whose first message the checkpoint covers (here not the
    first file: the queues start with fillPreBlank units of offset 0 and size 2147483647), committed or not,
    and the start's reput adds nothing, with recheckReputOffsetFromCq=true or without. --as-restart on the
    store as the restart found it (before/: its abort file, checkpoint and dledger-n0/) writes the broker's
    files byte for byte; on 5.x the broker's restart on a fresh copy of before/ wrote them too."""
    names = [f"{line}-dledger-abort"] + ([] if line.startswith("4") else [f"{line}-dledger-abort-norecheck"])
    for name in names:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        assert (src / "before" / "abort").is_file() and (src / "before" / "dledger-n0").is_dir()
        cp = bh.read_conf(src / "before" / "dledger-n0" / "checkpoint")
        back = int(r["scenario"].get("dledgerCommittedBack", 0))
        assert int(cp["committedIndex"]) == int(cp["endIndex"]) - back   # entries not committed: dispatched too
        code, err = _as_restart(src / "before", tmp_path / name, src, line)
        assert code == 0, err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        for k in range(1, int(r["scenario"].get("restartCopies", 0)) + 1):
            _same_tree(src / "expected", src / f"copy-{k}" / "expected")
        if not line.startswith("4"):
            assert "dledgerRecoverAbnormally dispatches every entry from data file" in err, err[-2000:]
            from_first = "from data file 00000000000000000000 " in err
            heads = [f.read_bytes()[:20] for f in (src / "expected" / "consumequeue").rglob("00000000000000000000")]
            blank = bytes(8) + (2**31 - 1).to_bytes(4, "big") + bytes(8)  # ConsumeQueue.fillPreBlank
            assert heads and any(h == blank for h in heads) == (not from_first)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_an_unclean_shutdown_with_accelerated_recovery(written, line, tmp_path):
    """5.5.1 with enableAcceleratedRecovery=true and checkCommitLogOffsetOnRecover=true after a crash: only
    DefaultMessageStore.recover's getDispatchFromPhyOffset(false) reads the first (it throws on a checkpoint
    logicsPhysicalOffset <= 0: the broker's load() failed, --as-restart refuses with exit code 2);
    dledgerRecoverAbnormally reads neither (the walk as without them), and --as-restart wrote the broker's files
    byte for byte."""
    r = _RUNS[f"{line}-dledger-abort-accel"]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    code, err = _as_restart(src / "before", tmp_path / "accel", src, line)
    assert code == 0, err[-2000:]
    _same_tree(src / "expected", tmp_path / "accel")
    fails = _RUNS[f"{line}-dledger-abort-accel-load-fails"]
    assert fails["written"].get("ok") and fails["written"].get("loadFailed"), fails["written"]
    src = Path(fails["scenario"]["dir"])
    code, err = _as_restart(src / "before", tmp_path / "fails", src, line)
    assert code == 2 and "fails to load" in err, err[-2000:]


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_an_unclean_shutdown_of_a_converted_store(written, line, tmp_path):
    """A store converted in place (old commitlog/ files, then dledger-n0/data) restarted after a crash, its
    consumequeue/ and index/ deleted: dledgerRecoverAbnormally walks the DLedger data files alone (the old
    commitlog is recovered by the base CommitLog only while DLedger has no data file), so the old messages
    get no unit and their queues start with fillPreBlank units; the old files only lower getMinOffset, where
    the start's reput with recheckReputOffsetFromCq would begin at the least. --as-restart on the store as
    the restart found it (before/: its abort file, checkpoint, commitlog/ and dledger-n0/) writes the
    broker's files byte for byte."""
    name = f"{line}-dledger-abort-converted"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    before = src / "before"
    assert (before / "abort").is_file() and (before / "dledger-n0").is_dir()
    assert any((before / "commitlog").iterdir()), "a converted store keeps its ordinary commitlog files"
    code, err = _as_restart(before, tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert "dledgerRecoverAbnormally dispatches every entry from data file" in err, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    heads = [f.read_bytes()[:20] for f in (src / "expected" / "consumequeue").rglob("00000000000000000000")]
    blank = bytes(8) + (2**31 - 1).to_bytes(4, "big") + bytes(8)  # ConsumeQueue.fillPreBlank
    assert heads and any(h == blank for h in heads), "the old messages got units"
