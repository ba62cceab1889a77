"""What a broker's start does to one queue's consume queue ext files (``enableConsumeQueueExt=true``).

Mirrors ``ConsumeQueueExt`` (``store/src/main/java/org/apache/rocketmq/store/``, rocketmq-all-4.9.8;
the same in 5.3.3) as ``ConsumeQueue.load`` / ``recover`` drive it:

* ``load``: ``MappedFileQueue.doLoad`` (:func:`store_format.consumequeue_recovery.load_files`) with
  ``mappedFileSizeConsumeQueueExt``; a refused file fails ``ConsumeQueue.load``, so the start.  Every
  mapped file's write position is its size.
* ``ConsumeQueue.recover`` calls the ext's ``recover`` and then ``truncateByMaxAddress`` with the last
  ext address among the units it accepted, only when the queue mapped at least one consume queue
  file.  ``ConsumeQueue.truncateDirtyLogicFiles`` never changes the ext files (see
  :mod:`store_format.consumequeue_recovery`).
* ``recover``: every file is walked from its start (``CqExtUnit.readBySkip``): a unit whose size
  field (a short) is positive is skipped by that size, anything else ends the file's walk.  The
  position reached in the *last* file is where ``MappedFileQueue.truncateDirtyFiles`` puts the queue's
  end, so it only moves the last file's write position (no file lies after it).  A size field that
  cannot be read (fewer than 2 bytes left) or a skip past the file's end throws, and the store's
  ``load()`` fails.
* ``truncateByMaxAddress(maxAddress)``: nothing unless ``maxAddress <= MAX_ADDR``; the real offset is
  ``maxAddress - Long.MIN_VALUE``; the file holding it (``findMappedFileByOffset``, the first file for
  offset 0) is read at ``realOffset % fileSize`` (``selectMappedBuffer``: nothing at or past the file's
  write position), the unit there is read (``CqExtUnit.read``: nothing when fewer than 2 bytes or a size
  below 1; a unit cut short by the write position throws), and ``truncateDirtyFiles(realOffset +
  size)`` deletes the files after that point and moves the write position of the file holding it.
* ``checkSelf`` (``MappedFileQueue.checkSelf``) only logs gaps between files' names.

The next ext unit a dispatch puts goes at the resulting write position (:mod:`store_format.consumequeue_ext`).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .consumequeue_ext import END_BLANK_DATA_LENGTH, EXT_UNIT_SIZE, LONG_MIN, ext_units_per_file
from .consumequeue_recovery import EXT_MAX_ADDR, load_files

__all__ = ["ExtRecovery", "ext_position_after_puts", "ext_put_at", "ext_unit_starts", "ext_units_between",
           "recover_ext", "un_decorate"]

_SETTING = "mappedFileSizeConsumeQueueExt"


def un_decorate(address: int) -> int:
    """``ConsumeQueueExt.unDecorate``: an ext address's real offset in the queue's ext space."""
    return address - LONG_MIN if address <= EXT_MAX_ADDR else address


def ext_units_between(start: int, end: int, file_size: int) -> int:
    """How many 20-byte ext units the writer (``ConsumeQueueExt.put``) puts from real offset ``start`` up
    to ``end`` (both unit boundaries of its layout; negative when ``end`` lies before ``start``)."""
    per_file = ext_units_per_file(file_size)

    def ordinal(pos: int) -> int:
        return pos // file_size * per_file + min(pos % file_size // EXT_UNIT_SIZE, per_file)

    return ordinal(end) - ordinal(start)


def ext_put_at(position: int, file_size: int) -> int:
    """Where ``ConsumeQueueExt.put`` (rocketmq-all-4.9.8 and 5.3.3, rocketmq-store 5.5.1) puts a 20-byte unit
    (no filter bitmap) when the queue's ext files end at real offset ``position`` (any byte: the units before
    may hold filter bitmaps): at the last file's write position when the unit leaves at least
    ``END_BLANK_DATA_LENGTH`` bytes of the file after it (``size > blankSize`` not true), else, once
    ``fullFillToEnd`` marked the end (a short -1 there, the write position the file's size), at the start of
    the next file (``getLastMappedFile(0)``); a position on a file boundary is a full file's end (or no file):
    the next file's start.  Its address is that plus ``Long.MIN_VALUE`` (``decorate``).

    Raises:
        ValueError: ``position`` leaves 1 byte of its file: ``fullFillToEnd``'s short does not fit, the put
            throws and returns 1 (no ext unit; the broker's own puts never leave fewer than
            ``END_BLANK_DATA_LENGTH`` bytes before a file's end).
    """
    within = position % file_size
    if file_size - within - END_BLANK_DATA_LENGTH >= EXT_UNIT_SIZE:
        return position
    if file_size - within == 1:
        raise ValueError(f"an ext end 1 byte before its file's end ({position}): ConsumeQueueExt.fullFillToEnd throws")
    return position - within + file_size


def ext_position_after_puts(position: int, puts: int, file_size: int) -> int:
    """Where a queue's ext files end after ``puts`` more calls of ``ConsumeQueueExt.put`` from real offset
    ``position`` (any byte end, :func:`ext_put_at`): each puts a 20-byte unit at the write position, or, when it
    would leave fewer than ``END_BLANK_DATA_LENGTH`` bytes, fills the file to its end (``fullFillToEnd``) and puts
    it at the start of a new file.  The units that fit the file ``position`` lies in go there, the rest from the
    next files' starts, ``ext_units_per_file`` a file."""
    if puts <= 0:
        return position
    within = position % file_size
    here = max(0, (file_size - END_BLANK_DATA_LENGTH - within) // EXT_UNIT_SIZE) if within else 0
    if puts <= here:
        return position + puts * EXT_UNIT_SIZE
    start = ext_put_at(position, file_size) if not here else position - within + file_size
    per_file = ext_units_per_file(file_size)
    last = puts - here - 1
    return start + last // per_file * file_size + last % per_file * EXT_UNIT_SIZE + EXT_UNIT_SIZE


def _short(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 2], "big", signed=True)


def _walk(data: bytes, start: int, starts: list[np.ndarray] | None = None) -> tuple[int, int, str | None]:
    """``recover``'s walk of one file from ``start``: (position reached, units skipped, why it throws or
    None); each unit's position in the file appended to ``starts`` when given.  Runs of 20-byte units are stepped
    over with arrays."""
    n, p, units = len(data), start, 0
    while True:
        if p + 2 > n:
            return p, units, f"a unit's size cannot be read at byte {p} (BufferUnderflowException)"
        sizes = np.frombuffer(data, dtype=">i2", count=(n - p) // 2, offset=p)[::EXT_UNIT_SIZE // 2]
        other = np.flatnonzero(sizes != EXT_UNIT_SIZE)
        j = int(other[0]) if len(other) else len(sizes)
        if j:
            if starts is not None:
                starts.append(p + EXT_UNIT_SIZE * np.arange(j, dtype=np.int64))
            p += j * EXT_UNIT_SIZE
            units += j
            if p > n:
                return p, units, f"a unit's size skips past the file's end to byte {p}"
            continue
        size = _short(data, p)
        if size <= 0:
            return p, units, None
        if starts is not None:
            starts.append(np.array([p], dtype=np.int64))
        p += size
        units += 1
        if p > n:
            return p, units, f"a unit's size skips past the file's end to byte {p}"


def ext_unit_starts(files: list[tuple[str, bytes]], end: int) -> np.ndarray:
    """The real offsets of the ext units below real offset ``end`` (the queue's ext end after ``recover`` and
    ``truncateByMaxAddress``) in ``files`` (name, bytes; any order): each file walked from its start as ``recover``
    does (``CqExtUnit.readBySkip``: a positive size field skips that many bytes, anything else ends the file's
    walk), whatever each unit's size (filter bitmaps too)."""
    out: list[np.ndarray] = []
    for name, data in sorted(files, key=lambda f: int(f[0])):
        base = int(name)
        if base >= end:
            break
        here: list[np.ndarray] = []
        _walk(data[:min(len(data), end - base)], 0, here)
        out += [base + a for a in here]
    starts = np.concatenate(out) if out else np.zeros(0, np.int64)
    return starts[starts < end]


@dataclasses.dataclass
class ExtRecovery:
    """One queue's ext files after ``load``, ``recover`` and ``truncateByMaxAddress``."""
    load_failure: str | None = None        # doLoad refuses a file: the start fails
    failure: str | None = None             # recover or truncateByMaxAddress throws: the store's load() fails
    recover_position: int = 0              # where recover leaves the queue's end (in its ext space)
    write_position: int = 0                # after truncateByMaxAddress: where the next ext unit goes
    files_deleted: list[str] = dataclasses.field(default_factory=list)
    units_dropped: int = 0                 # ext units at or after write_position (overwritten or deleted)
    note: str = ""                         # why truncateByMaxAddress changed nothing


def _truncate_dirty_files(wrote: dict[str, int], file_size: int, offset: int, deleted: list[str]) -> None:
    """``MappedFileQueue.truncateDirtyFiles(offset)`` on the mapped files' write positions."""
    for name in list(wrote):
        base = int(name)
        if base + file_size > offset:
            if offset >= base:
                wrote[name] = offset % file_size
            else:
                del wrote[name]
                deleted.append(name)


def recover_ext(files: list[tuple[str, bytes]], *, file_size: int, broker_5x: bool, max_ext_addr: int) -> ExtRecovery:
    """One queue's ext files (name, bytes; any order) at a start whose ``ConsumeQueue.recover`` mapped
    consume queue files and found ``max_ext_addr`` (1: none); see the module docstring."""
    r = ExtRecovery()
    r.load_failure, loadable = load_files(files, file_size=file_size, broker_5x=broker_5x, setting=_SETTING)
    if not loadable:
        return r
    data = dict(loadable)
    reached = 0
    for name, content in loadable:
        reached, _units, why = _walk(content, 0)
        if why:
            r.failure = f"ConsumeQueueExt.recover throws on {name}: {why}"
            return r
    last = loadable[-1][0]
    r.recover_position = int(last) + reached
    wrote = {name: file_size for name, _ in loadable}
    _truncate_dirty_files(wrote, file_size, r.recover_position, r.files_deleted)
    if max_ext_addr > EXT_MAX_ADDR:
        r.note = "no consume queue unit the recover walk accepted holds an ext address"
    else:
        real = un_decorate(max_ext_addr)
        holder = next((n for n in wrote if int(n) <= real < int(n) + file_size), None)
        if holder is None and real == 0 and wrote:
            holder = next(iter(wrote))
        pos = real % file_size
        if holder is None or not 0 <= pos < wrote[holder]:
            r.note = (f"the last ext address of the consume queue (real offset {real}) lies at or past the ext "
                      "files' end after recover: nothing truncated")
        else:
            left = wrote[holder] - pos
            size = _short(data[holder], pos) if left >= 2 else 0
            bitmap = _short(data[holder], pos + 18) if left >= EXT_UNIT_SIZE else 0
            if size < 1:
                r.note = f"no ext unit at real offset {real} (size {size}): nothing truncated"
            elif left < EXT_UNIT_SIZE + max(bitmap, 0):
                r.failure = (f"ConsumeQueueExt.truncateByMaxAddress throws: the ext unit at real offset {real} is "
                             "cut short by the write position (BufferUnderflowException)")
                return r
            else:
                _truncate_dirty_files(wrote, file_size, real + size, r.files_deleted)
    if wrote:
        end = next(reversed(wrote))
        r.write_position = int(end) + wrote[end]
        _, r.units_dropped, _ = _walk(data[end], wrote[end])
    for name in r.files_deleted:
        r.units_dropped += _walk(data[name], 0)[1]
    return r
