"""DLedger's own recovery at a broker restart, as a plan: where the log ends and what is committed after it.

Mirrors ``DLedgerMmapFileStore.recover`` and ``updateCommittedIndex`` (dledger 0.3.1.2 under RocketMQ
4.9.8 and 5.3.3, 0.3.3.4 under 5.5.1), which ``DLedgerCommitLog.recover`` (4.9.8) and
``dledgerRecoverNormally``/``dledgerRecoverAbnormally`` (5.x) call before anything is dispatched:

* The walk starts at the third data file from the end, going back towards the first until one whose
  first entry passes the pre-check (magic not a blank and a known one, size > 48, its ``pos`` the
  file's start, body size + 48 = size, and its 32-byte unit in ``index/`` agreeing on magic, size,
  index, term and pos); when none does, at the first file.
* From there each entry is checked: a blank magic (-1) moves to the next file (after the last, the
  walk ends); otherwise the header must fit, ``pos`` must be the entry's own position, body size + 48
  = size, the entry must fit the file, its magic known, its index the previous one's + 1, its term not
  below the previous one's, its size > 48.  The first entry failing any check ends the walk: the data
  is truncated there (``processOffset``), and the last entry accepted is the ledger's end.  A unit of
  ``index/`` that disagrees does not stop it (the broker rewrites the index from there on).  The body
  CRC is not checked.
* The checkpoint's ``committedIndex`` is then applied with ``updateCommittedIndex``: ignored when the
  ledger is empty, when it is -1, or below the ledger's first index; above the ledger's end it is
  lowered to the end.  The committed position is the end of that entry; the reput
  (``DLedgerCommitLog.getData``) reads nothing at or past it until the group commits more: a group of one does
  once the node leads (``QuorumAckChecker``), so a clean restart's reput goes on to the log's end
  (``pipelines.restart.dledger_restart``, checked against the broker).
"""
from __future__ import annotations

import dataclasses

import pyarrow.fs as pafs

from .dledger import (
    ENTRY_BLANK_MAGIC,
    ENTRY_HEADER_SIZE,
    ENTRY_MAGIC,
    INDEX_UNIT_SIZE,
    DLedgerLog,
    IndexUnit,
    committed_pos_of,
    entry_header,
    index_unit,
    is_blank,
)
from .errors import StoreError

__all__ = ["DLedgerRecovery", "recover_dledger"]


@dataclasses.dataclass(frozen=True)
class DLedgerRecovery:
    """What ``DLedgerMmapFileStore.recover`` leaves: the walk's start file, where it stopped and why,
    the ledger's last entry, and the committed entry and position the reput reads up to."""
    checked_from: str
    process_offset: int
    reason: str
    ledger_end_index: int
    committed_index: int
    committed_pos: int       # -1: nothing committed


def _entry(head: bytes) -> tuple[int, int, int, int, int, int]:
    """(magic, size, index, term, pos, body size) of a 48-byte entry header (``DLedgerEntryCoder``)."""
    h = entry_header(head)
    return h.magic, h.size, h.index, h.term, h.pos, h.body_size


class _Index:
    """``index/`` units by entry index (``indexFileList.getData(index * 32)``)."""

    def __init__(self, fs: pafs.FileSystem, base_dir: str) -> None:
        try:
            infos = fs.get_file_info(pafs.FileSelector(f"{base_dir}/index", allow_not_found=True))
        except (FileNotFoundError, NotADirectoryError):
            infos = []
        self.fs = fs
        self.files = sorted((int(i.base_name), i.size, i.path) for i in infos
                             if i.type == pafs.FileType.File and i.base_name.isdigit())

    def unit(self, index: int) -> IndexUnit | None:
        """(magic, pos, size, index, term) of the unit, None when there is none."""
        at = index * INDEX_UNIT_SIZE
        for start, size, path in self.files:
            if start <= at and at + INDEX_UNIT_SIZE <= start + size:
                with self.fs.open_input_file(path) as f:
                    return index_unit(f.read_at(INDEX_UNIT_SIZE, at - start))
        return None


class _Window:
    """A data file read a window at a time: ``len`` is the file's size, ``w[a:b]`` its bytes there."""
    SIZE = 8 << 20

    def __init__(self, fs: pafs.FileSystem, path: str, size: int) -> None:
        self.fs, self.path, self.size = fs, path, size
        self.start, self.data = 0, b""

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, span: slice) -> bytes:
        a, b = span.start, min(span.stop, self.size)
        if not (self.start <= a and b <= self.start + len(self.data)):
            with self.fs.open_input_file(self.path) as f:
                self.data = f.read_at(min(max(self.SIZE, b - a), self.size - a), a)
            self.start = a
        return self.data[a - self.start:b - self.start]


def _first_entry_ok(data: bytes, base: int, index: _Index) -> bool:
    """The pre-check of a file's first entry (see the module's docstring)."""
    if len(data) < ENTRY_HEADER_SIZE:
        return False
    magic, size, idx, term, pos, body = _entry(data[:ENTRY_HEADER_SIZE])
    if magic == ENTRY_BLANK_MAGIC or magic != ENTRY_MAGIC or size <= ENTRY_HEADER_SIZE or pos != base:
        return False
    if body + ENTRY_HEADER_SIZE != size:
        return False
    return index.unit(idx) == IndexUnit(magic, base, size, idx, term)


def recover_dledger(fs: pafs.FileSystem, log: DLedgerLog, file_size: int) -> DLedgerRecovery:
    """DLedger's recovery of ``log`` (see the module's docstring), without touching the files.

    Raises:
        StoreError: the walk stops more than a file before the last file, where the broker exits
            ("processOffset is too small") instead of truncating.
    """
    files = log.files
    index = _Index(fs, log.base_dir)

    def read(k: int) -> _Window:
        return _Window(fs, files[k][2], files[k][1])

    start = max(len(files) - 3, 0)
    k = 0
    for k in range(start, -1, -1):
        with fs.open_input_file(files[k][2]) as f:
            head = f.read_at(ENTRY_HEADER_SIZE, 0)
        if _first_entry_ok(head, int(files[k][0]), index):
            break
    checked_from = files[k][0]
    wanted_end = -1             # end of the checkpoint's committed entry, when the walk passes it
    last_index, last_term, last_end = -1, -1, -1
    data, base = read(k), int(files[k][0])
    process, rel = base, 0
    reason = "end of the last data file"
    while True:
        if rel + 4 > len(data):
            reason = f"the file {files[k][0]} ends without a blank at {base + rel}"
            break
        if is_blank(data[rel:rel + 4]):
            process = base + len(data)
            k += 1
            if k >= len(files):
                break
            data, base, rel = read(k), int(files[k][0]), 0
            process = base
            continue
        at = base + rel
        if rel + ENTRY_HEADER_SIZE > len(data):
            reason = f"an entry header at {at} runs past its file"
            break
        magic, size, idx, term, pos, body = _entry(data[rel:rel + ENTRY_HEADER_SIZE])
        why = ("end of data (zeros)" if magic == 0 and size == 0 and pos == 0
               else f"the entry at {at} says pos {pos}" if pos != at
               else f"the entry at {at} has size {size} != body size {body} + 48"
               if body + ENTRY_HEADER_SIZE != size
               else f"the entry at {at} (size {size}) runs past its file" if size < 0 or rel + size > len(data)
               else f"the entry at {at} has magic {magic}" if magic != ENTRY_MAGIC
               else f"the entry at {at} has index {idx}, not {last_index + 1}"
               if last_index != -1 and idx != last_index + 1
               else f"the entry at {at} has term {term} < {last_term}" if term < last_term
               else f"the entry at {at} has size {size} <= 48" if size <= ENTRY_HEADER_SIZE
               else "")
        if why:
            reason = why
            break
        last_index, last_term, last_end = idx, term, at + size
        if idx == log.committed_index:
            wanted_end = last_end
        rel += size
        process += size
    last_base = int(files[-1][0])
    if last_base - process > file_size:
        raise StoreError(f"DLedger's recovery stops at {process} ({reason}), more than a data file before the last "
                         f"one ({files[-1][0]}): the broker exits there (DLedgerMmapFileStore.recover) instead of "
                         "truncating; its data needs a manual repair first")
    committed = log.committed_index
    with fs.open_input_file(files[0][2]) as f:
        begin = _begin_index(f.read_at(ENTRY_HEADER_SIZE, 0))
    if last_index == -1 or committed == -1 or (begin is not None and committed < begin):
        committed, committed_pos = -1, -1
    else:
        committed = min(committed, last_index)
        committed_pos = (last_end if committed == last_index else wanted_end if wanted_end >= 0
                         else committed_pos_of(fs, log, committed, file_size))
    return DLedgerRecovery(checked_from, process, reason, last_index, committed, committed_pos)


def _begin_index(first_file: bytes) -> int | None:
    """The index of the first file's first entry (``reviseLedgerBeginIndex``)."""
    if len(first_file) < ENTRY_HEADER_SIZE:
        return None
    return _entry(first_file[:ENTRY_HEADER_SIZE])[2]
