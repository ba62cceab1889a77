"""The refresh's seeds: the rebuild's consume queue task continued from queue states at a split
border (``build_queue_bucket(seeds=..., write_files=False)``), and the index carry
(:class:`pipelines.chain.IndexSeed`) that decides which records of the rescanned segments
``IndexService.buildIndex`` indexes."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest
import tables_store as ts

from pipelines.build import build_queue_bucket
from pipelines.delta import read_arrow
from pipelines.plan import plan_splits
from pipelines.stages import Progress, TaskRunner, scan_and_chain
from pipelines.tables import run_tables
from pipelines.workfiles import read_queue_states
from store_format.consumequeue import Q_LAST_FILE, Q_MAX_PHYS, Q_WRITE_POS
from store_format.corruption import set_head_field
from store_format.store import open_store


def _walk(tmp_path: Path, n: int):
    cfg = ts.config()
    ts.write_store(tmp_path / "store", n, cfg)
    st = open_store(str(tmp_path / "store"), cfg)
    splits = plan_splits(st, 8192)
    runner = TaskRunner(None, 1, Progress(lambda line: None))
    return cfg, scan_and_chain(st, cfg, splits, str(tmp_path / "work"), runner)


def test_a_seeded_queue_task_continues_the_states_and_files_of_a_full_one(tmp_path: Path) -> None:
    """Seeded with each queue's state at a split border, the task over the later splits records
    the very states entering each split that the task over all splits recorded, fills the same
    files with the units after the border, and writes no file."""
    cfg, walk = _walk(tmp_path, 700)
    order = [e.split.split_id for e in walk.chain.entries]
    assert len(order) > 6
    cut = len(order) // 2 + 1
    staging = tmp_path / "staged"
    full = build_queue_bucket(walk.work_uri, str(staging), 0, order, cfg, record_states=True)
    assert walk.buckets == 1 and any(r["entries"] for r in full)
    entering = read_queue_states(walk.work_uri, 1, set(order))
    # a queue's state changes only in the splits that hold its units: the state at the border is
    # the one entering the first later split holding it
    seeds: dict[tuple[str, int], list[int]] = {}
    for sid in order[cut:]:
        for key, state in entering.get(sid, {}).items():
            seeds.setdefault(key, [int(v) for v in state])
    assert seeds and any(s[Q_WRITE_POS] > 0 for s in seeds.values())
    written = sorted(staging.rglob("*"))
    seeded = build_queue_bucket(walk.work_uri, None, 0, order[cut:], cfg, record_states=True, seeds=seeds,
                                write_files=False)
    again = read_queue_states(walk.work_uri, 1, set(order))
    assert set(again) == {sid for sid in order[cut:] if sid in entering}
    for sid in order[cut:]:
        for key, state in entering.get(sid, {}).items():
            assert np.array_equal(again[sid][key], state), (sid, key)
    # the same files, those the border cuts with only their later units
    assert all(r["bytes"] is None for r in seeded) and sorted(staging.rglob("*")) == written
    by_file = {(r["topic"], r["queue_id"], r["file_start"]): r for r in full}
    for r in seeded:
        ref = by_file[(r["topic"], r["queue_id"], r["file_start"])]
        assert r["end_offset"] == ref["end_offset"] and 0 < r["entries"] <= ref["entries"]
        if r["entries"] < ref["entries"]:   # a file open at the border: its units before it are the seed's
            seed = seeds[(r["topic"], r["queue_id"])]
            assert seed[Q_LAST_FILE] == r["file_start"] and seed[Q_MAX_PHYS] <= r["begin_offset"]
            assert (seed[Q_WRITE_POS] - r["file_start"]) // 20 == ref["entries"] - r["entries"]
        else:
            assert r["begin_offset"] == ref["begin_offset"]
    assert any(r["entries"] < by_file[(r["topic"], r["queue_id"], r["file_start"])]["entries"] for r in seeded)


def test_a_seeded_queue_task_without_seeds_starts_the_queues_anew(tmp_path: Path) -> None:
    """The seeds are what carries the states: without them the same splits place units from
    empty queues, and the recorded states differ."""
    cfg, walk = _walk(tmp_path, 700)
    order = [e.split.split_id for e in walk.chain.entries]
    cut = len(order) // 2 + 1
    build_queue_bucket(walk.work_uri, None, 0, order, cfg, record_states=True, write_files=False)
    entering = read_queue_states(walk.work_uri, 1, set(order))
    build_queue_bucket(walk.work_uri, None, 0, order[cut:], cfg, record_states=True, write_files=False)
    unseeded = read_queue_states(walk.work_uri, 1, set(order))
    assert any(not np.array_equal(unseeded[sid][k], v) for sid in order[cut:] for k, v in entering.get(sid, {}).items())


@pytest.mark.spark
@pytest.mark.slow
def test_the_refresh_carries_the_index_end_offset_into_the_rescanned_segments(spark, tmp_path: Path) -> None:
    """A record whose stored physicalOffset lies below the offset of the last indexed record is not
    indexed (``IndexService.buildIndex``: ``commitLogOffset < endPhyOffset``).  When it is the first
    record of the segment the refresh resumes from, only the endPhyOffset carried from the segments
    before says so: the refresh's rows equal those of a full run."""
    cfg = ts.config()
    store, tables, full = tmp_path / "store", str(tmp_path / "tables"), str(tmp_path / "full")
    ts.write_store(store, 300, cfg)
    run_tables(str(store), tables, cfg, spark=spark, split_size=16384)
    resume = read_arrow(tables, "runs").to_pylist()[0]["watermark_segment"]
    assert int(resume) > 0
    ts.write_store(store, 600, cfg)
    set_head_field(store, int(resume), "physicalOffset", 1)   # the resume segment's first record
    refreshed = run_tables(str(store), tables, cfg, spark=spark, split_size=16384)
    assert refreshed["resume_segment"] == resume
    run_tables(str(store), full, cfg, spark=spark, split_size=16384, full=True)
    odd = read_arrow(full, "messages", filter=pc.field("commitlog_offset") == 1).to_pylist()
    assert len(odd) == 1 and odd[0]["segment"] == resume and odd[0]["indexed"] is False
    for name, order in (("messages", ["commitlog_offset"]), ("message_keys", ["index_file_no", "index_entry"])):
        a = read_arrow(full, name).drop_columns(["run_id"]).sort_by([(c, "ascending") for c in order]).to_pylist()
        b = read_arrow(tables, name).drop_columns(["run_id"]).sort_by([(c, "ascending") for c in order]).to_pylist()
        assert len(a) == len(b) > 0
        for x, y in zip(a, b):
            assert x == y, {c: (x[c], y[c]) for c in x if x[c] != y[c]}
    assert sorted(os.listdir(tables)) == sorted(os.listdir(full))
