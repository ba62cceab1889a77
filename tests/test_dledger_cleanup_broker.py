"""DLedger's own cleanup, run by the published code, against ``store_format.expiry_dledger`` and the
audit's rows.

The broker writes DLedger stores through the harness (:func:`broker_dledger_scenarios.cleanup_scenarios`:
one with six or so data files, one converted in place with two old commitlog files).  For each case
below, on a copy of a store, the harness's Reader (``DLedgerCleanup.java``) sets each file's mtime to
the age the case gives before the clock (shifted to the JVM's clock, as ``Cleanup.java`` does), runs
the broker's rounds (``DLedgerCommitLog.deleteExpiredFile``: old files, or DLedger's settings once
none is left), DLedger's ``CleanSpaceService.doWork`` once, and the broker's
``CleanConsumeQueueService``.  We predict from the same file facts (names, sizes, ages, the consume
queue files' last units, the index headers) with :func:`plan_dledger_cleanup` (every file going by
the time of the harness's last step) and with :func:`build_expiry_audit` (its rows), and compare:
the old and DLedger files left, the min offset, the consume queue and index files left.

On 4.9.8 the broker's rounds reach ``DLedgerCommitLog.deleteExpiredFile`` (old files first, the
last one too, then DLedger's settings); on 5.x they call the base ``CommitLog.deleteExpiredFile``
with ``deleteFileBatchMax``, which ``DLedgerCommitLog`` does not override, so a converted store keeps
its last old file and DLedger its data files: the harness calls each line's round as its broker does.

``deleteWhen`` is the JVM's hour or another one (the Reader sets the JVM's zone to UTC and reports
the hour ``doWork`` saw; our plan gets a zone in which the clock is half past that hour), and
``diskMaxUsedSpaceRatio=10`` makes the real disk (whatever DLedger measures, reported back) count as
above DLedger's ``diskSpaceRatioToCheckExpired``.  DLedger's forced cleaning
(``diskSpaceRatioToForceClean``, at least 50 %) needs a fuller disk than a test machine's: the
``forced`` cases copy the store onto a tmpfs of its own, filled to about 86 % (above the default
0.85), with every data file young, so that only forced cleaning can
delete anything; they are skipped where a tmpfs cannot be mounted (it needs root).
"""
from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import broker_harness as bh
import pyarrow as pa
import pytest
from broker_dledger_scenarios import cleanup_scenarios

from pipelines.tables.expiry_audit import CQ_INVENTORY_SCHEMA, INDEX_INVENTORY_SCHEMA, build_expiry_audit
from pipelines.tables.schema import SEGMENTS_SCHEMA
from store_format.expiry import SegmentFacts, files_deleted_with
from store_format.expiry_dledger import plan_dledger_cleanup
from store_format.indexfile import read_header
from store_format.layout import consume_queue_file_path
from store_format.store import load_config_for
from store_format.timeutil import datetime_to_ms, ms_to_datetime

pytestmark = [pytest.mark.broker, pytest.mark.slow]

bh.skip_without_tools()

LINES = bh.lines_from_env("DLEDGER_LINES", "4.9.8,5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
H = 3_600_000
INTERVAL = 10_000  # cleanResourceInterval: the broker's rounds, as our plan spaces them
# name: store, deleteWhen "now"/"other", diskMaxUsedSpaceRatio, ages (hours) of the old files and of the
# data files (the last age repeats), the broker's rounds before DLedger's pass.  fileReservedTime=48, so
# DLedger keeps data files 49 h: 48.3 h old ones stay (48 h would delete them)
CASES = {
    "hour": ("many", "now", 95, [], [100, 80, 48.3, 30, 20, 1], 1),
    "not-the-hour": ("many", "other", 95, [], [100, 80, 60, 1], 1),
    "disk": ("many", "other", 10, [], [100, 90, 80, 70, 49.5, 48.3, 1], 1),
    "all-old": ("many", "now", 95, [], [200], 1),
    "old-files-first": ("converted", "now", 95, [100, 90], [200], 1),
    "old-files-then-dledger": ("converted", "now", 95, [100, 90], [200, 100, 48.3, 1], 3),
    "young-old-file": ("converted", "now", 95, [100, 10], [200], 3),
    "forced": ("many", "other", 75, [], [1], 1),
    "forced-off": ("many", "other", 75, [], [1], 1),
}
# the forced cases: the store alone on a tmpfs this full, above diskMaxUsedSpaceRatio=75 (DLedger checks
# expiry there) and DLedger's default diskSpaceRatioToForceClean 0.85 (the broker's load adds a little);
# "forced-off" has cleanFileForciblyEnable=false
FULL_DISK = {"forced": 0.86, "forced-off": 0.86}
PARAMS = [pytest.param(line, case, id=f"{line}-{case}") for line in LINES for case in CASES]
STORES = bh.Stores({line: cleanup_scenarios(line) for line in LINES}, "DLedger stores to clean", threads=2)
_RUNS: dict[str, dict] = {}


def _ages(ages: list[float], n: int) -> list[float]:
    return (ages + ages[-1:] * n)[:n]


def _files(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def _mount_full_disk(point: Path, src: Path, ratio: float) -> str | None:
    """A tmpfs at ``point`` that holds a copy of ``src`` and is ``ratio`` full (a padding file makes
    up the rest); None, or why it cannot be mounted here."""
    need = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    pages = -(-int(need / (ratio - 0.04)) // 4096) + 64
    point.mkdir(parents=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={pages * 4096}", "tmpfs", str(point)],
                         capture_output=True, text=True, check=False)
    if res.returncode:
        return f"cannot mount a tmpfs here ({res.stderr.strip() or res.returncode}): needs root"
    return None


def _fill_to(point: Path, ratio: float) -> None:
    st = os.statvfs(point)
    used = st.f_blocks - st.f_bfree
    pad = int(st.f_blocks * ratio) - used
    if pad > 0:
        (point / "padding").write_bytes(b"\1" * (pad * st.f_frsize))


def _request(line: str, case: str, src: Path, work: Path, hour: int) -> dict:
    store_name, when, max_used, old_ages, data_ages, rounds = CASES[case]
    conf = {**bh.read_conf(src / "broker.conf"), "fileReservedTime": "48",
            "cleanFileForciblyEnable": "false" if case == "forced-off" else "true",
            "deleteWhen": f"{hour if when == 'now' else (hour + 12) % 24:02d}",
            "diskMaxUsedSpaceRatio": str(max_used), "deleteConsumeQueueFilesInterval": "0"}
    store = work / f"{line}-{case}"
    if case in FULL_DISK:
        store = store / "store"
    shutil.copytree(src / "store", store)
    for sub in ("consumequeue", "index"):
        shutil.copytree(src / "expected" / sub, store / sub)
    if case in FULL_DISK:
        _fill_to(store.parent, FULL_DISK[case])
    clock = int(time.time() * 1000)
    old, data = _files(store / "commitlog"), _files(store / "dledger-n0" / "data")
    mtimes = {n: clock - round(a * H) for n, a in zip(old, _ages(old_ages, len(old)))}
    mtimes.update({f"dledger-n0/data/{n}": clock - round(a * H) for n, a in zip(data, _ages(data_ages, len(data)))})
    return {"store": str(store), "config": conf, "cleanup": {"clockMs": clock, "mtimes": mtimes, "brokerRounds": rounds,
                                                             "passes": 1, "timeZone": "UTC"}}


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory) -> Iterator[dict[str, dict]]:
    """Every line's stores written, then every case read and cleaned by the broker (a JVM per line and
    step, the lines in parallel): ``line-case`` -> the request, the answer, the written store.  The
    forced cases' tmpfs mounts are unmounted at the end, also on failure."""
    mounts: list[Path] = []
    try:
        yield _runs(request, tmp_path_factory, mounts)
    finally:
        for point in mounts:
            subprocess.run(["umount", "-l", str(point)], check=False)


def _runs(request, tmp_path_factory, mounts: list[Path]) -> dict[str, dict]:  # noqa: ANN001
    if _RUNS:
        return _RUNS
    work = tmp_path_factory.mktemp("dledger-cleanup")
    written = bh.write_lines(request, STORES, work)

    def one_line(line: str) -> dict[str, dict]:
        out: dict[str, dict] = {}
        hour = dt.datetime.now(dt.timezone.utc).hour
        reqs = []
        for case, spec in CASES.items():
            name = f"{line}-dledger-cleanup-{spec[0]}"
            w = written.get(name, {"written": {"ok": False, "error": "no report"}, "scenario": {"dir": work / name}})
            rep, src = w["written"], Path(w["scenario"]["dir"])
            out[f"{line}-{case}"] = {"written": rep, "src": src}
            if rep.get("ok") and case in FULL_DISK:
                point = work / "cases" / f"{line}-{case}"
                why = _mount_full_disk(point, src, FULL_DISK[case])
                if why:
                    out[f"{line}-{case}"]["skip"] = why
                    continue
                mounts.append(point)
                out[f"{line}-{case}"]["disk"] = point
            if rep.get("ok"):
                reqs.append((case, _request(line, case, src, work / "cases", hour)))
        answers = bh.read_stores(line, [r for _, r in reqs], work) if reqs else []
        for (case, req), ans in zip(reqs, answers):
            out[f"{line}-{case}"].update(request=req, answer=next((a for a in ans if a.get("kind") == "cleanup"), ans))
        return out

    with ThreadPoolExecutor(len(LINES)) as pool:
        for part in pool.map(one_line, LINES):
            _RUNS.update(part)
    return _RUNS


def _facts(names: list[str], d: Path, mtimes: dict[str, int], prefix: str = "") -> list[SegmentFacts]:
    return [SegmentFacts(n, int(n), (d / n).stat().st_size, mtimes[prefix + n], None, None) for n in names]


def _cq_files(root: Path) -> list[dict]:
    """Every consume queue file: its queue, start, units and the commitlog offsets of its first and
    last unit (None for the last file of a queue: the cleanup never reads it)."""
    out = []
    for qdir in sorted(p for p in (root / "consumequeue").glob("*/*") if p.is_dir()):
        names = _files(qdir)
        for i, n in enumerate(names):
            b = (qdir / n).read_bytes()
            units = [int.from_bytes(b[k:k + 8], "big") for k in range(0, len(b) - 19, 20)
                     if int.from_bytes(b[k + 8:k + 12], "big") > 0]
            out.append({"topic": qdir.parent.name, "queue_id": int(qdir.name), "file_start": int(n),
                        "units": len(units), "min_offset": units[0] if units else None,
                        "max_offset": units[-1] if units and i < len(names) - 1 else None,
                        "is_last": i == len(names) - 1})
    return out


def _segment_of(bases: list[int], offset: int | None) -> str | None:
    if offset is None:
        return None
    below = [b for b in bases if b <= offset]
    return f"{max(below):020d}" if below else None


@pytest.mark.parametrize("line,case", PARAMS)
def test_dledger_cleanup_matches_the_broker(runs, line, case):
    """What DLedger's and the broker's own code deleted equals what store_format.expiry_dledger and the
    audit's rows say goes by the harness's last step."""
    run = runs[f"{line}-{case}"]
    if run.get("skip"):
        pytest.skip(run["skip"])
    if not run["written"].get("ok"):
        pytest.fail(f"the broker's writer failed: {run['written'].get('error')}")
    ans = run["answer"]
    assert isinstance(ans, dict), f"no cleanup answer: {ans}"
    assert ans["hourBefore"] == ans["hourAfter"], "doWork ran across an hour boundary: run again"
    store_name, when, max_used, old_ages, data_ages, rounds = CASES[case]
    if (when == "now") != (run["request"]["config"]["deleteWhen"] == f"{ans['hourBefore']:02d}"):
        pytest.skip("the hour changed between writing the request and the broker's cleanup: run again")
    if max_used == 10:
        assert ans["diskRatioBefore"] > 0.10, "the disk DLedger measures is not above 10 %: the case tests nothing"
    if case in FULL_DISK:
        assert ans["diskRatioBefore"] > 0.85, f"the tmpfs is {ans['diskRatioBefore']:.3f} full: the case tests nothing"
    src = run["src"]
    req = run["request"]["cleanup"]
    clock, mtimes = req["clockMs"], req["mtimes"]
    conf_file = src / f"cleanup-{case}.conf"
    conf_file.write_text("".join(f"{k}={v}\n" for k, v in run["request"]["config"].items()))
    config = load_config_for(str(conf_file), brokerVersion=BROKER_LINE[line])
    # a zone in which the clock is half past the hour doWork saw
    utc = ms_to_datetime(clock)
    local = utc.replace(hour=ans["hourBefore"], minute=30, second=0, microsecond=0)
    tz = dt.timezone(local.replace(tzinfo=None) - utc.replace(tzinfo=None))
    old_names, data_names = _files(src / "store" / "commitlog"), _files(src / "store" / "dledger-n0" / "data")
    old = _facts(old_names, src / "store" / "commitlog", mtimes)
    data = _facts(data_names, src / "store" / "dledger-n0" / "data", mtimes, "dledger-n0/data/")
    ratio = ans["diskRatioBefore"]
    disk_size = None
    if case in FULL_DISK:
        st = os.statvfs(run["disk"])
        disk_size = st.f_blocks * st.f_frsize
    plan = plan_dledger_cleanup(old, data, config, clock, tz=tz, time_source="mtime", disk_used_ratio=ratio,
                                disk_size_bytes=disk_size)
    cut = clock + (rounds - 1) * INTERVAL + 5_000   # the broker's rounds, then DLedger's first pass
    gone = [0 <= t <= cut for t in plan.deleted_at.tolist()]
    names = old_names + data_names
    bases = [int(n) for n in names]

    # the setting DLedger ran with: 10 years while old files remain, else fileReservedTime + 1
    old_left = [n for n, g in zip(old_names, gone) if not g]
    assert ans["fileReservedHours"] == (87600 if old_left else 49)
    assert ans["commitlog"] == old_left
    assert ans["data"] == [n for n, g in zip(names, gone) if not g and n in data_names]
    assert ans["minOffset"] == plan.min_offset_after(bases, cut)

    cq = _cq_files(src / "expected")
    cq_left = []
    by_queue: dict[tuple[str, int], list[dict]] = {}
    for f in cq:
        by_queue.setdefault((f["topic"], f["queue_id"]), []).append(f)
    for (topic, qid), files in sorted(by_queue.items()):
        when_cq = files_deleted_with([f["max_offset"] for f in files], bases, plan.deleted_at, clock)
        cq_left += [consume_queue_file_path(topic, qid, f["file_start"]) for f, t in zip(files, when_cq.tolist())
                    if not 0 <= t <= cut]
    assert sorted(ans["consumequeue"]) == sorted(cq_left)
    index_names = _files(src / "expected" / "index")
    headers = [read_header((src / "expected" / "index" / n).read_bytes()) for n in index_names]
    when_idx = files_deleted_with([h.end_phy_offset for h in headers], bases, plan.deleted_at, clock)
    assert ans["index"] == [n for n, t in zip(index_names, when_idx.tolist()) if not 0 <= t <= cut]

    # the audit's rows over the same facts: the data files named as DLedger's, the same files going
    segs = pa.Table.from_pylist([{"segment": f.name, "base_offset": f.base, "file_size": f.size,
                                  "bytes_written": f.size, "file_mtime": ms_to_datetime(f.mtime_ms), "records": 0,
                                  "status": "live"} for f in old + data], schema=SEGMENTS_SCHEMA)
    cq_inv = pa.Table.from_pylist([{**f, "segment": _segment_of(bases, f["max_offset"])} for f in cq],
                                  schema=CQ_INVENTORY_SCHEMA)
    idx_inv = pa.Table.from_pylist([{"index_file_no": i, "index_file": n, "entries": h.index_count,
                                     "min_offset": h.begin_phy_offset, "max_offset": h.end_phy_offset,
                                     "segment": _segment_of(bases, h.end_phy_offset),
                                     "is_last": i == len(index_names) - 1}
                                    for i, (n, h) in enumerate(zip(index_names, headers))],
                                   schema=INDEX_INVENTORY_SCHEMA)
    rows, summary = build_expiry_audit(str(src / "no-tables"), config, segs, cq_inv, idx_inv, as_of_ms=clock,
                                       consumer_offsets=None, delay_offsets=None, run_id="t", tz=tz,  # type: ignore[arg-type]
                                       time_source="mtime", disk_used_ratio=ratio,
                                       dledger_from=int(data_names[0]))
    assert "fileReservedTime + 1 = 49 h" in summary["cleanup_rule"]
    went = {(r["kind"], r["name"]) for r in rows.to_pylist()
            if r["deleted_at"] is not None and datetime_to_ms(r["deleted_at"]) <= cut}
    seg_rows = [r for r in rows.to_pylist() if r["kind"] == "segment"]
    assert [r["name"] for r in seg_rows] == old_names + [f"dledger-n0/data/{n}" for n in data_names]
    want = {("segment", n) for n in old_names if n not in ans["commitlog"]}
    want |= {("segment", f"dledger-n0/data/{n}") for n in data_names if n not in ans["data"]}
    want |= {("consume_queue_file", f) for f in (consume_queue_file_path(x["topic"], x["queue_id"], x["file_start"])
                                                 for x in cq) if f not in ans["consumequeue"]}
    want |= {("index_file", n) for n in index_names if n not in ans["index"]}
    assert went == want
    # something went or stayed for a reason each case names; a 5.x broker's rounds never reach
    # DLedgerCommitLog.deleteExpiredFile: a converted store keeps its last old file, and DLedger its data
    kept_by_5x = store_name == "converted" and not line.startswith("4")
    if case in ("hour", "disk", "old-files-then-dledger", "all-old") and not kept_by_5x:
        assert len(ans["data"]) < len(data_names), "DLedger deleted no data file"
    if case == "forced":   # every data file is young: only forced cleaning deletes, never the last file
        assert ans["data"] == data_names[-1:] if len(data_names) <= 11 else len(ans["data"]) < len(data_names)
        assert any("forced by DLedger" in (r["reason"] or "") for r in rows.to_pylist())
    if case in ("not-the-hour", "old-files-first", "young-old-file", "forced-off") or kept_by_5x:
        assert ans["data"] == data_names
    if kept_by_5x:
        assert ans["commitlog"] == old_names[-1:]
