"""DLedger commitlogs: where their files are, how an entry is laid out, and how far the reput reads.

With ``enableDLegerCommitLog=true`` the broker keeps its records in a DLedger (Raft) log instead of
``commitlog/`` (``DLedgerCommitLog``, RocketMQ 4.9.8, 5.3.3, 5.5.1; dledger 0.3.1.2 and 0.3.3.4):

* the data files are ``<storePathRootDir>/dledger-<selfId>/data/`` unless ``storePathDLedgerCommitLog``
  says otherwise (``DLedgerConfig.getDefaultPath``/``getDataStorePath``), named by their 20-digit
  start offset and ``mappedFileSizeCommitLog`` long (``setMappedFileSizeForEntryData``);
* each entry is a 48-byte header (``DLedgerEntry``: magic, size, index, term, pos, channel, chain
  CRC, body CRC, body size) and an ordinary encoded record as its body.  The append hook writes
  ``pos + 48`` into the record's PHYSICALOFFSET: the record's own position, which the consume
  queue and index hold.  An entry that does not fit the rest of a file leaves a blank there
  (``MmapFileList.preAppend``: magic -1, then the blank's length);
* ``dledger-<selfId>/index/`` holds 32-byte units per entry index (``DLedgerMmapFileStore.INDEX_UNIT_SIZE``:
  magic, pos, size, index, term), at ``index * 32`` of the index file list;
* ``dledger-<selfId>/checkpoint`` (properties) holds ``committedIndex``: after a restart
  ``DLedgerMmapFileStore.recover`` sets the committed position to the end of that entry, and
  ``DLedgerCommitLog.getData`` hands the reput nothing at or past it;
* a store converted in place keeps its old ``commitlog/`` files below ``dividedCommitlogOffset``, the
  start of the first DLedger file (``DLedgerCommitLog.recover``); the reput reads them first, as a
  plain commitlog.

The reput reads an entry with ``DLedgerCommitLog.checkMessageAndReturnSize``: the record after the
header, as a plain commitlog's (:mod:`store_format.walkkernel` takes the header into account).
"""
from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pyarrow.fs as pafs

from .errors import StoreLayoutError
from .javaproperties import parse_java_properties
from .layout import SEGMENT_NAME_RE

__all__ = ["ENTRY_HEADER_SIZE", "ENTRY_MAGIC", "ENTRY_BLANK_MAGIC", "OFF_ENTRY_SIZE", "OFF_ENTRY_INDEX",
           "OFF_ENTRY_POS", "OFF_ENTRY_BODY_SIZE", "INDEX_UNIT_SIZE", "ENTRY_DTYPE", "INDEX_UNIT_DTYPE",
           "ENTRY_FIELD_NAMES", "INDEX_UNIT_FIELD_NAMES", "EntryHeader", "IndexUnit", "entry_header", "index_unit",
           "entry_headers", "is_blank", "blank_length", "DLedgerLog", "find_dledger_log",
           "committed_pos_of", "dledger_has_data"]

# DLedgerEntry / DLedgerEntryCoder.encode: the entry header's fields, in order, big-endian
_ENTRY_FIELDS = (("magic", "i"), ("size", "i"), ("index", "q"), ("term", "q"), ("pos", "q"), ("channel", "i"),
                 ("chain_crc", "i"), ("body_crc", "i"), ("body_size", "i"))
# DLedgerMmapFileStore's index unit (DLedgerEntryCoder.encodeIndex), 32 bytes per entry index
_INDEX_UNIT_FIELDS = (("magic", "i"), ("pos", "q"), ("size", "i"), ("index", "q"), ("term", "q"))


def _dtype(fields: tuple[tuple[str, str], ...]) -> np.dtype:
    return np.dtype([(name, ">i4" if code == "i" else ">i8") for name, code in fields])


def _offset(dtype: np.dtype, name: str) -> int:
    assert dtype.fields is not None
    return int(dtype.fields[name][1])


ENTRY_DTYPE = _dtype(_ENTRY_FIELDS)              # packed: field offsets follow DLedgerEntryCoder
INDEX_UNIT_DTYPE = _dtype(_INDEX_UNIT_FIELDS)
_ENTRY_STRUCT = struct.Struct(">" + "".join(code for _, code in _ENTRY_FIELDS))
_INDEX_UNIT_STRUCT = struct.Struct(">" + "".join(code for _, code in _INDEX_UNIT_FIELDS))
ENTRY_FIELD_NAMES = tuple(name for name, _ in _ENTRY_FIELDS)
INDEX_UNIT_FIELD_NAMES = tuple(name for name, _ in _INDEX_UNIT_FIELDS)

ENTRY_HEADER_SIZE = ENTRY_DTYPE.itemsize        # 48: DLedgerEntry.BODY_OFFSET
ENTRY_MAGIC = 1                 # DLedgerMmapFileStore.MAGIC_1 (CURRENT_MAGIC)
ENTRY_BLANK_MAGIC = -1          # MmapFileList.BLANK_MAGIC_CODE
OFF_ENTRY_SIZE: int = _offset(ENTRY_DTYPE, "size")
OFF_ENTRY_INDEX: int = _offset(ENTRY_DTYPE, "index")
OFF_ENTRY_POS: int = _offset(ENTRY_DTYPE, "pos")            # DLedgerEntry.POS_OFFSET
OFF_ENTRY_BODY_SIZE: int = _offset(ENTRY_DTYPE, "body_size")
INDEX_UNIT_SIZE = INDEX_UNIT_DTYPE.itemsize     # 32: DLedgerMmapFileStore.INDEX_UNIT_SIZE


@dataclasses.dataclass(frozen=True, slots=True)
class EntryHeader:
    """The 48-byte header of a DLedger entry (``DLedgerEntryCoder.encode``/``decode``)."""
    magic: int
    size: int          # header + body
    index: int
    term: int
    pos: int           # where the entry starts in the data file list
    channel: int
    chain_crc: int
    body_crc: int
    body_size: int


@dataclasses.dataclass(frozen=True, slots=True)
class IndexUnit:
    """A 32-byte unit of ``dledger-<selfId>/index/`` (``DLedgerEntryCoder.encodeIndex``)."""
    magic: int
    pos: int
    size: int
    index: int
    term: int


def entry_header(head: bytes, at: int = 0) -> EntryHeader:
    """The entry header at ``head[at:at + 48]`` (``head`` must hold it)."""
    return EntryHeader(*_ENTRY_STRUCT.unpack_from(head, at))


def index_unit(data: bytes, at: int = 0) -> IndexUnit:
    """The index unit at ``data[at:at + 32]`` (``data`` must hold it)."""
    return IndexUnit(*_INDEX_UNIT_STRUCT.unpack_from(data, at))


def entry_headers(buf: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The headers of the entries starting at ``buf[starts]`` (every one inside ``buf``), as an array
    of :data:`ENTRY_DTYPE` (one record per entry: ``out["index"]``, ``out["pos"]``, ...)."""
    rows = buf[np.asarray(starts, dtype=np.int64)[:, None] + np.arange(ENTRY_HEADER_SIZE)]
    return np.ascontiguousarray(rows, dtype=np.uint8).view(ENTRY_DTYPE).reshape(len(rows))


def is_blank(head: bytes) -> bool:
    """Whether ``head`` starts with the magic of a blank (``MmapFileList.preAppend`` fills the rest of a
    file with it, then the blank's length, when the next entry does not fit)."""
    return len(head) >= 4 and int.from_bytes(head[:4], "big", signed=True) == ENTRY_BLANK_MAGIC


def blank_length(head: bytes) -> int | None:
    """The length a blank declares (the int after its magic), None when ``head`` is too short."""
    return int.from_bytes(head[4:8], "big", signed=True) if len(head) >= 8 else None


_CHECKPOINT = "checkpoint"      # DLedgerMmapFileStore.CHECK_POINT_FILE
_COMMITTED_INDEX = "committedIndex"


@dataclasses.dataclass(frozen=True)
class DLedgerLog:
    """A DLedger log on disk: its data files (name, size, path, mtime in ms), and the committed
    position the reput reads up to (-1: nothing committed)."""
    base_dir: str                 # dledger-<selfId>
    data_dir: str
    files: list[tuple[str, int, str, int | None]]
    committed_index: int
    committed_pos: int
    uncommitted: bool = False     # an entry follows the committed one (written, not yet committed)

    @property
    def first_offset(self) -> int:
        """``dividedCommitlogOffset``: where the DLedger data starts."""
        return int(self.files[0][0])

    def figures(self) -> dict:
        """The log's figures for a run's summary: its folder, committed index and position."""
        return {"log": self.base_dir.rsplit("/", 1)[-1], "committed_index": self.committed_index,
                "committed_offset": self.committed_pos, "uncommitted": self.uncommitted}


def _dirs(fs: pafs.FileSystem, path: str) -> list[str]:
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)


def dledger_dirs(fs: pafs.FileSystem, root: str) -> list[str]:
    """The ``dledger-<selfId>`` folders of a store root."""
    return [n for n in _dirs(fs, root) if n.startswith("dledger-")]


def _read(fs: pafs.FileSystem, path: str, pos: int, length: int) -> bytes:
    with fs.open_input_file(path) as f:
        return f.read_at(length, pos)


def _committed_index(fs: pafs.FileSystem, base_dir: str, uri: str) -> int:
    path = f"{base_dir}/{_CHECKPOINT}"
    if fs.get_file_info(path).type != pafs.FileType.File:
        bak = fs.get_file_info(f"{path}.bak").type == pafs.FileType.File
        raise StoreLayoutError(
            f"{uri}: {path.rsplit('/', 2)[-2]}/{_CHECKPOINT} is missing: without DLedger's committed index the "
            "broker's reput dispatches nothing after a restart (DLedgerCommitLog.getMaxOffset), and which entries "
            "the group committed is unknown" + (f" ({_CHECKPOINT}.bak holds the one written before it: copy it to "
                                                f"{_CHECKPOINT} to rebuild up to that index)" if bak else ""))
    with fs.open_input_stream(path) as f:
        props = parse_java_properties(f.read().decode("iso-8859-1"))
    value = props.get(_COMMITTED_INDEX, "").strip()
    try:
        return int(value)
    except ValueError:
        raise StoreLayoutError(f"{uri}: {_CHECKPOINT} of {base_dir.rsplit('/', 1)[-1]} has committedIndex="
                               f"{value!r}, not a number") from None


def _committed_pos(fs: pafs.FileSystem, base_dir: str, index: int, files: list, file_size: int) -> int:
    """End of the entry ``index``: its unit in DLedger's index files (``getEntryPosAndSize``), checked
    against the entry's own header in the data files.  -1 when either cannot be read."""
    if index < 0:
        return -1
    index_dir = f"{base_dir}/index"
    try:
        infos = fs.get_file_info(pafs.FileSelector(index_dir, allow_not_found=True))
    except (FileNotFoundError, NotADirectoryError):
        return -1
    index_files = sorted((i for i in infos if i.type == pafs.FileType.File and SEGMENT_NAME_RE.match(i.base_name)),
                         key=lambda i: i.base_name)
    at = index * INDEX_UNIT_SIZE
    unit = b""
    for info in index_files:
        start = int(info.base_name)
        if start <= at < start + info.size:
            unit = _read(fs, info.path, at - start, INDEX_UNIT_SIZE)
            break
    if len(unit) < INDEX_UNIT_SIZE:
        return -1
    u = index_unit(unit)
    pos, size = u.pos, u.size
    if u.index != index or size <= ENTRY_HEADER_SIZE:
        return -1
    for name, fsize, path, _ in files:
        start = int(name)
        if start <= pos < start + fsize:
            head = _read(fs, path, pos - start, ENTRY_HEADER_SIZE)
            if len(head) == ENTRY_HEADER_SIZE:
                h = entry_header(head)
                if h.pos == pos and h.index == index and h.size == size:
                    return pos + size
            return -1
    return -1


def committed_pos_of(fs: pafs.FileSystem, log: DLedgerLog, index: int, file_size: int) -> int:
    """End of the entry ``index`` of ``log`` (its ``index/`` unit checked against its header); -1 when
    either cannot be read."""
    return _committed_pos(fs, log.base_dir, index, log.files, file_size)


def dledger_has_data(fs: pafs.FileSystem, root: str, *, self_id: str, data_path: str) -> bool:
    """Whether the DLedger data folder :func:`find_dledger_log` reads holds a data file (20-digit name):
    ``DLedgerCommitLog``'s recovery recovers the old ``commitlog/`` files instead while it holds none."""
    if not self_id and not data_path:
        found = dledger_dirs(fs, root)
        if len(found) != 1:
            return bool(found)   # several: find_dledger_log says which to pick
        self_id = found[0][len("dledger-"):]
    data_dir = data_path.rstrip("/") if data_path else f"{root}/dledger-{self_id}/data"
    try:
        entries = fs.get_file_info(pafs.FileSelector(data_dir, allow_not_found=True))
    except NotADirectoryError:
        return False
    return any(e.type == pafs.FileType.File and SEGMENT_NAME_RE.match(e.base_name) for e in entries)


def find_dledger_log(fs: pafs.FileSystem, root: str, uri: str, *, self_id: str, data_path: str,
                     file_size: int) -> DLedgerLog:
    """The DLedger log of a store: ``dLegerSelfId`` names it (or the one ``dledger-*`` folder there is),
    ``storePathDLedgerCommitLog`` moves its data.

    Raises:
        StoreLayoutError: no or several DLedger folders, no data files, a file of the wrong size,
            files that do not follow each other, a missing or unreadable checkpoint.
    """
    found = dledger_dirs(fs, root)
    if self_id:
        name = f"dledger-{self_id}"
    elif len(found) == 1:
        name = found[0]
    else:
        which = ", ".join(found) if found else "none"
        raise StoreLayoutError(f"{uri}: enableDLegerCommitLog=true but the DLedger folder is not known (dledger-* "
                               f"folders: {which}); set dLegerSelfId in the broker.conf passed with --config")
    base_dir = f"{root}/{name}"
    data_dir = data_path.rstrip("/") if data_path else f"{base_dir}/data"
    if fs.get_file_info(base_dir).type != pafs.FileType.Directory and not data_path:
        raise StoreLayoutError(f"{uri}: no {name}/ folder (enableDLegerCommitLog=true, dLegerSelfId="
                               f"{name[len('dledger-'):]}); DLedger folders here: {', '.join(found) or 'none'}")
    try:
        entries = fs.get_file_info(pafs.FileSelector(data_dir, allow_not_found=True))
    except NotADirectoryError:
        entries = []
    files = sorted((e for e in entries if e.type == pafs.FileType.File and SEGMENT_NAME_RE.match(e.base_name)),
                   key=lambda e: e.base_name)
    if not files:
        raise StoreLayoutError(f"{uri}: the DLedger data folder {data_dir.rsplit('/', 2)[-2]}/"
                               f"{data_dir.rsplit('/', 1)[-1]} holds no data files (20-digit names)")
    out: list[tuple[str, int, str, int | None]] = []
    for e in files:
        if e.size != file_size:
            raise StoreLayoutError(
                f"DLedger data file {e.base_name} is {e.size} bytes, but mappedFileSizeCommitLog is {file_size}: "
                "pass the broker.conf the store was written with (--config)")
        if out and int(e.base_name) != int(out[-1][0]) + file_size:
            raise StoreLayoutError(f"DLedger data file {e.base_name} does not follow {out[-1][0]}; the broker "
                                   "cannot map offsets across a missing file")
        mtime = int(e.mtime_ns // 1_000_000) if e.mtime_ns is not None else None
        out.append((e.base_name, e.size, e.path, mtime))
    committed_index = _committed_index(fs, base_dir, uri)
    committed_pos = _committed_pos(fs, base_dir, committed_index, out, file_size)
    if committed_index >= 0 and committed_pos < 0:
        raise StoreLayoutError(
            f"{uri}: {name}/checkpoint gives committedIndex={committed_index}, but that entry is not in {name}/index "
            "and the data files (the broker's recovery would find it there)")
    return DLedgerLog(base_dir, data_dir, out, committed_index, committed_pos,
                      _entry_at(fs, out, committed_pos, file_size))


def _entry_at(fs: pafs.FileSystem, files: list, pos: int, file_size: int) -> bool:
    """Whether an entry starts at ``pos``, or after a blank there at the start of the next file."""
    for _ in range(2):
        where = next(((path, int(name)) for name, _, path, _ in files if int(name) <= pos < int(name) + file_size),
                      None)
        if where is None or pos < 0:
            return False
        head = _read(fs, where[0], pos - where[1], ENTRY_HEADER_SIZE)
        if len(head) < 8:
            return False
        if is_blank(head):
            pos = where[1] + file_size
            continue
        if len(head) < ENTRY_HEADER_SIZE:
            return False
        h = entry_header(head)
        return h.magic == ENTRY_MAGIC and h.pos == pos
    return False

