"""What the broker's cleanup deletes, and when: commitlog segments, then consume queue and index files.

Read from ``DefaultMessageStore`` of rocketmq-all-4.9.8, rocketmq-all-5.3.3 and 5.5.1.  The clean
service runs every ``cleanResourceInterval`` ms (10 s, ``scheduleAtFixedRate`` after a minute) and
each run is one *round* of ``CleanCommitLogService.deleteExpiredFiles``:

* the round deletes only when ``isTimeToDelete`` (the JVM-local hour is one of ``deleteWhen``),
  ``isSpaceToDelete`` (the disk is fuller than a threshold, :func:`check_space`) or a manual delete
  is pending (``executeDeleteFilesManually``: the next ``MAX_MANUAL_DELETE_FILE_TIMES`` = 20 rounds);
* it then calls ``CommitLog.deleteExpiredFile`` -> ``MappedFileQueue.deleteExpiredFileByTime``
  (:func:`delete_expired_by_time`) with ``cleanAtOnce = cleanFileForciblyEnable && cleanImmediately``:
  only then do unexpired segments go;
* ``CleanConsumeQueueService`` (same task in 4.9; a task of its own at the same interval in 5.x,
  in ``ConsumeQueueStore`` in 5.5.1) then deletes consume queue and index files that only point
  below the new minimum commitlog offset (:func:`delete_expired_by_offset`), and, with
  ``enableConsumeQueueExt``, each queue's ext files below its first unit left
  (:func:`ext_files_deleted_with`).

Where the lines differ (see ``disk_thresholds`` and ``check_space`` in :mod:`store_format.expiry_disk`, and
:func:`round_batch_max`):
4.9 reads the two physical ratios from system properties only and deletes at most 10 files a round;
5.x reads them from ``MessageStoreConfig`` (clamped) unless the property is set, has
``deleteFileBatchMax``, and counts a disk above the clean-forcibly ratio as a reason for a round by
itself.  5.5.1 moved ``isTimeToDelete`` from the service to ``DefaultMessageStore`` (same rule).

The time each segment is compared by is chosen in :mod:`store_format.expiry_times`.  Everything here
is arithmetic on file facts (names, offsets, sizes, times); nothing reads a store.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping, Sequence

import numpy as np

from .config import BrokerConfig
from .errors import UnsupportedConfigError
from .expiry_disk import (
    FORCIBLY_PROPERTY,
    WARNING_PROPERTY,
    DiskThresholds,
    SpaceCheck,
    check_space,
    disk_bytes_ratio_read,
    disk_ratio_read,
    disk_thresholds,
)
from .expiry_times import TIME_SOURCE_MTIME, TIME_SOURCE_STORE, SegmentFacts, choose_time_source, reference_times
from .javaproperties import java_integer
from .timeutil import datetime_to_ms, ms_to_datetime, zone

__all__ = [
    "CLEAN_RESOURCE_INTERVAL_MS", "DELETE_FILES_BATCH_MAX_4", "MAX_MANUAL_DELETE_FILE_TIMES", "WARNING_PROPERTY",
    "FORCIBLY_PROPERTY", "TIME_SOURCE_MTIME", "TIME_SOURCE_STORE", "SegmentFacts", "choose_time_source",
    "reference_times", "delete_hours", "is_time_to_delete", "next_time_to_delete", "disk_ratio_read",
    "disk_bytes_ratio_read", "DiskThresholds", "disk_thresholds", "SpaceCheck", "check_space", "round_batch_max",
    "delete_expired_by_time", "round_sleeps", "delete_expired_by_offset", "index_files_to_delete", "CleanupRound",
    "CleanupPlan", "plan_cleanup", "files_deleted_with", "ext_files_deleted_with", "EXT_GOES", "EXT_LAST",
    "EXT_STAYS", "EXT_NO_UNIT_LEFT", "round_at_or_after", "next_cleanup_period",
]

CLEAN_RESOURCE_INTERVAL_MS = 10_000          # MessageStoreConfig.cleanResourceInterval default
DELETE_FILES_BATCH_MAX_4 = 10                # MappedFileQueue.DELETE_FILES_BATCH_MAX (4.9.x)
MAX_MANUAL_DELETE_FILE_TIMES = 20            # CleanCommitLogService.MAX_MANUAL_DELETE_FILE_TIMES
HOUR_MS = 3_600_000

# ---------------------------------------------------------------------------------------------
# when a round may delete: deleteWhen (the disk ratios are in expiry_disk), batch size, sleeps


def delete_hours(delete_when: str) -> frozenset[int]:
    """Hours of day of ``deleteWhen`` as ``UtilAll.isItTimeToDo`` reads them.

    ``String.split(";")`` (trailing empty parts dropped) and ``Integer.parseInt`` of each part, which
    takes no blanks.  A part that does not parse throws in every round, before the disk check, so such
    a broker never deletes anything: raised here, and :func:`plan_cleanup` turns it into a plan that
    deletes nothing (``cleanup_error``).  Hours outside 0..23 never match.
    """
    parts = delete_when.split(";")
    if len(parts) > 1:  # Java drops trailing empty parts only when the separator occurs
        while parts and parts[-1] == "":
            parts.pop()
    hours = set()
    for part in parts:
        hour = java_integer(part, 32)
        if hour is None:
            raise UnsupportedConfigError(
                f"deleteWhen={delete_when!r}: {part!r} is no hour for Integer.parseInt, so the broker's cleanup "
                "fails in every round and deletes nothing; write hours separated by ';' without blanks, e.g. 04;16")
        hours.add(hour)
    return frozenset(hours)


def is_time_to_delete(t_ms: int, hours: frozenset[int], tz: _dt.tzinfo | str | None = None) -> bool:
    """``isTimeToDelete``: whether the hour of day at ``t_ms`` (the JVM's zone) is a delete hour."""
    return ms_to_datetime(t_ms).astimezone(zone(tz)).hour in hours


def next_time_to_delete(t_ms: int, hours: frozenset[int], tz: _dt.tzinfo | str | None = None,
                        interval_ms: int = CLEAN_RESOURCE_INTERVAL_MS, origin_ms: int = 0) -> int | None:
    """First round at or after ``t_ms`` that falls in a delete hour (rounds are at
    ``origin_ms + k * interval_ms``), or None when ``hours`` names no hour of the day."""
    local = zone(tz)
    if not {h for h in hours if 0 <= h <= 23}:
        return None
    t = round_at_or_after(t_ms, origin_ms, interval_ms)
    for _ in range(24 * 3 + 2):  # DST days have 23-25 hours; three days always find one
        here = ms_to_datetime(t).astimezone(local)
        if here.hour in hours:
            return t
        next_hour = here.replace(minute=0, second=0, microsecond=0) + _dt.timedelta(hours=1)
        t = round_at_or_after(datetime_to_ms(next_hour), origin_ms, interval_ms)
    return None


def round_at_or_after(t_ms: int, origin_ms: int, interval_ms: int) -> int:
    if t_ms <= origin_ms:
        return origin_ms
    return origin_ms + -(-(t_ms - origin_ms) // interval_ms) * interval_ms


def round_batch_max(config: BrokerConfig, line: str) -> int:
    """Files one round deletes at most: 4.9 ``DELETE_FILES_BATCH_MAX`` (10); 5.x ``deleteFileBatchMax``.
    ``deleteExpiredFileByTime`` stops once ``files.size() >= max`` after a deletion, so 0 or less
    means one file a round (what 5.x ``CommitLog.deleteExpiredFile`` without a batch argument passes)."""
    return max(DELETE_FILES_BATCH_MAX_4 if line == "4" else int(config.deleteFileBatchMax), 1)


def delete_expired_by_time(times_ms: np.ndarray, now_ms: int, reserved_ms: int, clean_immediately: bool,
                           batch_max: int, first: int = 0) -> int:
    """How many segments one round deletes, from ``first`` on (``MappedFileQueue.deleteExpiredFileByTime``).

    Walks segments ``first .. n-2`` (never the last, the one being written), deletes each whose
    ``lastModified + fileReservedTime <= now`` (or any, when ``clean_immediately``), stops at the
    first that must stay ("in the middle" files are never deleted) or once ``batch_max`` went
    (at least one).  ``MappedFile.destroy`` is taken to succeed: a file a reader still holds stops
    the round instead and is retried by later rounds until ``destroyMapedFileIntervalForcibly``
    (120 s) after the first try (``ReferenceResource.shutdown``), so the broker may be up to that
    much later than the plan.
    """
    n = len(times_ms)
    batch_max = max(batch_max, 1)
    count = 0
    for i in range(first, n - 1):
        if not (now_ms >= int(times_ms[i]) + reserved_ms or clean_immediately):
            break
        count += 1
        if count >= batch_max:
            break
    return count


def round_sleeps(count: int, first: int, n: int, batch_max: int) -> int:
    """Sleeps of ``deleteCommitLogFilesInterval`` in a round that deleted ``count`` segments from
    ``first`` of ``n``: after each deletion, unless the batch is full or it was the last candidate
    (index ``n - 2``)."""
    if count <= 0:
        return 0
    last_deleted = first + count - 1
    return count - (1 if count >= max(batch_max, 1) or last_deleted + 1 >= n - 1 else 0)


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


# ---------------------------------------------------------------------------------------------
# playing the rounds forward


@dataclasses.dataclass(frozen=True)
class CleanupRound:
    """One round that deleted segments."""
    at_ms: int
    first: int                 # index of the first segment it deleted
    count: int
    trigger: str               # "deleteWhen" | "disk" | "manual" (the first that holds, in that order)
    forced: bool               # cleanAtOnce: unexpired segments could go
    ratio_before: float | None
    ratio_after: float | None  # None: not known (no disk size)
    duration_ms: int           # the deleteCommitLogFilesInterval sleeps


@dataclasses.dataclass
class CleanupPlan:
    """When each segment goes, as the cleanup would run from ``as_of`` on.

    ``deleted_at[i]``: start of the round that deletes segment i, or -1 (kept).  ``reason_kind[i]``:
    ``expired`` (its time passed; a deleteWhen hour or a full disk started the round), ``forced``
    (not expired: the disk was above the clean-forcibly ratio), ``manual`` (expired, the round ran
    because of a manual delete), ``last`` or ``kept``.  ``next_cleanup``: ``(first, until)`` of the
    first period that deletes: the deleteWhen hour(s), or the back-to-back rounds a full disk or a
    manual delete runs.
    """
    as_of_ms: int
    reference_ms: np.ndarray
    time_source: list[str]
    time_source_why: str
    expires_at: np.ndarray
    deleted_at: np.ndarray
    next_cleanup: tuple[int, int] | None
    reason: list[str]
    reason_kind: list[str]
    rounds: list[CleanupRound]
    line: str
    thresholds: DiskThresholds
    ratio_read: float | None         # the used share the broker reads at as_of (None: not given)
    space: SpaceCheck                # at as_of
    space_after: SpaceCheck | None   # after the next cleanup (None: no disk size, cannot know)
    clean_immediately: bool          # cleanAtOnce at as_of
    space_full: bool                 # a round is due at as_of because of the disk
    cleanup_error: str | None = None  # why the broker's rounds fail before deleting anything

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
                 disk_used_ratio: float | None = None, disk_size_bytes: int | None = None,
                 tz: _dt.tzinfo | str | None = None, time_source: str = "auto", interval_ms: int | None = None,
                 manual_delete: bool = False, system_properties: Mapping[str, str] | None = None,
                 line: str | None = None, horizon_ms: int = 400 * 24 * HOUR_MS) -> CleanupPlan:
    """Run the rounds (``CleanCommitLogService.deleteExpiredFiles``) from ``as_of_ms`` until every
    segment but the last is gone or the horizon passes.

    Args:
        segments: the live segments in offset order.
        config: the cleanup settings (``fileReservedTime`` hours, ``deleteWhen``, the ratios,
            ``cleanFileForciblyEnable``, ``deleteFileBatchMax``, ``cleanResourceInterval``,
            ``deleteCommitLogFilesInterval``).
        as_of_ms: the first round's time (rounds follow every ``cleanResourceInterval``).
        disk_used_ratio: used share of the commitlog's disk at ``as_of`` (0..1, read as the broker
            rounds it: :func:`disk_ratio_read`); None: below every threshold.
        disk_size_bytes: the disk's size: each deleted segment then frees its file size and the ratio
            drops; None: the ratio is taken as constant, so disk-driven rounds go on until only the
            last segment is left (an upper bound).  New writes are not counted either way.
        tz: the broker JVM's time zone (``deleteWhen`` hours are local hours).
        time_source: see :func:`choose_time_source`.
        manual_delete: ``executeDeleteFilesManually`` (admin ``deleteExpiredCommitLog``) just before
            ``as_of``: the next 20 rounds run whatever the hour.
        system_properties: the broker JVM's ``-D`` settings (the two ratio properties).
        line: "4" or "5" (default: from ``config.brokerVersion``; "auto" gives "5").
    """
    line = line or ("4" if config.brokerVersion == "4" else "5")
    source, why = choose_time_source(segments, time_source)
    times, used = reference_times(segments, source)
    reserved = int(config.fileReservedTime) * HOUR_MS
    try:
        hours = delete_hours(config.deleteWhen)
        cleanup_error = None
    except UnsupportedConfigError as e:  # every round throws in isTimeToDelete: nothing is ever deleted
        hours, cleanup_error = frozenset(), str(e)
    batch_max = round_batch_max(config, line)
    interval = int(interval_ms if interval_ms is not None else config.cleanResourceInterval)
    interval = max(interval, 1)
    th = disk_thresholds(config, line, system_properties)
    n = len(segments)
    size = int(disk_size_bytes or 0)
    used_bytes = None if disk_used_ratio is None or size <= 0 else round(disk_used_ratio * size)

    def ratio_now() -> float | None:
        if disk_used_ratio is None:
            return None
        if used_bytes is None:
            return disk_ratio_read(disk_used_ratio * 100)
        return disk_bytes_ratio_read(max(used_bytes, 0), size)

    ratio0 = ratio_now()
    space0 = check_space(ratio0, th, line)
    deleted = np.full(n, -1, dtype=np.int64)
    kinds = ["kept"] * n
    reasons = ["not deleted within the horizon"] * n
    rounds: list[CleanupRound] = []
    manual_left = MAX_MANUAL_DELETE_FILE_TIMES if manual_delete else 0
    first, t, end = 0, as_of_ms, as_of_ms + horizon_ms
    if cleanup_error:
        reasons = [f"kept: the broker's cleanup fails ({cleanup_error})"] * n
    while first < n - 1 and t <= end and not cleanup_error:
        ratio = ratio_now()
        space = check_space(ratio, th, line)
        time_up = is_time_to_delete(t, hours, tz)
        manual = manual_left > 0
        if not (time_up or space.round_due or manual):
            nt = next_time_to_delete(t, hours, tz, interval, as_of_ms)
            if nt is None or nt > end:
                break
            t = nt
            continue
        if manual:
            manual_left -= 1
        at_once = bool(config.cleanFileForciblyEnable) and space.clean_immediately
        k = delete_expired_by_time(times, t, reserved, at_once, batch_max, first)
        if k:
            trigger = "deleteWhen" if time_up else "disk" if space.round_due else "manual"
            for i in range(first, first + k):
                deleted[i] = t
                kinds[i], reasons[i] = _reason(t >= int(times[i]) + reserved, trigger, config, th, ratio)
            if used_bytes is not None:
                used_bytes -= sum(int(s.size) for s in segments[first:first + k])
            duration = round_sleeps(k, first, n, batch_max) * max(int(config.deleteCommitLogFilesInterval), 0)
            rounds.append(CleanupRound(t, first, k, trigger, at_once, ratio,
                                       ratio_now() if used_bytes is not None else None, duration))
            first += k
            t = max(round_at_or_after(t + 1, as_of_ms, interval), t + duration)
            continue
        if manual_left > 0:
            t = round_at_or_after(t + 1, as_of_ms, interval)
            continue
        # nothing goes until the oldest remaining segment expires
        t = max(round_at_or_after(t + 1, as_of_ms, interval),
                round_at_or_after(int(times[first]) + reserved, as_of_ms, interval))
    if n:
        kinds[-1], reasons[-1] = "last", "last segment: never deleted"
    space_after = check_space(ratio_now(), th, line) if used_bytes is not None else None
    return CleanupPlan(as_of_ms, times, used, why, times + reserved, deleted,
                       next_cleanup_period(rounds, hours, tz, interval), reasons, kinds, rounds, line, th, ratio0,
                       space0, space_after, bool(config.cleanFileForciblyEnable) and space0.clean_immediately,
                       space0.round_due, cleanup_error)


def _reason(expired: bool, trigger: str, config: BrokerConfig, th: DiskThresholds, ratio: float | None
            ) -> tuple[str, str]:
    pct = "" if ratio is None else f"{ratio * 100:.0f} %"
    if not expired:
        return "forced", (f"forced: disk {pct} above the clean-forcibly ratio {th.clean_forcibly * 100:.0f} % "
                          "(cleanFileForciblyEnable=true), not expired")
    if trigger == "deleteWhen":
        return "expired", f"expired (fileReservedTime={config.fileReservedTime} h); deleteWhen={config.deleteWhen}"
    if trigger == "disk":
        return "expired", (f"expired (fileReservedTime={config.fileReservedTime} h); disk {pct} above "
                           f"{th.max_used * 100:.0f} % (diskMaxUsedSpaceRatio)")
    return "manual", f"manual delete (deleteExpiredCommitLog): expired (fileReservedTime={config.fileReservedTime} h)"


def next_cleanup_period(rounds: list[CleanupRound], hours: frozenset[int], tz: _dt.tzinfo | str | None,
                  interval: int) -> tuple[int, int] | None:
    """The first deleting round and the end of its period: the rounds that follow it tick by tick
    (a full disk or a manual delete), and the whole delete hour(s) when a deleteWhen hour started it."""
    if not rounds:
        return None
    lo = rounds[0].at_ms
    hi = lo + 1
    prev = rounds[0]
    for r in rounds[1:]:
        if r.at_ms - prev.at_ms > max(interval, prev.duration_ms):
            break
        hi, prev = r.at_ms + 1, r
    if rounds[0].trigger == "deleteWhen":
        here = ms_to_datetime(lo).astimezone(zone(tz)).replace(minute=0, second=0, microsecond=0)
        end = lo
        for _ in range(25):  # the delete hours following each other (all day: one day)
            if not is_time_to_delete(end, hours, tz):
                break
            here = here + _dt.timedelta(hours=1)
            end = datetime_to_ms(here)
        hi = max(hi, end)
    return lo, hi


def files_deleted_with(file_max_offsets: Sequence[int | None], segment_bases: Sequence[int],
                       segment_deleted_at: np.ndarray, as_of_ms: int) -> np.ndarray:
    """When each file of an offset-ordered list goes (consume queue files of one queue, or index files).

    A file goes in the round whose new minimum commitlog offset passes its last offset
    (:func:`delete_expired_by_offset`, run by ``CleanConsumeQueueService``: right after the commitlog
    round in 4.9, on its own timer of the same period in 5.x, so up to one period later there), and
    only after the files before it; the last file never goes.  Times given are the commitlog round's.

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


EXT_GOES, EXT_LAST, EXT_STAYS, EXT_NO_UNIT_LEFT = 0, 1, 2, 3


def ext_files_deleted_with(next_first_offsets: Sequence[int | None], last_unit_offset: int | None,
                           segment_bases: Sequence[int], segment_deleted_at: np.ndarray,
                           as_of_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """When each ext file of one consume queue goes (``enableConsumeQueueExt``), and why.

    ``ConsumeQueue.deleteExpiredFile`` (4.9.8, 5.3.3, 5.5.1), run for every queue by
    ``CleanConsumeQueueService`` once the commitlog's minimum offset ``m`` grew, deletes the consume
    queue files, then calls ``correctMinOffset(m)``: the first unit of the queue's first file left whose
    commitlog offset is at least ``m`` (4.9 walks the file, 5.x binary-searches it from the previous
    minimum) gives its tagsCode, an ext address, to ``ConsumeQueueExt.truncateByMinAddress``, which
    deletes every ext file whose end (start + ``mappedFileSizeConsumeQueueExt``) is *below* that unit's
    ext offset.  When no unit of the queue is at or above ``m`` (4.9: none in the first file left, which
    is then the last; 5.x: the last unit is below ``m``, "no valid entries") nothing is cut.

    So ext file ``i`` goes once every unit up to the first one of file ``i + 1`` lies below ``m``: the
    first unit left then has its ext unit past the start of file ``i + 1``, i.e. past file ``i``'s end
    (a unit at exactly that start keeps file ``i``).  The last ext file never goes.

    Args:
        next_first_offsets: per ext file in order, the commitlog offset of the record whose ext unit
            opens the next file (None for the last file).
        last_unit_offset: commitlog offset of the queue's last unit (None: no unit).
        segment_bases / segment_deleted_at / as_of_ms: as for :func:`files_deleted_with` (the round
            times are the commitlog round's; 5.x runs the consume queue task on its own timer, up to a
            period later, and then cuts at the minimum of that time).
    Returns:
        Per file, the round time (-1: stays) and why: ``EXT_GOES``, ``EXT_LAST`` (last ext file),
        ``EXT_STAYS`` (the next file's first record stays in the commitlog within the horizon),
        ``EXT_NO_UNIT_LEFT`` (when the minimum passes it, every unit of the queue lies below the minimum:
        nothing is cut then, nor later without new messages).
    """
    bases = np.asarray(segment_bases, dtype=np.int64)
    deleted = np.asarray(segment_deleted_at, dtype=np.int64)
    n = len(next_first_offsets)
    out = np.full(n, -1, dtype=np.int64)
    why = np.full(n, EXT_STAYS, dtype=np.int8)
    for i, key in enumerate(next_first_offsets):
        if key is None:
            why[i] = EXT_LAST
            continue
        k = int(np.searchsorted(bases, key, side="right")) - 1
        t = as_of_ms if k < 0 else int(deleted[k])
        if t < 0:
            continue
        gone = (deleted >= 0) & (deleted <= t)
        kept = np.nonzero(~gone)[0]
        m = int(bases[kept[0]]) if len(kept) else int(bases[-1])
        if last_unit_offset is None or m > last_unit_offset:
            why[i] = EXT_NO_UNIT_LEFT
            continue
        out[i], why[i] = t, EXT_GOES
    return out, why
