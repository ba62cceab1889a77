"""What the cleanup deletes on a DLedger store (``enableDLegerCommitLog=true``), and when.

Read from ``DLedgerCommitLog`` of rocketmq-all-4.9.8 and 5.3.3 (the 5.5.1 jar's bytecode agrees) and
from dledger 0.3.1.2 (``DLedgerMmapFileStore``, ``MmapFileList``, ``DLedgerConfig``, ``DLedgerUtils``;
the 0.3.3.4 jar of 5.5.1 has the same ``CleanSpaceService``).  Two cleanups share the store:

* a store that has old ``commitlog/`` files (converted in place) when it starts gets DLedger's
  reserved time set to 10 years without forced cleaning (``recover`` calls ``disableDeleteDledger``);
  one without has the broker's settings from ``DLedgerCommitLog``'s constructor:
  ``enableDiskForceClean`` = ``cleanFileForciblyEnable``, ``deleteWhen``, ``fileReservedHours`` =
  ``fileReservedTime + 1``;
* 4.9.8: the broker's ``CleanCommitLogService`` rounds (:mod:`store_format.expiry`) call
  ``DLedgerCommitLog.deleteExpiredFile``.  While old files exist it deletes them by the broker's own
  rules (``MappedFileQueue.deleteExpiredFileByTime``, and then, in a round that deleted nothing, the
  one file left too when it is expired or the round cleans at once) and calls
  ``disableDeleteDledger``; once none is left, a round hands DLedger the broker's settings
  (``refreshConfig``, the same three as the constructor);
* 5.x (5.3.3, 5.5.1): the rounds call ``CommitLog.deleteExpiredFile`` with ``deleteFileBatchMax``,
  which ``DLedgerCommitLog`` does not override: the old files go by the plain rule, never the last
  one, and nothing calls ``refreshConfig``; so on a converted store DLedger never deletes a data file
  (until an operator removes the last old file and restarts the broker).
* DLedger's ``DLedgerMmapFileStore.CleanSpaceService`` (a loop: ``doWork`` then 100 ms of
  ``waitForRunning``) deletes data files: when the JVM-local hour is one of ``deleteWhen``
  (``DLedgerUtils.isItTimeToDo``) or the disk is above ``diskSpaceRatioToCheckExpired`` (the broker's
  ``getDiskMaxUsedSpaceRatio() / 100f``), it calls ``MmapFileList.deleteExpiredFileByTime`` with
  ``fileReservedHours`` (at least one hour), 100 ms between files, at most
  ``DELETE_FILES_BATCH_MAX`` = 10 files, never the last, and ``cleanImmediately`` when the disk is
  above ``diskSpaceRatioToForceClean`` (``-Ddledger.disk.ratio.clean``, default 0.85, at least 0.50)
  and ``enableDiskForceClean``.  Above ``getDiskFullRatio`` (force clean + 0.05, at most 0.95) DLedger
  refuses appends.  The ratios are floats (``float``); the disk's used share is compared as a double.

The broker's ``CleanConsumeQueueService`` then removes consume queue and index files below
``DLedgerCommitLog.getMinOffset``: the first old commitlog file's offset while there is one, else the
first DLedger data file's (:func:`store_format.expiry.files_deleted_with`).  Everything here is
arithmetic on file facts; nothing reads a store.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping, Sequence

import numpy as np

from .config import BrokerConfig
from .errors import UnsupportedConfigError
from .expiry import (
    HOUR_MS,
    MAX_MANUAL_DELETE_FILE_TIMES,
    CleanupPlan,
    CleanupRound,
    delete_expired_by_time,
    delete_hours,
    is_time_to_delete,
    next_cleanup_period,
    next_time_to_delete,
    plan_cleanup,
    round_at_or_after,
    round_sleeps,
)
from .expiry_disk import (
    DiskThresholds,
    SpaceCheck,
    check_space,
    disk_bytes_ratio_read,
    disk_ratio_read,
    disk_thresholds,
)
from .expiry_times import SegmentFacts, choose_time_source, reference_times

__all__ = ["CLEAN_SPACE_INTERVAL_MS", "DLEDGER_BATCH_MAX", "DLEDGER_DELETE_INTERVAL_MS", "DISABLED_RESERVED_HOURS",
           "FORCE_CLEAN_PROPERTY", "dledger_reserved_hours", "dledger_reserved_ms", "dledger_thresholds",
           "dledger_space", "dledger_data_dir", "plan_dledger_cleanup", "describe_dledger_rule"]

CLEAN_SPACE_INTERVAL_MS = 100          # CleanSpaceService: waitForRunning(100) after each doWork
DLEDGER_BATCH_MAX = 10                 # MmapFileList.DELETE_FILES_BATCH_MAX
DLEDGER_DELETE_INTERVAL_MS = 100       # deleteFilesInterval CleanSpaceService passes
DISABLED_RESERVED_HOURS = 24 * 365 * 10  # DLedgerCommitLog.disableDeleteDledger
FORCE_CLEAN_PROPERTY = "dledger.disk.ratio.clean"


def dledger_reserved_hours(config: BrokerConfig) -> int:
    """``fileReservedHours`` as ``DLedgerCommitLog`` sets it: the broker's ``fileReservedTime + 1``."""
    return int(config.fileReservedTime) + 1


def dledger_reserved_ms(hours: int) -> int:
    """``CleanSpaceService.doWork``: ``fileReservedHours`` in ms, raised to one hour when below."""
    return max(int(hours) * HOUR_MS, HOUR_MS)


def dledger_thresholds(config: BrokerConfig, system_properties: Mapping[str, str] | None = None) -> DiskThresholds:
    """DLedger's three ratios as ``DiskThresholds`` (``max_used``: ``diskSpaceRatioToCheckExpired``,
    ``clean_forcibly``: ``getDiskSpaceRatioToForceClean``, ``warning``: ``getDiskFullRatio``), in
    ``float`` as DLedger keeps them.  ``dledger.disk.ratio.check`` is overwritten by the broker's
    ``diskMaxUsedSpaceRatio`` (clamped to 10..95 by ``getDiskMaxUsedSpaceRatio``) in the constructor."""
    props = system_properties or {}
    raw_max = int(config.diskMaxUsedSpaceRatio)
    check = float(np.float32(min(max(raw_max, 10), 95)) / np.float32(100))
    raw = props.get(FORCE_CLEAN_PROPERTY, "0.85")
    try:
        force_raw = np.float32(float(raw.strip()))
    except ValueError:
        raise UnsupportedConfigError(f"-D{FORCE_CLEAN_PROPERTY}={raw!r} is no number for Float.parseFloat; DLedger's "
                                     "config (and so the broker's store) fails to construct") from None
    force = float(max(force_raw, np.float32(0.5)))
    full = float(min(force_raw + np.float32(0.05), np.float32(0.95)))
    src_check = f"diskMaxUsedSpaceRatio={raw_max}" + ("" if 10 <= raw_max <= 95 else " (clamped to 10..95)")
    src_force = f"-D{FORCE_CLEAN_PROPERTY}" + ("" if FORCE_CLEAN_PROPERTY in props else " default 0.85") + (
        " (raised to 0.50)" if force_raw < np.float32(0.5) else "")
    return DiskThresholds(check, force, full, (src_check, src_force, "diskSpaceRatioToForceClean + 0.05, at most 0.95"))


def dledger_space(ratio: float | None, th: DiskThresholds) -> SpaceCheck:
    """What ``CleanSpaceService.doWork`` decides from the used share (one disk for the store base and
    the data; ``DLedgerUtils`` gives -1 when it cannot measure, which triggers nothing):
    ``round_due``: ``isNeedCheckExpired``; ``clean_immediately``: ``isNeedForceClean``;
    ``writes_refused``: ``isNeedForbiddenWrite``."""
    if ratio is None:
        return SpaceCheck(False, False, False)
    return SpaceCheck(ratio > th.max_used, ratio > th.clean_forcibly, ratio > th.warning)


def dledger_data_dir(config: BrokerConfig) -> str:
    """Where the data files are, as the audit names them: ``storePathDLedgerCommitLog`` when set,
    else ``dledger-<selfId>/data`` under the store root."""
    return config.storePathDLedgerCommitLog.rstrip("/") or f"dledger-{config.dLegerSelfId}/data"


def describe_dledger_rule(config: BrokerConfig, th: DiskThresholds, line: str) -> str:
    """The rule applied, in words (for the audit's text)."""
    old = ("old commitlog/ files first, by the broker's rules, the last one too (4.9 DLedgerCommitLog."
           "deleteExpiredFile; DLedger's data files are reserved 10 years meanwhile); then " if line == "4" else
           "old commitlog/ files by the broker's plain rounds, never the last one (5.x rounds call CommitLog."
           "deleteExpiredFile with deleteFileBatchMax, which DLedgerCommitLog does not override), and while one "
           "remains DLedger keeps its data files 10 years (disableDeleteDledger); without old files ")
    return (f"DLedger (enableDLegerCommitLog=true): {old}"
            f"DLedger's CleanSpaceService (every {CLEAN_SPACE_INTERVAL_MS} ms) deletes data files older than "
            f"fileReservedTime + 1 = {dledger_reserved_hours(config)} h in a deleteWhen={config.deleteWhen} hour "
            f"or above its diskSpaceRatioToCheckExpired {th.max_used * 100:.0f} % ({th.sources[0]}), "
            f"at most {DLEDGER_BATCH_MAX} a pass, never the last; unexpired ones too above "
            f"diskSpaceRatioToForceClean {th.clean_forcibly * 100:.0f} % ({th.sources[1]}) when "
            f"cleanFileForciblyEnable={str(bool(config.cleanFileForciblyEnable)).lower()}; "
            f"appends refused above {th.warning * 100:.0f} %")


@dataclasses.dataclass
class _Disk:
    """The used share as the cleanups read it, with the bytes the deleted files free (None: constant)."""
    ratio: float | None
    size: int
    used: int | None

    def now(self) -> float | None:
        if self.ratio is None:
            return None
        if self.used is None:
            return disk_ratio_read(self.ratio * 100)
        return disk_bytes_ratio_read(max(self.used, 0), self.size)

    def free(self, n: int) -> None:
        if self.used is not None:
            self.used -= n


def plan_dledger_cleanup(legacy: Sequence[SegmentFacts], data: Sequence[SegmentFacts], config: BrokerConfig,
                         as_of_ms: int, *, disk_used_ratio: float | None = None, disk_size_bytes: int | None = None,
                         tz: _dt.tzinfo | str | None = None, time_source: str = "auto",
                         interval_ms: int | None = None, manual_delete: bool = False,
                         system_properties: Mapping[str, str] | None = None, line: str | None = None,
                         horizon_ms: int = 400 * 24 * HOUR_MS) -> CleanupPlan:
    """When each file goes: the old commitlog's (``legacy``) by the broker's rounds, then DLedger's
    data files (``data``, the last of them the one being written) by ``CleanSpaceService``.

    Arguments as :func:`store_format.expiry.plan_cleanup`.  The plan's segments are ``legacy`` then
    ``data``; its ``thresholds`` and ``space`` are DLedger's; its rounds name, for data files,
    ``CleanSpaceService`` passes (``trigger`` "deleteWhen" or "disk").  ``line`` "4" follows
    4.9.8's ``DLedgerCommitLog.deleteExpiredFile``, any other the 5.x rounds (see the module
    docstring).  Approximations: the broker's round after the old files are gone (4.9.8) is taken to
    come one ``cleanResourceInterval`` later when still due (else at the next deleteWhen hour);
    DLedger's passes are placed on a 100 ms grid from then on; a data file past the committed
    position (not in ``data``) is not known, so the last of ``data`` is kept as DLedger's last.
    """
    line = line or ("4" if config.brokerVersion == "4" else "5")
    segments = [*legacy, *data]
    source, why = choose_time_source(segments, time_source)
    times, used = reference_times(segments, source)
    nl, nd = len(legacy), len(data)
    th = dledger_thresholds(config, system_properties)
    try:
        hours, cleanup_error = delete_hours(config.deleteWhen), None
    except UnsupportedConfigError as e:  # doWork throws in isTimeToDelete every time: nothing is deleted
        hours, cleanup_error = frozenset(), str(e)
    interval = max(int(interval_ms if interval_ms is not None else config.cleanResourceInterval), 1)
    size = int(disk_size_bytes or 0)
    disk = _Disk(disk_used_ratio, size, None if disk_used_ratio is None or size <= 0 else round(disk_used_ratio * size))
    ratio0 = disk.now()
    deleted = np.full(nl + nd, -1, dtype=np.int64)
    reserved_dl = dledger_reserved_ms(dledger_reserved_hours(config))
    expires = times + np.array([int(config.fileReservedTime) * HOUR_MS] * nl + [reserved_dl] * nd, dtype=np.int64)
    kinds = ["kept"] * (nl + nd)
    reasons = ["not deleted within the horizon"] * (nl + nd)
    rounds: list[CleanupRound] = []
    end = as_of_ms + horizon_ms
    start: int | None = as_of_ms
    if nl:
        start = _legacy_phase(legacy, config, as_of_ms, source, disk, tz, interval, manual_delete, system_properties,
                              line, horizon_ms, deleted, kinds, reasons, rounds, hours)
        if start is None:
            why_kept = ("kept: no broker round comes after the old files went to hand DLedger the broker's "
                        "settings (DLedgerCommitLog.refreshConfig)" if line == "4" and deleted[nl - 1] >= 0 else
                        "kept: old commitlog/ files remain, so DLedger keeps its data files 10 years "
                        "(DLedgerCommitLog.disableDeleteDledger)" if line == "4" else
                        "kept: DLedger keeps its data files 10 years while old commitlog/ files exist "
                        "(disableDeleteDledger at start), and a 5.x broker never deletes the last old file")
            for i in range(nl, nl + nd):
                reasons[i] = why_kept
    first, t = 0, start if start is not None else end + 1
    if cleanup_error:
        reasons = [f"kept: the cleanup fails ({cleanup_error})"] * (nl + nd)
    enable_force = bool(config.cleanFileForciblyEnable)
    dtimes = times[nl:]
    while first < nd - 1 and t <= end and not cleanup_error:
        ratio = disk.now()
        space = dledger_space(ratio, th)
        time_up = is_time_to_delete(t, hours, tz)
        if not (time_up or space.round_due):
            nt = next_time_to_delete(t, hours, tz, CLEAN_SPACE_INTERVAL_MS, t)
            if nt is None or nt > end:
                break
            t = nt
            continue
        at_once = enable_force and space.clean_immediately
        k = delete_expired_by_time(dtimes, t, reserved_dl, at_once, DLEDGER_BATCH_MAX, first)
        if k:
            trigger = "deleteWhen" if time_up else "disk"
            for i in range(first, first + k):
                deleted[nl + i] = t
                kinds[nl + i], reasons[nl + i] = _reason(t >= int(dtimes[i]) + reserved_dl, trigger, config, th, ratio)
            disk.free(sum(int(s.size) for s in data[first:first + k]))
            duration = round_sleeps(k, first, nd, DLEDGER_BATCH_MAX) * DLEDGER_DELETE_INTERVAL_MS
            rounds.append(CleanupRound(t, nl + first, k, trigger, at_once, ratio,
                                       disk.now() if disk.used is not None else None, duration))
            first += k
            t += duration + CLEAN_SPACE_INTERVAL_MS
            continue
        t = max(t + CLEAN_SPACE_INTERVAL_MS, round_at_or_after(int(dtimes[first]) + reserved_dl, t,
                                                                 CLEAN_SPACE_INTERVAL_MS))
    if nd:
        kinds[-1], reasons[-1] = "last", "last DLedger data file: never deleted"
    space0 = dledger_space(ratio0, th)
    space_after = dledger_space(disk.now(), th) if disk.used is not None else None
    return CleanupPlan(as_of_ms, times, used, why, expires, deleted, next_cleanup_period(rounds, hours, tz, interval),
                       reasons, kinds, rounds, line, th, ratio0, space0, space_after,
                       enable_force and space0.clean_immediately, space0.round_due, cleanup_error)


def _legacy_phase(legacy: Sequence[SegmentFacts], config: BrokerConfig, as_of_ms: int, source: str, disk: _Disk,
                  tz: _dt.tzinfo | str | None, interval: int, manual_delete: bool,
                  system_properties: Mapping[str, str] | None, line: str, horizon_ms: int, deleted: np.ndarray,
                  kinds: list[str], reasons: list[str], rounds: list[CleanupRound], hours: frozenset[int]
                  ) -> int | None:
    """The broker's rounds over the old commitlog (filled into the arrays); returns when DLedger's
    cleanup gets the broker's settings (the next due round after the last old file went), or None."""
    nl = len(legacy)
    end = legacy[-1].base + legacy[-1].size
    # 4.9.8's DLedgerCommitLog deletes the last old file too: the broker's walk with one more file behind
    # it; 5.x's rounds do not reach DLedgerCommitLog: the plain walk, and DLedger never gets its settings
    override = line == "4"
    stand_in = [SegmentFacts("(first DLedger data file)", end, 0, None, None, None)] if override else []
    plan = plan_cleanup([*legacy, *stand_in], config, as_of_ms, disk_used_ratio=disk.ratio,
                        disk_size_bytes=disk.size or None, tz=tz, time_source=source, interval_ms=interval,
                        manual_delete=manual_delete, system_properties=system_properties, line=line,
                        horizon_ms=horizon_ms)
    deleted[:nl] = plan.deleted_at[:nl]
    kinds[:nl], reasons[:nl] = plan.reason_kind[:nl], plan.reason[:nl]
    legacy_rounds = list(plan.rounds)
    if nl >= 2 and deleted[nl - 1] >= 0 and deleted[nl - 1] == deleted[nl - 2]:
        # the last old file goes alone, in a round whose ordinary walk deleted nothing: the next one
        last = legacy_rounds[-1]
        legacy_rounds[-1] = dataclasses.replace(last, count=last.count - 1)
        t_next = round_at_or_after(int(last.at_ms) + max(last.duration_ms, 1), as_of_ms, interval)
        legacy_rounds.append(dataclasses.replace(last, at_ms=t_next, first=nl - 1, count=1, duration_ms=0))
        deleted[nl - 1] = t_next
    rounds.extend(legacy_rounds)
    for i in range(nl):
        if deleted[i] >= 0:
            disk.free(int(legacy[i].size))
    if not override:
        kinds[nl - 1], reasons[nl - 1] = "last", ("last old commitlog file: a 5.x broker's rounds never delete it "
                                                  "(CommitLog.deleteExpiredFile with deleteFileBatchMax is not "
                                                  "DLedgerCommitLog's)")
        return None
    if deleted[nl - 1] < 0:
        return None
    th = disk_thresholds(config, line, system_properties)
    t = round_at_or_after(int(deleted[nl - 1]) + 1, as_of_ms, interval)
    manual_left = MAX_MANUAL_DELETE_FILE_TIMES - len(legacy_rounds) if manual_delete else 0
    if is_time_to_delete(t, hours, tz) or check_space(disk.now(), th, line).round_due or manual_left > 0:
        return t
    return next_time_to_delete(t, hours, tz, interval, as_of_ms)


def _reason(expired: bool, trigger: str, config: BrokerConfig, th: DiskThresholds, ratio: float | None
            ) -> tuple[str, str]:
    pct = "" if ratio is None else f"{ratio * 100:.0f} %"
    hours = f"fileReservedTime + 1 = {dledger_reserved_hours(config)} h"
    if not expired:
        return "forced", (f"forced by DLedger: disk {pct} above diskSpaceRatioToForceClean "
                          f"{th.clean_forcibly * 100:.0f} % (cleanFileForciblyEnable=true), not expired")
    if trigger == "deleteWhen":
        return "expired", f"expired ({hours}); DLedger's cleanup in deleteWhen={config.deleteWhen}"
    return "expired", (f"expired ({hours}); disk {pct} above DLedger's diskSpaceRatioToCheckExpired "
                       f"{th.max_used * 100:.0f} % (diskMaxUsedSpaceRatio)")
