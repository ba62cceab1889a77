"""What a broker's start does to one queue's existing consume queue files, as array rules.

Mirrors, in ``store/src/main/java/org/apache/rocketmq/store/`` of rocketmq-all-4.9.8 and 5.3.3:

* ``MappedFileQueue.doLoad``: every file must be ``mappedFileSizeConsumeQueue`` long, else
  ``load()`` fails and the broker does not start (5.x first deletes a last file of length 0);
* ``ConsumeQueue.recover``: from the third file from the end, units are accepted while
  ``offset >= 0 && size > 0``; the first other unit ends the queue, and
  ``MappedFileQueue.truncateDirtyFiles`` deletes the files after it; ``maxPhysicOffset`` is
  ``offset + size`` of the last accepted unit.  It also remembers the last accepted unit whose
  tagsCode is an ext address, for ``ConsumeQueueExt.truncateByMaxAddress``
  (:mod:`store_format.consumequeue_ext_recovery`);
* ``ConsumeQueue.putMessagePositionInfo`` on a recovered queue's files (:func:`dispatch_units`, 5.5.1: a 5.x DLedger
  crash recovery's walk dispatching onto the queues the store held; ``BatchConsumeQueue.putBatchMessagePositionInfo``
  on a batch queue's): a consume queue's unit by unit (:func:`store_format.consumequeue.assign_positions`, from the
  loaded write position and max, no ``fillPreBlank``: the files were not created in this run), a batch queue's as
  :func:`store_format.recovery_dispatch.recovery_dispatch` says; they go at the write position on,
  ``getLastMappedFile`` adding a file after a full last one;
* 5.3.3 ``ConsumeQueue.correctMinOffset`` (``DefaultMessageStore.recoverTopicQueueTable`` in ``load()``) over a
  queue whose last file holds nothing (:func:`correct_min_offset_fails`), and every line's over a queue the cut
  below left with no file (its max: :func:`no_file_max`, 5.5.1 resetting a consume queue's to -1);
* ``ConsumeQueue.truncateDirtyLogicFiles(phyOffset)`` (called by ``CommitLog.recoverNormally``
  when the queues reach past the commitlog's end): from the last file backwards, a file whose first
  unit points at or past ``phyOffset`` is deleted; otherwise its units are kept up to the first one
  that is invalid or points at or past it (the first unit of a file is kept without the validity
  check).  Its own call of ``ConsumeQueueExt.truncateByMaxAddress`` is reached only once every
  file is deleted, with no ext address seen, so it never changes the ext files.

5.x batch consume queues (``queue/BatchConsumeQueue.recover`` / ``truncateDirtyLogicFiles``, 5.3.3)
follow the same walks with other unit rules (:data:`BCQ_RULES`): 46-byte units, accepted while
``offset >= 0 && size > 0 && msgBaseOffset >= 0 && batchSize > 0``, and ``maxMsgPhyOffsetInCommitLog``
(what ``getMaxPhysicOffset`` returns) is the *start* of the last kept unit; truncation starts it at
``phyOffset - 1``.

Only the files are modelled (no flushed/committed positions).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .batchconsumequeue import BCQ_UNIT_DTYPE
from .consumequeue import Q_FIRST_FILE, Q_LAST_FILE, assign_positions, loaded_state
from .layout import CQ_BLANK_SIZE, CQ_UNIT_DTYPE
from .recovery_dispatch import recovery_dispatch

__all__ = ["CORRECT_MIN_OFFSET_533", "RECOVER_FILES", "BCQ_RULES", "CQ_RULES", "EXT_MAX_ADDR", "QueueRecovery",
           "QueueRules", "TailFiles",
           "Truncation", "correct_min_offset_fails", "dispatch_units", "file_units", "last_ext_address", "load_files",
           "no_file_max", "no_file_resets_max", "recover_consume_queue",
           "truncate_dirty_logic_files", "unit_accepted", "unit_is_message"]

RECOVER_FILES = 3  # ConsumeQueue.recover starts at the third file from the end

# a queue's last files as (name, commitlog offsets, getMaxPhysicOffset once each unit is kept, accepted,
# tagsCode): what truncateDirtyLogicFiles looks at
TailFiles = list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]

EXT_MAX_ADDR = -(1 << 31) - 1   # ConsumeQueueExt.MAX_ADDR: a tagsCode at or below it is an ext address


# why such a 5.3.3 start fails, said once for every caller
CORRECT_MIN_OFFSET_533 = ("the 5.3.3 store's start fails (ConsumeQueue.correctMinOffset in recoverTopicQueueTable "
                          "reads before that file's start)")


def correct_min_offset_fails(last_file_start: int, last_file_empty: bool) -> bool:
    """Whether 5.3.3's ``ConsumeQueue.correctMinOffset`` (the caller decides the line: 5.5.1 guards the last file's
    read position, 4.9.8 reads the first file only) throws for a consume queue whose last file starts at
    ``last_file_start`` and holds nothing (``last_file_empty``: its read position 0): the queue's max offset is that
    file's start, so the check of ``minLogicOffset`` against it (0 at load; below that start after a DLedger reput's
    ``fillPreBlank`` units too) lets it go on, and it selects the 20 bytes before the file's start
    (``IllegalArgumentException``; ``DefaultMessageStore.load`` then returns false).  A last file at 0 holding
    nothing leaves the max offset 0: it returns early."""
    return last_file_empty and last_file_start > 0


def no_file_resets_max(broker_line: str) -> bool:
    """Whether ``DefaultMessageStore.recoverTopicQueueTable``'s ``ConsumeQueue.correctMinOffset`` (in ``load()``,
    after the commitlog's recovery and its cut) gives a consume queue with no file the max physical offset -1, by
    ``brokerVersion``: rocketmq-store 5.5.1's (``"5.5"``) looks for a last file first and, with none, resets the max;
    4.9.8's reads the first file only and 5.3.3's returns before (its ``minLogicOffset`` against the queue's max
    offset, 0 with no file): both leave the max as it was."""
    return broker_line == "5.5"


def no_file_max(cut_max: int, *, resets: bool, batch: bool = False) -> int:
    """The max physical offset of a queue a restart's cut (``truncateDirtyLogicFiles``: the ordinary restart's or a
    DLedger crash's at ``processOffset``) left with no file, once ``recoverTopicQueueTable`` has run: ``cut_max``,
    what the cut set before deleting every file (``ConsumeQueue``'s: the offset it cuts at;
    ``BatchConsumeQueue``'s: one byte before, :data:`BCQ_RULES`' ``truncate_from``), except a consume queue's where
    ``resets`` (:func:`no_file_resets_max`: 5.5.1): -1.  A batch queue (``batch``) keeps it on every line
    (``BatchConsumeQueue.correctMinOffset`` never sets the max)."""
    return -1 if resets and not batch else cut_max


def unit_accepted(off: np.ndarray, size: np.ndarray) -> np.ndarray:
    """A unit ``ConsumeQueue.recover`` accepts: ``offset >= 0 && size > 0``."""
    return (off >= 0) & (size > 0)


def unit_is_message(off: np.ndarray, size: np.ndarray) -> np.ndarray:
    """A unit that stands for a message (accepted, and not a ``ConsumeQueue.fillPreBlank`` unit)."""
    return unit_accepted(off, size) & ~((off == 0) & (size == CQ_BLANK_SIZE))


@dataclasses.dataclass(frozen=True)
class QueueRules:
    """How a start reads one kind of queue file (the class it mirrors in ``java``)."""
    java: str
    setting: str                                      # the file size setting MappedFileQueue.doLoad checks
    dtype: np.dtype
    accepted: Callable[[np.ndarray], np.ndarray]      # units the recover walk accepts
    is_message: Callable[[np.ndarray], np.ndarray]    # accepted units that stand for a message
    max_physic: Callable[[np.ndarray], np.ndarray]    # getMaxPhysicOffset once the unit is the last kept
    appended: Callable[[np.ndarray, np.ndarray, int], np.ndarray]  # (offset, size, max): a dispatch appends
    truncate_from: int                                # truncateDirtyLogicFiles sets the max to phyOffset + this

    @property
    def unit_size(self) -> int:
        return self.dtype.itemsize


def _i64(u: np.ndarray, field: str) -> np.ndarray:
    return u[field].astype(np.int64)


# ConsumeQueue: putMessagePositionInfo skips a unit with offset + size <= maxPhysicOffset
CQ_RULES = QueueRules(
    "ConsumeQueue", "mappedFileSizeConsumeQueue", CQ_UNIT_DTYPE,
    accepted=lambda u: unit_accepted(_i64(u, "commitlogOffset"), _i64(u, "size")),
    is_message=lambda u: unit_is_message(_i64(u, "commitlogOffset"), _i64(u, "size")),
    max_physic=lambda u: _i64(u, "commitlogOffset") + _i64(u, "size"),
    appended=lambda off, size, mx: off + size > mx, truncate_from=0)
# BatchConsumeQueue: putBatchMessagePositionInfo skips a unit with offset <= maxMsgPhyOffsetInCommitLog
BCQ_RULES = QueueRules(
    "BatchConsumeQueue", "mapperFileSizeBatchConsumeQueue", BCQ_UNIT_DTYPE,
    accepted=lambda u: ((u["commitlogOffset"] >= 0) & (u["size"] > 0) & (u["msgBaseOffset"] >= 0)
                        & (u["batchSize"] > 0)),
    is_message=lambda u: ((u["commitlogOffset"] >= 0) & (u["size"] > 0) & (u["msgBaseOffset"] >= 0)
                          & (u["batchSize"] > 0)),
    max_physic=lambda u: _i64(u, "commitlogOffset"),
    appended=lambda off, size, mx: off > mx, truncate_from=-1)


def _units(data: bytes | memoryview, rules: QueueRules) -> np.ndarray:
    return np.frombuffer(data, dtype=rules.dtype, count=len(data) // rules.unit_size)


def file_units(data: bytes | memoryview, rules: QueueRules) -> np.ndarray:
    """The commitlog offsets of the message units one queue file holds as ``ConsumeQueue.recover`` reads it
    (``BatchConsumeQueue.recover`` with :data:`BCQ_RULES`): its units up to the first it does not accept, without
    ``fillPreBlank`` units."""
    u = _units(data, rules)
    ok = rules.accepted(u)
    k = len(u) if ok.all() else int(np.argmin(ok))
    return _i64(u[:k], "commitlogOffset")[rules.is_message(u[:k])]


def load_files(files: list[tuple[str, bytes]], *, file_size: int,
               broker_5x: bool, setting: str) -> tuple[str | None, list[tuple[str, bytes]]]:
    """``MappedFileQueue.doLoad`` on one queue's files (name, bytes; any order): why it refuses a file
    (the last such file; None: it loads them all) and the files it maps, in name order (a file of the
    wrong size left out, as if removed).  Every file-backed queue of a store (consume queue, its ext
    files, a batch consume queue) loads this way."""
    load_failure = None
    files = sorted(files)
    if broker_5x and files and len(files[-1][1]) == 0:
        files = files[:-1]
    loadable = []
    for name, data in files:
        if len(data) != file_size:
            load_failure = f"{name} is {len(data):,} bytes, {setting} gives {file_size:,}"
        else:
            loadable.append((name, data))
    return load_failure, loadable


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
    write_position: int = 0        # MappedFileQueue.getMaxOffset after recover: where the next unit goes
    files_loaded: int = 0          # files doLoad mapped (recover does nothing without one)
    max_ext_addr: int = 1          # tagsCode of the last accepted unit holding an ext address (1: none)
    files_before_tail: int = 0     # remaining files older than tail_files (truncation does not reach them)


def recover_consume_queue(files: list[tuple[str, bytes]], *, file_size: int, broker_5x: bool,
                          rules: QueueRules = CQ_RULES, tail_count: int = RECOVER_FILES) -> QueueRecovery:
    """One queue's files (name, bytes; any order) through :func:`load_files` and
    ``ConsumeQueue.recover`` (``BatchConsumeQueue.recover`` with :data:`BCQ_RULES`); a file of the
    wrong size is reported and left out (the figures then assume it was removed).  ``tail_count``: how many of
    the last files :attr:`QueueRecovery.tail_files` holds (0: every one, for a truncation that goes on into
    the files older than those ``recover`` reads)."""
    load_failure, loadable = load_files(files, file_size=file_size, broker_5x=broker_5x, setting=rules.setting)
    unit = rules.unit_size
    units = [(name, _units(data, rules)) for name, data in loadable]
    present: list[np.ndarray] = []
    max_physic_offset = -1
    max_ext_addr = 1
    recover_stops_at = None
    dropped = 0
    deleted: list[str] = []
    start = max(0, len(units) - RECOVER_FILES)
    for _name, u in units[:start]:
        present.append(_i64(u, "commitlogOffset")[rules.is_message(u)])
    cut_file = len(units)
    write_position = int(units[-1][0]) + file_size if units else 0
    for fi in range(start, len(units)):
        name, u = units[fi]
        ok = rules.accepted(u)
        k = len(u) if ok.all() else int(np.argmin(ok))
        if k:
            max_physic_offset = int(rules.max_physic(u[k - 1:k])[0])
            ext = np.flatnonzero(_i64(u[:k], "tagsCode") <= EXT_MAX_ADDR)
            if len(ext):
                max_ext_addr = int(u["tagsCode"][ext[-1]])
        present.append(_i64(u[:k], "commitlogOffset")[rules.is_message(u[:k])])
        if k < len(u):
            # the normal end of a queue (zeros after the last unit) also stops here; it is reported
            # only when something written lies after the stop
            cut_file = fi
            write_position = int(name) + k * unit
            raw = np.frombuffer(loadable[fi][1], dtype=np.uint8)[:len(u) * unit].reshape(-1, unit)
            dropped = int(raw[k:].any(axis=1).sum())
            for later_name, later_data in loadable[fi + 1:]:
                later = np.frombuffer(later_data, dtype=np.uint8)[:len(later_data) // unit * unit]
                dropped += int(later.reshape(-1, unit).any(axis=1).sum())
                deleted.append(later_name)
            if dropped or deleted:
                recover_stops_at = write_position
            break
    remaining = units[:cut_file + 1] if cut_file < len(units) else units
    # the files truncateDirtyLogicFiles may look at; it rescans the last one from its first unit
    kept = remaining[-tail_count:] if tail_count else remaining
    tail = [(name, _i64(u, "commitlogOffset"), rules.max_physic(u), rules.accepted(u), _i64(u, "tagsCode"))
            for name, u in kept]
    have = np.concatenate(present) if present else np.zeros(0, np.int64)
    return QueueRecovery(load_failure, recover_stops_at, dropped, deleted, max_physic_offset, have, tail,
                         write_position, len(units), max_ext_addr, len(remaining) - len(kept))


@dataclasses.dataclass
class Truncation:
    """What ``ConsumeQueue.truncateDirtyLogicFiles`` did to one queue."""
    max_physic_offset: int
    units_truncated: int = 0
    files_deleted: list[str] = dataclasses.field(default_factory=list)
    write_position: int = -1       # where the queue's files end after it (0: no file left; -1: unknown, in an
                                   # older file than those it was given)


def truncate_dirty_logic_files(tail_files: TailFiles, phy_offset: int, *, unit_size: int = CQ_UNIT_DTYPE.itemsize,
                               truncate_from: int = 0, older_files: int = 0) -> Truncation:
    """``ConsumeQueue.truncateDirtyLogicFiles(phyOffset)`` on a queue's last files (see the module
    docstring; ``BatchConsumeQueue``'s with its unit size and ``truncate_from=-1``); ``tail_files`` is
    updated in place (deleted files popped, the last one cut).  ``older_files``: how many files of the
    queue precede ``tail_files`` (when all of those are deleted, the walk would go on into them: not
    followed, ``write_position`` -1)."""
    t = Truncation(phy_offset + truncate_from)
    files = tail_files
    while files:
        name, off, mx, ok, tags = files[-1]
        if not len(off):
            return t
        if off[0] >= phy_offset:
            t.units_truncated += int(ok.sum())
            t.files_deleted.append(name)
            files.pop()
            continue
        t.max_physic_offset = int(mx[0])
        rest_ok = ok[1:]
        k = len(rest_ok) if rest_ok.all() else int(np.argmin(rest_ok))
        past = np.flatnonzero(off[1:1 + k] >= phy_offset)
        if len(past):
            j = int(past[0])
            t.units_truncated += int(ok[1 + j:1 + k].sum())
            k = j
        if k:
            t.max_physic_offset = int(mx[k])
        files[-1] = (name, off[:1 + k], mx[:1 + k], ok[:1 + k], tags[:1 + k])
        t.write_position = int(name) + (1 + k) * unit_size
        return t
    if not older_files:
        t.write_position = 0   # MappedFileQueue.getMaxOffset of a queue without files
    return t


def dispatch_units(tail_files: TailFiles, units: np.ndarray, max_physic_offset: int, file_size: int,
                   rules: QueueRules = CQ_RULES) -> TailFiles:
    """The consume queue ``tail_files`` (as :func:`recover_consume_queue` left them, ``max_physic_offset`` its max)
    once ``ConsumeQueue.putMessagePositionInfo`` dispatched ``units`` (rows of commitlog offset, size, queue offset;
    in commitlog order) onto them (module docstring); :data:`BCQ_RULES`: ``BatchConsumeQueue``'s
    ``putBatchMessagePositionInfo`` (a unit appended only when it starts past the max, the start of the last one
    loaded or appended; no queue offset check: the queue offset column is not read).  The files are copied, the
    appended units' tagsCode 0."""
    unit = rules.unit_size
    batch = rules is BCQ_RULES
    files = [(name, off.copy(), mx.copy(), ok.copy(), tags.copy()) for name, off, mx, ok, tags in tail_files]
    assert files, "a queue with a file"
    name, _off, _mx, ok, _tags = files[-1]
    write = int(name) + (len(ok) if ok.all() else int(np.argmin(ok))) * unit   # recover's write position
    last_created = int(name)
    if batch:
        appended = recovery_dispatch(units[:, 0], units[:, 1], units[:, 2] * unit, start=0,
                                     end=np.iinfo(np.int64).max, max_physic=max_physic_offset, write_position=write,
                                     unit_size=unit, batch=True).appended
    else:
        # putMessagePositionInfo unit by unit (consumequeue.assign_positions): the queue offset check reads the write
        # position each unit leaves (own and light units of one queue need not come in queue offset order); the
        # files were loaded, not created in this run (MappedFile.isFirstCreateInQueue), so no fillPreBlank units,
        # even at write position 0 (a file of zeros)
        state = loaded_state(max_physic_offset, write, loaded=True, last_file=int(name))
        state[0, Q_FIRST_FILE] = int(files[0][0])
        appended = assign_positions(np.zeros(len(units), np.int64), units[:, 0], units[:, 1], units[:, 2], file_size,
                                    state) >= 0
        last_created = int(state[0, Q_LAST_FILE])   # getLastMappedFile's file for a unit then dropped, if any
    for offset, size, _queue_offset in units[appended].tolist():
        if write - int(files[-1][0]) == file_size:   # getLastMappedFile: the last file full, a new one after it
            n = file_size // unit
            files.append((f"{write:020d}", np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool),
                          np.zeros(n, np.int64)))
        _name, off, mx, ok, tags = files[-1]
        at = (write - int(files[-1][0])) // unit
        off[at], mx[at], ok[at], tags[at] = offset, offset if batch else offset + size, size > 0 and offset >= 0, 0
        write += unit
    if last_created > int(files[-1][0]):   # created for a unit the queue offset check then dropped: zeros
        n = file_size // unit
        files.append((f"{last_created:020d}", np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool),
                      np.zeros(n, np.int64)))
    return files


def last_ext_address(tail_files: TailFiles) -> int:
    """The tagsCode of the last unit kept in ``tail_files`` that holds an ext address (1: none)."""
    for _name, _off, _mx, _ok, tags in reversed(tail_files):
        ext = np.flatnonzero(tags <= EXT_MAX_ADDR)
        if len(ext):
            return int(tags[ext[-1]])
    return 1
