"""Conformance with the real broker: stores written by the published RocketMQ store (4.9.8, 5.3.3,
5.5.1) through the JVM harness in ``tests/broker/``, rebuilt by the project, compared with what the
broker rebuilt from the same commitlog.

Per scenario (drawn by hypothesis in :mod:`broker_scenarios`, plus the saved regressions):

* ``pipelines.rebuild.run_rebuild`` from ``commitlog/`` and ``broker.conf`` alone gives every consume
  queue file byte for byte, and the index files in name order (the golden stores' rule);
* the broker's store, opened on our files, answers as it does on its own files (queryMessage,
  getMessage over every queue, min/max offsets);
* ``lookup_index`` over our ``index/`` and ``lookup_key`` over our Delta tables find what the
  broker's queryMessage finds after the client's filters (MQAdminImpl.queryMessage);
* the commitlog cleanup at a given clock deletes as many files as ``store_format.expiry`` says.

``CONFORMANCE_SCENARIOS`` (default 1 per line, besides the saved regressions) and ``CONFORMANCE_SEED``
(default: derandomized) choose the drawn scenarios; ``make conformance`` draws more. A scenario that
fails is saved under ``tests/broker/regressions/`` and replayed by every later run; its ``known`` entry
(check name -> reason) marks a difference found before as an expected failure of that check.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_scenarios import draw_scenarios, query_pairs

from store_format.config import load_broker_config
from store_format.expiry import delete_expired_by_time, index_files_to_delete
from store_format.indexfile import read_header

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

REGRESSIONS = bh.HARNESS_DIR / "regressions"
COUNT = int(os.environ.get("CONFORMANCE_SCENARIOS", "1"))
SEED = int(os.environ["CONFORMANCE_SEED"]) if os.environ.get("CONFORMANCE_SEED") else None
HOUR = 3600 * 1000
# each harness line as --broker-version names it (5.4 and later also index tags)
BROKER_LINE = bh.BROKER_VERSION_ARG


def _scenarios(line: str) -> list[dict]:
    drawn = draw_scenarios(line, COUNT, SEED)
    saved = [json.loads(p.read_text()) for p in sorted(REGRESSIONS.glob(f"{line}-*.json"))]
    seen = {_content_hash(s) for s in saved}
    return saved + [d for d in drawn if _content_hash(d) not in seen]


def _content_hash(sc: dict) -> str:
    """The scenario itself: settings and messages (not its name or what was found)."""
    return hashlib.sha256(json.dumps({"config": sc["config"], "messages": sc["messages"]},
                                     sort_keys=True).encode()).hexdigest()[:8]


SCENARIOS = {line: _scenarios(line) for line in bh.LINES}
print(f"broker conformance: {COUNT} drawn scenario(s) per line, seed "
      f"{'derandomized' if SEED is None else SEED}")
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
# a JVM writes one scenario at a time; make conformance draws many (a longer timeout per JVM)
STORES = bh.Stores(SCENARIOS, "conformance scenarios", threads=1, timeout=600)
_RUNS: dict[str, dict] = {}
_WRITTEN: dict[str, dict] = {}


def _save_regression(sc: dict, why: str) -> None:
    """``regressions/<line>-r<hash>.json``: the scenario as drawn, named by its content."""
    if "found" in sc:
        return  # a saved one already
    keep = {k: v for k, v in sc.items() if k not in ("dir", "name")}
    digest = _content_hash(sc)
    line = sc["name"].split("-", 1)[0]
    REGRESSIONS.mkdir(exist_ok=True)
    path = REGRESSIONS / f"{line}-r{digest}.json"
    if not path.exists():
        saved = {"name": path.stem, "found": f"{sc['name']}: {why}", **keep}
        path.write_text(json.dumps(saved, ensure_ascii=False, indent=1) + "\n")


def _copy_store(commitlog: Path, cq_index: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    shutil.copytree(commitlog, dest / "commitlog")
    for sub in ("consumequeue", "index"):
        if (cq_index / sub).is_dir():
            shutil.copytree(cq_index / sub, dest / sub)
    return dest


def _run_line(line: str, spark, written: dict[str, dict], work: Path) -> dict:
    """Everything a line needs, done once, from its scenarios the broker wrote (``written``,
    :func:`broker_harness.write_lines`): we rebuild each, the broker reads both sides (one JVM)."""
    from pipelines.rebuild import run_rebuild

    runs: dict[str, dict] = {}
    requests: list[dict] = []
    for w in (w for w in written.values() if w["line"] == line):
        sc = w["scenario"]
        d = Path(sc["dir"])
        run = {"scenario": sc, "written": w["written"]}
        runs[sc["name"]] = run
        if not run["written"].get("ok"):
            continue
        conf = bh.read_conf(d / "broker.conf")
        # the line the broker ran, as a user gives it (--broker-version): the records cannot tell 5.4+ from
        # 5.3, nor a 5.x store whose records carry no properties from 4.9.x
        config = load_broker_config((d / "broker.conf").read_text(), brokerVersion=BROKER_LINE[line])
        out = d / "ours"
        started = time.monotonic()
        run["summary"] = run_rebuild(str(d / "store"), str(out), config, spark=spark, split_size=8192,
                                     tables=str(out / "tables"))
        assert run["summary"].tables_error is None, f"{sc['name']}: tables not published: {run['summary'].tables_error}"
        run.update(config=config, out=out)
        print(f"{line}: {sc['name']} rebuilt in {time.monotonic() - started:.1f} s")
        pairs = query_pairs(sc)
        segments = sorted(p.name for p in (d / "store" / "commitlog").iterdir())
        clock = 1_900_000_000_000
        ages = [100, 80, 73, 71, 90, 75, 74, 60][:len(segments)]  # hours; 71 keeps the rest
        mtimes = {name: clock - age * HOUR for name, age in zip(segments, ages)}
        run["cleanup"] = (clock, mtimes)
        for side, src in (("broker", d / "expected"), ("ours", out)):
            store = _copy_store(d / "store" / "commitlog", src, d / f"read-{side}")
            requests.append({"store": store, "config": conf, "queries": pairs, "queues": True,
                             "cleanup": {"clockMs": clock, "mtimes": mtimes, "cleanImmediately": False},
                             "_run": sc["name"], "_side": side})
    started = time.monotonic()
    answers = bh.read_stores(line, [{k: v for k, v in r.items() if not k.startswith("_")} for r in requests],
                             work) if requests else []
    print(f"{line}: the broker read {len(requests)} store(s) in {time.monotonic() - started:.1f} s")
    for req, ans in zip(requests, answers):
        runs[req["_run"]][f"answers_{req['_side']}"] = ans
    return runs


@pytest.fixture
def run(request, tmp_path_factory):
    line, name = request.node.callspec.params["line"], request.node.callspec.params["name"]
    if line not in _RUNS:
        if not _WRITTEN:   # every line's scenarios at once, or taken from conftest's writing them beforehand
            _WRITTEN.update(bh.write_lines(request, STORES, tmp_path_factory.mktemp("conformance")))
        spark = request.getfixturevalue("spark")
        _RUNS[line] = _run_line(line, spark, _WRITTEN, tmp_path_factory.mktemp(f"broker-{line}"))
    r = _RUNS[line][name]
    if not r["written"].get("ok"):
        pytest.fail(f"the broker's writer failed on {name}: {r['written'].get('error')}")
    return r


def _checked(r: dict, what: str, check, known: str | None = None, must_differ: bool = False) -> None:
    """Runs ``check``; a failure is saved as a regression, or is an expected failure when ``known``
    names a difference found before (and then, with ``must_differ``, passing is the failure: the
    difference is gone and the expectation has to go too)."""
    try:
        check()
    except AssertionError as e:
        if known:
            pytest.xfail(f"{known} ({str(e).splitlines()[0][:200]})")
        _save_regression(r["scenario"], f"{what}: {str(e).splitlines()[0] if str(e) else 'assertion'}")
        raise
    if known and must_differ:
        pytest.fail(f"expected a difference ({known}) but the files match: update _known_difference")


@pytest.mark.parametrize("line,name", CASES)
def test_consume_queues_match_broker(run, line, name):
    d = Path(run["scenario"]["dir"])

    def check() -> None:
        exp, ours = d / "expected" / "consumequeue", run["out"] / "consumequeue"
        exp_files = sorted(str(p.relative_to(exp)) for p in exp.rglob("*") if p.is_file())
        our_files = sorted(str(p.relative_to(ours)) for p in ours.rglob("*") if p.is_file())
        assert our_files == exp_files, "consume queue file set differs"
        for rel in exp_files:
            bh.same_bytes((exp / rel).read_bytes(), (ours / rel).read_bytes(), f"consumequeue/{rel}")

    _checked(run, "consume queues", check, _known_difference(line, run["scenario"], "consume queues"))


@pytest.mark.parametrize("line,name", CASES)
def test_index_files_match_broker(run, line, name):
    d = Path(run["scenario"]["dir"])

    def check() -> None:
        exp_idx = sorted((d / "expected" / "index").iterdir())
        our_idx = sorted((run["out"] / "index").iterdir())
        if not run["written"]["indexNamesUnique"]:
            pytest.skip("the broker created two index files in one millisecond (one overwrote the other)")
        assert len(our_idx) == len(exp_idx), f"index file count {len(our_idx)} != broker's {len(exp_idx)}"
        for i, (e, o) in enumerate(zip(exp_idx, our_idx)):
            bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i} ({o.name} vs broker's {e.name})")

    _checked(run, "index files", check, _known_difference(line, run["scenario"], "index files"))


def _known_difference(line: str, sc: dict, what: str) -> str | None:
    """A difference the harness found that the project does not mirror yet (the reason), or None:
    a saved regression's ``known`` entry for this check, or a rule."""
    if what in sc.get("known", {}):
        return sc["known"][what]
    return None


@pytest.mark.parametrize("line,name", CASES)
def test_broker_reads_our_files_as_its_own(run, line, name):
    def strip(rows: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "index"} for r in rows]  # index names are wall-clock

    _checked(run, "reader", lambda: _assert_equal(strip(run["answers_ours"]), strip(run["answers_broker"])),
             _known_difference(line, run["scenario"], "reader"))


def _assert_equal(ours: list[dict], broker: list[dict]) -> None:
    assert len(ours) == len(broker), f"{len(ours)} answers vs broker's {len(broker)}"
    for o, b in zip(ours, broker):
        assert o == b, f"on our files the broker answers {json.dumps(o)[:300]} instead of {json.dumps(b)[:300]}"


@pytest.mark.parametrize("line,name", CASES)
def test_lookups_match_broker_query(run, line, name):
    from pipelines.lookup import lookup_index, lookup_key

    d = Path(run["scenario"]["dir"])
    queries = [a for a in run["answers_broker"] if a["kind"] == "query"]
    if not queries:
        pytest.skip("no message of this scenario has a key")

    def check() -> None:
        for a in queries:
            want = bh.expected_lookup(a)
            by_index = lookup_index(str(run["out"] / "index"), str(d / "store"), run["config"], a["topic"], a["key"])
            got = sorted(r["commitlog_offset"] for r in by_index.rows)
            assert got == want, f"lookup --index {a['topic']!r} {a['key'][:40]!r}: {got} != broker's {want}"
            by_tables = lookup_key(str(run["out"] / "tables"), a["topic"], a["key"])
            got = sorted(r["commitlog_offset"] for r in by_tables.rows)
            assert got == want, f"lookup (tables) {a['topic']!r} {a['key'][:40]!r}: {got} != broker's {want}"

    _checked(run, "lookup", check, _known_difference(line, run["scenario"], "lookup"))


@pytest.mark.parametrize("line,name", CASES)
def test_cleanup_count_matches_broker(run, line, name):
    """CommitLog.deleteExpiredFile at a clock against store_format.expiry.delete_expired_by_time, then
    IndexService.deleteExpiredFile at the new min offset against index_files_to_delete (on our index
    files, whose headers the rebuild test holds to the broker's)."""
    clock, mtimes = run["cleanup"]
    broker = next(a for a in run["answers_broker"] if a["kind"] == "cleanup")
    times = np.array([mtimes[n] for n in sorted(mtimes)], dtype=np.int64)
    config = run["config"]
    ours = delete_expired_by_time(times, clock, config.fileReservedTime * HOUR, False, config.deleteFileBatchMax)
    assert broker["deletedCommitLogFiles"] == ours
    assert broker["commitlog"] == sorted(mtimes)[ours:]
    ours_answer = next(a for a in run["answers_ours"] if a["kind"] == "cleanup")
    index = sorted((run["out"] / "index").iterdir())
    gone = index_files_to_delete([read_header(p.read_bytes()).end_phy_offset for p in index],
                                 ours_answer["minOffset"])
    assert ours_answer["index"] == [p.name for p in index][gone:]
