"""The incremental ``tables`` refresh on a store with light queues (``enableMultiDispatch``/``enableLmq``),
written by the published broker through the harness in ``tests/broker/``.

The store has many small commitlog segments and consume queue files of three units, so that the light
queues (``%LMQ%...``) have files wholly before the segment a refresh resumes at.  The tables are
published once for the store cut at a record of a middle segment (the broker had written that much),
then the store grows to its full contents and ``tables`` refreshes them incrementally: the consume queue
files of the expiry audit's inventory (light queues' too, seeded from the rows before the resume
segment) must name exactly the files the broker's own reput wrote into ``consumequeue/``, with their
units, as one rebuild of the whole store does; and every ``messages`` row must equal that rebuild's.

4.9.8 by default (``LMQ_REFRESH_LINES=4.9.8,5.5.1`` adds 5.5.1).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import broker_harness as bh
import numpy as np
import pyarrow.compute as pc
import pytest
import tables_store as ts
from broker_layout_scenarios import Messages

from pipelines.delta import read_arrow
from pipelines.rebuild import run_rebuild
from pipelines.tables import run_tables
from store_format.layout import CQ_UNIT_DTYPE
from store_format.store import load_config_for

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = bh.lines_from_env("LMQ_REFRESH_LINES", "4.9.8")
BROKER_LINE = bh.BROKER_VERSION_ARG
CONFIG = {
    "mappedFileSizeCommitLog": str(8 * 1024),
    "mappedFileSizeConsumeQueue": "60",   # 3 units a file
    "maxHashSlotNum": "101",
    "maxIndexNum": "400",
    "enableMultiDispatch": "true",
    "enableLmq": "true",
}
_RUNS: dict[str, dict] = {}


def _scenario(line: str) -> dict:
    g = Messages(31, ["T0", "T1"], queues=2)
    messages = []
    for i in range(90):
        extra = {}
        if i % 3:
            queues = g.rng.sample(["%LMQ%q1", "%LMQ%q2", "%LMQ%q3"], g.rng.randint(1, 2))
            extra["properties"] = {"INNER_MULTI_DISPATCH": ",".join(queues)}
        messages.append(g.one(**extra))
    return {"name": f"{line}-lmq-refresh", "config": CONFIG, "messages": messages}


STORES = bh.Stores({ln: [_scenario(ln)] for ln in LINES}, "light queue store(s)")


@pytest.fixture
def written(request, tmp_path_factory) -> dict:
    line = request.node.callspec.params["line"]
    if not _RUNS:
        work = tmp_path_factory.mktemp("lmq-refresh")
        _RUNS.update(bh.write_lines(request, STORES, work))
    r = _RUNS[f"{line}-lmq-refresh"]
    if not r["written"].get("ok"):
        pytest.fail(f"the broker's writer failed: {r['written'].get('error')}")
    return r


def _broker_cq_files(root: Path) -> dict[str, int]:
    """Every file of the broker's ``consumequeue/``: ``topic/queueId/name`` -> its units (not blank)."""
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        units = np.frombuffer(path.read_bytes(), dtype=CQ_UNIT_DTYPE)
        out[str(path.relative_to(root))] = int((units["size"] > 0).sum())
    return out


@pytest.mark.parametrize("line", LINES)
def test_incremental_refresh_lists_the_light_queue_files_the_broker_wrote(written, line, spark, tmp_path) -> None:
    d = Path(written["scenario"]["dir"])
    store = d / "store"
    cfg = load_config_for(str(d / "broker.conf"), brokerVersion=BROKER_LINE[line])
    names = sorted(os.listdir(store / "commitlog"))
    assert len(names) >= 6, names
    by_rebuild, by_refresh = str(tmp_path / "a"), str(tmp_path / "b")
    full = run_rebuild(str(store), str(tmp_path / "out-a"), cfg, spark=spark, tables=by_rebuild, split_size=4096)
    assert full.tables_error is None
    msgs = read_arrow(by_rebuild, "messages", ["segment", "position"])
    cut_segment = names[len(names) // 2]
    positions = sorted(msgs.filter(pc.equal(msgs["segment"], cut_segment))["position"].to_pylist())
    grown = tmp_path / "store"
    ts.earlier_store(store, grown, cut_segment, positions[len(positions) // 2])
    first = run_rebuild(str(grown), str(tmp_path / "out-b"), cfg, spark=spark, tables=by_refresh, split_size=4096)
    assert first.tables_error is None
    for name in names:   # the broker appends: the store grows to its full contents
        shutil.copyfile(store / "commitlog" / name, grown / "commitlog" / name)
    refreshed = run_tables(str(grown), by_refresh, cfg, spark=spark, split_size=4096)
    assert refreshed["resume_segment"] == cut_segment, refreshed

    broker = _broker_cq_files(d / "expected" / "consumequeue")
    inventory = [r for r in ts.file_inventory(by_refresh) if r["kind"] == "consume_queue_file"]
    assert {r["name"]: r["messages"] for r in inventory} == broker
    # the case this test is for: light queue files wholly before the resume segment
    assert any(r["name"].startswith("%LMQ%") and r["segment"] is not None and r["segment"] < cut_segment
               and not r["is_last"] for r in inventory)
    assert ts.file_inventory(by_refresh) == ts.file_inventory(by_rebuild)
    cols = ["commitlog_offset", "topic", "queue_id", "consume_queue_offset", "lmq_queues", "lmq_consume_queue_offsets"]
    assert (read_arrow(by_refresh, "messages", cols).sort_by("commitlog_offset").to_pylist()
            == read_arrow(by_rebuild, "messages", cols).sort_by("commitlog_offset").to_pylist())
