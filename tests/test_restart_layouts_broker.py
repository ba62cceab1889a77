"""``rebuild --as-restart`` on consume queue ext stores and batch consume queue stores, checked against
the broker's own restart.

The JVM harness (:mod:`broker_harness`, ``tests/broker/``) writes each store with the published
RocketMQ store, then (``damageMessage``) flips a body byte of one record near the end of the
commitlog, (``abort``) leaves an ``abort`` file in some scenarios, keeps that store in
``<dir>/before/`` and restarts the broker on it with ``consumequeue/``, ``consumequeue_ext/``,
``batchconsumequeue/`` and ``index/`` deleted: its recovery checks body CRCs, cuts the commitlog at
the damaged record and dispatches what is before (4.9.8: the reput from the first segment after a
normal recovery; 5.x: the recovery itself). ``rebuild --as-restart`` on ``<dir>/before/`` must write
the very files the broker wrote, byte for byte.

Ext stores: 4.9.8 and 5.5.1 (``CQEXT_LINES`` as in :mod:`test_cqext_broker` adds 5.3.3); batch
stores: 5.5.1 (``BATCHCQ_LINES=5.3.3,5.5.1`` adds 5.3.3). Scenarios: the ``plain`` and ``mixed`` ext
stores and the two batch stores of :mod:`broker_cqext_scenarios` / :mod:`broker_batchcq_scenarios`,
each damaged; ``plain`` and ``bcq-b`` also after a crash (``abort``: an abnormal recovery, which on
5.5.1 starts at the segment the checkpoint's logicsPhysicalOffset names and dispatches nothing before
it), and ``mixed`` after a crash on 4.9.8 and 5.3.3 (its delayed messages: 4.9.8's abnormal recovery
dispatches before the delay levels are loaded, so their units keep the tags hash; on 5.5.1 the damaged
record lies before the segment that recovery starts at); the first batch store ending in a keyed message
to a BatchCQ topic, restarted undamaged with ``recheckReputOffsetFromCq=true`` (clean and after a crash),
whose second reput indexes that record again.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_batchcq_scenarios import batchcq_scenarios
from broker_cqext_scenarios import cqext_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

EXT_LINES = bh.lines_from_env("CQEXT_LINES", "4.9.8,5.5.1")
BATCH_LINES = bh.lines_from_env("BATCHCQ_LINES", "5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
AREAS = ("consumequeue", "consumequeue_ext", "batchconsumequeue")


def _scenarios(line: str) -> list[dict]:
    scs: list[dict] = []
    if line in EXT_LINES:
        # 5.5.1's abnormal recovery starts at the checkpoint's logicsPhysicalOffset, in mixed's second segment,
        # past the damaged record: it cuts nothing there
        crash = "-plain" if line.startswith("5.5") else ("-plain", "-mixed")
        scs += bh.restart_variants([sc for sc in cqext_scenarios(line) if not sc["name"].endswith("-lmq")], crash)
        scs += _prepared_tail(cqext_scenarios(line)[0])
    if line in BATCH_LINES:
        scs += bh.restart_variants(batchcq_scenarios(line), "-bcq-b")
        scs += _recheck_pair(batchcq_scenarios(line)[0])
    return scs


def _recheck_pair(sc: dict) -> list[dict]:
    """``sc`` ending in a keyed single message to a BatchCQ topic, restarted (queues and index deleted, no
    damage) with ``recheckReputOffsetFromCq`` false (``-tail``) and true (``-recheck``: ``<dir>/before``
    kept; ``-recheck-crash``: the same after a crash, an ``abort`` file)."""
    last = {"topic": "BT0", "queueId": 0, "body": "dGFpbA==", "keys": "the-last-key",
            "uniqKey": "7F00000100002A9F00000000FFFFFFFF"}
    tail = {**sc, "name": f"{sc['name']}-tail", "messages": [*sc["messages"], last]}
    recheck = {**tail, "name": f"{sc['name']}-recheck", "keepBefore": True,
               "config": {**sc["config"], "recheckReputOffsetFromCq": "true"}}
    return [tail, recheck, {**recheck, "name": f"{sc['name']}-recheck-crash", "abort": True}]


def _prepared_tail(sc: dict) -> list[dict]:
    """``sc`` (the ``plain`` ext store) ending in a keyed prepared transaction message, which no consume queue
    gets but the index does, restarted undamaged with ``recheckReputOffsetFromCq=true`` (``-recheck-prepared``,
    ``<dir>/before`` kept; 4.9.8 ignores the setting) and after a crash (``-recheck-prepared-crash``): the second
    reput (5.x: that setting; 4.9.8: ``start()`` after an abnormal recovery) starts at the end of the last queued
    record and indexes the prepared message again."""
    last = {"topic": "T0", "queueId": 2, "body": "dGFpbA==", "keys": "the-last-key", "tranType": "prepared",
            "uniqKey": "7F00000100002A9F00000000FFFFFFFC"}
    tail = {**sc, "name": f"{sc['name']}-recheck-prepared", "messages": [*sc["messages"], last], "keepBefore": True,
            "config": {**sc["config"], "recheckReputOffsetFromCq": "true"}}
    if sc["name"].startswith("4"):
        tail["config"] = sc["config"]
    return [tail, {**tail, "name": f"{tail['name']}-crash", "abort": True}]


SCENARIOS = {line: _scenarios(line) for line in dict.fromkeys(EXT_LINES + BATCH_LINES)}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
         if "damageMessage" in sc]
RECHECK_CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
                 if "-recheck" in sc["name"]]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store(s), each restarted")


@pytest.fixture
def restarted(request) -> dict:
    """The scenario as the broker wrote and restarted it, and our ``--as-restart`` rebuild of it (every
    scenario written, and rebuilt, once)."""
    def then(r: dict) -> None:
        if "damageMessage" in r["scenario"] or "keepBefore" in r["scenario"]:
            r["rebuild"] = bh.rebuild_as_restart(Path(r["scenario"]["dir"]), BROKER_LINE[r["line"]])
    return bh.written_once(request, _RUNS, STORES, then=then)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


@pytest.mark.parametrize("line,name", CASES)
def test_the_broker_cut_at_the_damaged_record(restarted, line: str, name: str) -> None:
    """The harness itself: the broker's restart ended the commitlog at the damaged record, which is not the
    last one (a record or a segment's blank follows it: a plain rebuild, whose reput checks no CRC, would
    dispatch past it)."""
    bh.check_cut_at_damaged_record(restarted)


@pytest.mark.parametrize("line,name", CASES + RECHECK_CASES)
def test_as_restart_matches_the_broker(restarted, line: str, name: str) -> None:
    """consumequeue/, consumequeue_ext/ (ext stores), batchconsumequeue/ (batch stores) and index/:
    the files the broker's restart wrote, byte for byte."""
    r = restarted["rebuild"]
    if r["code"] != 0:
        why = [ln for ln in r["stderr"].splitlines() if ln.startswith("error:")] or [r["stderr"][-1000:]]
        pytest.fail(f"rebuild --as-restart exited {r['code']}: {' | '.join(why)}")
    d = Path(restarted["scenario"]["dir"])
    layout = "consumequeue_ext" if "-cqext-" in name else "batchconsumequeue"
    assert _files(d / "expected" / layout), f"the broker wrote no {layout}/"
    for area in AREAS:
        exp, ours = d / "expected" / area, d / "ours" / area
        assert _files(ours) == _files(exp), f"{area} file set differs"
        for rel in _files(exp):
            bh.same_bytes((exp / rel).read_bytes(), (ours / rel).read_bytes(), f"{area}/{rel}")
    exp_idx = sorted((d / "expected" / "index").iterdir())
    our_idx = sorted((d / "ours" / "index").iterdir())
    assert len(our_idx) == len(exp_idx)
    if restarted["written"]["indexNamesUnique"]:
        for i, (e, o) in enumerate(zip(exp_idx, our_idx)):
            bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i}")


def _index_count(d: Path) -> int:
    """Entries the broker put into its index files (IndexHeader.indexCount, at byte 36, counts from 1)."""
    return sum(int.from_bytes(f.read_bytes()[36:40], "big") - 1 for f in (d / "expected" / "index").iterdir())


@pytest.mark.parametrize("line,name", [c for c in RECHECK_CASES if "-bcq-" in c.values[1]])
def test_recheck_reput_offset_indexes_the_last_batch_record_again(restarted, line: str, name: str) -> None:
    """What ``rebuild --as-restart`` reproduces (above) with BatchCQ topics and recheckReputOffsetFromCq=true:
    the broker's second reput starts at the largest getMaxPhysicOffset, for a batch queue the start of its
    last unit, and so indexes the store's last record (a keyed message to a BatchCQ topic) a second time:
    its two keys twice, two index entries more than the same messages restarted without the setting."""
    recheck = Path(restarted["scenario"]["dir"])
    tail = recheck.parent / f"{line}-bcq-a-tail"
    assert _RUNS[f"{line}-bcq-a-tail"]["written"].get("ok")
    assert _index_count(recheck) == _index_count(tail) + 2   # its UNIQ_KEY and KEYS put again
