"""What a broker's start does to one queue's existing consume queue files, as array rules.

Mirrors, in ``store/src/main/java/org/apache/rocketmq/store/`` of rocketmq-all-4.9.8 and 5.3.3:

* ``MappedFileQueue.doLoad``: every file must be ``mappedFileSizeConsumeQueue`` long, else
  ``load()`` fails and the broker does not start (5.x first deletes a last file of length 0);
* ``ConsumeQueue.recover``: from the third file from the end, units are accepted while
  ``offset >= 0 && size > 0``; the first other unit ends the queue, and
  ``MappedFileQueue.truncateDirtyFiles`` deletes the files after it; ``maxPhysicOffset`` is
  ``offset + size`` of the last accepted unit;
* ``ConsumeQueue.truncateDirtyLogicFiles(phyOffset)`` (called by ``CommitLog.recoverNormally``
  when the queues reach past the commitlog's end): from the last file backwards, a file whose first
  unit points at or past ``phyOffset`` is deleted; otherwise its units are kept up to the first one
  that is invalid or points at or past it (the first unit of a file is kept without the validity
  check).

Only the files are modelled (no ``ConsumeQueueExt``, no flushed/committed positions).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .layout import CQ_BLANK_SIZE, CQ_UNIT_DTYPE, CQ_UNIT_SIZE

__all__ = ["RECOVER_FILES", "QueueRecovery", "TailFiles", "Truncation", "recover_consume_queue",
           "truncate_dirty_logic_files", "unit_accepted", "unit_is_message"]

RECOVER_FILES = 3  # ConsumeQueue.recover starts at the third file from the end

# a queue's last files as (name, commitlog offsets, sizes): what truncateDirtyLogicFiles looks at
TailFiles = list[tuple[str, np.ndarray, np.ndarray]]


def unit_accepted(off: np.ndarray, size: np.ndarray) -> np.ndarray:
    """A unit ``ConsumeQueue.recover`` accepts: ``offset >= 0 && size > 0``."""
    return (off >= 0) & (size > 0)


def unit_is_message(off: np.ndarray, size: np.ndarray) -> np.ndarray:
    """A unit that stands for a message (accepted, and not a ``ConsumeQueue.fillPreBlank`` unit)."""
    return unit_accepted(off, size) & ~((off == 0) & (size == CQ_BLANK_SIZE))


def _units(data: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(data, dtype=CQ_UNIT_DTYPE, count=len(data) // CQ_UNIT_SIZE)


@dataclasses.dataclass
class QueueRecovery:
    """One queue after ``MappedFileQueue.doLoad`` and ``ConsumeQueue.recover``."""
    load_failure: str | None       # why doLoad refuses a file (the last such file)
    recover_stops_at: int | None   # logical byte offset where recover stops, when written units follow
    units_dropped: int             # written units at or after the stop (deleted or overwritten later)
    files_deleted: list[str]       # files after the stop (truncateDirtyFiles)
    max_physic_offset: int         # getMaxPhysicOffset after recover (-1: no unit accepted)
    present: np.ndarray            # commitlog offsets of the message units the recovered queue keeps
    tail_files: TailFiles          # its last RECOVER_FILES files, for truncate_dirty_logic_files


def recover_consume_queue(files: list[tuple[str, bytes]], *, file_size: int, broker_5x: bool) -> QueueRecovery:
    """One queue's files (name, bytes; any order) through ``MappedFileQueue.doLoad`` and
    ``ConsumeQueue.recover``; a file of the wrong size is reported and left out (the figures then
    assume it was removed)."""
    load_failure = None
    files = sorted(files)
    if broker_5x and files and len(files[-1][1]) == 0:
        files = files[:-1]
    loadable = []
    for name, data in files:
        if len(data) != file_size:
            load_failure = f"{name} is {len(data):,} bytes, mappedFileSizeConsumeQueue gives {file_size:,}"
        else:
            loadable.append((name, data))
    units = [(name, _units(data)) for name, data in loadable]
    present: list[np.ndarray] = []
    max_physic_offset = -1
    recover_stops_at = None
    dropped = 0
    deleted: list[str] = []
    start = max(0, len(units) - RECOVER_FILES)
    for _name, u in units[:start]:
        off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
        present.append(off[unit_is_message(off, size)])
    cut_file = len(units)
    for fi in range(start, len(units)):
        name, u = units[fi]
        off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
        ok = unit_accepted(off, size)
        k = len(u) if ok.all() else int(np.argmin(ok))
        if k:
            max_physic_offset = int(off[k - 1] + size[k - 1])
        present.append(off[:k][unit_is_message(off[:k], size[:k])])
        if k < len(u):
            # the normal end of a queue (zeros after the last unit) also stops here; it is reported
            # only when something written lies after the stop
            cut_file = fi
            raw = np.frombuffer(loadable[fi][1], dtype=np.uint8).reshape(-1, CQ_UNIT_SIZE)
            dropped = int(raw[k:].any(axis=1).sum())
            for later_name, later_data in loadable[fi + 1:]:
                dropped += int(np.frombuffer(later_data, dtype=np.uint8).reshape(-1, CQ_UNIT_SIZE).any(axis=1).sum())
                deleted.append(later_name)
            if dropped or deleted:
                recover_stops_at = int(name) + k * CQ_UNIT_SIZE
            break
    remaining = units[:cut_file + 1] if cut_file < len(units) else units
    # the files truncateDirtyLogicFiles may look at; it rescans the last one from its first unit
    tail = [(name, u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64))
            for name, u in remaining[-RECOVER_FILES:]]
    have = np.concatenate(present) if present else np.zeros(0, np.int64)
    return QueueRecovery(load_failure, recover_stops_at, dropped, deleted, max_physic_offset, have, tail)


@dataclasses.dataclass
class Truncation:
    """What ``ConsumeQueue.truncateDirtyLogicFiles`` did to one queue."""
    max_physic_offset: int
    units_truncated: int = 0
    files_deleted: list[str] = dataclasses.field(default_factory=list)


def truncate_dirty_logic_files(tail_files: TailFiles, phy_offset: int) -> Truncation:
    """``ConsumeQueue.truncateDirtyLogicFiles(phyOffset)`` on a queue's last files (see the module
    docstring); ``tail_files`` is updated in place (deleted files popped, the last one cut)."""
    t = Truncation(phy_offset)
    files = tail_files
    while files:
        name, off, size = files[-1]
        if not len(off):
            return t
        if off[0] >= phy_offset:
            t.units_truncated += int(unit_accepted(off, size).sum())
            t.files_deleted.append(name)
            files.pop()
            continue
        t.max_physic_offset = int(off[0] + size[0])
        rest_ok = unit_accepted(off[1:], size[1:])
        k = len(rest_ok) if rest_ok.all() else int(np.argmin(rest_ok))
        past = np.flatnonzero(off[1:1 + k] >= phy_offset)
        if len(past):
            j = int(past[0])
            t.units_truncated += int(unit_accepted(off[1 + j:1 + k], size[1 + j:1 + k]).sum())
            k = j
        if k:
            t.max_physic_offset = int(off[k] + size[k])
        files[-1] = (name, off[:1 + k], size[:1 + k])
        return t
    return t
