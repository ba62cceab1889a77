"""DLedger stores (``enableDLegerCommitLog=true``) written by the published RocketMQ store through the
JVM harness in ``tests/broker/``, rebuilt by ``python -m pipelines rebuild``, compared byte for byte
with what the broker rebuilt from the same ``dledger-n0/data`` (and, for a store converted in place,
the legacy ``commitlog/`` before it).

The scenarios (:mod:`broker_dledger_scenarios`): several 64 KiB data files ending in DLedger blanks,
keys and tags, batches, delayed messages, transactions, and a converted store. The rebuild runs with
the smallest split size (4 KiB), so that most splits start inside a DLedger entry and the scan has to
find the next one. ``test_broker_wrote_a_dledger_store`` checks the harness itself: what the broker
wrote, and that its own rebuild dispatched every message (no comparison can then pass on nothing).

All lines' stores are written at once (one JVM per line, its scenarios in threads) while the Spark
session starts: about 25 s of the run on 2 cores, most of it the stores' shutdown sleeps.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import time
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_scenarios import (
    abort_scenarios,
    batch_kept_abort_scenario,
    before_abort_scenarios,
    before_walk_abort_scenarios,
    converted_old_reput_abort_scenarios,
    converted_queued_nothing_abort_scenario,
    converted_walked_nothing_abort_scenario,
    damaged_abort_scenarios,
    damaged_again_abort_scenarios,
    damaged_cut_abort_scenarios,
    damaged_gap_abort_scenarios,
    damaged_twice_abort_scenarios,
    damaged_twice_early_abort_scenarios,
    dledger_scenarios,
    emptied_abort_scenarios,
    emptied_batch_abort_scenarios,
    first_start_abort_scenario,
    kept_abort_scenario,
    layouts_abort_scenario,
    layouts_early_abort_scenario,
    layouts_recheck_abort_scenario,
    no_recheck_scenario,
    partial_abort_scenario,
    small_abort_scenarios,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

# 4.9.8 and 5.5.1 by default; 5.3.3 (the 5.x store over 4.9.8's dledger 0.3.1.2) adds some 20 s of
# writing on 2 cores: DLEDGER_LINES=4.9.8,5.3.3,5.5.1
LINES = bh.lines_from_env("DLEDGER_LINES", "4.9.8,5.5.1")
# DLEDGER_MORE_LAYOUTS=1: the layouts crash restart with recheckReputOffsetFromCq=true too (some 15 s more), and
# on 5.5.1 the layouts store whose start's reput begins before the walk's last data file (layouts-early) and the
# damaged-cut crash restart with the switch and with the whole log committed, and the damaged-gap ones (the start's
# reput from past the damaged message), damaged-again ones (from before it), before ones (from before the walk's
# data file), damaged-twice ones (the reput's own check failing past the walk, in the last data file or an earlier
# one) and the converted stores whose walk dispatches or queues nothing, but for the one of each rule the default
# suite writes (_default_crash_picks); on 5.3.3 they come with DLEDGER_LINES alone)
MORE_LAYOUTS = os.environ.get("DLEDGER_MORE_LAYOUTS") == "1"


def _default_crash_picks(line: str) -> list[dict]:
    """The damaged-walk crash restarts the default suite writes on 5.5.1, one per rule, so that each rule has a broker
    case in every run: the gap and the walk again, the reput's own check going on at the next data file
    (``-damaged-twice-early``), a queue the cut leaves with no file written anew (``-before-cut-emptied``: the
    build's queue reset), and a converted store's reput from its old files (``-converted-prepared``,
    ``-converted-prepared-damaged``)."""
    picks = ("-damaged-twice-early", "-before-cut-emptied", "-converted-prepared", "-converted-prepared-damaged")
    pool = (damaged_twice_early_abort_scenarios(line) + before_walk_abort_scenarios(line)
            + converted_queued_nothing_abort_scenario(line) + converted_old_reput_abort_scenarios(line))
    return [damaged_gap_abort_scenarios(line)[0], damaged_again_abort_scenarios(line)[0],
            *(sc for sc in pool if sc["name"].endswith(picks))]

BROKER_LINE = bh.BROKER_VERSION_ARG
SCENARIOS = {line: dledger_scenarios(line) for line in LINES}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
# written with the others, not rebuilt: restarts after a crash, and a 5.x one without
# recheckReputOffsetFromCq (it rebuilds nothing)
EXTRA = {line: abort_scenarios(line) + [first_start_abort_scenario(line)] + ([] if line.startswith("4") else [
    no_recheck_scenario(line), *small_abort_scenarios(line), partial_abort_scenario(line), kept_abort_scenario(line),
    layouts_abort_scenario(line), batch_kept_abort_scenario(line), *damaged_abort_scenarios(line),
    *damaged_cut_abort_scenarios(line, MORE_LAYOUTS),
    *(damaged_gap_abort_scenarios(line) + damaged_again_abort_scenarios(line) + before_abort_scenarios(line)
      + damaged_twice_abort_scenarios(line) + damaged_twice_early_abort_scenarios(line)
      + converted_walked_nothing_abort_scenario(line) + converted_queued_nothing_abort_scenario(line)
      + converted_old_reput_abort_scenarios(line)
      + before_walk_abort_scenarios(line)
      if MORE_LAYOUTS or line.startswith("5.3") else _default_crash_picks(line)),
    *([layouts_recheck_abort_scenario(line)] if MORE_LAYOUTS else [])])
    + emptied_abort_scenarios(line) + emptied_batch_abort_scenarios(line)
    + ([layouts_early_abort_scenario(line)] if line.startswith("5.5") and MORE_LAYOUTS else [])
    for line in LINES}
# DLEDGER_ONLY=a,b: of those crash restarts, only the ones whose name holds one of these (a targeted run: select
# their tests with -k; a test over several scenarios checks those written and skips when none was, and one that
# reads a scenario left out by name fails)
if os.environ.get("DLEDGER_ONLY"):
    EXTRA = {ln: [sc for sc in scs if any(w in sc["name"] for w in os.environ["DLEDGER_ONLY"].split(","))]
             for ln, scs in EXTRA.items()}
_RUNS: dict[str, dict] = {}


def _rebuild(d: Path, line: str) -> dict:
    """``python -m pipelines rebuild`` (in this process, on the test session's Spark context): exit
    code and what it printed on stderr."""
    return bh.rebuild(d, BROKER_LINE[line])


@pytest.fixture
def written(request, tmp_path_factory):
    """The scenario as the broker wrote it (every scenario written, and rebuilt, once)."""
    params = request.node.callspec.params
    name = params.get("name") or f"{params['line']}-dledger-plain"
    if not _RUNS:
        work = tmp_path_factory.mktemp("dledger")
        # a store's shutdown sleeps 1 s on 4.9.8 and 3 s on 5.x, and DLedger's netty server takes 2 s more
        # to stop: the Spark session the CLI's rebuild gets (getOrCreate) starts meanwhile
        _RUNS.update(bh.write_lines(request, {ln: [*scs, *EXTRA.get(ln, [])] for ln, scs in SCENARIOS.items()},
                                    work, "DLedger store(s)"))
        rebuilt = {sc["name"] for scs in SCENARIOS.values() for sc in scs}   # the EXTRA ones are only written
        for n, r in _RUNS.items():
            if r["written"].get("ok") and n in rebuilt:
                started = time.monotonic()
                r["rebuild"] = _rebuild(Path(r["scenario"]["dir"]), r["line"])
                print(f"{n}: rebuilt in {time.monotonic() - started:.1f} s (exit {r['rebuild']['code']})")
    r = _RUNS[name]
    if not r["written"].get("ok"):
        pytest.fail(f"the broker's writer failed on {name}: {r['written'].get('error')}")
    return r


def _rebuilt(r: dict) -> Path:
    """The scenario's folder, once the CLI's rebuild has exited 0 (else the test fails with its error line)."""
    if r["rebuild"]["code"] != 0:
        stderr = r["rebuild"]["stderr"]
        why = [ln for ln in stderr.splitlines() if ln.startswith("error:")] or [stderr[-1000:]]
        pytest.fail(f"rebuild exited {r['rebuild']['code']}: {' | '.join(why)}")
    return Path(r["scenario"]["dir"])


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


def _queued(sc: dict) -> int:
    """How many consume queue units the scenario's messages make."""
    return sum(len(m["batch"]) if "batch" in m else m.get("tranType", "none") in ("none", "commit")
               for m in sc["messages"] if "topic" in m)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("line,name", CASES)
def test_consume_queues_match_broker(written, line, name):
    d = _rebuilt(written)
    exp = d / "expected" / "consumequeue"
    assert any((exp / f).stat().st_size for f in _files(exp)), "the broker dispatched nothing"
    _same_files(d / "expected", d / "ours", "consumequeue", written=True)


@pytest.mark.parametrize("line,name", CASES)
def test_index_files_match_broker(written, line, name):
    d = _rebuilt(written)
    exp_idx = sorted((d / "expected" / "index").iterdir())
    our_idx = sorted((d / "ours" / "index").iterdir())
    if not written["written"]["indexNamesUnique"]:
        pytest.skip("the broker created two index files in one millisecond (one overwrote the other)")
    assert exp_idx, "the broker wrote no index file"
    assert len(our_idx) == len(exp_idx), f"index file count {len(our_idx)} != broker's {len(exp_idx)}"
    for i, (e, o) in enumerate(zip(exp_idx, our_idx)):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i} ({o.name} vs broker's {e.name})")


def _units(root: Path) -> list[tuple[str, int, int, int]]:
    """Every unit of a ``consumequeue/`` folder: (queue, commitlog offset, size, tags code), in order."""
    out = []
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        data = f.read_bytes()
        queue = str(f.parent.relative_to(root))
        for i in range(0, len(data) - 19, 20):
            off, size, tags = (int.from_bytes(data[i:i + 8], "big", signed=True),
                               int.from_bytes(data[i + 8:i + 12], "big", signed=True),
                               int.from_bytes(data[i + 12:i + 20], "big", signed=True))
            if size:
                out.append((queue, off, size, tags))
    return out


@pytest.mark.parametrize("line", LINES)
def test_entries_past_the_committed_index_are_not_dispatched(written, line, tmp_path, request):
    """A checkpoint whose committedIndex is behind the log's end (entries written, not yet committed
    by the group): the broker's store, loaded on it, ends the commitlog at the position our rebuild
    (and --as-restart) reads up to; our consume queues are the broker's rebuild without the units at
    or past it."""

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
    # a restart's start dispatches up to the same committed entry (the group commits the rest later)
    code, stderr = _as_restart(store, tmp_path / "restart", src, line)
    assert code == 0, stderr[-2000:]
    assert _units(tmp_path / "restart" / "consumequeue") == expected


def _as_restart(store: Path, out: Path, src: Path, line: str) -> tuple[int, str]:
    """``rebuild --as-restart`` on ``store`` with the scenario's broker.conf: exit code, stderr."""
    from pipelines.cli import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["rebuild", "--store", str(store), "--out", str(out), "--config", str(src / "broker.conf"),
                     "--broker-version", BROKER_LINE[line], "--split-size", "4k", "--no-tables", "--as-restart"])
    return code, err.getvalue()


def _damaged_walk_restart(name: str, line: str, tmp_path: Path) -> tuple[dict, Path, int, str]:
    """The crash-restart scenario ``name`` (a damaged message ending dledgerRecoverAbnormally's walk): written by
    the broker, and ``rebuild --as-restart`` on the store as the restart found it, which exits 0 and says its
    walk ends at the damaged message; the run, its folder, the damaged record's offset and stderr."""
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    damaged = int(r["written"]["damagedRecord"])
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert f"check ends its walk at {damaged - 48} " in err, err[-2000:]
    return r, src, damaged, err


def _dledger_prediction(src: Path, name: str, line: str, tmp_path: Path) -> dict:
    """``verify``'s next-start prediction on a copy of the scenario's store as the restart found it (``before/``):
    a DLedger one, never none."""
    _code, report = _verify(bh.copy_store(src / "before", tmp_path / f"verify-{name}"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("no_prediction")
    return p


def _ran_or_skip(stem: str, suffixes: tuple[str, ...], what: str) -> list[str]:
    """The scenarios ``stem + suffix`` the broker wrote in this run; none: the test is skipped, saying how to run
    the ``what`` scenarios (the environment variables that add them)."""
    ran = [stem + s for s in suffixes if stem + s in _RUNS]
    if not ran:
        pytest.skip(f"no {what} scenario on this line: DLEDGER_MORE_LAYOUTS=1 (5.5.1), DLEDGER_LINES (5.3.3)")
    return ran


def _same_files(expected: Path, ours: Path, sub: str, *, written: bool = False) -> None:
    """``sub``/ (a queue folder) byte for byte, the same file set; ``written``: the broker wrote some."""
    exp_files = _files(expected / sub)
    assert exp_files or not written, f"the broker wrote no {sub}/"
    assert _files(ours / sub) == exp_files, f"{sub}/ file set differs"
    for rel in exp_files:
        bh.same_bytes((expected / sub / rel).read_bytes(), (ours / sub / rel).read_bytes(), f"{sub}/{rel}")


def _same_tree(expected: Path, ours: Path) -> None:
    """consumequeue/ byte for byte, index/ file by file in name order (names are creation times)."""
    _same_files(expected, ours, "consumequeue")
    exp_idx, our_idx = ([] if not (d / "index").is_dir() else sorted((d / "index").iterdir()) for d in (expected, ours))
    assert len(our_idx) == len(exp_idx), f"index file count {len(our_idx)} != broker's {len(exp_idx)}"
    for e, o in zip(exp_idx, our_idx):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file {o.name} vs broker's {e.name}")


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


def _verify(store: Path, src: Path, line: str) -> tuple[int, dict]:
    """``verify --json`` on ``store``: exit code and the report."""
    import json

    from pipelines.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(["verify", "--store", str(store), "--config", str(src / "broker.conf"), "--broker-version",
                     BROKER_LINE[line], "--split-size", "4k", "--json"])
    assert code in (0, 1), (out.getvalue() + err.getvalue())[-3000:]
    return code, json.loads(out.getvalue())


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


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_with_many_entries_in_the_last_file(written, line, tmp_path):
    """A crash restart whose last data file holds more entry headers than its last message is long:
    dledgerRecoverAbnormally's processOffset (without the headers) is then below the checkpoint's
    logicsPhysicalOffset. 5.3.3 compares it with the deleted queues' max offset (-1) and cuts nothing. 5.5.1
    compares it with the checkpoint's offset and truncateDirtyLogicFiles cuts the queues the walk wrote
    there; the start's reput then puts the cut units back from the cut queues' largest offset
    (recheckReputOffsetFromCq=true: the broker's index holds the last message's keys twice) or leaves them
    cut (without it). --as-restart on the store as the restart found it writes the broker's files byte for
    byte, with recheckReputOffsetFromCq=true and without."""
    for name in (f"{line}-dledger-abort-small", f"{line}-dledger-abort-small-norecheck"):
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        code, err = _as_restart(src / "before", tmp_path / name, src, line)
        assert code == 0, err[-2000:]
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == (line != "5.3.3"), err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if line == "5.3.3" or name.endswith("-norecheck"):
            continue
        (index,) = (src / "expected" / "index").iterdir()
        data = index.read_bytes()
        slots, count = int.from_bytes(data[32:36], "big"), int.from_bytes(data[36:40], "big")
        at = 40 + 4 * int(r["scenario"]["config"]["maxHashSlotNum"])
        entries = [data[at + 20 * i:at + 20 * i + 12] for i in range(1, count)]   # (key hash, offset)
        assert slots > 0 and len(set(entries)) < len(entries), "the broker's index holds no key twice"


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_verify_predicts_a_crash_restart_that_cuts_the_queues(written, line, tmp_path):
    """On the stores of the tests above as the crash restart found them, verify's prediction agrees with
    what the broker's restart left: the units below each queue's write position once its reput caught up
    (queuesAfterDispatch: maxOffset and the files it maps) are the units put, every other unit of the
    scenario is lost, and the keys put are those in the broker's index (the last message's twice with
    recheckReputOffsetFromCq=true on 5.5.1). The report counts up to DLedger's committed entry, where the
    rebuild it compares with ends: the units and keys of the entries past it (the partial store's last two
    messages, one unit each), which the broker's start puts too, are left out of its figures."""
    for name in (f"{line}-dledger-abort-small", f"{line}-dledger-abort-small-norecheck",
                 f"{line}-dledger-abort-partial"):
        r = _RUNS[name]
        src = Path(r["scenario"]["dir"])
        code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
        p = report["restart"]
        assert p is not None and p["dledger"], report.get("no_prediction")
        size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
        put: list[int] = []   # the commitlog offsets of the units the broker's queues hold
        for queue, state in r["written"]["queuesAfterDispatch"].items():
            for f in state["files"]:
                data = (src / "expected" / "consumequeue" / queue / f).read_bytes()
                valid = min(size, int(state["maxOffset"]) - int(f))
                put += [int.from_bytes(data[i:i + 8], "big") for i in range(0, valid, 20)
                        if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1]
        queued = _queued(r["scenario"])
        cp = bh.read_conf(src / "before" / "dledger-n0" / "checkpoint")
        uncommitted = int(cp["endIndex"]) - int(cp["committedIndex"])
        committed_end = sorted(put)[-uncommitted] if uncommitted else 1 << 62   # the first uncommitted message
        assert (p["units_dispatched_again"], p["units_lost"]) == (len(put) - uncommitted, queued - len(put)), (name, p)
        keys = 0   # the broker's index entries (indexCount - 1 a file) of messages below the committed end
        slots = int(r["scenario"]["config"]["maxHashSlotNum"])
        for f in (src / "expected" / "index").iterdir():
            data = f.read_bytes()
            at = 40 + 4 * slots
            keys += sum(int.from_bytes(data[at + 20 * i + 4:at + 20 * i + 12], "big") < committed_end
                        for i in range(1, int.from_bytes(data[36:40], "big")))
        assert p["index_keys_put_again"] == keys > 0, (name, p)


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_puts_back_part_of_a_cut_queue(written, line, tmp_path):
    """One queue, DLedger's checkpoint two entries behind the log's end, no recheckReputOffsetFromCq: on
    5.5.1 truncateDirtyLogicFiles cuts the queue's last units at the recovery's short processOffset and the
    start's reput, from the committed position, puts back only the last two, which
    putMessagePositionInfo appends at the queue's write position, over the units it leaves out (the queue
    then ends with the log's last message but holds fewer units than messages were sent). --as-restart on
    the store as the restart found it writes the broker's files byte for byte (5.3.3 cuts nothing)."""
    name = f"{line}-dledger-abort-partial"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    if line == "5.3.3":
        return
    assert "truncateDirtyLogicFiles cuts the queues" in err, err[-2000:]
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    (state,) = r["written"]["queuesAfterDispatch"].values()
    units = []
    for f in state["files"]:
        data = (src / "expected" / "consumequeue" / "T0" / "0" / f).read_bytes()
        valid = min(size, int(state["maxOffset"]) - int(f))
        units += [(int.from_bytes(data[i:i + 8], "big"), int.from_bytes(data[i + 8:i + 12], "big"))
                  for i in range(0, valid, 20)]
    sent = _queued(r["scenario"])
    last_offset, last_size = units[-1]
    assert len(units) < sent and last_offset + last_size == int(r["written"]["maxPhyOffset"]), \
        f"not a queue put back in part: {len(units)} of {sent} units, the last ending at {last_offset + last_size}"


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_cut_takes_ext_light_and_batch_queue_units(written, line, tmp_path):
    """The partial crash restart with consume queue ext files, a light queue (%LMQ%q1) and a BatchCQ topic
    (BT0): on 5.5.1 truncateDirtyLogicFiles cuts the last units of every queue (an ext queue's ext files stay
    as they are, a batch queue is cut by BatchConsumeQueue's own rule) and the start's reput from the
    committed position puts back those of the last six messages only, appended at each queue's write
    position: an ext unit for every message it walks (put back or not), the units put back pointing at the
    new ones; the batch queue's units appended after its last kept unit. --as-restart on the store as the
    restart found it writes the broker's consumequeue/, consumequeue_ext/, batchconsumequeue/ and index/
    byte for byte (5.3.3 cuts nothing, but its reput puts the ext units of the last six messages again).
    DLEDGER_MORE_LAYOUTS=1: the same with recheckReputOffsetFromCq=true, whose reput puts every cut unit back."""
    # the recheck store first: the checks after the loop are on the layouts store
    for name in ([f"{line}-dledger-abort-layouts-recheck"] if MORE_LAYOUTS else []) + [f"{line}-dledger-abort-layouts"]:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        ours = tmp_path / name
        code, err = _as_restart(src / "before", ours, src, line)
        assert code == 0, err[-2000:]
        _same_tree(src / "expected", ours)
        for sub in ("consumequeue_ext", "batchconsumequeue"):
            _same_files(src / "expected", ours, sub, written=True)
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == (line != "5.3.3"), err[-2000:]
    if line == "5.3.3":
        return
    assert "truncateDirtyLogicFiles cuts the queues" in err, err[-2000:]
    states = r["written"]["queuesAfterDispatch"]
    messages = r["scenario"]["messages"]
    for queue, sent in (("T0/0", sum(m["topic"] == "T0" for m in messages)),
                        ("%LMQ%q1/0", sum("properties" in m and m["topic"] == "T0" for m in messages))):
        assert int(states[queue]["maxOffset"]) < 20 * sent, f"{queue}: every cut unit put back (not in part)"
        assert int(states[queue]["maxPhysicOffset"]) == int(r["written"]["maxPhyOffset"]), queue
    state = states["BT0/0"]
    units = b"".join((src / "expected" / "batchconsumequeue" / "BT0" / "0" / f).read_bytes() for f in state["files"])
    first = int(state["files"][0])
    units = units[:int(state["maxOffset"]) - first]
    base = [(int.from_bytes(units[i + 28:i + 36], "big"), int.from_bytes(units[i + 36:i + 38], "big"))
            for i in range(0, len(units), 46)]
    assert any(b + n != b2 for (b, n), (b2, _) in zip(base, base[1:])), "BT0: no batch unit put back in part"
    # verify on the same store predicts the units put (those below each queue's write position once the
    # broker's reput caught up) and lost (every other unit the messages make: one each, one more per light queue)
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verified"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("no_prediction")
    held = 0
    for queue, state in states.items():
        layout, unit = ("batchconsumequeue", 46) if queue.startswith("BT0/") else ("consumequeue", 20)
        for f in state["files"]:
            data = (src / "expected" / layout / queue / f).read_bytes()[:max(0, int(state["maxOffset"]) - int(f))]
            held += sum(1 for i in range(0, len(data), unit) if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1)
    units = [1 + ("properties" in m and m["topic"] == "T0") for m in messages]
    uncommitted = sum(units[-int(r["scenario"]["dledgerCommittedBack"]):])   # past the rebuild verify compares with
    assert (p["units_dispatched_again"], p["units_lost"]) == (held - uncommitted, sum(units) - held), p


@pytest.mark.parametrize("line", bh.params_or_skip([ln for ln in LINES if ln.startswith("5.5") and MORE_LAYOUTS],
                                                   "5.5.1 with DLEDGER_MORE_LAYOUTS=1"))
def test_as_restart_after_a_crash_whose_reput_puts_ext_units_from_an_earlier_file(written, line, tmp_path):
    """The layouts store (ext files on T0, a light queue, a BatchCQ topic) with DLedger's checkpoint in the first
    of its two data files and the checkpoint's logicsPhysicalOffset at 100, restarted after a crash: the
    recovery's walk starts at the first data file (isMmapFileMatchedRecover), no queue is cut, and the start's
    reput from the committed position, before the walk's last file, puts an ext unit for every T0 record from
    there, in both files, before dropping its unit. --as-restart on the store as the restart found it writes the
    broker's consumequeue/, consumequeue_ext/, batchconsumequeue/ and index/ byte for byte."""
    name = f"{line}-dledger-abort-layouts-early"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    committed = int(bh.read_conf(src / "before" / "dledger-n0" / "checkpoint")["committedIndex"])
    ours = tmp_path / name
    code, err = _as_restart(src / "before", ours, src, line)
    assert code == 0, err[-2000:]
    assert f"dispatches every entry from data file {data[0].name} " in err, err[-2000:]
    assert "truncateDirtyLogicFiles cuts the queues" not in err, err[-2000:]
    reput = int(err.split("the start's reput begins at ")[1].split()[0].rstrip(";"))
    assert int(data[0].name) < reput < int(data[-1].name) and committed > 0, (reput, committed)
    _same_tree(src / "expected", ours)
    for sub in ("consumequeue_ext", "batchconsumequeue"):
        _same_files(src / "expected", ours, sub, written=True)
    ext_units = 0   # CqExtUnit: a short size (20 without a bitmap) first; the file's unused end is zeros or -1
    for f in sorted((src / "expected" / "consumequeue_ext" / "T0" / "0").iterdir()):
        b = f.read_bytes()
        ext_units += next((i for i in range(0, len(b) // 20) if int.from_bytes(b[20 * i:20 * i + 2], "big") != 20),
                          len(b) // 20)
    t0 = sum(m["topic"] == "T0" for m in r["scenario"]["messages"])
    assert ext_units > t0, f"the reput put no ext unit again: {ext_units} ext units, {t0} T0 messages"


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_verify_predicts_a_crash_restart_that_cuts_the_queues_it_holds(written, line, tmp_path):
    """The partial store restarted after a crash with its consume queues kept: the recovery's walk finds
    its units in the queues, truncateDirtyLogicFiles cuts the queue's own units past processOffset (5.5.1
    checks the checkpoint's logicsPhysicalOffset; 5.3.3 the loaded queues' max, which reaches it) and the
    start's reput from the committed position puts back only
    the last ones. verify on the store as that restart found it predicts the cut and the units it loses:
    every sent message the broker's queue lacks once its reput caught up."""
    name = f"{line}-dledger-abort-kept"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    (state,) = r["written"]["queuesAfterDispatch"].values()
    held = 0
    for f in state["files"]:
        data = (src / "expected" / "consumequeue" / "T0" / "0" / f).read_bytes()
        valid = min(size, int(state["maxOffset"]) - int(f))
        held += sum(1 for i in range(0, valid, 20) if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1)
    lost = _queued(r["scenario"]) - held
    assert p["units_lost"] == lost > 0, (lost, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_walk_ends_at_a_damaged_message(written, line, tmp_path):
    """The plain store with a body byte of a message in its last data file flipped, restarted after a crash:
    dledgerRecoverAbnormally's message check (body CRC) ends its walk at that message, DLedger's recovery (no CRC)
    keeps the log, and no queue is cut (the checkpoint's logicsPhysicalOffset below processOffset): with
    recheckReputOffsetFromCq the start's reput from the walk's last unit dispatches the rest, the damaged message
    too; without it, from the committed position, the log's end: nothing after the damage. --as-restart on the
    store as the restart found it writes the broker's files byte for byte, and verify predicts the units lost."""
    for name, rest in ((f"{line}-dledger-abort-damaged", True), (f"{line}-dledger-abort-damaged-norecheck", False)):
        if name not in _RUNS:
            continue   # -norecheck: 5.3.3 only (DLEDGER_LINES)
        r, src, damaged, err = _damaged_walk_restart(name, line, tmp_path)
        _same_tree(src / "expected", tmp_path / name)
        put = [u for u in _units(src / "expected" / "consumequeue") if u[2] != 2**31 - 1]
        assert any(u[1] == damaged for u in put) == rest, (name, damaged)
        assert len(put) == (_queued(r["scenario"]) if rest else 55), (name, len(put))
        p = _dledger_prediction(src, name, line, tmp_path)
        assert (p["units_dispatched_again"], p["units_lost"]) == (len(put), _queued(r["scenario"]) - len(put)), p


def _lost_per_queue(r: dict, src: Path) -> dict[str, int]:
    """Per queue (a layouts store's T0/0, %LMQ%q1/0 and BT0/0 too), the units of sent messages the broker's queue
    lacks once its reput caught up (``reportQueues``; a batch queue counts one unit per message it holds)."""
    sent: dict[str, int] = {}
    for m in r["scenario"]["messages"]:
        for queue in (f"{m['topic']}/{m.get('queueId', 0)}",
                      *([f"{m['properties']['INNER_MULTI_DISPATCH']}/0"]
                        if "INNER_MULTI_DISPATCH" in m.get("properties", {}) else [])):
            sent[queue] = sent.get(queue, 0) + 1
    lost = {}
    for queue, state in r["written"]["queuesAfterDispatch"].items():
        layout, unit = ("batchconsumequeue", 46) if queue.startswith("BT0/") else ("consumequeue", 20)
        held = 0
        for f in state["files"]:
            data = (src / "expected" / layout / queue / f).read_bytes()[:max(0, int(state["maxOffset"]) - int(f))]
            held += sum(1 for i in range(0, len(data), unit) if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1)
        if sent[queue] - held:
            lost[queue] = sent[queue] - held
    return lost


def _held(r: dict, src: Path) -> list[int]:
    """The commitlog offsets of the message units the broker's queue T0/0 holds once its reput caught up (below its
    max offset: the bytes past it are units the cut left on disk)."""
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    (state,) = r["written"]["queuesAfterDispatch"].values()
    held = []
    for f in state["files"]:
        data = (src / "expected" / "consumequeue" / "T0" / "0" / f).read_bytes()
        valid = min(size, int(state["maxOffset"]) - int(f))
        held += [int.from_bytes(data[i:i + 8], "big") for i in range(0, valid, 20)
                 if int.from_bytes(data[i + 8:i + 12], "big") not in (0, 2**31 - 1)]
    return held


def _entries_from(src: Path, first: int, end: int) -> list[int]:
    """The commitlog offsets of the messages of the DLedger entries from the one holding the message at ``first``
    to ``end`` (each entry's size from its header; a DLedger blank, magic -1, or a file's end: the next data
    file), as the broker wrote them."""
    size = int(bh.read_conf(src / "broker.conf")["mappedFileSizeCommitLog"])
    out, at = [], first - 48
    while at < end:
        base = at - at % size
        data = (src / "before" / "dledger-n0" / "data" / f"{base:020d}").read_bytes()
        if at + 48 > base + size or int.from_bytes(data[at - base:at - base + 4], "big", signed=True) == -1:
            at = base + size
            continue
        out.append(at + 48)
        at += int.from_bytes(data[at - base + 4:at - base + 8], "big")
    return out


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_walk_ends_at_a_damaged_message_and_the_queues_are_cut(written, line,
                                                                                              tmp_path):
    """The partial store (one queue) with a body byte of its 399th message flipped and DLedger's checkpoint two
    entries behind the log's end, restarted after a crash: dledgerRecoverAbnormally's message check ends its walk
    at the damaged message, DLedger's recovery keeps the log, and on 5.5.1 truncateDirtyLogicFiles cuts the queue
    at the walk's short processOffset.  The start's reput from the committed position (the damaged entry) reaches
    no cut unit and appends the damaged message and the last one at the queue's write position, over the cut
    units; with recheckReputOffsetFromCq (DLEDGER_MORE_LAYOUTS, the index off) it puts back every cut unit, then
    the rest; from the log's end (the whole log committed) nothing past the damage.  5.3.3 (the queues deleted: no
    cut) dispatches the rest from the committed position.  --as-restart on the store as the restart found it
    writes the broker's files byte for byte, and verify predicts the units the broker's queue lacks."""
    names = [f"{line}-dledger-abort-damaged-cut{s}" for s in ("", "-recheck", "-end")]
    ran = [n for n in names if n in _RUNS]
    if not ran:
        pytest.skip("no damaged-cut scenario on this line")
    for name in ran:
        r, src, damaged, err = _damaged_walk_restart(name, line, tmp_path)
        end = int(r["written"]["maxPhyOffset"])
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == line.startswith("5.5"), err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        held, sent = _held(r, src), _queued(r["scenario"])
        if name.endswith("-end"):
            assert damaged not in held and len(held) < sent - 2, (name, len(held), sent)
        elif name.endswith("-recheck") or line.startswith("5.3"):   # every message from the walk's start on
            assert held == _entries_from(src, held[0], end) and damaged in held, (name, len(held), sent)
        else:   # no cut unit put back, the damaged message and the last one appended at the write position
            assert held[-2] == damaged and len(held) < sent - 2 and held[-1] < end, (name, len(held), sent)
        p = _dledger_prediction(src, name, line, tmp_path)
        assert p["units_lost"] == sent - len(held), (name, p["units_lost"], sent - len(held), p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_begins_past_the_damaged_message(written, line, tmp_path):
    """The partial store (one queue) with a body byte of its 398th message flipped and DLedger's checkpoint two
    entries behind the log's end, restarted after a crash: dledgerRecoverAbnormally's message check ends its walk
    at the damaged message, and the start's reput from the committed position, the entry after it, dispatches the
    last two messages only: the damaged one gets no unit and no key, and the queue appends the last two at its write
    position (one below their own queue offsets).  5.5.1 cuts the queue at the walk's short processOffset first
    (-damaged-gap: the last two go over the cut units), or not with the checkpoint behind it (-damaged-gap-nocut);
    5.3.3 with its queues deleted cuts nothing.  On 5.5.1 the layouts store (ext files, a light queue, a BatchCQ
    topic), cut, with the reput from past the damaged message (-damaged-gap-layouts) or from it
    (-damaged-cut-layouts): the cut queues get the units of the records from the reput's start at their write
    positions, a batch queue's too, each pointing at the ext unit its own dispatch put; and the partial store
    followed by three T9 messages, the second damaged (-damaged-gap-emptied): the cut empties T9's queue, whose
    last message the reput puts in a new file at its own queue offset.  --as-restart on the store
    as the restart found it writes the broker's files byte for byte, and verify predicts the units the broker's
    queues lack."""
    ran = _ran_or_skip(f"{line}-dledger-abort-damaged-", ("gap", "gap-nocut", "gap-layouts", "cut-layouts",
                                                          "gap-emptied"), "damaged-gap")
    for name in ran:
        r, src, damaged, err = _damaged_walk_restart(name, line, tmp_path)
        end = int(r["written"]["maxPhyOffset"])
        assert ("are never dispatched" in err) == ("-gap" in name), err[-2000:]
        cut = line.startswith("5.5") and not name.endswith("-nocut")
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == cut, err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if name.endswith(("-layouts", "-emptied")):
            if name.endswith("-layouts"):
                _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
                _same_files(src / "expected", tmp_path / name, "batchconsumequeue", written=True)
            code, report = _verify(bh.copy_store(src / "before", tmp_path / f"verify-{name}"), src, line)
            p, lost = report["restart"], _lost_per_queue(r, src)
            assert p is not None and p["dledger"], report.get("no_prediction")
            assert {q["queue"]: q["units_lost"] for q in p["queues"] if q["units_lost"]} == lost, (name, lost, p)
            continue
        held, sent = _held(r, src), _queued(r["scenario"])
        assert damaged not in held and held[-1] < end and held[-2] > damaged, (name, held[-3:], damaged)
        assert len(held) < sent - 2 if cut else len(held) == sent - 1, (name, len(held), sent)
        p = _dledger_prediction(src, name, line, tmp_path)
        assert p["units_lost"] == sent - len(held), (name, p["units_lost"], sent - len(held), p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_meets_a_bad_magic_code(written, line, tmp_path):
    """The partial store with a body byte of its 397th message flipped and the magic code of its 399th, DLedger's
    checkpoint four entries behind (the committed position at the first damage): the walk ends at the bad body CRC,
    DLedger's recovery keeps the log, and the start's reput (no CRC) dispatches the damaged message and the next,
    then fails at the bad magic code and skips to the end of getData's buffer, the log's end: the last two messages
    get no unit (5.5.1 cuts the queue first, 5.3.3 with its queues deleted does not; -kept, 5.3.3 with its queues
    kept, is checked through verify).  --as-restart on the store as the restart found it writes the broker's files
    byte for byte, and verify predicts the units the broker's queue lacks of the records before the bad magic code
    (its reference, the rebuild, skips the rest of that data file as the reput does)."""
    ran = _ran_or_skip(f"{line}-dledger-abort-damaged-twice", ("", "-kept"), "damaged-twice")
    for name in ran:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        damaged, bad = int(r["written"]["damagedRecord"]), int(r["written"]["damagedMagicRecord"])
        held, sent = _held(r, src), _queued(r["scenario"])
        # the broker's own outcome: the reput dispatched up to the bad magic code and nothing from there on
        assert damaged in held and held[-1] < bad and len(held) < sent - 1, (name, held[-3:], damaged, bad)
        if not name.endswith("-kept"):
            code, err = _as_restart(src / "before", tmp_path / name, src, line)
            assert code == 0, err[-2000:]
            assert f"check ends its walk at {damaged - 48} " in err, err[-2000:]
            assert ("truncateDirtyLogicFiles cuts the queues" in err) == line.startswith("5.5"), err[-2000:]
            _same_tree(src / "expected", tmp_path / name)
        p = _dledger_prediction(src, name, line, tmp_path)
        # verify's reference, the rebuild, ends at the bad magic code too (the rest of the last data file skipped)
        readable = _queued({"messages": r["scenario"]["messages"][:int(r["scenario"]["damageMagic"])]})
        assert p["units_lost"] == readable - len(held), (name, p["units_lost"], readable - len(held), p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_meets_a_bad_magic_code_in_an_earlier_data_file(written, line, tmp_path):
    """The partial store with a body byte of its 61st message flipped and the magic code of its 121st, both in the
    first of two data files, DLedger's checkpoint at the first damaged entry: the walk ends at the bad body CRC, and
    the start's reput (no CRC) dispatches the damaged message and the next ones, then fails at the bad magic code,
    skips to the end of getData's buffer, the first data file's end (the group of one commits the whole log at
    once), and goes on at the second data file: the rest of the first file gets no unit, every message of the
    second does (5.5.1 and 5.3.3 with no queue cut; -recheck with recheckReputOffsetFromCq, the reput from the walk's
    end and the committed position in the second file; 5.5.1 -cut with truncateDirtyLogicFiles cutting the queue at
    the walk's short processOffset first).  --as-restart on the store as the restart found it writes the broker's files
    byte for byte, and verify predicts the units the broker's queue lacks of the records its reference (the
    rebuild, which skips the rest of a data file at a record it cannot read) dispatches."""
    ran = _ran_or_skip(f"{line}-dledger-abort-damaged-twice-early", ("", "-recheck", "-cut"), "damaged-twice-early")
    for name in ran:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        size = int(bh.read_conf(src / "broker.conf")["mappedFileSizeCommitLog"])
        damaged, bad = int(r["written"]["damagedRecord"]), int(r["written"]["damagedMagicRecord"])
        end = int(r["written"]["maxPhyOffset"])
        second = _entries_from(src, size + 48, end)   # the second data file's messages
        held = _held(r, src)
        # the broker's own outcome: nothing from the bad magic code to the first file's end, the second file's all
        assert bad < size < end and damaged in held and bad not in held, (name, damaged, bad, size)
        assert not [h for h in held if bad <= h < size] and set(second) <= set(held), (name, held[-3:], second[:3])
        if not name.endswith("-cut"):
            assert held == _entries_from(src, held[0], bad - 48) + second, (name, len(held))
        code, err = _as_restart(src / "before", tmp_path / name, src, line)
        assert code == 0, err[-2000:]
        assert f"check ends its walk at {damaged - 48} " in err, err[-2000:]
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == name.endswith("-cut"), err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        p = _dledger_prediction(src, name, line, tmp_path)
        readable = int(r["scenario"]["damageMagic"]) + len(second)
        assert p["units_lost"] == readable - len(held), (name, p["units_lost"], readable - len(held), p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_starts_past_a_bad_magic_code(written, line, tmp_path):
    """The damaged-twice-early store (a bad body CRC at the 61st message, a bad magic code at the 121st) with
    DLedger's checkpoint 200 entries behind, past the bad magic code: the walk ends at the first damage, and the
    start's reput from the committed position never reads the messages from there to the committed position, the
    bad magic code among them, and dispatches the rest of the log (each queue appending them at its write
    position; 5.5.1 -past-cut with truncateDirtyLogicFiles cutting the queue at the walk's short processOffset
    first, the reput's units then go over the cut ones).  --as-restart on the store as the restart found it writes
    the broker's files byte for byte, and verify predicts the units the broker's queue lacks of the records its
    reference (the rebuild, which skips the rest of the first data file at the bad magic code) dispatches."""
    ran = _ran_or_skip(f"{line}-dledger-abort-damaged-twice-early-past", ("", "-cut"), "damaged-twice-early-past")
    for name in ran:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        size = int(bh.read_conf(src / "broker.conf")["mappedFileSizeCommitLog"])
        damaged, bad = int(r["written"]["damagedRecord"]), int(r["written"]["damagedMagicRecord"])
        end = int(r["written"]["maxPhyOffset"])
        held = _held(r, src)
        # the broker's own outcome: the walk's messages (or those the cut left), then the committed entry's on
        committed = _entries_from(src, bad, end)[int(r["scenario"]["dledgerCommittedBack"]) * -1]
        tail = _entries_from(src, committed, end)
        assert bad < committed < size and damaged not in held and bad not in held, (name, damaged, bad, committed)
        assert held[-len(tail):] == tail and max(held[:-len(tail)]) < damaged, (name, len(held), len(tail))
        code, err = _as_restart(src / "before", tmp_path / name, src, line)
        assert code == 0, err[-2000:]
        assert f"check ends its walk at {damaged - 48} " in err, err[-2000:]
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == name.endswith("-cut"), err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        p = _dledger_prediction(src, name, line, tmp_path)
        reference = _entries_from(src, 48, bad - 48) + _entries_from(src, size + 48, end)
        lost = len(set(reference) - set(held))
        assert p["units_lost"] == lost, (name, p["units_lost"], lost, p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_of_a_converted_store_whose_walk_dispatches_nothing(written, line, tmp_path):
    """The converted store (old commitlog/ files, then DLedger's data files) with forceVerifyPropCRC, restarted
    after a crash with recheckReputOffsetFromCq and DLedger's checkpoint three entries behind: the walk's message
    check fails at the first entry (DLedger writes no CRC property) and dispatches nothing, so the start's reput
    over the empty queues begins at the min offset, the first old file's, dispatches the old records, rolls into
    the data files at the last old file's blank and dispatches the entries to the log's end: every message gets
    its unit, the old ones too.  --as-restart on the store as the restart found it writes the broker's files byte
    for byte, and verify predicts every unit put again, none lost."""
    (name,) = _ran_or_skip(f"{line}-dledger-abort-converted-propcrc", ("",), "converted-propcrc")
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    assert any((src / "before" / "commitlog").iterdir()), "a converted store keeps its ordinary commitlog files"
    # the broker's own outcome: a unit for every message, the old ones too (no queue starts with fillPreBlank units)
    put = [u for u in _units(src / "expected" / "consumequeue") if u[2] != 2**31 - 1]
    assert len(put) == _queued(r["scenario"]), (len(put), _queued(r["scenario"]))
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert "fails at the first entry" in err and "so from the min offset" in err, err[-2000:]
    assert "the old commitlog files' records first" in err, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    p = _dledger_prediction(src, name, line, tmp_path)
    # verify's reference, the rebuild, ends at the committed entry: the units of the last entries are not in it
    first = min(int(f.name) for f in (src / "before" / "dledger-n0" / "data").iterdir())
    entries = _entries_from(src, first + 48, int(r["written"]["maxPhyOffset"]))
    committed = entries[-int(r["scenario"]["dledgerCommittedBack"])] - 48
    assert (p["units_dispatched_again"], p["units_lost"]) == (len([u for u in put if u[1] < committed]), 0), p


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_of_a_converted_store_whose_walk_queues_nothing(written, line, tmp_path):
    """A converted store whose data files hold prepared transaction messages only, restarted after a crash with
    recheckReputOffsetFromCq and DLedger's checkpoint three entries behind: the walk dispatches the prepared
    messages (their keys) but queues none, so the start's reput over the empty queues begins at the min offset, the
    first old file's, puts the old records' units (their keys skipped: below the index's endPhyOffset), rolls into
    the data files at the last old file's blank and walks them again, the walk's last indexed record indexed again.
    --as-restart on the store as the restart found it writes the broker's consumequeue/ and index/ byte for byte;
    verify predicts every unit put again, none lost."""
    (name,) = _ran_or_skip(f"{line}-dledger-abort-converted-prepared", ("",), "converted-prepared")
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    assert any((src / "before" / "commitlog").iterdir()), "a converted store keeps its ordinary commitlog files"
    # the broker's own outcome: a unit for every old message (the prepared ones get none), none fillPreBlank
    put = _units(src / "expected" / "consumequeue")
    assert len(put) == _queued(r["scenario"]) > 0 and all(u[2] != 2**31 - 1 for u in put), (len(put), put[:3])
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    found = re.search(r"the start's reput from (\d+), before data file (\d+)", err)
    assert found and int(found[1]) == 0 and "it begins in the old commitlog files" in err, err[-2000:]
    assert "indexes the record at" in err, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    p = _dledger_prediction(src, name, line, tmp_path)
    assert (p["units_dispatched_again"], p["units_lost"]) == (len(put), 0), p


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_of_a_converted_store_whose_reput_begins_in_the_old_files(written, line, tmp_path):
    """Converted stores whose start's reput (recheckReputOffsetFromCq, every queue empty) begins at the first old
    commitlog file after a walk that queued nothing and ended at a damaged message (-converted-prepared-damaged,
    5.x), or after a 5.5.1 cut that left the walk's one queue with no file (-converted-cut-emptied: max -1): the
    reput puts the old records' units, walks the data files again, and puts the damaged message's and the later
    ones' units, or writes the cut queue anew.  --as-restart on the store as the restart found it writes the
    broker's consumequeue/ and index/ byte for byte; verify's units lost are those the broker's queues lack (none:
    it holds a unit for every message)."""
    ran = _ran_or_skip(f"{line}-dledger-abort-converted", ("-prepared-damaged", "-cut-emptied", "-cut-emptied-ext"),
                       "converted-old-reput")
    for name in ran:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        assert any((src / "before" / "commitlog").iterdir()), "a converted store keeps its ordinary commitlog files"
        # the broker's own outcome: a unit for every message that makes one, none fillPreBlank
        put = _units(src / "expected" / "consumequeue")
        assert len(put) == _queued(r["scenario"]) > 0 and all(u[2] != 2**31 - 1 for u in put), (name, len(put))
        # 5.5.1 calls truncateDirtyLogicFiles after either walk: on the damaged one no queue reaches its offset
        assert int(r["written"]["truncateDirtyLogicFilesAt"]) >= 0 or line.startswith("5.3"), r["written"]
        if name.endswith("-damaged"):
            r, src, _damaged, err = _damaged_walk_restart(name, line, tmp_path)
        else:
            code, err = _as_restart(src / "before", tmp_path / name, src, line)
            assert code == 0, err[-2000:]
            assert "the cut left T7/0 with no file" in err, err[-2000:]
        found = re.search(r"the start's reput from (\d+), before data file (\d+)", err)
        assert found and int(found[1]) == 0 and "it begins in the old commitlog files" in err, err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if name.endswith("-ext"):   # T7's units put back point at the ext units counted from its old records
            _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
        p = _dledger_prediction(src, name, line, tmp_path)
        assert p["units_lost"] == 0, (name, p)


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_walks_the_damaged_walk_again(written, line, tmp_path):
    """Crash restarts whose walk ends at a damaged message and whose start's reput, from the committed position
    before it and before the walk's last indexed record, walks the walk's last records again, then the rest:
    IndexService.buildIndex puts the last indexed record's keys again before those of the records past the
    damage, and on the layouts store (ext files, a light queue, a BatchCQ topic) ConsumeQueueExt.put an ext unit
    again for each T0 record from the reput's start before those of the records past it.  With no queue cut, and
    on 5.5.1 also with truncateDirtyLogicFiles cutting the queues at the walk's short processOffset first (-cut:
    the reput puts back the cut units from its start, then appends the records past the damage, a batch queue's
    too).  --as-restart on the store as the restart found it writes the broker's consumequeue/, index/,
    consumequeue_ext/ and batchconsumequeue/ byte for byte; verify predicts the units the broker's queue
    (partial store) lacks."""
    ran = _ran_or_skip(f"{line}-dledger-abort-damaged-again", ("", "-layouts", "-cut", "-layouts-cut"), "damaged-again")
    for name in ran:
        r, src, damaged, err = _damaged_walk_restart(name, line, tmp_path)
        assert "walks the walk's records from there again" in err and "indexes the record at" in err, err[-2000:]
        cut = name.endswith("-cut")
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == cut, err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if name == ran[0]:   # the message tables would hold the records read twice: refused in one line
            from pipelines.cli import main
            out = io.StringIO()
            with contextlib.redirect_stderr(out), contextlib.redirect_stdout(io.StringIO()):
                code = main(["rebuild", "--store", str(src / "before"), "--out", str(tmp_path / "tables"), "--config",
                             str(src / "broker.conf"), "--broker-version", BROKER_LINE[line], "--as-restart"])
            last = out.getvalue().strip().splitlines()[-1]
            assert code == 2 and last.startswith("error:") and "--no-tables" in last, out.getvalue()[-2000:]
        p = _dledger_prediction(src, name, line, tmp_path)
        if "-layouts" in name:
            assert "ext unit(s) again" in err, err[-2000:]
            _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
            _same_files(src / "expected", tmp_path / name, "batchconsumequeue", written=True)
            lost = _lost_per_queue(r, src)
            assert {q["queue"]: q["units_lost"] for q in p["queues"] if q["units_lost"]} == lost, (name, lost, p)
            continue
        held, sent = _held(r, src), _queued(r["scenario"])
        assert damaged in held and (len(held) < sent if cut else len(held) == sent), (name, len(held), sent)
        assert p["units_lost"] == sent - len(held), (name, p["units_lost"], sent - len(held), p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_begins_before_the_walks_data_file(written, line, tmp_path):
    """Crash restarts whose recovery walks from the last data file and whose start's reput, from the committed
    position in the first, walks that file's records, then the walk's ones again (no queue cut): T0's units there
    are dropped (below the queue's max), T9's put after fillPreBlank units, their keys skipped, the walk's last
    indexed record indexed again, and on the layouts store an ext unit put for each T0 record from the reput's
    start.  --as-restart on the store as the restart found it writes the broker's consumequeue/, index/,
    consumequeue_ext/ and batchconsumequeue/ byte for byte; verify's units lost (the committed records' units, the
    rebuild it compares with) are those the broker's queues lack."""
    ran = _ran_or_skip(f"{line}-dledger-abort-before", ("", "-layouts"), "before")
    for name in ran:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        assert r["written"]["truncateDirtyLogicFilesAt"] == -1, r["written"]["truncateDirtyLogicFilesAt"]
        src = Path(r["scenario"]["dir"])
        code, err = _as_restart(src / "before", tmp_path / name, src, line)
        assert code == 0, err[-2000:]
        found = re.search(r"the start's reput from (\d+), before data file (\d+)", err)
        assert found and 0 < int(found[1]) < int(found[2]) and "indexes the record at" in err, err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if name.endswith("-layouts"):
            _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
            _same_files(src / "expected", tmp_path / name, "batchconsumequeue", written=True)
            continue
        committed = int(found[1])
        held = _held_offsets(r, src)
        assert len(held["T9/0"]) == 10, held["T9/0"]   # the reput put T9's records past the committed position
        _lost_as_the_broker(r, src, name, line, tmp_path, committed, held)


def _held_offsets(r: dict, src: Path) -> dict[str, list[int]]:
    """Per queue of a partial store (20-byte units), the commitlog offsets of the message units the broker's queue
    holds once its reput caught up (``reportQueues``: below its write position; fillPreBlank units left out)."""
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    held: dict[str, list[int]] = {}
    for queue, state in r["written"]["queuesAfterDispatch"].items():
        for f in state["files"]:
            data = (src / "expected" / "consumequeue" / queue / f).read_bytes()
            units = [data[i:i + 20] for i in range(0, min(size, int(state["maxOffset"]) - int(f)), 20)]
            held.setdefault(queue, []).extend(int.from_bytes(u[:8], "big") for u in units
                                              if int.from_bytes(u[8:12], "big") not in (0, 2**31 - 1))
    return held


def _lost_as_the_broker(r: dict, src: Path, name: str, line: str, tmp_path: Path, committed: int,
                        held: dict[str, list[int]]) -> None:
    """verify's units lost on the store as the restart found it: the committed records' units (the rebuild it
    compares with ends at the committed position) that the broker's queues lack after the restart."""
    puts = [m for m in r["scenario"]["messages"] if "topic" in m][:-int(r["scenario"]["dledgerCommittedBack"])]
    held_below = sum(o < committed for offs in held.values() for o in offs)
    p = _dledger_prediction(src, name, line, tmp_path)
    assert p["units_lost"] == len(puts) - held_below, (name, p["units_lost"], len(puts), held_below, p["notes"])


def _emptied_layouts_as_the_broker(r: dict, src: Path, name: str, line: str, tmp_path: Path, committed: int,
                                   walk_file: int, err: str) -> None:
    """-before-cut-emptied-layouts: the cut left T7 no file (its ext units stay), the reput put the first data
    file's T7 records from a new first queue file; verify's units lost per queue (T0, T7, %LMQ%q1, BT0) are the
    committed records' units the broker's queues lack below the committed position (a batch unit per message)."""
    assert "the cut left T7/0 with no file" in err, err[-2000:]
    assert "00000000000000000000" in r["written"]["queuesAfterDispatch"]["T7/0"]["files"], r["written"]
    sent: dict[str, int] = {}
    for m in [m for m in r["scenario"]["messages"] if "topic" in m][:-int(r["scenario"]["dledgerCommittedBack"])]:
        for queue in (f"{m['topic']}/{m.get('queueId', 0)}",
                      *([f"{m['properties']['INNER_MULTI_DISPATCH']}/0"]
                        if "INNER_MULTI_DISPATCH" in m.get("properties", {}) else [])):
            sent[queue] = sent.get(queue, 0) + 1
    held: dict[str, list[int]] = {}
    for queue, state in r["written"]["queuesAfterDispatch"].items():
        layout, unit = ("batchconsumequeue", 46) if queue.startswith("BT0/") else ("consumequeue", 20)
        for f in state["files"]:
            data = (src / "expected" / layout / queue / f).read_bytes()[:max(0, int(state["maxOffset"]) - int(f))]
            held.setdefault(queue, []).extend(
                int.from_bytes(data[i:i + 8], "big") for i in range(0, len(data), unit)
                if int.from_bytes(data[i + 8:i + 12], "big") not in (0, 2**31 - 1))
    assert committed < min(held["T7/0"]) < walk_file <= max(held["T7/0"]), (held["T7/0"], committed, walk_file)
    lost = {q: n - sum(o < committed for o in held.get(q, [])) for q, n in sent.items()}
    lost = {q: n for q, n in lost.items() if n}
    # T7's committed records all lie before the reput's start: the queue written anew holds none of them
    assert lost["T7/0"] == sent["T7/0"] > 0, (lost, sent)
    p = _dledger_prediction(src, name, line, tmp_path)
    assert {q["queue"]: q["units_lost"] for q in p["queues"] if q["units_lost"]} == lost, (name, lost, p)
    assert p["units_lost"] == sum(lost.values()), (name, p["units_lost"], lost, p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_begins_before_a_damaged_or_cut_walks_data_file(written, line, tmp_path):
    """The before crash restarts whose recovery's walk also ends at a damaged message (a body CRC, in the last data
    file) or cuts the queues at its short processOffset (5.5.1; 5.3.3 with the queues kept): the start's reput from
    the committed position in the first data file walks that file's records, the walk's again, then the damaged
    message and the rest, which T0 appends after the walk's units (up to a record whose magic code its own check
    refuses, -twice: the last data file, a group of one); the cut units all lie past its start, so it puts
    every one back (on the layouts stores pointing at the ext units it put for them, counted from its start) but
    in a queue the cut left with fillPreBlank units only (-cut-blank: its max 2147483647, so none, and the queue
    file the cut deleted stays deleted); in a queue the cut left with no file (-cut-emptied: T7, max -1 on 5.5.1)
    it puts the first file's records from its start too, then the walk's ones after them (-cut-emptied-layouts: with
    ext files, whose units the cut left there: the reput's follow them; verify's units lost checked per queue
    there, a batch unit per message).  -cut-magic and
    -cut-magic-layouts: a record of the first file whose magic code the reput's own check refuses sends it on to the
    second (a group of one), the rest of the first dispatched by no one (no unit, no ext unit).
    --as-restart on the store as the restart found it writes the broker's consumequeue/, index/ (and on the
    layouts stores consumequeue_ext/ and batchconsumequeue/) byte for byte, and verify's units lost are those the
    broker's queues lack (on the 5.3.3 stores with the queues kept, verify alone; the cut units lie past the
    committed position, where the rebuild verify compares with ends)."""
    stem = f"{line}-dledger-abort-before"
    ran = _ran_or_skip(stem, ("-damaged", "-damaged-twice", "-damaged-layouts", "-cut", "-damaged-cut",
                              "-damaged-twice-cut", "-cut-blank", "-cut-emptied", "-cut-magic", "-cut-layouts",
                              "-damaged-cut-layouts", "-cut-magic-layouts", "-cut-emptied-layouts", "-cut-kept",
                              "-damaged-cut-kept",
                              "-damaged-twice-cut-kept"),
                       "before-damaged or before-cut")
    for name in ran:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        cut = int(r["written"]["truncateDirtyLogicFilesAt"])
        assert (cut > 0) == ("-cut" in name), (name, cut)
        committed = _committed_pos(src / "before")
        if name.endswith("-kept"):   # 5.3.3 cuts the queues it loads: verify's prediction on the store as it is
            _lost_as_the_broker(r, src, name, line, tmp_path, committed, _held_offsets(r, src))
            continue
        if "-damaged" in name:
            r, src, damaged, err = _damaged_walk_restart(name, line, tmp_path)
        else:
            code, err = _as_restart(src / "before", tmp_path / name, src, line)
            assert code == 0, err[-2000:]
        found = re.search(r"the start's reput from (\d+), before data file (\d+)", err)
        assert found and int(found[1]) == committed < int(found[2]), (committed, err[-2000:])
        assert (f"cuts the queues at the recovery's processOffset {cut} " in err) == (cut > 0), err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if "-magic" in name:   # a record of the first data file the reput's own check refuses: on at the second
            magic = int(r["written"]["damagedMagicRecord"])
            assert committed < magic < int(found[2]), (committed, magic, int(found[2]))
            # T9's puts 250-259, past it in that file, dispatched by no one (the broker's queue: none)
            assert name.endswith("-layouts") or "T9/0" not in r["written"]["queuesAfterDispatch"], r["written"]
        if name.endswith("-layouts"):
            _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
            _same_files(src / "expected", tmp_path / name, "batchconsumequeue", written=True)
            if name.endswith("-emptied-layouts"):
                _emptied_layouts_as_the_broker(r, src, name, line, tmp_path, committed, int(found[2]), err)
            continue
        held = _held_offsets(r, src)
        if "-damaged" in name:   # the reput dispatched the damaged message, which the walk did not
            assert damaged in held["T0/0"], damaged
        if name.endswith("-blank"):   # the cut left T8 its fillPreBlank units only: the reput put none back
            assert r["written"]["queuesAfterDispatch"]["T8/0"]["maxPhysicOffset"] == 2**31 - 1, r["written"]
        if name.endswith("-emptied"):   # the cut left T7 no file (max -1): the reput put the first file's T7 records
            assert "00000000000000000000" in r["written"]["queuesAfterDispatch"]["T7/0"]["files"], r["written"]
            assert committed < min(held["T7/0"]) < int(found[2]) <= max(held["T7/0"]), (held["T7/0"], committed)
            assert "the cut left T7/0 with no file" in err, err[-2000:]
        if "-twice" in name:     # and ended at the record whose magic code its own check refuses
            magic = int(r["written"]["damagedMagicRecord"])
            assert magic not in held["T0/0"] and f"dispatches the rest to {magic - 48}\n" in err, (magic, err[-2000:])
        _lost_as_the_broker(r, src, name, line, tmp_path, committed, held)


def _committed_pos(store: Path) -> int:
    """DLedger's committed position in ``store``: the end of the entry its ``checkpoint`` names (``committedIndex``),
    from that entry's unit in the first ``index/`` file (32 bytes: magic code, pos, size, index, term)."""
    index = int(bh.read_conf(store / "dledger-n0" / "checkpoint")["committedIndex"])
    first = sorted((store / "dledger-n0" / "index").iterdir())[0]
    with first.open("rb") as f:
        f.seek(index * 32)
        unit = f.read(32)
    assert int.from_bytes(unit[16:24], "big") == index, (index, unit.hex())
    return int.from_bytes(unit[4:12], "big") + int.from_bytes(unit[12:16], "big")


@pytest.mark.parametrize("line", bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                                                   "the 5.3.3 line: DLEDGER_LINES=4.9.8,5.3.3,5.5.1"))
def test_verify_predicts_a_crash_restart_whose_walk_ends_at_a_damaged_message_and_cuts_the_queues_it_holds(
        written, line, tmp_path):
    """The damaged-cut store restarted after a crash with its consume queues kept (5.3.3, which cuts the queues
    it loads when they reach processOffset): the walk ends at the damaged message, the cut takes the queue's units
    past processOffset, and the start's reput from the committed position (the damaged entry) appends the damaged
    message and the last one at the write position.  verify on the store as that restart found it predicts the units the
    broker's queue lacks once its reput caught up."""
    name = f"{line}-dledger-abort-damaged-cut-kept"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    held, sent = _held(r, src), _queued(r["scenario"])
    assert int(r["written"]["damagedRecord"]) in held and len(held) < sent - 2, (len(held), sent)
    code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("no_prediction")
    assert p["units_lost"] == sent - len(held) > 0, (p["units_lost"], sent - len(held), p["notes"])
    # the damaged-again and damaged-gap stores kept as well: the reput from before the damaged message (the walk's
    # records again) or from past it (the damaged one never dispatched), after the cut
    for name, dispatched in ((f"{line}-dledger-abort-damaged-again-kept", True),
                             (f"{line}-dledger-abort-damaged-gap-kept", False)):
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        held, sent = _held(r, src), _queued(r["scenario"])
        assert (int(r["written"]["damagedRecord"]) in held) == dispatched and len(held) < sent - 2, (len(held), sent)
        code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
        p = report["restart"]
        assert p is not None and p["dledger"], report.get("no_prediction")
        assert p["units_lost"] == sent - len(held) > 0, (name, p["units_lost"], sent - len(held), p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_verify_predicts_a_crash_restart_that_cuts_the_batch_queue_it_holds(written, line, tmp_path):
    """The layouts store (T0, the light queue %LMQ%q1, the BatchCQ topic BT0) without ext files, restarted after
    a crash with its queues kept, batchconsumequeue/ too: the recovery's walk finds every unit there,
    truncateDirtyLogicFiles cuts each queue's own units past processOffset (BatchConsumeQueue's rule for BT0:
    its max becomes the start of its last unit kept) and the start's reput from the committed position puts back
    only those of the last messages. verify on the store as that restart found it predicts, queue by queue, the
    units lost: every unit of a sent message the broker's queue lacks once its reput caught up."""
    name = f"{line}-dledger-abort-batch-kept"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    assert any((src / "before" / "batchconsumequeue").rglob("0*")), "no batch queue file kept"
    code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("no_prediction")
    lost = _lost_per_queue(r, src)
    predicted = {q["queue"]: q["units_lost"] for q in p["queues"] if q["units_lost"]}
    assert predicted == lost and ("BT0/0" in lost) == (line != "5.3.3" or r["written"]["truncateDirtyLogicFilesAt"]
                                                       >= 0), (predicted, lost, p["notes"])
    # the queue files the cut deleted and nothing wrote again (the batch queue's placed by its units on disk)
    deleted = sum(len(set(_files(src / "before" / sub)) - set(_files(src / "expected" / sub)))
                  for sub in ("consumequeue", "batchconsumequeue"))
    said = [int(m) for n in p["notes"] for m in re.findall(r"(\d+) queue file\(s\) stay deleted", n)]
    assert said == ([deleted] if lost else []), (said, deleted, p["notes"])


@pytest.mark.parametrize("line", LINES)
def test_verify_predicts_a_crash_restart(written, line, tmp_path):
    """On the store as the broker's crash restart found it (before/: an abort file, consumequeue/ and
    index/ deleted), verify predicts what that restart wrote (expected/): the units it put (on 5.x from the
    data file dledgerRecoverAbnormally starts at; those of uncommitted entries are not in the rebuild verify
    compares with), and every other unit of the store lost (a converted store's old messages too)."""

    names = [f"{line}-dledger-abort"] + ([] if line.startswith("4") else [f"{line}-dledger-abort-norecheck",
                                                                          f"{line}-dledger-abort-converted"])
    for name in names:
        r = _RUNS[name]
        src = Path(r["scenario"]["dir"])
        store = bh.copy_store(src / "before", tmp_path / name)
        code, report = _verify(store, src, line)
        p = report["restart"]
        assert code == 1 and p is not None and p["dledger"], report.get("no_prediction")
        put = [u for u in _units(src / "expected" / "consumequeue") if u[2] != 2**31 - 1]
        queued = _queued(r["scenario"])
        # the rebuild verify compares with ends at the committed entry: the units of the last entries (one
        # message each), which the crash restart puts too, are not in it
        back = int(r["scenario"].get("dledgerCommittedBack", 0))
        assert 0 < len(put) - back and len(put) <= queued
        assert (p["units_dispatched_again"], p["units_lost"]) == (len(put) - back, queued - len(put)), p


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
    d = _rebuilt(written)
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


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_cut_empties_a_queue(written, line, tmp_path):
    """The small store and one last message to a queue of its own, restarted after a crash with
    recheckReputOffsetFromCq=true: the cut at dledgerRecoverAbnormally's short processOffset takes that queue's
    only unit and deletes its only file (the broker's queue after load() maps none), and correctMinOffset sets
    its max to -1, so doRecheckReputOffsetFromCq starts the reput at the other queues' largest offset, below the
    message, and the reput puts its unit back. --as-restart on the store as the restart found it writes the
    broker's files byte for byte, and verify predicts the units it holds."""
    name = f"{line}-dledger-abort-emptied"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    assert r["written"]["queuesAfterLoad"]["T9/0"]["files"] == [], r["written"]["queuesAfterLoad"].get("T9/0")
    src = Path(r["scenario"]["dir"])
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert "truncateDirtyLogicFiles cuts the queues" in err and "inside an entry" not in err, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    assert any(u[0] == "T9/0" for u in _units(src / "expected" / "consumequeue"))
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("no_prediction")
    put = [u for u in _units(src / "expected" / "consumequeue") if u[2] != 2**31 - 1]
    assert (p["units_dispatched_again"], p["units_lost"]) == (len(put), _queued(r["scenario"]) - len(put)), p


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_cut_empties_a_batch_queue(written, line, tmp_path):
    """The emptied store with its last message to a BatchCQ topic (B9) of its own, restarted after a crash with
    recheckReputOffsetFromCq=true (5.3.3 with its queues kept: it cuts only when the queues it loads reach
    processOffset): the cut deletes B9's only file and BatchConsumeQueue.truncateDirtyLogicFiles leaves its max at
    processOffset - 1, which its correctMinOffset keeps, above the other queues' max: doRecheckReputOffsetFromCq
    sets the reput there, inside the last entry, and DLedgerCommitLog's message check sends it on. --as-restart
    (5.5.1, from the store without queues) writes the broker's consumequeue/, batchconsumequeue/ and index/
    byte for byte, and verify predicts the units lost and put."""
    name = f"{line}-dledger-abort-emptied-batch" + ("-kept" if line.startswith("5.3") else "")
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    w = r["written"]
    assert w["queuesAfterLoad"]["B9/0"]["files"] == [], w["queuesAfterLoad"].get("B9/0")
    src = Path(r["scenario"]["dir"])
    if not line.startswith("5.3"):
        ours = tmp_path / name
        code, err = _as_restart(src / "before", ours, src, line)
        assert code == 0, err[-2000:]
        assert "processOffset - 1, where a batch queue the cut emptied leaves its max" in err, err[-2000:]
        _same_tree(src / "expected", ours)
        _same_files(src / "expected", ours, "batchconsumequeue")
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    held = 0
    for queue, state in w["queuesAfterDispatch"].items():
        layout, unit = ("batchconsumequeue", 46) if queue.startswith("B9/") else ("consumequeue", 20)
        for f in state["files"]:
            data = (src / "expected" / layout / queue / f).read_bytes()[:max(0, int(state["maxOffset"]) - int(f))]
            held += sum(1 for i in range(0, len(data), unit) if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1)
    assert p["units_lost"] == _queued(r["scenario"]) - held, (held, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                                                   "5.3.3 only: DLEDGER_LINES=4.9.8,5.3.3,5.5.1"))
def test_verify_predicts_a_crash_restart_whose_reput_starts_inside_an_entry(written, line, tmp_path):
    """The same store on 5.3.3, restarted with its consume queues kept (5.3.3 cuts only when the queues it loads
    reach processOffset): the emptied queue's max stays processOffset (5.3.3's correctMinOffset leaves a queue
    with no file alone), where doRecheckReputOffsetFromCq sets the reput, inside the last entry's header;
    DLedgerCommitLog's message check fails there and doReput jumps to the end of the committed data: the unit
    stays cut. verify on the store as that restart found it predicts it (the units lost: every sent message
    the broker's queues lack once its reput caught up)."""
    name = f"{line}-dledger-abort-emptied-kept"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    w = r["written"]
    assert w["queuesAfterLoad"]["T9/0"]["files"] == [] and w["queuesAfterDispatch"]["T9/0"]["files"] == [], \
        (w["queuesAfterLoad"].get("T9/0"), w["queuesAfterDispatch"].get("T9/0"))
    src = Path(r["scenario"]["dir"])
    code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    held = 0
    for queue, state in w["queuesAfterDispatch"].items():
        for f in state["files"]:
            data = (src / "expected" / "consumequeue" / queue / f).read_bytes()
            valid = min(size, int(state["maxOffset"]) - int(f))
            held += sum(1 for i in range(0, valid, 20) if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1)
    lost = _queued(r["scenario"]) - held
    assert p["units_lost"] == lost > 0, (lost, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", LINES)
def test_as_restart_after_a_crash_before_the_first_start_with_dledger(written, line, tmp_path):
    """A store of an ordinary commitlog whose broker crashed (an abort file), restarted with DLedger on: no
    dledger-n0/ yet, so DLedgerCommitLog recovers the old files with the base CommitLog's recovery (5.x the
    abnormal one, which dispatches from the file the checkpoint matches; 4.9.8 the normal one, whatever the abort
    file says) and creates its first data file after them. --as-restart on the store as the restart found it
    writes the broker's files byte for byte, and verify predicts what it put and lost."""
    name = f"{line}-dledger-abort-first-start"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    before = src / "before"
    assert (before / "abort").is_file() and not (before / "dledger-n0").exists()
    legacy = sorted((before / "commitlog").iterdir())
    assert r["written"]["dividedCommitlogOffset"] == int(legacy[-1].name) + legacy[-1].stat().st_size
    code, err = _as_restart(before, tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert "no DLedger data file yet" in err and ("as a restart: normal recovery" in err) == line.startswith("4"), \
        err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    code, report = _verify(bh.copy_store(before, tmp_path / "verify"), src, line)
    p = report["restart"]
    assert code == 1 and p is not None, report.get("no_prediction")
    put = [u for u in _units(src / "expected" / "consumequeue") if u[2] != 2**31 - 1]
    again = p["units_dispatched_again"] + p["units_appended_by_recovery"]
    assert 0 < len(put) and (again, p["units_lost"]) == (len(put), _queued(r["scenario"]) - len(put)), p
    assert (p["units_appended_by_recovery"] == 0) == line.startswith("4"), p   # 4.9.8: the normal recovery
