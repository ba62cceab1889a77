"""The cleanup rules of store_format.expiry against hand-worked cases of the broker's Java
(CleanCommitLogService, MappedFileQueue.deleteExpiredFileByTime / deleteExpiredFileByOffset,
IndexService.deleteExpiredFile), and the consumer offset files' format."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from pipelines.audit import parse_offset_table
from pipelines.cli import time_arg as parse_time
from store_format.config import BrokerConfig
from store_format.errors import UnsupportedConfigError
from store_format.expiry import (
    SegmentFacts,
    delete_expired_by_offset,
    delete_expired_by_time,
    delete_hours,
    files_deleted_with,
    index_files_to_delete,
    is_time_to_delete,
    next_time_to_delete,
    plan_cleanup,
    reference_times,
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


def test_offset_files_with_unquoted_integer_keys() -> None:
    text = '{\n\t"offsetTable":{\n\t\t"%RETRY%g1@g1":{0:0\n\t\t},\n\t\t"TopicA@g1":{0:15,1:5,2:250,3:249\n\t\t}\n\t}\n}'
    table = parse_offset_table(text)
    assert table["TopicA@g1"] == {"0": 15, "1": 5, "2": 250, "3": 249}
    assert parse_offset_table('{"offsetTable":{1:10,3:0},"dataVersion":{"counter":3}}') == {"1": 10, "3": 0}


def test_parse_time() -> None:
    assert parse_time("2024-03-10T02:00:00Z") == AS_OF
    assert parse_time("2024-03-10 02:00") == AS_OF
    assert parse_time(str(AS_OF)) == AS_OF
