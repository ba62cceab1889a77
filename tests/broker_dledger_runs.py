"""The broker's runs of :mod:`broker_dledger_scenarios` (DLedger stores, ``enableDLegerCommitLog=true``), shared by
the modules that test them (:mod:`test_dledger_broker`, :mod:`test_dledger_crash_broker`,
:mod:`test_dledger_crash_damaged_broker`), and the helpers those tests share.

The first test of any of them to ask (:func:`written_run`, their ``written`` fixture) has the broker write every
scenario of :data:`SCENARIOS` and :data:`EXTRA` (one harness JVM per line, its scenarios in threads,
:func:`broker_harness.write_lines`) and ``python -m pipelines rebuild`` rebuild each of :data:`SCENARIOS` (the
smallest split size, 4 KiB, so that most splits start inside a DLedger entry); :data:`_RUNS` keeps them for the rest
of the pytest session, so that the broker writes every scenario once however many of those modules run. All lines'
stores are written at once while the Spark session starts: about 25 s of the run on 2 cores, most of it the stores'
shutdown sleeps.
"""
from __future__ import annotations

import contextlib
import io
import os
import time
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import ext_orphaned_as_the_broker, last_data_bytes, walk_from_first_data_file
from broker_dledger_inside_batch_scenarios import inside_batch_more_abort_scenarios
from broker_dledger_inside_scenarios import (
    emptied_abort_scenarios,
    emptied_batch_abort_scenarios,
    emptied_embedded_abort_scenarios,
)
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
    first_start_abort_scenario,
    kept_abort_scenario,
    layouts_abort_scenario,
    layouts_early_abort_scenario,
    layouts_recheck_abort_scenario,
    no_recheck_scenario,
    partial_abort_scenario,
    small_abort_scenarios,
)

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
    build's queue reset), and a converted store's reput from its old files (``-converted-prepared``, and after a
    damaged walk ``-converted-prepared-damaged``)."""
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
    + emptied_abort_scenarios(line) + emptied_batch_abort_scenarios(line) + emptied_embedded_abort_scenarios(line)
    + inside_batch_more_abort_scenarios(line)
    + ([layouts_early_abort_scenario(line)] if line.startswith("5.5") and MORE_LAYOUTS else [])
    for line in LINES}
# The inside-entry stores with messageIndexSafe=true and index files of 250 entries (the -earlier families) rely on
# the walk starting at the first data file: DLedgerCommitLog.isMmapFileMatchedRecover refuses the last data file only
# when its first message's store timestamp is past the checkpoint's indexMsgTimestamp, that of the message filling
# the first index file (put 125 of 167 in the first data file); put in the same millisecond, the walk started at the
# last data file instead (a flaky -earlier-batch-only-kept). A pause between the two (put 145) keeps them apart.
INDEX_SPLIT_PUT = 145


def _index_split(sc: dict) -> dict:
    cfg = sc.get("config", {})
    if "-embedded" not in sc["name"] or cfg.get("messageIndexSafe") != "true" or cfg.get("maxIndexNum") != "250":
        return sc
    msgs = sc["messages"]
    assert len(msgs) > INDEX_SPLIT_PUT and all("topic" in m for m in msgs[:INDEX_SPLIT_PUT + 1]), sc["name"]
    return {**sc, "messages": [*msgs[:INDEX_SPLIT_PUT], {"pauseMs": 5}, *msgs[INDEX_SPLIT_PUT:]]}


EXTRA = {line: [_index_split(sc) for sc in scs] for line, scs in EXTRA.items()}
# DLEDGER_ONLY=a,b: of those crash restarts, only the ones whose name holds one of these (a targeted run: select
# their tests with -k; a test over several scenarios checks those written and skips when none was, and one that
# reads a scenario left out by name fails)
if os.environ.get("DLEDGER_ONLY"):
    EXTRA = {ln: [sc for sc in scs if any(w in sc["name"] for w in os.environ["DLEDGER_ONLY"].split(","))]
             for ln, scs in EXTRA.items()}
_RUNS: dict[str, dict] = {}
# every line's SCENARIOS and EXTRA (conftest has the modules that use the dledger_written fixture write them
# beforehand)
STORES = bh.Stores({ln: [*scs, *EXTRA.get(ln, [])] for ln, scs in SCENARIOS.items()}, "DLedger store(s)")


def _rebuild(d: Path, line: str) -> dict:
    """``python -m pipelines rebuild`` (in this process, on the test session's Spark context): exit
    code and what it printed on stderr."""
    return bh.rebuild(d, BROKER_LINE[line])


def written_run(request, tmp_path_factory):
    """The scenario as the broker wrote it (every scenario written, and rebuilt, once a pytest session:
    the ``written`` fixture of the test modules)."""
    params = request.node.callspec.params
    name = params.get("name") or f"{params['line']}-dledger-plain"
    if not _RUNS:
        work = tmp_path_factory.mktemp("dledger")
        # a store's shutdown sleeps 1 s on 4.9.8 and 3 s on 5.x, and DLedger's netty server takes 2 s more
        # to stop: the Spark session the CLI's rebuild gets (getOrCreate) starts meanwhile
        _RUNS.update(bh.write_lines(request, STORES, work))
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


def _queued(sc: dict) -> int:
    """How many consume queue units the scenario's messages make."""
    return sum(len(m["batch"]) if "batch" in m else m.get("tranType", "none") in ("none", "commit")
               for m in sc["messages"] if "topic" in m)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


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


# the lines each ``_as_restart`` printed, by its output folder (``_same_tree`` checks their figures)
_PRINTED: dict[Path, list[str]] = {}


def _as_restart(store: Path, out: Path, src: Path, line: str) -> tuple[int, str]:
    """``rebuild --as-restart`` on ``store`` with the scenario's broker.conf: exit code, stderr (what it prints kept
    for :func:`_same_tree`)."""
    from pipelines.cli import main
    err, printed = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(printed):
        code = main(["rebuild", "--store", str(store), "--out", str(out), "--config", str(src / "broker.conf"),
                     "--broker-version", BROKER_LINE[line], "--split-size", "4k", "--no-tables", "--as-restart"])
    _PRINTED[out] = printed.getvalue().splitlines()
    return code, err.getvalue()


def _damaged_walk_restart(name: str, line: str, tmp_path: Path) -> tuple[dict, Path, int, str]:
    """The crash-restart scenario ``name`` (a damaged message ending dledgerRecoverAbnormally's walk): written by
    the broker, and ``rebuild --as-restart`` on the store as the restart found it, which exits 0 and says its
    walk ends at the damaged message; the run, its folder, the damaged record's offset and stderr."""
    r, _w, src = _written(name)
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
    """consumequeue/ byte for byte, index/ file by file in name order (names are creation times); where ``ours`` is
    an ``--as-restart`` output (:func:`_as_restart`), the consume queue files and units it printed (its build rows,
    which the tables' inventory reads) those of the broker's files (:func:`_units_held`)."""
    _same_files(expected, ours, "consumequeue")
    if ours in _PRINTED:
        figures = next(x for x in _PRINTED[ours] if x.startswith("consume queues ")).split(", ")
        held = expected / "consumequeue"
        broker = [f"{sum(f.is_file() for f in held.rglob('*')):,} files", f"{_units_held(held):,} units"]
        assert figures[-2:] == broker, (figures, "broker's", broker)
    exp_idx, our_idx = ([] if not (d / "index").is_dir() else sorted((d / "index").iterdir()) for d in (expected, ours))
    assert len(our_idx) == len(exp_idx), f"index file count {len(our_idx)} != broker's {len(exp_idx)}"
    for e, o in zip(exp_idx, our_idx):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file {o.name} vs broker's {e.name}")


def _restart_as_the_broker(src: Path, name: str, line: str, tmp_path: Path, *, ext: bool = False,
                           batch: bool = False) -> None:
    """``--as-restart`` on the store as the broker's crash restart found it (``before/``) writes what that restart
    wrote (``expected/``): ``consumequeue/``, ``index/`` and ``batchconsumequeue/`` byte for byte (``batch``: the
    broker wrote some), and ``ext``: ``consumequeue_ext/`` too (the broker wrote some)."""
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    _same_files(src / "expected", tmp_path / name, "batchconsumequeue", written=batch)
    if ext:
        _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)


def _units_held(root: Path) -> int:
    """The message units of every consume queue file under ``root`` as the broker's next start reads them
    (ConsumeQueue.recover: units while offset >= 0 and size > 0; fillPreBlank units, offset 0 and size
    Integer.MAX_VALUE, not counted)."""
    n = 0
    for f in sorted(root.rglob("*")):
        if not f.is_file():
            continue
        data = f.read_bytes()
        for i in range(0, len(data) - 19, 20):
            off, size = int.from_bytes(data[i:i + 8], "big", signed=True), \
                int.from_bytes(data[i + 8:i + 12], "big", signed=True)
            if off < 0 or size <= 0:
                break
            n += not (off == 0 and size == 2**31 - 1)
    return n


def _verify_loses_as_the_broker(r: dict, src: Path, line: str, tmp_path: Path, leave_out: tuple[int, ...], *,
                                extra: int = 0) -> dict:
    """``verify`` on a copy of ``before/`` predicts a DLedger crash restart (no note) whose units lost are those the
    broker's queues lack (:func:`_loses_as_the_broker`); verify's prediction."""
    _code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    _loses_as_the_broker(p, r, src, leave_out, extra=extra)
    return p


def _loses_as_the_broker(p: dict, r: dict, src: Path, leave_out: tuple[int, ...], *, extra: int = 0,
                         some: bool = True) -> None:
    """verify's restart prediction ``p`` loses the units the scenario sent (:func:`_queued`, plus ``extra``: e.g.
    the light queue units of multi-dispatched messages, or a planted unit the queues hold that no put sent) less
    those the broker's queues hold below each write position (:func:`_units_below_write`; ``leave_out``: the
    commitlog offsets of the parsed messages, which no put sent); ``some``: and that is not none.  With ext files
    after the broker's restart, verify's ext units orphaned, every queue's, are the broker's
    (:func:`broker_dledger_files.ext_orphaned_as_the_broker`)."""
    held = _units_below_write(r["written"], src, leave_out)
    lost = _queued(r["scenario"]) + extra - held
    assert p["units_lost"] == lost and (lost > 0 or not some), (held, extra, p["units_lost"], p["notes"])
    if (src / "expected" / "consumequeue_ext").is_dir():
        ext_orphaned_as_the_broker(p, r["written"], src)


def _written(name: str) -> tuple[dict, dict, Path]:
    """The crash restart ``name`` as the harness wrote it (asserting it did): its run, the harness's report and the
    scenario's folder."""
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    # a 5.3.3 crash store put without a pause: the broker's own isMmapFileMatchedRecover, asked by the writer with
    # the checkpoint the restart reads, walks from the first data file, as the scenario means (the checkpoint's
    # timestamps lowered when a loaded machine slowed the puts past its 3 s: WalkStart.firstFile)
    walk_from_first_data_file(r["written"], Path(r["scenario"]["dir"]))
    return r, r["written"], Path(r["scenario"]["dir"])


def _inside_run(name: str, reput: int, msg: bytes, then: bytes = b"", *,
                damaged: bool = False) -> tuple[dict, dict, Path]:
    """The inside-entry crash restart ``name`` as the broker wrote it: its run, report and folder, after asserting
    that the restart's truncateDirtyLogicFiles ran at processOffset ``reput + 1`` (``damaged``: below the damaged
    record ending the walk) and that the store it found holds ``msg`` (then ``then``) at ``reput``, where the reput
    is set: the message it parses."""
    r, w, src = _written(name)
    at = int(w["truncateDirtyLogicFilesAt"])
    assert at == reput + 1 and (not damaged or at < int(w["damagedRecord"])), (at, reput, w.get("damagedRecord"))
    assert last_data_bytes(src, reput, len(msg) + len(then)) == msg + then, f"{name}: the message at processOffset - 1"
    return r, w, src


def _capture_cuts(monkeypatch) -> list[dict]:  # noqa: ANN001
    """The ``on_disk`` argument of each ``store_format.dledger_crash.cut_queues`` call from here on (the queues as
    the walk's dispatch left them on disk, before the cut), filled as verify plans."""
    from store_format import dledger_crash
    cuts: list[dict] = []
    real = dledger_crash.cut_queues

    def capture(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        cuts.append(kwargs["on_disk"])
        return real(*args, **kwargs)
    monkeypatch.setattr(dledger_crash, "cut_queues", capture)
    return cuts


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


def _units_below_write(w: dict, src: Path, leave_out: tuple[int, ...] = ()) -> int:
    """The units of the broker's queues (``queuesAfterDispatch``: keepQueues or reportQueues) below each queue's
    write position, but for ``fillPreBlank`` units and those at the commitlog offsets ``leave_out`` (the messages
    the start's reput parsed inside an entry, which no put sent); a batch queue (a BatchConsumeQueue, B9) counts its
    46-byte units."""
    held = 0
    for queue, st in w["queuesAfterDispatch"].items():
        batch = st.get("type") == "BatchConsumeQueue" or queue.startswith("B9/")
        layout, unit = ("batchconsumequeue", 46) if batch else ("consumequeue", 20)
        for f in st["files"]:
            b = (src / "expected" / layout / queue / f).read_bytes()[:max(0, int(st["maxOffset"]) - int(f))]
            held += sum(1 for i in range(0, len(b), unit) if int.from_bytes(b[i + 8:i + 12], "big") != 2**31 - 1
                        and int.from_bytes(b[i:i + 8], "big") not in leave_out)
    return held


def _parsed_unit_in_a_new_file(r: dict, src: Path, queue: str, reput: int, size: int, queue_offset: int) -> int:
    """Asserts that the broker's ``queue`` (``T/q``), left with no file by the cut, holds one file, created where
    the parsed message's queue offset falls: ``fillPreBlank`` units, then that message's unit (at ``reput``,
    ``size`` bytes), then zeros; returns the file's start (queue bytes)."""
    from store_format.layout import CQ_UNIT_SIZE
    file_size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    state = r["written"]["queuesAfterDispatch"][queue]
    (first,) = [int(f) for f in state["files"]]
    held = (src / "expected" / "consumequeue" / queue / state["files"][0]).read_bytes()
    at = int(state["maxOffset"]) - CQ_UNIT_SIZE - first   # the last unit the queue holds
    blank = (0).to_bytes(8, "big") + (2**31 - 1).to_bytes(4, "big") + bytes(8)
    unit = reput.to_bytes(8, "big") + size.to_bytes(4, "big") + bytes(8)
    assert first + at == queue_offset * CQ_UNIT_SIZE and first > 0, (first, at)
    assert held == blank * (at // CQ_UNIT_SIZE) + unit + bytes(file_size - at - CQ_UNIT_SIZE), held.hex()
    return first


def _verify_with_plan(monkeypatch, store: Path, src: Path, line: str) -> tuple[dict, object]:  # noqa: ANN001
    """``verify --json`` on ``store`` (a 5.x DLedger crash restart it predicts with no note): its restart
    prediction, and the crash plan (``store_format.dledger_crash_plan.DLedgerCrash``) it made."""
    from pipelines.verify import compare_store
    plans = []
    real = compare_store.dledger_crash_on_disk

    def capture(*args):  # noqa: ANN002, ANN202
        plans.append(real(*args))
        return plans[-1]
    monkeypatch.setattr(compare_store, "dledger_crash_on_disk", capture)
    _code, report = _verify(store, src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    (crash, _why), = plans
    return p, crash
