"""The disk-space side of the broker's cleanup: how it reads the used share, its three ratios per
broker line, and what a round decides from them (``CleanCommitLogService.isSpaceToDelete`` /
``isSpaceFull``, ``UtilAll.getDiskPartitionSpaceUsedPercent``, ``MessageStoreConfig`` getters).

Used by :mod:`store_format.expiry`, which re-exports everything here.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .config import BrokerConfig
from .errors import UnsupportedConfigError

__all__ = ["WARNING_PROPERTY", "FORCIBLY_PROPERTY", "disk_ratio_read", "disk_bytes_ratio_read", "DiskThresholds",
           "disk_thresholds", "SpaceCheck", "check_space"]

WARNING_PROPERTY = "rocketmq.broker.diskSpaceWarningLevelRatio"
FORCIBLY_PROPERTY = "rocketmq.broker.diskSpaceCleanForciblyRatio"


def disk_ratio_read(used_percent: float) -> float:
    """The used share as ``UtilAll.getDiskPartitionSpaceUsedPercent`` returns it: whole percent
    rounded up (``used * 100 / total``, plus one when not exact), divided by 100."""
    whole = int(used_percent)
    if used_percent - whole > 1e-9:
        whole += 1
    return whole / 100.0


def disk_bytes_ratio_read(used_bytes: int, total_bytes: int) -> float:
    """:func:`disk_ratio_read` in the broker's integer arithmetic (``usedSpace * 100 / entireSpace``,
    plus one when there is a remainder)."""
    whole, rest = divmod(used_bytes * 100, total_bytes)
    return (whole + (1 if rest else 0)) / 100.0


@dataclasses.dataclass(frozen=True)
class DiskThresholds:
    """The three ratios (0..1) the clean service compares the disk's used share with."""
    max_used: float          # getDiskMaxUsedSpaceRatio() / 100: rounds delete expired files above it
    clean_forcibly: float    # above it cleanImmediately: unexpired files go too (cleanFileForciblyEnable)
    warning: float           # above it the disk is marked full and the broker refuses new messages
    sources: tuple[str, str, str]  # where each came from, in words


def disk_thresholds(config: BrokerConfig, line: str, system_properties: Mapping[str, str] | None = None
                    ) -> DiskThresholds:
    """The ratios of one broker line.

    * ``diskMaxUsedSpaceRatio``: ``MessageStoreConfig.getDiskMaxUsedSpaceRatio`` clamps to 10..95 (all lines).
    * 4.9.8 ``CleanCommitLogService`` fields: ``Double.parseDouble`` of the system properties
      ``rocketmq.broker.diskSpaceWarningLevelRatio`` (default "0.90") and
      ``...diskSpaceCleanForciblyRatio`` ("0.85"), not clamped.
    * 5.x ``getDiskSpaceWarningLevelRatio`` / ``getDiskSpaceCleanForciblyRatio``: the property when
      set (not empty), else ``MessageStoreConfig.diskSpaceWarningLevelRatio / 100`` (90) and
      ``diskSpaceCleanForciblyRatio / 100`` (85); then clamped to 0.35..0.90 and 0.30..0.85.
    """
    props = system_properties or {}
    max_used = min(max(int(config.diskMaxUsedSpaceRatio), 10), 95) / 100.0
    src_max = f"diskMaxUsedSpaceRatio={config.diskMaxUsedSpaceRatio}" + (
        "" if 10 <= config.diskMaxUsedSpaceRatio <= 95 else " (clamped to 10..95)")
    if line == "4":
        warning = _java_double(WARNING_PROPERTY, props.get(WARNING_PROPERTY, "0.90"))
        forcibly = _java_double(FORCIBLY_PROPERTY, props.get(FORCIBLY_PROPERTY, "0.85"))
        src_w = f"-D{WARNING_PROPERTY}" + ("" if WARNING_PROPERTY in props else " default 0.90")
        src_f = f"-D{FORCIBLY_PROPERTY}" + ("" if FORCIBLY_PROPERTY in props else " default 0.85")
        return DiskThresholds(max_used, forcibly, warning, (src_max, src_f, src_w))
    raw_w, raw_f = props.get(WARNING_PROPERTY, ""), props.get(FORCIBLY_PROPERTY, "")
    warning = _java_double(WARNING_PROPERTY, raw_w) if raw_w else config.diskSpaceWarningLevelRatio / 100.0
    forcibly = _java_double(FORCIBLY_PROPERTY, raw_f) if raw_f else config.diskSpaceCleanForciblyRatio / 100.0
    src_w = f"-D{WARNING_PROPERTY}" if raw_w else f"diskSpaceWarningLevelRatio={config.diskSpaceWarningLevelRatio}"
    src_f = f"-D{FORCIBLY_PROPERTY}" if raw_f else f"diskSpaceCleanForciblyRatio={config.diskSpaceCleanForciblyRatio}"
    cw, cf = min(max(warning, 0.35), 0.90), min(max(forcibly, 0.30), 0.85)
    src_w += " (clamped to 0.35..0.90)" if cw != warning else ""
    src_f += " (clamped to 0.30..0.85)" if cf != forcibly else ""
    return DiskThresholds(max_used, cf, cw, (src_max, src_f, src_w))


def _java_double(name: str, raw: str) -> float:
    try:
        return float(raw.strip())
    except ValueError:
        raise UnsupportedConfigError(f"-D{name}={raw!r} is no number for Double.parseDouble; the broker would "
                                     "fail to start its store (use e.g. 0.85)") from None


@dataclasses.dataclass(frozen=True)
class SpaceCheck:
    """What ``isSpaceToDelete`` decides for one round, and whether writes are refused."""
    round_due: bool          # isSpaceToDelete returned true: the round deletes whatever the hour
    clean_immediately: bool  # cleanImmediately: with cleanFileForciblyEnable, unexpired files go too
    writes_refused: bool     # runningFlags disk-full bit: puts get SERVICE_NOT_AVAILABLE


def check_space(ratio: float | None, th: DiskThresholds, line: str) -> SpaceCheck:
    """``CleanCommitLogService.isSpaceToDelete`` and ``isSpaceFull`` for one used share.

    The commitlog's and the consume queue's disks are taken to be the same disk (one ratio); a
    ratio below 0 is the broker's "could not measure" and counts as full.

    * 4.9.8: above the warning or the clean-forcibly ratio sets ``cleanImmediately``; the round is
      due only above ``diskMaxUsedSpaceRatio`` (so with a max ratio above 85 % a disk between the
      two forces files out only in a ``deleteWhen`` hour or a manual round).
    * 5.x: above the warning or the clean-forcibly ratio sets ``cleanImmediately`` *and* makes the
      round due; below both, due above ``diskMaxUsedSpaceRatio``.  (``replicasPerDiskPartition`` > 1,
      a shared-disk mode, is not modelled.)
    * Writes: ``isSpaceFull`` (every 10 s) and ``isSpaceToDelete`` set the disk-full bit above the
      warning ratio; ``isWriteable`` is then false and puts are refused
      (4.9 ``DefaultMessageStore.checkStoreStatus``, 5.x ``HookUtils.checkBeforePutMessage``).
    """
    if ratio is None:
        return SpaceCheck(False, False, False)
    above_forcibly = ratio > th.warning or ratio > th.clean_forcibly
    due_by_max = ratio < 0 or ratio > th.max_used
    due = due_by_max or (above_forcibly and line != "4")
    return SpaceCheck(due, above_forcibly, ratio > th.warning)
