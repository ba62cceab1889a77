"""The broker's runs of :mod:`broker_concurrent_scenarios`, shared by the modules that test them
(:mod:`test_concurrent_reput_broker`, :mod:`test_concurrent_read_alone_broker`,
:mod:`test_concurrent_empty_requests_broker`), and the file comparisons those tests share.

The first test of any of them to ask has the broker write every scenario of :data:`SCENARIOS` (one harness JVM a
line, :func:`broker_harness.write_lines`) and our ``rebuild`` rebuild each store; :data:`RUNS` keeps them for the
rest of the pytest session, so that the broker writes every scenario once however many of those modules run.
"""
from __future__ import annotations

import json
from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_concurrent_scenarios import SCENARIOS, SEGMENT
from broker_dledger_runs import _units_held

# scenario name -> {"line", "scenario", "written" (the writer's report), "rebuild" (ours, where the writer did)}
RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "damaged store(s), each dispatched by the reput alone")


def write_all(request, tmp_path_factory) -> None:  # noqa: ANN001
    """Every scenario written by the broker and rebuilt by us, once a session."""
    if RUNS:
        return
    work = tmp_path_factory.mktemp("concurrent-reput")
    RUNS.update(bh.write_lines(request, STORES, work))
    for r in RUNS.values():
        if r["written"].get("ok"):
            r["rebuild"] = bh.rebuild(Path(r["scenario"]["dir"]), bh.BROKER_VERSION_ARG[r["line"]],
                                      *r["scenario"].get("rebuildArgs", ()))


def run_of(request, tmp_path_factory) -> dict:  # noqa: ANN001
    """The test's scenario (its ``name`` parameter) as the broker's reput left it, and our rebuild of its store
    (the ``reput`` fixture's)."""
    write_all(request, tmp_path_factory)
    r = RUNS[request.node.callspec.params["name"]]
    if not r["written"].get("ok"):
        pytest.fail(f"the broker's writer failed: {r['written'].get('error')}")
    return r


def every_run(request, tmp_path_factory) -> dict[str, dict]:  # noqa: ANN001
    """Every scenario's run (writer failures fail the test: the ``written`` fixture's)."""
    write_all(request, tmp_path_factory)
    bad = {n: r["written"].get("error") for n, r in RUNS.items() if not r["written"].get("ok")}
    if bad:
        pytest.fail(f"the broker's writer failed: {bad}")
    return RUNS


def files_under(root: Path) -> list[str]:
    """The files under ``root`` (relative, sorted; none when there is no such folder)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def same_files(exp: Path, ours: Path, indexes_comparable: bool) -> None:
    """The consume queue files under ``ours`` are the broker's under ``exp`` byte for byte, and so are the index
    files where their names are comparable (``indexes_comparable``), else their count."""
    assert files_under(exp / "consumequeue"), "the broker wrote no consume queue"
    assert files_under(ours / "consumequeue") == files_under(exp / "consumequeue"), "consumequeue file set differs"
    for rel in files_under(exp / "consumequeue"):
        bh.same_bytes((exp / "consumequeue" / rel).read_bytes(), (ours / "consumequeue" / rel).read_bytes(), rel)
    exp_idx, our_idx = sorted((exp / "index").iterdir()), sorted((ours / "index").iterdir())
    assert len(our_idx) == len(exp_idx)
    if indexes_comparable:
        for i, (e, o) in enumerate(zip(exp_idx, our_idx)):
            bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i}")


def differ(a: Path, b: Path) -> bool:
    """Two rebuilds' consume queue or index files differ (the set, or a file's bytes)."""
    for area in ("consumequeue", "index"):
        fa, fb = files_under(a / area), files_under(b / area)
        if area == "index":
            fa = [p.read_bytes() for p in sorted((a / area).iterdir())]
            fb = [p.read_bytes() for p in sorted((b / area).iterdir())]
            if fa != fb:
                return True
        elif fa != fb or any((a / area / r).read_bytes() != (b / area / r).read_bytes() for r in fa):
            return True
    return False


def summary_json(d: Path, tmp_path: Path, line: str) -> str:
    """``rebuild --json`` of the scenario's store (local engine, no tables) into ``tmp_path/o``: its stdout,
    after asserting exit code 0 and that the consume queue files and units it counts are those of the broker's
    ``consumequeue/`` (topic "" queue 0's file of the blanks' empty requests too)."""
    code, out, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(tmp_path / "o"), "--config",
                             str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[line], "--no-tables",
                             "--engine", "local", "--json"])
    assert code == 0, err[-2000:]
    held = d / "expected" / "consumequeue"
    if not (held / "CURRENT").exists():   # not a RocksDB consume queue: the figures are the broker's files'
        figures = json.loads(out)
        assert (figures["consume_queue_files"], figures["consume_queue_units"]) == (
            len(files_under(held)), _units_held(held)), "printed figures differ from the broker's consumequeue/"
    return out


def rebuilt_without_the_setting(d: Path, line: str, tmp_path: Path) -> Path:
    """Our rebuild of the scenario's store with ``enableBuildConsumeQueueConcurrently=false``: its output folder."""
    conf = tmp_path / "broker.conf"
    conf.write_text((d / "broker.conf").read_text().replace("enableBuildConsumeQueueConcurrently=true",
                                                              "enableBuildConsumeQueueConcurrently=false"))
    code, _, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(tmp_path / "seq"), "--config",
                           str(conf), "--broker-version", bh.BROKER_VERSION_ARG[line], "--no-tables", "--engine",
                           "local"])
    assert code == 0, err[-2000:]
    return tmp_path / "seq"


def cq_max_offset(root: Path) -> int:
    """The largest commitlog offset in the consume queue files under ``root`` (-1: none)."""
    unit = np.dtype([("off", ">i8"), ("size", ">i4"), ("tag", ">i8")])
    best = -1
    for p in root.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            units = np.frombuffer(data[: len(data) // unit.itemsize * unit.itemsize], dtype=unit)
            used = units[units["size"] > 0]
            if len(used):
                best = max(best, int(used["off"].max()))
    return best


def damaged_total(d: Path, offset: int) -> int:
    """The damaged record's totalSize as the store holds it (where the pre-check's walk goes next)."""
    with open(d / "store" / "commitlog" / f"{offset - offset % SEGMENT:020d}", "rb") as f:
        f.seek(offset % SEGMENT)
        return int.from_bytes(f.read(4), "big", signed=True)
