"""The expiry audit of a ConsumeQueueExt store (``enableConsumeQueueExt=true``) against the broker's own
cleanup: the segments that go, then the consume queue files and the ``consumequeue_ext/`` files the
broker's ``CleanConsumeQueueService`` deletes at the new minimum commitlog offset
(``ConsumeQueue.deleteExpiredFile``: ``deleteExpiredFileByOffset``, then ``correctMinOffset``, which cuts
the ext files with ``ConsumeQueueExt.truncateByMinAddress``).

The harness writes :func:`broker_cqext_scenarios.cqext_cleanup_scenarios` (8 KiB segments, ext files
of 5 units, a queue whose every unit lies in the oldest segments); the store, with the broker's own
``consumequeue/``, ``consumequeue_ext/`` and ``index/``, gets its older half of segments aged past
``fileReservedTime`` and is published as tables (``tables --store``, whose publish writes the
``expiry_audit`` rows); ``audit`` as of that clock predicts the next cleanup.  On a copy, the harness's
Reader (``Cleanup.java`` with ``consumeQueues``) sets the same ages against the JVM's clock, runs the
broker's ``CommitLog.deleteExpiredFile`` round, then one run of the broker's own
``CleanConsumeQueueService.deleteExpiredFiles`` (a field of ``DefaultMessageStore`` on 4.9.8 and
5.3.3, of ``ConsumeQueueStore`` on 5.5.1) and lists the files left.

The audit's ext rows must name exactly the broker's ext files, and those it says go at the next cleanup
must be exactly the ones the broker deleted (so must its consume queue rows).  4.9.8 and 5.5.1 by default;
``CQEXT_LINES=4.9.8,5.3.3,5.5.1`` adds 5.3.3.
"""
from __future__ import annotations

import time
from pathlib import Path

import broker_harness as bh
import pytest
from broker_cqext_scenarios import cqext_cleanup_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = bh.lines_from_env("CQEXT_LINES", "4.9.8,5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
SCENARIOS = {line: cqext_cleanup_scenarios(line) for line in LINES}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "ConsumeQueueExt store(s) for the cleanup")
LONG_MIN = -(1 << 63)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _broker_units(cq: Path) -> dict[str, list[tuple[int, int]]]:
    """Per queue (``topic/queueId``), from the broker's own consume queue files: each unit's commitlog
    offset and the real offset of its ext unit (its tagsCode less ``Long.MIN_VALUE``), in order."""
    out: dict[str, list[tuple[int, int]]] = {}
    for f in sorted(p for p in cq.rglob("*") if p.is_file()):
        data = f.read_bytes()
        for i in range(0, len(data) - 19, 20):
            if int.from_bytes(data[i + 8:i + 12], "big", signed=True):
                tags = int.from_bytes(data[i + 12:i + 20], "big", signed=True)
                out.setdefault(str(f.parent.relative_to(cq)), []).append(
                    (int.from_bytes(data[i:i + 8], "big"), tags - LONG_MIN))
    return out


def _ties(units: dict[str, list[tuple[int, int]]], min_offset: int, ext_size: int) -> list[str]:
    """The ext files whose every unit lies below ``min_offset`` but that the broker must keep: the queue's
    first unit at or above it has its ext unit at exactly the next file's start (truncateByMinAddress
    deletes a file only when its end is *below* that offset)."""
    out = []
    for queue, us in units.items():
        first = next((real for off, real in us if off >= min_offset), None)
        if first and first % ext_size == 0:
            out.append(f"{queue}/{first - ext_size:020d}")
    return out


def _prepare(d: Path, line: str, clock: int) -> dict:
    """The store with the broker's queue, ext and index files, its older segments 100 h old and the newer
    ones 1 h old, published as tables; the Reader's cleanup request on a copy of it.  The older ones are
    as many as leave a queue whose first unit left opens an ext file (:func:`_ties`), at least two (so
    that ``Old`` lies below the new minimum), the count nearest to half the segments."""
    store = bh.broker_store(d, d / "case" / "store", ("consumequeue", "consumequeue_ext", "index"))
    segs = sorted(p.name for p in (store / "commitlog").iterdir())
    units = _broker_units(store / "consumequeue")
    ext_size = int(bh.read_conf(d / "broker.conf")["mappedFileSizeConsumeQueueExt"])
    with_ties = [k for k in range(2, len(segs)) if _ties(units, int(segs[k]), ext_size)]
    old = min(with_ties, key=lambda k: abs(k - len(segs) // 2)) if with_ties else max(1, len(segs) // 2)
    case = bh.aged_store_with_tables(d, store, old, clock, BROKER_LINE[line])
    return {"segments": segs, "old": old, "tables": case["tables"], "conf": case["conf_file"], "store": store,
            "ties": _ties(units, int(segs[old]), ext_size),
            "ext_before": _files(store / "consumequeue_ext"), "cq_before": _files(store / "consumequeue"),
            "request": {"store": str(case["copy"]), "config": case["conf"],
                        "cleanup": {"clockMs": clock, "mtimes": case["mtimes"], "cleanImmediately": False,
                                    "consumeQueues": True}}}


@pytest.fixture
def cleaned(request, tmp_path_factory) -> dict:
    """Every scenario written, prepared, cleaned by the broker and audited by us (once)."""
    if not _RUNS:
        work = tmp_path_factory.mktemp("cqext-cleanup")
        written = bh.write_lines(request, STORES, work)
        clock = int(time.time() * 1000)
        for line, scs in SCENARIOS.items():
            ok = [sc["name"] for sc in scs if written[sc["name"]]["written"].get("ok")]
            prepared = {n: _prepare(Path(written[n]["scenario"]["dir"]), line, clock) for n in ok}
            answers = bh.read_stores(line, [p["request"] for p in prepared.values()], work) if ok else []
            for (n, p), ans in zip(prepared.items(), answers):
                from pipelines.audit import render, run_audit
                from store_format.store import load_config_for
                config = load_config_for(str(p["conf"]), brokerVersion=BROKER_LINE[line])
                rows, summary = run_audit(str(p["tables"]), clock, config=config, tz="UTC", time_source="mtime")
                _RUNS[n] = {**p, "answer": next(a for a in ans if a.get("kind") == "cleanup"), "audit": summary,
                            "rows": rows.to_pylist(), "text": render(summary)}
        for sc in (s for scs in SCENARIOS.values() for s in scs):
            _RUNS.setdefault(sc["name"], {"error": written[sc["name"]]["written"].get("error")})
    r = _RUNS[request.node.callspec.params["name"]]
    if "answer" not in r:
        pytest.fail(f"the broker's writer failed: {r.get('error')}")
    return r


@pytest.mark.parametrize("line,name", CASES)
def test_audit_predicts_the_broker_s_ext_cleanup(cleaned, line: str, name: str) -> None:
    """Segments, then the ext files: the audit's inventory is the broker's file set, and the files it
    says go at the next cleanup are those the broker's CleanConsumeQueueService deleted."""
    a, s = cleaned["answer"], cleaned["audit"]
    going = [x["segment"] for x in s["segments"]]
    assert going == cleaned["segments"][:cleaned["old"]], "the audit's segments are not the old ones"
    assert sorted(a["commitlog"]) == cleaned["segments"][cleaned["old"]:], "the broker kept other segments"

    ext_rows = [r for r in cleaned["rows"] if r["kind"] == "consume_queue_ext_file"]
    assert sorted(r["name"] for r in ext_rows) == [f"consumequeue_ext/{f}" for f in cleaned["ext_before"]], \
        "the audit's ext files are not the broker's"
    deleted = sorted(set(cleaned["ext_before"]) - set(a["consumequeue_ext"]))
    assert not set(a["consumequeue_ext"]) - set(cleaned["ext_before"]), "the broker's cleanup created ext files"
    predicted = sorted(r["name"].removeprefix("consumequeue_ext/") for r in ext_rows if r["at_next_cleanup"])
    assert deleted, "the broker deleted no ext file: the case checks nothing"
    assert predicted == deleted, f"ext files: the audit says {predicted}, the broker deleted {deleted}"
    assert s["consume_queue_ext_files"] == len(deleted)
    assert all("truncateByMinAddress" in r["reason"] for r in ext_rows if r["at_next_cleanup"])
    # the queue whose units all lie in the segments that go keeps its ext files (correctMinOffset finds
    # no unit at or above the new minimum): present in the store, and kept by the broker
    stays = [r for r in ext_rows if r["topic"] == "Old" and not r["is_last"]]
    assert stays and all("every unit of the queue lies below" in r["reason"] and not r["at_next_cleanup"]
                         for r in stays), stays
    assert "ext files        " in cleaned["text"]
    # a file whose units all lie below the new minimum, kept because the queue's first unit left opens
    # the next file (its end equals that unit's ext offset: not below it)
    assert cleaned["ties"], "no queue's first unit left opens an ext file: the case does not check the boundary"
    for tie in cleaned["ties"]:
        row = next(r for r in ext_rows if r["name"] == f"consumequeue_ext/{tie}")
        assert tie in a["consumequeue_ext"] and not row["at_next_cleanup"], row


@pytest.mark.parametrize("line,name", CASES)
def test_audit_predicts_the_broker_s_consume_queue_cleanup(cleaned, line: str, name: str) -> None:
    """The consume queue files of the same round: those the audit says go are those the broker deleted."""
    a = cleaned["answer"]
    deleted = sorted(set(cleaned["cq_before"]) - set(a["consumequeue"]))
    predicted = sorted(r["name"] for r in cleaned["rows"] if r["kind"] == "consume_queue_file" and r["at_next_cleanup"])
    assert deleted, "the broker deleted no consume queue file: the case checks nothing"
    assert predicted == deleted
