"""What the broker's cleanup deletes, and when: commitlog segments, then consume queue and index files.

Mirrors ``DefaultMessageStore.cleanFilesPeriodically``, which runs every ``cleanResourceInterval``
(10 s) and calls, in this order:

* ``CleanCommitLogService.deleteExpiredFiles``: a round happens when the hour of day is one of
  ``deleteWhen`` (``UtilAll.isItTimeToDo``, ``;``-separated hours, the JVM's time zone) or the disk
  is fuller than ``diskMaxUsedSpaceRatio`` (``isSpaceToDelete``); above the "clean forcibly" ratio
  (85 %) the round deletes files whether they expired or not (``cleanImmediately``).
  ``MappedFileQueue.deleteExpiredFileByTime`` walks segments from the oldest, never the last one,
  deletes each whose ``lastModified + fileReservedTime`` has passed, stops at the first that must
  stay ("avoid deleting files in the middle") and after ``deleteFileBatchMax`` files (4.9: the
  constant ``DELETE_FILES_BATCH_MAX`` = 10).
* ``CleanConsumeQueueService.deleteExpiredFiles``: with the new minimum commitlog offset (the base
  of the first remaining segment), each queue's ``MappedFileQueue.deleteExpiredFileByOffset`` deletes
  files from the oldest, never the last one, while the commitlog offset of the file's last unit is
  below it; ``IndexService.deleteExpiredFile`` does the same for index files with their header's
  ``endPhyOffset``.

Everything here is arithmetic on file facts (names, offsets, times); nothing reads a store.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Sequence

import numpy as np

from .config import BrokerConfig
from .errors import UnsupportedConfigError
from .timeutil import datetime_to_ms, ms_to_datetime, zone

__all__ = [
    "CLEAN_RESOURCE_INTERVAL_MS", "DISK_SPACE_CLEAN_FORCIBLY_RATIO", "DELETE_FILES_BATCH_MAX_4",
    "TIME_SOURCE_MTIME", "TIME_SOURCE_STORE", "SegmentFacts", "reference_times", "delete_hours",
    "is_time_to_delete", "next_time_to_delete", "delete_expired_by_time", "delete_expired_by_offset",
    "index_files_to_delete", "CleanupPlan", "plan_cleanup", "files_deleted_with",
]

CLEAN_RESOURCE_INTERVAL_MS = 10_000          # MessageStoreConfig.cleanResourceInterval
DISK_SPACE_CLEAN_FORCIBLY_RATIO = 0.85       # rocketmq.broker.diskSpaceCleanForciblyRatio (4.9), 85 (5.x)
DELETE_FILES_BATCH_MAX_4 = 10                # MappedFileQueue.DELETE_FILES_BATCH_MAX (4.9.x)
HOUR_MS = 3_600_000

TIME_SOURCE_MTIME = "mtime"                  # the file's last-modified time, what the broker uses
TIME_SOURCE_STORE = "last_store_time"        # the store time of the segment's last record (copies lost mtimes)

# how far an mtime may trail the segment's last record, and lead the next segment's first record,
# and still be the broker's own (flushes are asynchronous)
_MTIME_BEFORE_LAST_RECORD_MS = 2_000
_MTIME_AFTER_NEXT_FIRST_MS = 10 * 60_000


@dataclasses.dataclass(frozen=True)
class SegmentFacts:
    """What the cleanup looks at for one commitlog segment."""
    name: str
    base: int
    size: int
    mtime_ms: int | None            # file modification time (None: unknown)
    first_store_ms: int | None      # store time of its first and last record (None: no record)
    last_store_ms: int | None


def reference_times(segments: Sequence[SegmentFacts], source: str = "auto") -> tuple[np.ndarray, list[str]]:
    """The "last modified" time the cleanup compares with ``fileReservedTime``, per segment.

    The broker uses ``File.lastModified()``.  Copies of a store often lose it (all files carry the
    copy time); then the store time of each segment's last record is the best stand-in.

    Args:
        segments: segments in offset order.
        source: ``"mtime"``, ``"last_store_time"``, or ``"auto"``: the mtimes when every segment has one
            and they are plausible (a segment is modified when its last record is written and not
            much after the next segment's first record), else the last store times for all.
    Returns:
        ``(times in ms, source of each time)``; a segment with neither time gets the other segments'
        source and time 0 (expired long ago).
    """
    if source not in ("auto", TIME_SOURCE_MTIME, TIME_SOURCE_STORE):
        raise ValueError(f"time source must be auto, {TIME_SOURCE_MTIME} or {TIME_SOURCE_STORE}, got {source!r}")
    if source == "auto":
        source = TIME_SOURCE_MTIME if _mtimes_plausible(segments) else TIME_SOURCE_STORE
    times = np.zeros(len(segments), dtype=np.int64)
    used: list[str] = []
    for i, s in enumerate(segments):
        primary = s.mtime_ms if source == TIME_SOURCE_MTIME else s.last_store_ms
        other = s.last_store_ms if source == TIME_SOURCE_MTIME else s.mtime_ms
        if primary is not None:
            times[i] = primary
            used.append(source)
        elif other is not None:
            times[i] = other
            used.append(TIME_SOURCE_STORE if source == TIME_SOURCE_MTIME else TIME_SOURCE_MTIME)
        else:
            used.append(source)
    return times, used


def _mtimes_plausible(segments: Sequence[SegmentFacts]) -> bool:
    if not segments or any(s.mtime_ms is None for s in segments):
        return False
    for i, s in enumerate(segments):
        mtime = int(s.mtime_ms or 0)
        if s.last_store_ms is not None and mtime < s.last_store_ms - _MTIME_BEFORE_LAST_RECORD_MS:
            return False  # modified before its own last record was written
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        if nxt is not None and nxt.first_store_ms is not None and \
                mtime > nxt.first_store_ms + _MTIME_AFTER_NEXT_FIRST_MS:
            return False  # modified long after the broker moved on to the next segment: a copy
    return True


def delete_hours(delete_when: str) -> frozenset[int]:
    """Hours of day of ``deleteWhen`` (``UtilAll.isItTimeToDo``: ``;``-separated integers)."""
    hours = set()
    for part in delete_when.split(";"):
        try:
            hours.add(int(part.strip()))
        except ValueError:
            raise UnsupportedConfigError(
                f"deleteWhen={delete_when!r}: use hours of day separated by ';', e.g. 04 or 04;16 (the broker's "
                "cleanup thread fails on this value)") from None
    return frozenset(hours)


def is_time_to_delete(t_ms: int, hours: frozenset[int], tz: _dt.tzinfo | str | None = None) -> bool:
    """Whether the hour of day at ``t_ms`` (in the broker JVM's zone) is a delete hour."""
    return ms_to_datetime(t_ms).astimezone(zone(tz)).hour in hours


def next_time_to_delete(t_ms: int, hours: frozenset[int], tz: _dt.tzinfo | str | None = None,
                        interval_ms: int = CLEAN_RESOURCE_INTERVAL_MS, origin_ms: int = 0) -> int | None:
    """First cleanup round at or after ``t_ms`` that falls in a delete hour (rounds are at
    ``origin_ms + k * interval_ms``), or None when ``hours`` names no hour of the day."""
    local = zone(tz)
    valid = {h for h in hours if 0 <= h <= 23}
    if not valid:
        return None
    t = _round_at_or_after(t_ms, origin_ms, interval_ms)
    for _ in range(24 * 3 + 2):  # DST days have 23-25 hours; three days always find one
        here = ms_to_datetime(t).astimezone(local)
        if here.hour in valid:
            return t
        next_hour = (here.replace(minute=0, second=0, microsecond=0) + _dt.timedelta(hours=1))
        t = _round_at_or_after(datetime_to_ms(next_hour), origin_ms, interval_ms)
    return None


def _round_at_or_after(t_ms: int, origin_ms: int, interval_ms: int) -> int:
    k = -(-(t_ms - origin_ms) // interval_ms)
    return origin_ms + max(k, 0) * interval_ms if t_ms >= origin_ms else origin_ms


def delete_expired_by_time(times_ms: np.ndarray, now_ms: int, reserved_ms: int, clean_immediately: bool,
                           batch_max: int, first: int = 0) -> int:
    """How many segments one round deletes, from ``first`` on (``MappedFileQueue.deleteExpiredFileByTime``).

    Walks segments ``first .. n-2`` (never the last), deletes each expired one (or any, when
    ``clean_immediately``), stops at the first that must stay or after ``batch_max`` deletions.
    """
    n = len(times_ms)
    count = 0
    for i in range(first, n - 1):
        if now_ms >= int(times_ms[i]) + reserved_ms or clean_immediately:
            count += 1
            if count >= batch_max:
                break
        else:
            break
    return count


def delete_expired_by_offset(last_unit_offsets: Sequence[int | None], min_offset: int) -> int:
    """How many files of one consume queue go when the commitlog starts at ``min_offset``
    (``MappedFileQueue.deleteExpiredFileByOffset``): from the oldest, never the last, while the
    commitlog offset of the file's last unit is below it.  ``None`` marks a file without a last
    unit (not full): the walk stops there."""
    count = 0
    for off in list(last_unit_offsets)[:-1]:
        if off is not None and off < min_offset:
            count += 1
        else:
            break
    return count


def index_files_to_delete(end_phy_offsets: Sequence[int], min_offset: int) -> int:
    """How many index files go (``IndexService.deleteExpiredFile``): from the oldest, never the
    last, while the header's endPhyOffset is below ``min_offset``."""
    return delete_expired_by_offset(list(end_phy_offsets), min_offset)


@dataclasses.dataclass
class CleanupPlan:
    """When each segment goes, as the cleanup thread would run from ``as_of`` on.

    ``deleted_at[i]``: time of the round that deletes segment i, or -1 (kept: the last segment, or
    not within the horizon).  ``next_cleanup``: ``(first, until)`` times of the first round that
    deletes something and the end of that cleanup period (the delete hour, or that round alone
    when a full disk triggered it), or None.
    """
    as_of_ms: int
    reference_ms: np.ndarray
    time_source: list[str]
    expires_at: np.ndarray
    deleted_at: np.ndarray
    next_cleanup: tuple[int, int] | None
    reason: list[str]
    clean_immediately: bool
    space_full: bool

    def at_next_cleanup(self) -> np.ndarray:
        if self.next_cleanup is None:
            return np.zeros(len(self.deleted_at), dtype=bool)
        lo, hi = self.next_cleanup
        return (self.deleted_at >= lo) & (self.deleted_at < hi)

    def min_offset_after(self, bases: Sequence[int], t_ms: int) -> int:
        """The commitlog's minimum offset once every round up to ``t_ms`` ran."""
        gone = (self.deleted_at >= 0) & (self.deleted_at <= t_ms)
        kept = np.nonzero(~gone)[0]
        return int(bases[kept[0]]) if len(kept) else int(bases[-1])


def plan_cleanup(segments: Sequence[SegmentFacts], config: BrokerConfig, as_of_ms: int, *,
                 disk_used_ratio: float | None = None, tz: _dt.tzinfo | str | None = None,
                 time_source: str = "auto", interval_ms: int = CLEAN_RESOURCE_INTERVAL_MS,
                 horizon_ms: int = 400 * 24 * HOUR_MS) -> CleanupPlan:
    """Run the cleanup rounds from ``as_of_ms`` until every segment but the last is gone or the
    horizon passes.

    Args:
        segments: the live segments in offset order.
        config: ``fileReservedTime`` (hours), ``deleteWhen``, ``diskMaxUsedSpaceRatio`` (%),
            ``deleteFileBatchMax`` (5.x; 4.9 always deletes at most 10 per round).
        as_of_ms: the first round's time.
        disk_used_ratio: used share of the commitlog's disk (0..1), taken as constant; None: below
            every threshold.
        tz: the broker JVM's time zone (``deleteWhen`` hours are local hours).
        time_source: see :func:`reference_times`.
    """
    times, used = reference_times(segments, time_source)
    reserved = int(config.fileReservedTime) * HOUR_MS
    hours = delete_hours(config.deleteWhen)
    batch_max = int(config.deleteFileBatchMax) if config.is_5x else DELETE_FILES_BATCH_MAX_4
    batch_max = max(batch_max, 1)
    space_full = disk_used_ratio is not None and disk_used_ratio > config.diskMaxUsedSpaceRatio / 100.0
    clean_now = disk_used_ratio is not None and disk_used_ratio > DISK_SPACE_CLEAN_FORCIBLY_RATIO
    space_full = space_full or clean_now
    n = len(segments)
    deleted = np.full(n, -1, dtype=np.int64)
    first = 0
    t = as_of_ms
    end = as_of_ms + horizon_ms
    while first < n - 1 and t <= end:
        if not space_full:
            nt = next_time_to_delete(t, hours, tz, interval_ms, as_of_ms)
            if nt is None:
                break
            t = nt
            if t > end:
                break
        k = delete_expired_by_time(times, t, reserved, clean_now, batch_max, first)
        if k:
            deleted[first:first + k] = t
            first += k
            t += interval_ms
            continue
        # nothing goes until the oldest remaining segment expires
        t = max(t + interval_ms, _round_at_or_after(int(times[first]) + reserved, as_of_ms, interval_ms))
    next_cleanup = None
    if (deleted >= 0).any():
        lo = int(deleted[deleted >= 0].min())
        if space_full:
            hi = lo + 1
        else:
            here = ms_to_datetime(lo).astimezone(zone(tz)).replace(minute=0, second=0, microsecond=0)
            hi = lo
            for _ in range(25):  # the delete hours following each other (all day: one day)
                if not is_time_to_delete(hi, hours, tz):
                    break
                here = here + _dt.timedelta(hours=1)
                hi = datetime_to_ms(here)
        next_cleanup = (lo, hi)
    reasons = []
    for i in range(n):
        if i == n - 1:
            reasons.append("last segment: never deleted")
        elif deleted[i] < 0:
            reasons.append("not deleted within the horizon")
        elif clean_now:
            reasons.append("disk above the clean-forcibly ratio: deleted expired or not")
        elif space_full and deleted[i] < times[i] + reserved:
            reasons.append("disk above diskMaxUsedSpaceRatio")
        elif space_full:
            reasons.append("expired; disk above diskMaxUsedSpaceRatio")
        else:
            reasons.append(f"expired; deleteWhen={config.deleteWhen}")
    return CleanupPlan(as_of_ms, times, used, times + reserved, deleted, next_cleanup, reasons, clean_now, space_full)


def files_deleted_with(file_max_offsets: Sequence[int | None], segment_bases: Sequence[int],
                       segment_deleted_at: np.ndarray, as_of_ms: int) -> np.ndarray:
    """When each file of an offset-ordered list goes (consume queue files of one queue, or index files).

    A file goes in the round whose new minimum commitlog offset passes its last offset
    (:func:`delete_expired_by_offset`), and only after the files before it; the last file never goes.

    Args:
        file_max_offsets: per file, the commitlog offset of its last unit/entry (None: none).
        segment_bases: base offsets of the live segments, in order.
        segment_deleted_at: :attr:`CleanupPlan.deleted_at`.
        as_of_ms: the first round (files pointing below the first live segment go then).
    Returns:
        Round time per file, -1 when it stays.
    """
    bases = np.asarray(segment_bases, dtype=np.int64)
    out = np.full(len(file_max_offsets), -1, dtype=np.int64)
    prev = -1
    for i, off in enumerate(file_max_offsets):
        if i == len(file_max_offsets) - 1 or off is None:
            break
        # the min offset passes ``off`` once every segment starting at or below it is deleted
        k = int(np.searchsorted(bases, off, side="right")) - 1
        if k < 0:
            t = as_of_ms  # points below the commitlog already: goes at the first round
        else:
            t = int(segment_deleted_at[k])
            if t < 0:
                break
        t = max(t, prev)
        out[i] = t
        prev = t
    return out
