"""brokerVersion=5.5: the 5.5.1 broker line (rocketmq-store 5.5.1 sources).

Diffed with 5.3.3 (docs/restart-settings.md, "5.5.1"): the reput loop, ``checkMessageAndReturnSize``,
the dispatchers, ``ConsumeQueue.putMessagePositionInfo`` and ``IndexFile`` write the same bytes;
``IndexService.buildIndex`` also puts ``topic#T#<TAGS>`` (``MessageConst.INDEX_TAG_TYPE`` = "T") for a
record with a non-empty TAGS property, after its UNIQ_KEY and KEYS; ``CommitLogDispatcherBuildIndex``
writes index files only with ``indexFileWriteEnable`` (default true); the restart's recovery picks its
first segment by other rules (``commitLogRecoverMaxNum``, the checkpoint's ``logicsPhysicalOffset``).

Expected index entries are computed here from Java's ``String.hashCode`` (written out below, not the
project's hash kernel) and ``IndexFile.indexKeyHashMethod``, and the entry layout of ``IndexFile``
(40-byte header, 4-byte slots, 20-byte entries from number 1: hash, phyOffset, timeDiff, prev)."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from store_format.config import BrokerConfig, load_broker_config
from store_format.errors import RestartFailsError, UnsupportedConfigError
from store_format.recovery import plan_recovery
from store_format.reput import rebuild_in_memory
from store_format.store import open_store
from store_format.writer import CommitLogWriter

SLOTS, ENTRIES = 64, 1000
TOPIC = "TopicT"


def _java_hash(text: str) -> int:
    h = 0
    for unit in struct.unpack(f">{len(text.encode('utf-16-be')) // 2}H", text.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _key_hash(key: str) -> int:
    """IndexFile.indexKeyHashMethod: abs(hashCode), Integer.MIN_VALUE read as 0."""
    h = _java_hash(key)
    return 0 if h == -(1 << 31) else abs(h)


def _entries(data: bytes) -> list[tuple[int, int]]:
    index_count = struct.unpack_from(">i", data, 36)[0]
    base = 40 + 4 * SLOTS
    return [struct.unpack_from(">iq", data, base + 20 * n) for n in range(1, index_count)]


MESSAGES = [({"TAGS": "tagA", "KEYS": "k1 k2"}), ({"KEYS": "k3"}), ({"TAGS": "", "KEYS": "k4"}),
            ({"TAGS": "tag B 雪"}), ({"TAGS": "x"})]


@pytest.fixture()
def store(tmp_path: Path) -> tuple[Path, list[int]]:
    config = BrokerConfig(mappedFileSizeCommitLog=1 << 16, brokerVersion="5")
    offsets = []
    with CommitLogWriter(str(tmp_path / "store"), config) as w:
        for i, props in enumerate(MESSAGES):
            offsets.append(w.append(TOPIC, 0, body=f"b{i}".encode(), properties=props,
                                    store_timestamp=1_700_000_000_000 + i)[0])
    return tmp_path / "store", offsets


def _config(version: str, extra: str = "") -> BrokerConfig:
    return load_broker_config(f"mappedFileSizeCommitLog={1 << 16}\nmaxHashSlotNum={SLOTS}\nmaxIndexNum={ENTRIES}\n"
                              f"brokerVersion={version}\n{extra}")


def _expected(offsets: list[int], with_tags: bool) -> list[tuple[int, int]]:
    out = []
    for off, props in zip(offsets, MESSAGES):
        for k in props.get("KEYS", "").split(" "):
            if k:
                out.append((_key_hash(f"{TOPIC}#{k}"), off))
        if with_tags and props.get("TAGS"):
            out.append((_key_hash(f"{TOPIC}#T#{props['TAGS']}"), off))
    return out


def test_55_indexes_tags_after_the_keys(store: tuple[Path, list[int]]) -> None:
    root, offsets = store
    r55 = rebuild_in_memory(open_store(str(root), _config("5.5")), _config("5.5"))
    r5 = rebuild_in_memory(open_store(str(root), _config("5")), _config("5"))
    assert len(r55.index) == len(r5.index) == 1
    assert _entries(r55.index[0][1]) == _expected(offsets, with_tags=True)
    assert _entries(r5.index[0][1]) == _expected(offsets, with_tags=False)
    assert r55.consumequeue == r5.consumequeue   # ConsumeQueue.putMessagePositionInfo: unchanged in 5.5.1


def test_55_index_file_write_enable_false_writes_no_index(store: tuple[Path, list[int]]) -> None:
    """5.5.1 CommitLogDispatcherBuildIndex calls IndexService.buildIndex only with indexFileWriteEnable."""
    root, _ = store
    config = _config("5.5", "indexFileWriteEnable=false")
    assert rebuild_in_memory(open_store(str(root), config), config).index == []
    # 5.3.3 has no such setting: the line changes nothing there
    config5 = _config("5", "indexFileWriteEnable=false")
    assert len(rebuild_in_memory(open_store(str(root), config5), config5).index) == 1


def _segments_store(root: Path, n: int = 150) -> tuple[list[int], list[int]]:
    config = BrokerConfig(mappedFileSizeCommitLog=4096, brokerVersion="5")
    offsets, times = [], []
    with CommitLogWriter(str(root), config) as w:
        for i in range(n):
            times.append(1_700_000_000_000 + 1000 * i)
            offsets.append(w.append("T", i % 2, body=f"body-{i}".encode(), properties={"KEYS": f"k{i}"},
                                    store_timestamp=times[-1])[0])
    return offsets, times


def _restart_conf(extra: str = "") -> BrokerConfig:
    return load_broker_config(f"mappedFileSizeCommitLog=4096\nbrokerVersion=5.5\n{extra}")


def test_55_normal_recovery_walks_back_at_most_commit_log_recover_max_num(tmp_path: Path) -> None:
    """5.5.1 recoverNormally with consume queues deleted: getDispatchFromPhyOffset(true) is -1, no first record
    has an offset <= -1, so the walk goes back until commitLogRecoverMaxNum runs out (default 10: here the
    first of 5 segments) and recovery dispatches only from there.  (A 5.5.1 DefaultMessageStore restarted on
    such a store with commitLogRecoverMaxNum=2 wrote consume queue files from the fourth segment's records
    only.)"""
    _segments_store(tmp_path / "store")
    st = open_store(str(tmp_path / "store"), _restart_conf())
    assert len(st.segments) == 5
    full = plan_recovery(st, _restart_conf(), abnormal=False)
    assert full.checked_from == full.dispatch_from == 0
    two = plan_recovery(st, _restart_conf("commitLogRecoverMaxNum=2"), abnormal=False)
    assert two.checked_from == two.dispatch_from == st.segments[-2].base
    # 5.3.3 has no such setting: with consume queues deleted it walks from the first segment
    five3 = plan_recovery(st, load_broker_config("mappedFileSizeCommitLog=4096\nbrokerVersion=5\n"
                                                 "commitLogRecoverMaxNum=2"), abnormal=False)
    assert five3.checked_from == 0


def test_55_abnormal_recovery_starts_at_the_checkpoint_logics_physical_offset(tmp_path: Path) -> None:
    """5.5.1 recoverAbnormally: ConsumeQueueStore.isMappedFileMatchedRecover compares the first record's
    offset with the checkpoint's logicsPhysicalOffset (long at 40); with that <= 0, its store time with
    logicsMsgTimestamp as it is (no 3 s margin, unlike 5.3.3's getMinTimestamp)."""
    offsets, times = _segments_store(tmp_path / "store")
    st = open_store(str(tmp_path / "store"), _restart_conf())
    bases = [s.base for s in st.segments]
    first_of = {b: next(i for i, o in enumerate(offsets) if o >= b) for b in bases}

    def cp(logics_ts: int, logics_phys: int) -> bytes:
        return struct.pack(">qqqqqq", logics_ts, logics_ts, 0, 0, 0, logics_phys).ljust(4096, b"\0")

    assert plan_recovery(st, _restart_conf(), abnormal=True, checkpoint=cp(0, bases[2])).checked_from == bases[2]
    assert plan_recovery(st, _restart_conf(), abnormal=True, checkpoint=cp(0, bases[2] - 1)).checked_from == bases[1]
    ts3 = times[first_of[bases[3]]]
    assert plan_recovery(st, _restart_conf(), abnormal=True, checkpoint=cp(ts3, 0)).checked_from == bases[3]
    assert plan_recovery(st, _restart_conf(), abnormal=True, checkpoint=cp(ts3 - 1, 0)).checked_from == bases[2]


def _cp(logics_ts: int, logics_phys: int) -> bytes:
    return struct.pack(">qqqqqq", logics_ts, logics_ts, 0, 0, 0, logics_phys).ljust(4096, b"\0")


def test_55_accelerated_recovery_walks_from_the_checkpoint_offset(tmp_path: Path) -> None:
    """5.5.1 recoverAbnormally with enableAcceleratedRecovery: the walk starts inside its start segment at the
    checkpoint's logicsPhysicalOffset (dispatching nothing before it); a position before the segment falls back
    to its start; with logicsPhysicalOffset <= 0 and a physicMsgTimestamp set, ConsumeQueueStore throws and the
    broker does not load; an offset inside a record ends the walk there (nothing reads as a record)."""
    offsets, times = _segments_store(tmp_path / "store")
    st = open_store(str(tmp_path / "store"), _restart_conf())
    bases = [s.base for s in st.segments]
    accel = _restart_conf("enableAcceleratedRecovery=true")
    mid = next(o for o in offsets if o > bases[2] + 1000)
    off = plan_recovery(st, _restart_conf(), abnormal=True, checkpoint=_cp(times[0], mid))
    on = plan_recovery(st, accel, abnormal=True, checkpoint=_cp(times[0], mid))
    assert (off.checked_from, off.dispatch_from) == (bases[2], bases[2])
    assert (on.checked_from, on.dispatch_from) == (bases[2], mid)
    assert on.process_offset == off.process_offset
    inside = plan_recovery(st, accel, abnormal=True, checkpoint=_cp(times[0], mid + 5))
    assert (inside.dispatch_from, inside.process_offset) == (mid + 5, mid + 5)
    assert inside.deleted_segments == 2
    with pytest.raises(RestartFailsError, match="logicsPhysicalOffset is 0"):
        plan_recovery(st, accel, abnormal=True, checkpoint=_cp(times[3], 0))
    # a zero checkpoint (no physicMsgTimestamp): no segment matches, the walk starts at offset 0
    assert plan_recovery(st, accel, abnormal=True, checkpoint=_cp(0, 0)).dispatch_from == 0
    # a clean shutdown's recovery does not read it
    normal = plan_recovery(st, _restart_conf(), abnormal=False, checkpoint=_cp(times[0], mid))
    assert plan_recovery(st, accel, abnormal=False, checkpoint=_cp(times[0], mid)) == normal


def test_55_commit_log_offset_check_ends_recovery_at_a_foreign_offset(tmp_path: Path) -> None:
    """5.5.1 recoverAbnormally with checkCommitLogOffsetOnRecover: a record whose physicalOffset field lies
    outside its segment (its body CRC holds) ends the walk; without the setting it is accepted."""
    offsets, _ = _segments_store(tmp_path / "store")
    st = open_store(str(tmp_path / "store"), _restart_conf())
    seg = st.segments[-2]
    bad = [o for o in offsets if o > seg.base][3]
    with open(seg.path, "r+b") as f:
        f.seek(bad - seg.base + 28)
        f.write(struct.pack(">q", bad + 5 * 4096))
    cp = _cp(0, seg.base)
    plain = plan_recovery(st, _restart_conf(), abnormal=True, checkpoint=cp)
    checked = plan_recovery(st, _restart_conf("checkCommitLogOffsetOnRecover=true"), abnormal=True, checkpoint=cp)
    assert plain.process_offset > bad
    assert (checked.process_offset, checked.stop_kind) == (bad, "offset_mismatch")
    # normal recovery does not read it
    assert plan_recovery(st, _restart_conf("checkCommitLogOffsetOnRecover=true"), abnormal=False,
                         checkpoint=cp).process_offset == plain.process_offset


def test_broker_version_values() -> None:
    assert BrokerConfig(brokerVersion="5.5").is_5x and BrokerConfig(brokerVersion="5.5").indexes_tags
    assert not BrokerConfig(brokerVersion="5").indexes_tags
    with pytest.raises(UnsupportedConfigError, match="5.5"):
        BrokerConfig(brokerVersion="5.4")
