"""The cleanup rules of store_format.expiry against hand-worked cases of the broker's Java
(CleanCommitLogService, MappedFileQueue.deleteExpiredFileByTime / deleteExpiredFileByOffset,
IndexService.deleteExpiredFile, ConsumeQueue.correctMinOffset / ConsumeQueueExt.truncateByMinAddress),
and the consumer offset files' format."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from pipelines.cli import time_arg as parse_time
from pipelines.tables.expiry_audit import parse_offset_table
from store_format.config import BrokerConfig
from store_format.errors import UnsupportedConfigError
from store_format.expiry import (
    EXT_GOES,
    EXT_LAST,
    EXT_NO_UNIT_LEFT,
    EXT_STAYS,
    FORCIBLY_PROPERTY,
    WARNING_PROPERTY,
    SegmentFacts,
    SpaceCheck,
    check_space,
    choose_time_source,
    delete_expired_by_offset,
    delete_expired_by_time,
    delete_hours,
    disk_bytes_ratio_read,
    disk_ratio_read,
    disk_thresholds,
    ext_files_deleted_with,
    files_deleted_with,
    index_files_to_delete,
    is_time_to_delete,
    next_time_to_delete,
    plan_cleanup,
    reference_times,
    round_batch_max,
    round_sleeps,
)

H = 3_600_000
DAY = 24 * H
AS_OF = int(dt.datetime(2024, 3, 10, 2, 0, tzinfo=dt.timezone.utc).timestamp() * 1000)  # 02:00Z


def _ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def _segments(mtimes: list[int], size: int = 1000) -> list[SegmentFacts]:
    return [SegmentFacts(f"{i * size:020d}", i * size, size, m, m - 60_000, m - 1_000) for i, m in enumerate(mtimes)]


def test_delete_expired_by_time_walks_from_the_oldest_and_never_takes_the_last() -> None:
    now, reserved = 100 * H, 72 * H
    times = np.array([0, 1 * H, 50 * H, 2 * H, 3 * H])  # the third one has not expired
    assert delete_expired_by_time(times, now, reserved, False, 10) == 2  # stops at the first that stays
    assert delete_expired_by_time(times, now, reserved, True, 10) == 4   # clean at once: all but the last
    assert delete_expired_by_time(times, now, reserved, True, 3) == 3    # batch limit
    assert delete_expired_by_time(np.array([0]), now, reserved, True, 10) == 0  # a lone segment stays
    assert delete_expired_by_time(times, now, reserved, False, 10, first=3) == 1


def test_delete_hours_and_the_next_round() -> None:
    hours = delete_hours("04;16")
    assert hours == frozenset({4, 16})
    assert is_time_to_delete(_ms("2024-03-10T04:59:59Z"), hours)
    assert not is_time_to_delete(_ms("2024-03-10T05:00:00Z"), hours)
    assert next_time_to_delete(AS_OF, hours, origin_ms=AS_OF) == _ms("2024-03-10T04:00:00Z")
    assert next_time_to_delete(_ms("2024-03-10T17:00:00Z"), hours, origin_ms=AS_OF) == _ms("2024-03-11T04:00:00Z")
    # the broker's local hour: 04 in Shanghai is 20:00Z the day before
    assert next_time_to_delete(AS_OF, delete_hours("04"), "Asia/Shanghai", origin_ms=AS_OF) == \
        _ms("2024-03-10T20:00:00Z")
    with pytest.raises(UnsupportedConfigError):
        delete_hours("4am")


def test_plan_cleanup_expired_segments_go_at_delete_when() -> None:
    # reserved 48 h; the first two expired days ago, the third expires tomorrow at 02:00, the last stays
    segs = _segments([AS_OF - 5 * DAY, AS_OF - 3 * DAY, AS_OF - 1 * DAY, AS_OF - H])
    plan = plan_cleanup(segs, BrokerConfig(fileReservedTime=48, deleteWhen="04"), AS_OF)
    four = _ms("2024-03-10T04:00:00Z")
    assert plan.time_source == ["mtime"] * 4
    assert plan.deleted_at.tolist() == [four, four, _ms("2024-03-11T04:00:00Z"), -1]
    assert plan.next_cleanup == (four, _ms("2024-03-10T05:00:00Z"))
    assert plan.at_next_cleanup().tolist() == [True, True, False, False]
    assert plan.min_offset_after([s.base for s in segs], four) == 2000
    assert plan.reason[3] == "last segment: never deleted"


def test_plan_cleanup_batch_max_and_rounds() -> None:
    segs = _segments([AS_OF - 10 * DAY] * 14 + [AS_OF])
    four = _ms("2024-03-10T04:00:00Z")
    # 4.9 deletes at most 10 per round; the next round (10 s later) takes the rest
    plan = plan_cleanup(segs, BrokerConfig(), AS_OF)
    assert plan.deleted_at.tolist() == [four] * 10 + [four + 10_000] * 4 + [-1]
    # 5.x: deleteFileBatchMax
    plan = plan_cleanup(segs, BrokerConfig(brokerVersion="5", deleteFileBatchMax=5), AS_OF)
    assert plan.deleted_at.tolist() == [four] * 5 + [four + 10_000] * 5 + [four + 20_000] * 4 + [-1]
    assert plan.at_next_cleanup().sum() == 14  # all within the 04:00 hour


def test_plan_cleanup_full_disk() -> None:
    segs = _segments([AS_OF - 4 * DAY, AS_OF - 1 * H, AS_OF - 1 * H, AS_OF])
    # above diskMaxUsedSpaceRatio (75%): expired files go now, whatever the hour
    plan = plan_cleanup(segs, BrokerConfig(), AS_OF, disk_used_ratio=0.80)
    assert plan.deleted_at.tolist()[0] == AS_OF and plan.deleted_at[1] > AS_OF
    assert plan.next_cleanup == (AS_OF, AS_OF + 1)
    # above 85% (clean forcibly): even unexpired ones go, never the last
    plan = plan_cleanup(segs, BrokerConfig(), AS_OF, disk_used_ratio=0.90)
    assert plan.deleted_at.tolist() == [AS_OF, AS_OF, AS_OF, -1]
    assert plan.clean_immediately


def test_reference_times_fall_back_to_store_times_for_copied_files() -> None:
    segs = _segments([AS_OF - 3 * DAY, AS_OF - 2 * DAY, AS_OF - DAY])
    times, used = reference_times(segs)
    assert used == ["mtime"] * 3 and times.tolist() == [s.mtime_ms for s in segs]
    # a copy: every file modified now, long after the records were written
    copied = [SegmentFacts(s.name, s.base, s.size, AS_OF, s.first_store_ms, s.last_store_ms) for s in segs]
    times, used = reference_times(copied)
    assert used == ["last_store_time"] * 3 and times.tolist() == [s.last_store_ms for s in segs]
    # modified before its own last record: not the broker's mtime either
    early = [SegmentFacts(s.name, s.base, s.size, s.last_store_ms - 60_000, s.first_store_ms, s.last_store_ms)
             for s in segs]
    assert reference_times(early)[1] == ["last_store_time"] * 3
    assert reference_times(segs, "last_store_time")[1] == ["last_store_time"] * 3


def test_consume_queue_and_index_files_go_by_offset() -> None:
    # deleteExpiredFileByOffset: oldest first, never the last, stop at the first that stays
    assert delete_expired_by_offset([100, 250, 399, 800], 400) == 3
    assert delete_expired_by_offset([100, 450, 399, 800], 400) == 1
    assert delete_expired_by_offset([100, 200], 1000) == 1
    assert delete_expired_by_offset([100, None, 50], 1000) == 1
    assert index_files_to_delete([999, 1999, 2500], 2000) == 2
    # when: with the segment holding each file's last offset
    seg_deleted = np.array([10, 10, 20, -1])
    assert files_deleted_with([150, 999, 1500, 2500, 3500], [0, 1000, 2000, 3000], seg_deleted, 5).tolist() == \
        [10, 10, 10, 20, -1]
    assert files_deleted_with([150, 2500, 999], [0, 1000, 2000, 3000], seg_deleted, 5).tolist() == [10, 20, -1]
    assert files_deleted_with([3500, 150, 160], [0, 1000, 2000, 3000], seg_deleted, 5).tolist() == [-1, -1, -1]


def test_ext_files_go_below_the_first_unit_left() -> None:
    # segments [0, 1000, 2000, 3000]: the first two go at 10, the third at 20, the last stays; the
    # minimum is then 2000 after 10 and 3000 after 20. truncateByMinAddress deletes a file whose end is
    # below the ext unit of the first unit at or above the minimum: the record opening the next file
    # must lie below the minimum (a first unit at exactly the next file's start keeps the file)
    seg_deleted = np.array([10, 10, 20, -1])
    bases = [0, 1000, 2000, 3000]
    when, why = ext_files_deleted_with([500, 1999, 2000, 2999, 3000, None], 3500, bases, seg_deleted, 5)
    assert when.tolist() == [10, 10, 20, 20, -1, -1]
    assert why.tolist() == [EXT_GOES] * 4 + [EXT_STAYS, EXT_LAST]
    # the queue's last unit below the new minimum: correctMinOffset finds no unit, nothing is cut,
    # although the minimum passed the records opening the next files
    when, why = ext_files_deleted_with([500, 2500, None], 2900, bases, seg_deleted, 5)
    assert when.tolist() == [10, -1, -1] and why.tolist() == [EXT_GOES, EXT_NO_UNIT_LEFT, EXT_LAST]
    when, why = ext_files_deleted_with([500, None], 1500, bases, seg_deleted, 5)
    assert when.tolist() == [-1, -1] and why.tolist() == [EXT_NO_UNIT_LEFT, EXT_LAST]


def test_offset_files_with_unquoted_integer_keys() -> None:
    text = '{\n\t"offsetTable":{\n\t\t"%RETRY%g1@g1":{0:0\n\t\t},\n\t\t"TopicA@g1":{0:15,1:5,2:250,3:249\n\t\t}\n\t}\n}'
    table = parse_offset_table(text)
    assert table["TopicA@g1"] == {"0": 15, "1": 5, "2": 250, "3": 249}
    assert parse_offset_table('{"offsetTable":{1:10,3:0},"dataVersion":{"counter":3}}') == {"1": 10, "3": 0}


def test_parse_time() -> None:
    assert parse_time("2024-03-10T02:00:00Z") == AS_OF
    assert parse_time("2024-03-10 02:00") == AS_OF
    assert parse_time(str(AS_OF)) == AS_OF


# ---------------------------------------------------------------------------------------------
# Each rule as the broker's Java has it (rocketmq-all-4.9.8, 5.3.3, 5.5.1); expected values are worked
# by hand from the method named in each test.

GIB = 1 << 30


def _unexpired(count: int, size: int = GIB) -> list[SegmentFacts]:
    """``count`` segments written an hour before AS_OF (72 h reserved: none expired) and the last one."""
    return [SegmentFacts(f"{i * size:020d}", i * size, size, AS_OF - H, AS_OF - H - 60_000, AS_OF - H - 1_000)
            for i in range(count + 1)]


def test_clean_file_forcibly_disabled_keeps_unexpired_segments() -> None:
    # deleteExpiredFiles: cleanAtOnce = isCleanFileForciblyEnable() && cleanImmediately; with false,
    # deleteExpiredFileByTime stops at the first unexpired segment: a 96 % disk deletes nothing now; the
    # disk keeps a round due every 10 s, so they go at the first round after they expire (written an
    # hour before AS_OF, 72 h reserved: AS_OF + 71 h, a round of the 10 s grid)
    segs = _unexpired(10)
    plan = plan_cleanup(segs, BrokerConfig(cleanFileForciblyEnable=False), AS_OF, disk_used_ratio=0.96)
    assert plan.deleted_at.tolist() == [AS_OF + 71 * H] * 10 + [-1]
    assert plan.reason_kind == ["expired"] * 10 + ["last"]
    assert plan.space.clean_immediately and not plan.clean_immediately and plan.space.writes_refused
    # enabled (the default): one forced round takes all ten (batch max 10), never the last
    plan = plan_cleanup(segs, BrokerConfig(), AS_OF, disk_used_ratio=0.96)
    assert plan.deleted_at.tolist() == [AS_OF] * 10 + [-1]
    assert plan.reason_kind == ["forced"] * 10 + ["last"]
    assert plan.rounds[0].forced and plan.rounds[0].trigger == "disk"


def test_delete_when_as_integer_parse_int_reads_it() -> None:
    # UtilAll.isItTimeToDo: when.split(";") (trailing empty parts dropped), Integer.parseInt of each
    assert delete_hours("04;16") == frozenset({4, 16})
    assert delete_hours("04;") == frozenset({4})
    assert delete_hours("+4;023") == frozenset({4, 23})
    assert delete_hours(";") == frozenset()   # ";".split(";") is empty: never time, no error
    for bad in ("04; 16", ";04", "4am", ""):
        with pytest.raises(UnsupportedConfigError, match="deletes nothing"):
            delete_hours(bad)
    # a broker with such a value throws in isTimeToDelete every round, before the disk check: even a
    # 96 % disk deletes nothing
    plan = plan_cleanup(_unexpired(3), BrokerConfig(deleteWhen="04; 16"), AS_OF, disk_used_ratio=0.96)
    assert plan.deleted_at.tolist() == [-1] * 4 and plan.next_cleanup is None
    assert plan.cleanup_error and "deletes nothing" in plan.cleanup_error
    # an hour no clock shows never matches: no time-triggered round at all
    assert next_time_to_delete(AS_OF, delete_hours("24")) is None
    # several hours: a segment expiring at 10:00 goes at the 16:00 round, not the next day's 04:00
    segs = _segments([AS_OF - 64 * H, AS_OF])  # modified 10:00 two days before: expires 10:00 after 72 h
    plan = plan_cleanup(segs, BrokerConfig(deleteWhen="04;16"), AS_OF)
    assert plan.deleted_at.tolist() == [_ms("2024-03-10T16:00:00Z"), -1]
    assert plan.reason_kind == ["expired", "last"] and "deleteWhen=04;16" in plan.reason[0]


def test_disk_thresholds_and_their_clamps() -> None:
    # MessageStoreConfig.getDiskMaxUsedSpaceRatio: 10..95 (every line)
    assert disk_thresholds(BrokerConfig(diskMaxUsedSpaceRatio=5), "5").max_used == 0.10
    assert disk_thresholds(BrokerConfig(diskMaxUsedSpaceRatio=99), "4").max_used == 0.95
    # 5.x getDiskSpaceWarningLevelRatio 0.35..0.90, getDiskSpaceCleanForciblyRatio 0.30..0.85
    th = disk_thresholds(BrokerConfig(diskSpaceWarningLevelRatio=99, diskSpaceCleanForciblyRatio=99), "5")
    assert (th.warning, th.clean_forcibly) == (0.90, 0.85)
    th = disk_thresholds(BrokerConfig(diskSpaceWarningLevelRatio=20, diskSpaceCleanForciblyRatio=10), "5")
    assert (th.warning, th.clean_forcibly) == (0.35, 0.30)
    th = disk_thresholds(BrokerConfig(diskSpaceWarningLevelRatio=80, diskSpaceCleanForciblyRatio=70), "5")
    assert (th.warning, th.clean_forcibly) == (0.80, 0.70)
    # 5.x: a non-empty system property wins over the config, and is clamped too
    props = {WARNING_PROPERTY: "0.95", FORCIBLY_PROPERTY: "0.6"}
    th = disk_thresholds(BrokerConfig(diskSpaceCleanForciblyRatio=70), "5", props)
    assert (th.warning, th.clean_forcibly) == (0.90, 0.6)
    assert disk_thresholds(BrokerConfig(diskSpaceCleanForciblyRatio=70), "5", {FORCIBLY_PROPERTY: ""}) \
        .clean_forcibly == 0.70
    # 4.9.8: the properties only (defaults 0.90 / 0.85), no clamp; the config fields do not exist there
    th = disk_thresholds(BrokerConfig(diskSpaceWarningLevelRatio=50, diskSpaceCleanForciblyRatio=40), "4")
    assert (th.warning, th.clean_forcibly) == (0.90, 0.85)
    assert disk_thresholds(BrokerConfig(), "4", props).warning == 0.95
    with pytest.raises(UnsupportedConfigError):
        disk_thresholds(BrokerConfig(), "4", {WARNING_PROPERTY: "ninety"})


def test_disk_ratio_is_read_in_whole_percent_rounded_up() -> None:
    # UtilAll.getDiskPartitionSpaceUsedPercent: usedSpace * 100 / entireSpace, +1 when not exact
    assert disk_ratio_read(85.2) == 0.86 and disk_ratio_read(85) == 0.85 and disk_ratio_read(0) == 0.0
    assert disk_bytes_ratio_read(852, 1000) == 0.86 and disk_bytes_ratio_read(850, 1000) == 0.85
    segs = _unexpired(3)
    assert plan_cleanup(segs, BrokerConfig(), AS_OF, disk_used_ratio=0.852).deleted_at.tolist() == [AS_OF] * 3 + [-1]
    # 85 % exactly is not above the clean-forcibly ratio: only expired ones go, at AS_OF + 71 h
    assert plan_cleanup(segs, BrokerConfig(), AS_OF, disk_used_ratio=0.85).deleted_at.tolist() == \
        [AS_OF + 71 * H] * 3 + [-1]


def test_space_check_differs_between_lines() -> None:
    # diskMaxUsedSpaceRatio=95, disk at 88 %: above the clean-forcibly ratio, below the max ratio
    cfg = BrokerConfig(diskMaxUsedSpaceRatio=95)
    # 4.9.8 isSpaceToDelete: cleanImmediately set, but it returns true only above diskMaxUsedSpaceRatio
    assert check_space(0.88, disk_thresholds(cfg, "4"), "4") == SpaceCheck(False, True, False)
    # 5.x: above the clean-forcibly ratio it returns true itself
    assert check_space(0.88, disk_thresholds(cfg, "5"), "5") == SpaceCheck(True, True, False)
    # above diskMaxUsedSpaceRatio (75) only: due, not forced; above 90 %: writes refused (isSpaceFull, strict >)
    assert check_space(0.80, disk_thresholds(BrokerConfig(), "4"), "4") == SpaceCheck(True, False, False)
    assert check_space(0.90, disk_thresholds(BrokerConfig(), "5"), "5").writes_refused is False
    assert check_space(0.91, disk_thresholds(BrokerConfig(), "5"), "5").writes_refused is True
    assert check_space(-1, disk_thresholds(BrokerConfig(), "5"), "5").round_due  # could not measure
    # so 4.9 forces the unexpired segments out only at the deleteWhen hour, 5.x at once
    segs = _unexpired(3)
    four = _ms("2024-03-10T04:00:00Z")
    assert plan_cleanup(segs, cfg, AS_OF, disk_used_ratio=0.88, line="4").deleted_at.tolist() == [four] * 3 + [-1]
    assert plan_cleanup(segs, cfg, AS_OF, disk_used_ratio=0.88, line="5").deleted_at.tolist() == [AS_OF] * 3 + [-1]


def test_batch_max_per_line() -> None:
    segs = _segments([AS_OF - 10 * DAY] * 3 + [AS_OF])
    four = _ms("2024-03-10T04:00:00Z")
    # 5.x deleteExpiredFileByTime breaks once files.size() >= deleteFileBatchMax: 0 means one a round
    assert round_batch_max(BrokerConfig(deleteFileBatchMax=0), "5") == 1
    plan = plan_cleanup(segs, BrokerConfig(deleteFileBatchMax=0), AS_OF, line="5")
    assert plan.deleted_at.tolist() == [four, four + 10_000, four + 20_000, -1]
    # 4.9 has no such setting: DELETE_FILES_BATCH_MAX = 10
    assert round_batch_max(BrokerConfig(deleteFileBatchMax=1), "4") == 10
    assert plan_cleanup(segs, BrokerConfig(deleteFileBatchMax=1), AS_OF, line="4").deleted_at.tolist() == \
        [four] * 3 + [-1]


def test_round_sleeps_and_the_clean_resource_interval() -> None:
    # deleteExpiredFileByTime sleeps deleteFilesInterval after a deletion unless the batch is full or
    # the file was the last candidate (i + 1 == mfs.length - 1)
    assert round_sleeps(10, 0, 15, 10) == 9      # batch full
    assert round_sleeps(4, 10, 15, 10) == 3      # the last candidate (index 13 of 15)
    assert round_sleeps(2, 0, 15, 10) == 2       # stopped at an unexpired one: slept after both
    segs = _segments([AS_OF - 10 * DAY] * 14 + [AS_OF])
    four = _ms("2024-03-10T04:00:00Z")
    # 10 deletions with 2 s sleeps take 18 s, longer than the 10 s period: the next round follows at once
    plan = plan_cleanup(segs, BrokerConfig(deleteCommitLogFilesInterval=2000), AS_OF)
    assert plan.deleted_at.tolist() == [four] * 10 + [four + 18_000] * 4 + [-1]
    # cleanResourceInterval sets the period (rounds are counted from AS_OF, 02:00: 04:00 is on the grid)
    plan = plan_cleanup(segs, BrokerConfig(cleanResourceInterval=60_000), AS_OF)
    assert plan.deleted_at.tolist() == [four] * 10 + [four + 60_000] * 4 + [-1]


def test_forced_rounds_repeat_until_the_ratio_drops() -> None:
    # 30 unexpired 1 GiB segments and the last on a 100 GiB disk at 96 %, 5.x defaults:
    # round 1 (96 % > 85): forced, 10 go -> 86 GiB; round 2 (86 % > 85): forced, 10 go -> 76 GiB;
    # round 3 (76 %): above 75 so a round runs, but not forced and nothing expired: nothing goes; rounds
    # stay due (76 > 75) and the other ten go when they expire at AS_OF + 71 h, which brings it to 66 %
    segs = _unexpired(30)
    plan = plan_cleanup(segs, BrokerConfig(), AS_OF, disk_used_ratio=0.96, disk_size_bytes=100 * GIB)
    assert plan.deleted_at.tolist() == [AS_OF] * 10 + [AS_OF + 10_000] * 10 + [AS_OF + 71 * H] * 10 + [-1]
    assert [(r.count, r.forced, r.ratio_before, r.ratio_after) for r in plan.rounds] == \
        [(10, True, 0.96, 0.86), (10, True, 0.86, 0.76), (10, False, 0.76, 0.66)]
    assert plan.reason_kind == ["forced"] * 20 + ["expired"] * 10 + ["last"]
    assert plan.next_cleanup == (AS_OF, AS_OF + 10_001)
    assert plan.space.writes_refused and plan.space_after == SpaceCheck(False, False, False)
    # without the disk's size the ratio stays at 96 %: every segment but the last goes (the bound)
    plan = plan_cleanup(segs, BrokerConfig(), AS_OF, disk_used_ratio=0.96)
    assert plan.deleted_at.tolist() == [AS_OF] * 10 + [AS_OF + 10_000] * 10 + [AS_OF + 20_000] * 10 + [-1]
    assert plan.at_next_cleanup().sum() == 30 and plan.space_after is None


def test_manual_delete_runs_twenty_rounds() -> None:
    # executeDeleteFilesManually sets manualDeleteFileSeveralTimes = 20; each round decrements it and
    # deletes expired files whatever the hour.  5.x with deleteFileBatchMax=1: one a round, 20 rounds
    segs = _segments([AS_OF - 10 * DAY] * 25 + [AS_OF])
    plan = plan_cleanup(segs, BrokerConfig(deleteFileBatchMax=1), AS_OF, manual_delete=True, line="5")
    four = _ms("2024-03-10T04:00:00Z")
    assert plan.deleted_at.tolist() == [AS_OF + k * 10_000 for k in range(20)] + \
        [four + k * 10_000 for k in range(5)] + [-1]
    assert plan.reason_kind[:20] == ["manual"] * 20 and plan.reason_kind[20:25] == ["expired"] * 5
    assert plan.next_cleanup == (AS_OF, AS_OF + 19 * 10_000 + 1)
    # unexpired segments stay: a manual round is no forced one; they go at the first 04:00 after expiry
    plan = plan_cleanup(_unexpired(3), BrokerConfig(), AS_OF, manual_delete=True)
    assert plan.deleted_at.tolist() == [_ms("2024-03-13T04:00:00Z")] * 3 + [-1]


def test_time_source_says_why() -> None:
    segs = _segments([AS_OF - 3 * DAY, AS_OF - 2 * DAY, AS_OF - DAY])
    source, why = choose_time_source(segs)
    assert source == "mtime" and "auto" in why
    copied = [SegmentFacts(s.name, s.base, s.size, AS_OF + 2 * DAY, s.first_store_ms, s.last_store_ms) for s in segs]
    source, why = choose_time_source(copied)
    assert source == "last_store_time" and "auto switched" in why and copied[0].name in why
    plan = plan_cleanup(copied, BrokerConfig(), AS_OF)
    assert plan.time_source_why == why
    assert "as asked" in choose_time_source(segs, "last_store_time")[1]


def test_the_broker_s_own_clean_files_test_cases() -> None:
    """The scenarios of the broker's ``DefaultMessageStoreCleanFilesTest`` (5.3.3): 55 commitlog files of one
    message each, rounds of ``cleanCommitLogService.run(); cleanConsumeQueueService.run()``; after round a
    its assertions expect ``55 - deleted`` commitlog files and ``floor(deleted / perFile)`` consume queue
    (and index) files gone."""
    n = 55
    old = AS_OF - 144 * H   # expireFiles: lastModified = now - 2 * fileReservedTime (72 h)
    fifteen_expired = _segments([old] * 15 + [AS_OF - H] * (n - 15))

    def gone_after(plan, rounds: int) -> int:
        times = sorted({int(t) for t in plan.deleted_at if t >= 0})[:rounds]
        return int(sum((plan.deleted_at >= 0) & np.isin(plan.deleted_at, times)))

    # testDeleteExpiredFilesByTimeUp: deleteWhen = the current hour, no disk pressure: 10, then 15
    plan = plan_cleanup(fifteen_expired, BrokerConfig(deleteWhen="2", diskMaxUsedSpaceRatio=99), AS_OF)
    assert [gone_after(plan, a) for a in (1, 2)] == [10, 15]
    # testDeleteExpiredFilesManually: deleteWhen=04 (not now), executeDeleteFilesManually: the same
    plan = plan_cleanup(fifteen_expired, BrokerConfig(deleteWhen="04", diskMaxUsedSpaceRatio=99), AS_OF,
                        manual_delete=True)
    assert [gone_after(plan, a) for a in (1, 2)] == [10, 15] and plan.deleted_at[14] < _ms("2024-03-10T04:00Z")
    # testDeleteFilesImmediatelyBySpaceFull: nothing expired, the ratios mocked below the disk's: 10 a round
    plan = plan_cleanup(_segments([AS_OF - H] * n), BrokerConfig(deleteWhen="04", diskMaxUsedSpaceRatio=1), AS_OF,
                        disk_used_ratio=0.99)
    assert [gone_after(plan, a) for a in range(1, 6)] == [10, 20, 30, 40, 50]
    # the consume queue and index files that go with them: floor(deleted / per file)
    bases = [s.base for s in fifteen_expired]
    for per_file in (3, 4, 7):
        last_units = [bases[min(k * per_file + per_file - 1, n - 1)] for k in range(-(-n // per_file))]
        for deleted in (10, 15):
            at = np.array([0] * deleted + [-1] * (n - deleted))
            went = files_deleted_with(last_units, bases, at, 0)
            assert int((went >= 0).sum()) == deleted // per_file
