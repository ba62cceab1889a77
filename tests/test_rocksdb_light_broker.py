"""Light (multi-dispatch) units of a RocksDB consume queue (``storeType=defaultRocksDB``) as the running broker's
dispatch puts them, against ``python -m pipelines rebuild``: the stores of :mod:`broker_rocksdb_light_scenarios`
(messages asking for ``%LMQ%a`` and ``%LMQ%b/c``), written by the broker harness, whose restart's reput rebuilds
``consumequeue/`` (``RocksDBConsumeQueueStore.putMessagePosition0``, the same path as a running broker's reput:
``dispatchLMQ`` puts a record's light units under ``enableLmq`` alone, a name holding '/' too, 5.3.3 and 5.5.1 alike).

First what the broker wrote, then our rebuild's key/value set (both column families, key for key) and the messages
table's light units.  By default the 5.5.1 ``lmqonly`` store (``enableLmq=true``, ``enableMultiDispatch=false``);
``PIPELINES_FULL_SUITE=1`` adds ``multionly``, ``both`` and ``lmqonly-live`` (the first life's database, the
running broker's reput, kept: :func:`test_the_running_broker_put_the_same_light_units`) and the 5.3.3 line's four.
"""
from __future__ import annotations

import os
from pathlib import Path

import broker_harness as bh
import pytest
from broker_rocksdb_light_scenarios import LIGHT_A, LIGHT_SLASHED, SETTINGS, light_scenarios
from broker_rocksdb_runs import database, same_databases

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

FULL = os.environ.get("PIPELINES_FULL_SUITE", "") not in ("", "0")
LINES = ("5.5.1", "5.3.3") if FULL else ("5.5.1",)
# the default suite: 5.5.1's lmqonly store (the gate and the '/' name both differ from the file queues' rules there)
SCENARIOS = {line: bh.bounded(light_scenarios(line), ("-multionly", "-both", "-live")) for line in LINES}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
         if not sc["name"].endswith("-live")]
LIVE = bh.params_or_skip([pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs
                          if sc["name"].endswith("-live")], "full suite only: PIPELINES_FULL_SUITE=1")
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "RocksDB store(s) with light queues", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker wrote it, and our rebuild of it with tables (every scenario once)."""
    return bh.written_once(request, _RUNS, STORES, then=lambda r: r.update(rebuild=bh.rebuild(
        Path(r["scenario"]["dir"]), bh.BROKER_VERSION_ARG[r["line"]], "--tables",
        str(Path(r["scenario"]["dir"]) / "tables"))))


def _light_units(default: dict[bytes, bytes]) -> set[tuple[str, int, int, int]]:
    """The ``%LMQ%`` units of a default family: (queue name, queue id, queue offset, commitlog offset)."""
    from store_format.rocksdb_cq import CQ_KEY_TAIL, split_key

    out = set()
    for k, v in default.items():
        topic, tail = split_key(k) or ("", b"")
        if topic.startswith("%LMQ%"):
            _c, qid, _c2, qoff = CQ_KEY_TAIL.unpack(tail)
            out.add((topic, qid, qoff, int.from_bytes(v[:8], "big")))
    return out


def _enable_lmq(name: str) -> bool:
    return SETTINGS[name.removesuffix("-live").rsplit("-", 1)[1]][0] == "true"


@pytest.mark.parametrize("line,name", CASES)
def test_the_broker_puts_light_units_under_enable_lmq_alone(written, line, name):
    """What the broker wrote: with ``enableLmq`` (whatever ``enableMultiDispatch``) each request's units under
    queue 0 of ``%LMQ%a`` (5) and of ``%LMQ%b/c`` (10, the name holding '/'), none for the retry topic's record;
    without it none at all."""
    units = _light_units(database(Path(written["scenario"]["dir"]) / "expected" / "consumequeue")["default"])
    if not _enable_lmq(name):
        assert units == set()
        return
    by_queue = {(n, q): sorted(qo for n2, q2, qo, _ in units if (n2, q2) == (n, q)) for n, q, _, _ in units}
    assert by_queue == {(LIGHT_A, 0): list(range(5)), (LIGHT_SLASHED, 0): list(range(10))}


@pytest.mark.parametrize("line,name", CASES)
def test_rebuild_holds_the_broker_s_key_value_set(written, line, name):
    """Both column families of our database hold exactly the broker's keys and values."""
    d = bh.rebuilt_dir(written)
    same_databases(d / "expected" / "consumequeue", d / "ours" / "consumequeue")


@pytest.mark.parametrize("line,name", CASES)
def test_messages_table_lists_the_broker_s_light_units(written, line, name):
    """The messages table's light units (queue name, queue id, queue offset, record) are the broker's."""
    from pipelines.tables.runs import snapshot

    d = bh.rebuilt_dir(written)
    broker = _light_units(database(d / "expected" / "consumequeue")["default"])
    ours = set()
    for r in snapshot(str(d / "tables")).read_arrow("messages").to_pylist():
        for n, q, u in zip(r["lmq_queues"] or [], r["lmq_queue_ids"] or [], r["lmq_consume_queue_offsets"] or []):
            if u is not None:
                ours.add((n, q, u, r["commitlog_offset"]))
    assert ours == broker


@pytest.mark.parametrize("name", LIVE)
def test_the_running_broker_put_the_same_light_units(written, name):
    """The first life's database (the running broker's reput, kept in ``before/``): the same light units as the
    restart's rebuild from an empty database puts (:func:`test_the_broker_puts_light_units_under_enable_lmq_alone`),
    and our rebuild's light keys and values are those."""
    d = bh.rebuilt_dir(written)
    live = database(d / "before" / "consumequeue")["default"]
    units = _light_units(live)
    assert {(n, q) for n, q, _, _ in units} == {(LIGHT_A, 0), (LIGHT_SLASHED, 0)} and len(units) == 15
    ours = database(d / "ours" / "consumequeue")["default"]
    assert {k: v for k, v in ours.items() if b"%LMQ%" in k} == {k: v for k, v in live.items() if b"%LMQ%" in k}
