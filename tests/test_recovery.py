"""store_format.recovery: the broker's commitlog recovery at restart (4.9.8 and 5.3.3 rules; 5.5.1 for
the RocksDB consume queue).

Every expected value is derived from the writer's own record offsets and sizes and from the Java
rules stated in each test's docstring (CommitLog.recoverNormally / recoverAbnormally,
checkMessageAndReturnSize with checkCRC, isMappedFileMatchedRecover, StoreCheckpoint.getMinTimestamp,
MappedFileQueue.truncateDirtyFiles), never from running the planner.
"""
from __future__ import annotations

import dataclasses
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from store_format.config import BrokerConfig
from store_format.corruption import flip_body_byte, set_magic_code, set_total_size
from store_format.recovery import RecoveryPlan, plan_recovery
from store_format.store import open_store
from store_format.writer import CommitLogWriter

SEGMENT = 16 * 1024          # small segments: a few hundred records make six of them
RECORDS = 270
BODY = 200
TS0 = 1_700_000_000_000      # store time of record 0; record i is stored at TS0 + i s


@dataclasses.dataclass
class Written:
    root: Path
    config: BrokerConfig
    offsets: np.ndarray       # commitlog offset of each record, as the writer placed it
    sizes: np.ndarray         # totalSize of each record
    end: int                  # where the data ends (offset after the last record)
    store_ts: np.ndarray

    @property
    def bases(self) -> list[int]:
        """Segment bases, in order."""
        return sorted({int(o) // SEGMENT * SEGMENT for o in self.offsets})

    def segment_of(self, i: int) -> int:
        """Index of the segment holding record ``i``."""
        return self.bases.index(int(self.offsets[i]) // SEGMENT * SEGMENT)

    def records_in(self, seg: int) -> np.ndarray:
        return np.nonzero(self.offsets // SEGMENT * SEGMENT == self.bases[seg])[0]

    def store(self):
        return open_store(str(self.root), self.config)


def _write(root: Path, version: str = "4") -> Written:
    config = BrokerConfig(mappedFileSizeCommitLog=SEGMENT, brokerVersion=version)
    store_ts = TS0 + 1000 * np.arange(RECORDS, dtype=np.int64)
    with CommitLogWriter(root, config) as w:
        res = w.write_batch(topic="TopicA", queue_id=np.arange(RECORDS) % 4,
                            body=[bytes([i % 251]) * BODY for i in range(RECORDS)],
                            properties=[{"TAGS": "t", "KEYS": f"k{i}"} for i in range(RECORDS)],
                            store_timestamp=store_ts, born_timestamp=store_ts - 5)
        end = w.offset
    return Written(root, config, res.offsets.astype(np.int64), res.sizes.astype(np.int64), end, store_ts)


@pytest.fixture()
def written(tmp_path: Path) -> Written:
    w = _write(tmp_path / "store")
    assert len(w.bases) == 6, "the store must have six segments for these tests"
    return w


def _checkpoint(physic: int, logics: int, index: int) -> bytes:
    return struct.pack(">qqq", physic, logics, index).ljust(4096, b"\0")


def _records_from(w: Written, i: int) -> tuple[int, int]:
    """Records ``i..`` and their bytes: what the reput finds after ``offsets[i]`` when nothing else is
    damaged (it does not check CRCs, and a size mismatch only skips that record)."""
    return RECORDS - i, int(w.sizes[i:].sum())


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["4", "5"])
@pytest.mark.parametrize("abnormal", [False, True])
def test_no_damage_ends_at_end_of_data(tmp_path: Path, version: str, abnormal: bool) -> None:
    """No damage: every walk ends where checkMessageAndReturnSize meets the zeros after the last record
    (magic 0 is illegal: -1), so processOffset is the end of the data and truncateDirtyFiles deletes
    nothing."""
    w = _write(tmp_path / "store", version)
    plan = plan_recovery(w.store(), w.config, abnormal=abnormal)
    assert plan.process_offset == w.end
    assert plan.kept_segments == len(w.bases) and plan.deleted_segments == 0
    assert (plan.discarded_messages, plan.discarded_bytes) == (0, 0)
    assert plan.stop_kind == "end_of_data"
    assert plan.mode == ("abnormal" if abnormal else "normal")
    assert plan.broker_version == version


def test_crc_error_in_last_segment_truncates_there(written: Written) -> None:
    """4.9 recoverNormally walks the last three segments (mappedFiles.size() - 3) with
    checkCRCOnRecover=true (the default); checkMessageAndReturnSize returns -1 at a body whose
    UtilAll.crc32 differs from bodyCRC, the walk breaks and processOffset is that record's offset.
    truncateDirtyFiles keeps every segment whose base is <= processOffset (all six: the record is in
    the last one).  The records from it on are what the reput would have read (it never checks CRCs)."""
    last = written.records_in(len(written.bases) - 1)
    victim = int(last[2])
    flip_body_byte(written.root, int(written.offsets[victim]), index=7)
    plan = plan_recovery(written.store(), written.config, abnormal=False)
    assert plan.checked_from == written.bases[-3]
    assert plan.process_offset == int(written.offsets[victim])
    assert plan.stop_kind == "crc_mismatch" and "CRC" in plan.reason
    assert plan.kept_segments == len(written.bases)
    assert (plan.discarded_messages, plan.discarded_bytes) == _records_from(written, victim)
    assert plan.dispatch_from == written.bases[0]


def test_crc_error_in_early_segment_is_not_checked_by_49_normal(written: Written) -> None:
    """A CRC error in segment 0 of six is outside the three segments 4.9's recoverNormally walks: it
    ends at the end of the data.  5.3.3's recoverNormally starts at the last segment whose base is <=
    maxPhyOffsetOfConsumeQueue, which is -1 with consume queues deleted, so it walks from segment 0
    and cuts there: one segment kept (base 0 <= processOffset), five deleted, every later record lost."""
    victim = int(written.records_in(0)[5])
    flip_body_byte(written.root, int(written.offsets[victim]))
    store = written.store()
    plan4 = plan_recovery(store, written.config, abnormal=False)
    assert plan4.process_offset == written.end
    assert (plan4.discarded_messages, plan4.discarded_bytes) == (0, 0)
    plan5 = plan_recovery(store, dataclasses.replace(written.config, brokerVersion="5"), abnormal=False)
    assert plan5.checked_from == written.bases[0]
    assert plan5.process_offset == int(written.offsets[victim])
    assert plan5.kept_segments == 1 and plan5.deleted_segments == len(written.bases) - 1
    assert (plan5.discarded_messages, plan5.discarded_bytes) == _records_from(written, victim)


def test_5x_normal_starts_at_the_consume_queues_max_offset(written: Written) -> None:
    """5.3.3 recoverNormally: from the last segment, go back while the segment's base is above
    maxPhyOffsetOfConsumeQueue (never below index 0).  With consume queues reaching into segment 3, the
    walk starts at segment 3 and a CRC error in segment 1 is not seen."""
    flip_body_byte(written.root, int(written.offsets[written.records_in(1)[0]]))
    config5 = dataclasses.replace(written.config, brokerVersion="5")
    max_cq = written.bases[3] + 100
    plan = plan_recovery(written.store(), config5, abnormal=False, max_phy_offset_of_consume_queue=max_cq)
    assert plan.checked_from == written.bases[3]
    assert plan.process_offset == written.end


def test_check_crc_on_recover_false(written: Written) -> None:
    """checkCRCOnRecover=false: checkMessageAndReturnSize skips the CRC test, so a flipped body byte
    in the last segment does not stop recovery."""
    victim = int(written.records_in(len(written.bases) - 1)[0])
    flip_body_byte(written.root, int(written.offsets[victim]))
    plan = plan_recovery(written.store(), written.config, abnormal=False, check_crc=False)
    assert plan.process_offset == written.end and not plan.check_crc


def test_bad_magic_in_second_last_segment(written: Written) -> None:
    """A bad magic code in segment 4 of six (inside the last three): -1, the walk stops at it.
    truncateDirtyFiles keeps segments 0-4 (base <= processOffset) and deletes segment 5.  The reput
    from processOffset meets the same bad record, skips the rest of segment 4 (a master) and reads
    segment 5 whole: those are the records a restart discards."""
    seg4 = written.records_in(4)
    victim = int(seg4[3])
    set_magic_code(written.root, int(written.offsets[victim]))
    plan = plan_recovery(written.store(), written.config, abnormal=False)
    assert plan.process_offset == int(written.offsets[victim])
    assert plan.stop_kind == "bad_magic" and "0xDEADBEEF" in plan.reason
    assert plan.kept_segments == 5 and plan.deleted_segments == 1
    seg5 = written.records_in(5)
    assert plan.discarded_messages == len(seg5)
    assert plan.discarded_bytes == int(written.sizes[seg5].sum())


def test_bad_first_record_of_last_segment_keeps_it_empty(written: Written) -> None:
    """The blank record of segment 4 moves the walk to segment 5, whose first record has a bad magic
    code: processOffset = segment 5's base.  truncateDirtyFiles keeps a segment whose base equals
    processOffset (offset >= fileFromOffset, its write position set to 0), so all six remain; the reput
    skips the rest of segment 5 from the bad record, so nothing it would read is discarded."""
    first5 = int(written.records_in(5)[0])
    set_magic_code(written.root, int(written.offsets[first5]))
    plan = plan_recovery(written.store(), written.config, abnormal=False)
    assert plan.process_offset == written.bases[5]
    assert plan.kept_segments == 6
    assert (plan.discarded_messages, plan.discarded_bytes) == (0, 0)


def test_size_mismatch_in_last_segment(written: Written) -> None:
    """totalSize 8 above what the fields give: checkMessageAndReturnSize returns
    DispatchRequest(totalSize, false), not a success, so recovery stops at the record (5.x logs it as
    a half message).  The reput would skip only that record and go on at its structural end: it finds
    the record and all later ones, with their written sizes."""
    victim = int(written.records_in(5)[4])
    set_total_size(written.root, int(written.offsets[victim]), delta=8)
    plan = plan_recovery(written.store(), written.config, abnormal=False)
    assert plan.process_offset == int(written.offsets[victim])
    assert plan.stop_kind == "size_mismatch"
    assert (plan.discarded_messages, plan.discarded_bytes) == _records_from(written, victim)


def test_abnormal_starts_at_the_checkpoint_segment(written: Written) -> None:
    """recoverAbnormally walks back from the last segment to the first whose first record has a store
    time <= StoreCheckpoint.getMinTimestamp() = min(physicMsgTimestamp, logicsMsgTimestamp) - 3000.
    With both set to segment 1's first store time + 3000, segments 2-5 start later and segment 1
    matches: the walk starts there and finds a CRC error in segment 1 that 4.9's normal recovery (last
    three segments) does not see.  A 4.9 abnormal recovery dispatches from segment 1 itself and the
    reput then starts at the end, so dispatch starts at segment 1."""
    first1 = int(written.records_in(1)[0])
    ts = int(written.store_ts[first1]) + 3000
    cp = _checkpoint(ts, ts + 10_000, 2**62)
    victim = int(written.records_in(1)[6])
    flip_body_byte(written.root, int(written.offsets[victim]))
    store = written.store()
    abnormal = plan_recovery(store, written.config, abnormal=True, checkpoint=cp)
    assert abnormal.checked_from == written.bases[1]
    assert abnormal.process_offset == int(written.offsets[victim])
    assert abnormal.kept_segments == 2
    assert (abnormal.discarded_messages, abnormal.discarded_bytes) == _records_from(written, victim)
    assert abnormal.dispatch_from == written.bases[1]
    normal = plan_recovery(store, written.config, abnormal=False, checkpoint=cp)
    assert normal.process_offset == written.end


def test_abnormal_checkpoint_one_ms_early_goes_back_a_segment(written: Written) -> None:
    """The comparison is storeTimestamp <= min timestamp: one millisecond less than segment 2's first
    store time (after the 3 s margin) no longer matches segment 2, so the walk starts at segment 1."""
    first2 = int(written.records_in(2)[0])
    ts = int(written.store_ts[first2]) + 3000
    assert plan_recovery(written.store(), written.config, abnormal=True,
                         checkpoint=_checkpoint(ts, ts, 2**62)).checked_from == written.bases[2]
    assert plan_recovery(written.store(), written.config, abnormal=True,
                         checkpoint=_checkpoint(ts - 1, ts, 2**62)).checked_from == written.bases[1]


def test_abnormal_with_message_index_safe_uses_the_index_timestamp(written: Written) -> None:
    """With messageIndexEnable && messageIndexSafe, isMappedFileMatchedRecover compares with
    getMinTimestampIndex() = min(getMinTimestamp(), indexMsgTimestamp): an index timestamp at segment 1's
    first store time moves the start from segment 4 back to segment 1."""

    @dataclasses.dataclass(frozen=True)
    class SafeConfig(BrokerConfig):
        messageIndexSafe: bool = True

    ts4 = int(written.store_ts[written.records_in(4)[0]]) + 3000
    ts1 = int(written.store_ts[written.records_in(1)[0]])
    cp = _checkpoint(ts4, ts4, ts1)
    plain = plan_recovery(written.store(), written.config, abnormal=True, checkpoint=cp)
    assert plain.checked_from == written.bases[4]
    safe_config = SafeConfig(mappedFileSizeCommitLog=SEGMENT, brokerVersion="4")
    safe = plan_recovery(written.store(), safe_config, abnormal=True, checkpoint=cp)
    assert safe.checked_from == written.bases[1]


def test_abnormal_without_checkpoint_walks_from_the_first_segment(written: Written) -> None:
    """No checkpoint file: StoreCheckpoint reads zeros, getMinTimestamp() is 0, no first record has a
    store time <= 0, so recoverAbnormally starts at index 0; a CRC error in segment 0 then cuts the
    commitlog there, which 4.9's normal recovery would not see."""
    victim = int(written.records_in(0)[1])
    flip_body_byte(written.root, int(written.offsets[victim]))
    assert not (written.root / "checkpoint").exists()
    plan = plan_recovery(written.store(), written.config, abnormal=True)
    assert plan.checked_from == written.bases[0]
    assert plan.process_offset == int(written.offsets[victim])
    assert plan.kept_segments == 1


def test_abort_file_and_checkpoint_file_are_read(written: Written) -> None:
    """DefaultMessageStore.load: lastExitOK = !abort file exists.  Without ``abort`` the recovery is
    normal; with it, abnormal, and the store's own ``checkpoint`` file picks the start segment."""
    store = written.store()
    assert plan_recovery(store, written.config).mode == "normal"
    ts = int(written.store_ts[written.records_in(3)[0]]) + 3000
    (written.root / "checkpoint").write_bytes(_checkpoint(ts, ts, ts))
    (written.root / "abort").write_bytes(b"")
    plan = plan_recovery(store, written.config)
    assert plan.mode == "abnormal"
    assert plan.checked_from == written.bases[3]


def test_window_size_does_not_change_the_plan(written: Written) -> None:
    """The walk reads bounded windows; a window far smaller than a segment gives the same plan."""
    victim = int(written.records_in(5)[7])
    flip_body_byte(written.root, int(written.offsets[victim]))
    store = written.store()
    big = plan_recovery(store, written.config, abnormal=False)
    small = plan_recovery(store, written.config, abnormal=False, window=1000)
    assert big == small
    assert small.process_offset == int(written.offsets[victim])


def test_force_verify_prop_crc_without_the_property_ends_at_the_first_record(written: Written) -> None:
    """5.3.3 checkMessageAndReturnSize with forceVerifyPropCRC=true checks the record's CRC32 property instead of
    the body CRC, and a record without one fails ("not found CRC in properties"): these records have none, so
    the normal recovery (consume queues deleted: from the first segment) ends at offset 0.  Without
    checkCRCOnRecover nothing is checked (tests/test_propcrc.py, tests/test_restart_propcrc_broker.py)."""
    config = dataclasses.replace(BrokerConfig(mappedFileSizeCommitLog=SEGMENT, brokerVersion="5"),
                                 forceVerifyPropCRC=True)
    plan = plan_recovery(written.store(), config, abnormal=False)
    assert (plan.process_offset, plan.kept_segments) == (0, 1)
    assert plan_recovery(written.store(), config, abnormal=False, check_crc=False).process_offset == written.end


@pytest.mark.parametrize("version", ["5", "5.5"])
def test_rocksdb_consume_queue_recovery_starts_at_offset_zero(written: Written, version: str) -> None:
    """storeType=defaultRocksDB with consumequeue/ deleted: the empty database's max physical offset is 0
    (RocksDBConsumeQueueOffsetTable.getMaxPhyOffset without a checkpoint entry).  5.3.3
    isMappedFileMatchedRecover (isEnableRocksDBStore) compares the first record's physicalOffset with it,
    not the checkpoint's timestamps; 5.5.1 RocksDBConsumeQueueStore dispatches from it in both recoveries,
    not from the checkpoint's logicsPhysicalOffset.  A checkpoint that starts the file queues' abnormal
    recovery at segment 2 (by its timestamps and its logicsPhysicalOffset) leaves it at segment 0; the
    normal recovery dispatches only records above offset 0, the abnormal one every record.  5.5.1 still
    walks back at most commitLogRecoverMaxNum segments; with recheckReputOffsetFromCq=true the second reput
    starts at offset 0; with enableAcceleratedRecovery the walk still starts at its segment's start."""
    rocks = dataclasses.replace(written.config, brokerVersion=version, storeType="defaultRocksDB")
    files = dataclasses.replace(rocks, storeType="default")
    ts = int(written.store_ts[written.records_in(2)[0]]) + 3000
    cp = struct.pack(">qqqqqq", ts, ts, 2**62, 0, 0, written.bases[2]).ljust(4096, b"\0")
    store = written.store()
    assert plan_recovery(store, files, abnormal=True, checkpoint=cp).checked_from == written.bases[2]
    assert plan_recovery(store, files, abnormal=False).dispatch_above == -1
    abnormal = plan_recovery(store, rocks, abnormal=True, checkpoint=cp)
    assert (abnormal.checked_from, abnormal.dispatch_from, abnormal.dispatch_above) == (0, 0, -1)
    assert abnormal.process_offset == written.end
    normal = plan_recovery(store, rocks, abnormal=False, checkpoint=cp)
    assert (normal.checked_from, normal.dispatch_from, normal.dispatch_above) == (0, 0, 0)
    if version == "5.5":
        limited = dataclasses.replace(rocks, commitLogRecoverMaxNum=3)   # segments 5, 4, 3: the count runs out
        for crashed in (False, True):
            assert plan_recovery(store, limited, abnormal=crashed, checkpoint=cp).checked_from == written.bases[3]
    recheck = dataclasses.replace(rocks, recheckReputOffsetFromCq=True)
    second = plan_recovery(store, recheck, abnormal=False)   # an empty queue table: the reput from the min offset
    assert (second.restart_reput_from, second.rocksdb_offset_zero) == (0, True)
    if version == "5.5":   # ... before the segment the recovery started from: it queues the records below,
        # indexing none of them (IndexService.buildIndex skips below the recovery's last indexed record)
        for crashed in (False, True):
            before = plan_recovery(store, dataclasses.replace(recheck, commitLogRecoverMaxNum=3), abnormal=crashed)
            assert (before.restart_reput_from, before.dispatch_from, before.rocksdb_offset_zero) == (
                0, written.bases[3], not crashed)
            assert before.index_from == written.bases[3] and before.reindex >= written.bases[3]
        accelerated = dataclasses.replace(recheck, commitLogRecoverMaxNum=3, enableAcceleratedRecovery=True)
        # the checkpoint's logicsPhysicalOffset inside segment 3 plays no part: the empty database's max physical
        # offset, 0, starts the accelerated walk at its segment's start (0 - base: the fall-back to 0)
        inside_cp = struct.pack(">qqqqqq", ts, ts, 2**62, 0, 0, written.bases[3] + 8).ljust(4096, b"\0")
        rocks_accel = plan_recovery(store, accelerated, abnormal=True, checkpoint=inside_cp)
        assert (rocks_accel.checked_from, rocks_accel.dispatch_from, rocks_accel.process_offset) == (
            written.bases[3], written.bases[3], written.end)
        from store_format.restart_reput import Accepted, start_reput_check
        with pytest.raises(ValueError, match="empty database"):   # so a walk from inside a file is no input
            start_reput_check(accelerated, 0, written.bases[3] + 8, written.end, Accepted(), abnormal=True,
                              segment_base=written.bases[3], start_on_record=lambda: False)
        files_accel = dataclasses.replace(files, brokerVersion=version, recheckReputOffsetFromCq=True,
                                          enableAcceleratedRecovery=True)
        inside = start_reput_check(files_accel, 0, written.bases[3] + 8, written.end, Accepted(), abnormal=True,
                                   segment_base=written.bases[3], start_on_record=lambda: True)
        assert inside is not None and inside.reput == 0
        cut = start_reput_check(files_accel, 0, written.bases[3] + 8, written.bases[3] + 8, Accepted(), abnormal=True,
                                segment_base=written.bases[3], start_on_record=lambda: False)   # ... which took none:
        assert cut is not None and (cut.reput, cut.index_from) == (0, -1)   # the reput up to the cut
        took = start_reput_check(files_accel, 0, written.bases[3] + 8, written.end, Accepted(), abnormal=True,
                                 segment_base=written.bases[3], start_on_record=lambda: False)   # took records there,
        assert took is not None and (took.reput, took.index_from) == (0, -1)   # no key: the reput's walk alone
        keyed = start_reput_check(files_accel, 0, written.bases[3] + 8, written.end,   # keys put (the last one at
                                  Accepted(last_indexed=written.bases[3]), abnormal=True,   # its physicalOffset field)
                                  segment_base=written.bases[3], start_on_record=lambda: False)
        assert keyed is not None and (keyed.reput, keyed.index_from, keyed.walk_first, keyed.reindex) == (
            0, written.bases[3], written.bases[3] + 8, -1)   # the walk's keys first, then the reput's from that field
        files_recheck = dataclasses.replace(files, brokerVersion=version, recheckReputOffsetFromCq=True)
        second = start_reput_check(files_recheck, 0, written.bases[3], written.end, Accepted(), abnormal=True)
        assert second is not None and (second.reput, second.index_from) == (0, -1)   # recovery queued, indexed nothing
        old = start_reput_check(dataclasses.replace(files, brokerVersion="4"), 0, written.bases[3], written.end,
                                Accepted(), abnormal=True)   # 4.9.8 (start() always) likewise
        assert old is not None and (old.reput, old.index_from) == (0, -1)


def test_plan_renders_and_serializes(written: Written) -> None:
    plan = plan_recovery(written.store(), written.config, abnormal=False)
    assert isinstance(plan, RecoveryPlan)
    d = plan.as_dict()
    assert d["process_offset"] == written.end and d["deleted_segments"] == 0
    assert str(written.end) in plan.render()
    assert os.path.isdir(written.root / "commitlog")
