"""Splits vs one sequential walk: for any split size, on clean and corrupted segments alike, the
parallel plan (resync, chain, driver re-walks, bucketed queue builds, index file tasks) must write
exactly the files of the sequential reput (store_format.reput.rebuild_in_memory).

The orchestration runs with ``engine="local"``: the very tasks Spark runs, one after the other in
this process, so hypothesis can try many stores quickly; tests/test_golden.py runs them on Spark.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.rebuild import Progress, run_rebuild
from store_format import corruption
from store_format import writer as w
from store_format.config import BrokerConfig
from store_format.layout import BORN_HOST_OFFSET, HOST_V4_LEN, MAGIC_V1, record_length
from store_format.reput import rebuild_in_memory
from store_format.store import open_store
from store_format.writer_columns import encode_properties

SEGMENT = 64 * 1024
# body of a record with IPv4 hosts: head, hosts, store time, reconsume, prepared offset, body length
BODY_START_V4 = BORN_HOST_OFFSET + HOST_V4_LEN + 8 + HOST_V4_LEN + 4 + 8 + 4


def _config(version: str, cq_units: int, max_index: int, broker_id: int = 0) -> BrokerConfig:
    return BrokerConfig(mappedFileSizeCommitLog=SEGMENT, mappedFileSizeConsumeQueue=cq_units * 20,
                        maxHashSlotNum=13, maxIndexNum=max_index, brokerVersion=version, brokerId=broker_id)


def _write_store(root: Path, config: BrokerConfig, n: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    topics = ["TopicA", "TopicB", "%RETRY%grp", "SCHEDULE_TOPIC_XXXX"]
    offsets = []
    with w.CommitLogWriter(root, config) as cw:
        for i in range(n):
            t = int(rng.integers(0, len(topics)))
            props = {"UNIQ_KEY": f"U{seed}-{i}", "TAGS": f"tag{i % 3}"}
            if rng.random() < 0.7:
                props["KEYS"] = " ".join(f"k{int(rng.integers(0, 40))}" for _ in range(int(rng.integers(1, 4))))
            if topics[t] == "SCHEDULE_TOPIC_XXXX":
                props["DELAY"] = str(int(rng.integers(1, 20)))
            tx = [0, 0, 0, 4, 8, 12][int(rng.integers(0, 6))]
            off, _ = cw.append(topics[t], int(rng.integers(0, 3)), b"x" * int(rng.integers(0, 700)), props,
                               sys_flag=tx, store_timestamp=1_700_000_000_000 + i * int(rng.integers(1, 900)))
            offsets.append(off)
    return offsets


def _corrupt(root: Path, offsets: list[int], kinds: list[tuple[str, int]]) -> None:
    for kind, at in kinds:
        off = offsets[at % len(offsets)]
        if kind == "magic":
            corruption.set_magic_code(root, off)
        elif kind == "size+8":
            corruption.set_total_size(root, off, delta=8)
        elif kind == "size-4":
            corruption.set_total_size(root, off, delta=-4)
        elif kind == "crc":
            corruption.flip_body_byte(root, off)
        elif kind == "phys":
            corruption.set_head_field(root, off, "physicalOffset", 12345)
        elif kind == "qoff":
            corruption.set_head_field(root, off, "queueOffset", 3)


def _files(out: Path) -> tuple[dict[str, bytes], list[bytes]]:
    cq = {str(p.relative_to(out / "consumequeue")): p.read_bytes()
          for p in (out / "consumequeue").rglob("*") if p.is_file()}
    return cq, [p.read_bytes() for p in sorted((out / "index").iterdir())]


def _rebuild_both(root: Path, config: BrokerConfig, split: int):
    expected = rebuild_in_memory(open_store(str(root), config), config)
    out = root.parent / (root.name + "-out")
    summary = run_rebuild(str(root), str(out), config, engine="local", split_size=split,
                          progress=Progress(lambda line: None))
    cq, index = _files(out)
    assert cq == expected.consumequeue
    assert index == [b for _, b in expected.index]
    return summary, expected


corruptions = st.lists(st.tuples(st.sampled_from(["magic", "size+8", "size-4", "crc", "phys", "qoff"]),
                                 st.integers(0, 10_000)), max_size=4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(n=st.integers(1, 400), seed=st.integers(0, 2**31), split=st.integers(4096, 3 * SEGMENT),
       version=st.sampled_from(["4", "5"]), cq_units=st.integers(3, 40), max_index=st.integers(2, 60),
       damage=corruptions, broker_id=st.sampled_from([0, 0, 0, 1]))
def test_splits_write_what_the_sequential_walk_writes(tmp_path_factory, n, seed, split, version, cq_units, max_index,
                                                      damage, broker_id):
    root = tmp_path_factory.mktemp("store")
    config = _config(version, cq_units, max_index, broker_id)
    offsets = _write_store(root, config, n, seed)
    _corrupt(root, offsets, damage)
    summary, expected = _rebuild_both(root, config, split)
    assert summary.dispatched == expected.dispatched


def test_resync_false_positive_inside_a_body_is_walked_again(tmp_path):
    """A body holding bytes that look like a record (magic code and a matching physical offset) at
    the start of the split where the chain arrives: that split's resync is wrong, the driver must
    walk the split again from where the previous record really ends."""
    split = 4096
    config = _config("4", 50, 40)
    root = tmp_path / "store"
    with w.CommitLogWriter(root, config) as cw:
        cw.append("TopicA", 0, b"a" * 10, {"KEYS": "before"}, store_timestamp=1)
        p0 = cw.offset
        props = encode_properties({"KEYS": "big"})
        body_len = 20_000
        end = p0 + record_length(0, body_len, len("TopicA"), len(props))
        fake_at = end - end % split + 8  # inside the body, in the split where the record ends
        body = bytearray(b"z" * body_len)
        k = fake_at - (p0 + BODY_START_V4)
        assert 0 <= k and k + 36 <= body_len
        body[k:k + 4] = (300).to_bytes(4, "big")
        body[k + 4:k + 8] = MAGIC_V1.to_bytes(4, "big", signed=True)
        body[k + 28:k + 36] = fake_at.to_bytes(8, "big")
        cw.append("TopicA", 0, bytes(body), props, store_timestamp=2)
        for i in range(20):
            cw.append("TopicA", 0, b"b" * 10, {"KEYS": f"after{i}"}, store_timestamp=3 + i)
    summary, expected = _rebuild_both(root, config, split)
    assert summary.rewalked_splits >= 1, "the false resync point went unnoticed"
    assert expected.dispatched == 22


def test_record_with_corrupt_physical_offset_at_a_split_start(tmp_path):
    """The reput does not check the stored physical offset, the resync does: a split whose first
    record has a wrong one resyncs too late and must be walked again."""
    config = _config("4", 50, 40)
    root = tmp_path / "store"
    offsets = _write_store(root, config, 300, 3)
    split = 8192
    first_in_split = next(o for o in offsets if o % SEGMENT >= split)
    corruption.set_head_field(root, first_in_split, "physicalOffset", 7)
    summary, _ = _rebuild_both(root, config, split)
    assert summary.rewalked_splits >= 1


def test_size_mismatch_then_bad_magic_enters_next_segment_mid_way(tmp_path):
    """After a size mismatch, an unreadable record moves reputFromOffset by the slice's unread
    size: the reput enters the next segment at the mismatches' declared bytes, not at its start."""
    config = _config("4", 50, 40)
    root = tmp_path / "store"
    offsets = _write_store(root, config, 400, 5)
    seg0 = [o for o in offsets if o < SEGMENT]
    corruption.set_total_size(root, seg0[3], delta=8)
    corruption.set_magic_code(root, seg0[len(seg0) // 2])
    summary, expected = _rebuild_both(root, config, 4096)
    assert summary.rewalked_splits >= 1
    assert any(a["kind"] == "bad_magic" for a in summary.anomalies)


def test_failed_run_leaves_target_untouched(tmp_path, monkeypatch):
    config = _config("4", 50, 40)
    _write_store(tmp_path / "store", config, 50, 1)
    out = tmp_path / "out"
    import pipelines.build_stage as build_stage

    def boom(*a, **k):
        raise RuntimeError("injected failure in the build stage")

    monkeypatch.setattr(build_stage, "index_file_parts", boom)
    try:
        run_rebuild(str(tmp_path / "store"), str(out), config, engine="local", progress=Progress(lambda line: None))
    except RuntimeError:
        pass
    else:
        raise AssertionError("the injected failure did not surface")
    assert not (out / "consumequeue").exists() and not (out / "index").exists()
    assert not list(out.glob(".rebuild-*")), "staging folder left behind"


@pytest.mark.parametrize("phase", ["stage_tables", "_finish"])
def test_tables_failure_keeps_the_rebuilt_files(spark, tmp_path, monkeypatch, phase):
    """The Delta tables are published after the commit: a failure while writing their rows
    (``stage_tables``, before the files' commit) or while committing them (``_finish``, after it) is
    reported, and the consume queue and index files are in place all the same."""
    import pipelines.tables.publish as publish_module

    config = _config("4", 50, 40)
    _write_store(tmp_path / "store", config, 60, 2)

    def fail(*args, **kwargs):
        raise RuntimeError("injected failure while publishing tables")

    monkeypatch.setattr(publish_module, phase, fail)
    summary = run_rebuild(str(tmp_path / "store"), str(tmp_path / "out"), config, spark=spark,
                          tables=str(tmp_path / "tables"), progress=Progress(lambda line: None))
    assert summary.tables_error and "injected failure" in summary.tables_error
    expected = rebuild_in_memory(open_store(str(tmp_path / "store"), config), config)
    cq, index = _files(tmp_path / "out")
    assert cq == expected.consumequeue and index == [b for _, b in expected.index]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_resync_finds_the_first_position_the_rule_accepts(data):
    """``resync`` (a vectorized pass for the magic code's first byte, then the rule of
    ``find_record_start``) against the rule read position by position: a known magic code and a
    stored physicalOffset equal to the segment base plus the position.  Buffers of zeros (a
    segment's unwritten tail), random bytes and planted heads, true or false, at window edges too."""
    from store_format import commitlog as cl
    from store_format.layout import MAGIC_V2, OFF_MAGIC, OFF_PHYSICAL_OFFSET, OFF_SYSFLAG
    size = data.draw(st.integers(64, 6000))
    base = data.draw(st.sampled_from([0, 1 << 30]))
    fill = data.draw(st.sampled_from(["zeros", "random", "magic-bytes"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    buf = np.zeros(size, dtype=np.uint8)
    if fill == "random":
        buf[:] = rng.integers(0, 256, size)
    elif fill == "magic-bytes":   # the first byte everywhere: every position is a candidate
        buf[:] = 0xDA
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, size - OFF_SYSFLAG))
        magic = data.draw(st.sampled_from([MAGIC_V1, MAGIC_V2]))
        buf[at + OFF_MAGIC:at + OFF_MAGIC + 4] = np.frombuffer(magic.to_bytes(4, "big", signed=True), np.uint8)
        stored = base + at + data.draw(st.sampled_from([0, 0, 1]))   # sometimes a false head
        buf[at + OFF_PHYSICAL_OFFSET:at + OFF_PHYSICAL_OFFSET + 8] = np.frombuffer(stored.to_bytes(8, "big"), np.uint8)
    start = data.draw(st.integers(0, size - 1))
    window = data.draw(st.sampled_from([16, 100, 1 << 20]))

    def rule(pos: int) -> bool:
        if pos + OFF_SYSFLAG > size:
            return False
        magic = int.from_bytes(buf[pos + OFF_MAGIC:pos + OFF_MAGIC + 4].tobytes(), "big", signed=True)
        stored = int.from_bytes(buf[pos + OFF_PHYSICAL_OFFSET:pos + OFF_PHYSICAL_OFFSET + 8].tobytes(), "big")
        return magic in (MAGIC_V1, MAGIC_V2) and stored == base + pos

    expected = next((p for p in range(start, size) if rule(p)), -1)
    got = cl.resync(lambda pos, n: buf[pos:pos + n].tobytes(), base, start, size, size, window=window)
    assert got == expected
