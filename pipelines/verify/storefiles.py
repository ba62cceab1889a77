"""Reading a store's queue folders (``consumequeue/``, ``consumequeue_ext/``, ``batchconsumequeue/``)
and ``index/`` (local or remote, through ``pyarrow.fs``) for verify and repair: folder names, file
listings, whole-file reads, units as arrays."""
from __future__ import annotations

import re

import numpy as np
import pyarrow.fs as pafs

from store_format.batchconsumequeue import BCQ_DIR
from store_format.layout import CQ_UNIT_DTYPE, CQ_UNIT_SIZE, SEGMENT_NAME_RE
from store_format.store import StoreLocation

CQ_DIR = "consumequeue"
CQ_EXT_DIR = "consumequeue_ext"   # StorePathConfigHelper.getStorePathConsumeQueueExt
QUEUE_DIRS = (CQ_DIR, CQ_EXT_DIR, BCQ_DIR)   # <folder>/<topic>/<queueId>/<file>
INDEX_DIR = "index"
REPAIR_TMP_RE = re.compile(r"^\..+\.repair-[0-9a-f]{12}\.tmp$")  # a repair's staged file


def read_all(fs: pafs.FileSystem, path: str) -> bytes:
    """The whole file at ``path``."""
    with fs.open_input_file(path) as f:
        return f.readall()


def list_tree(fs: pafs.FileSystem, root: str) -> dict[str, int]:
    """Relative path → size of every file under ``root`` (empty if it does not exist)."""
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        return {}
    out = {}
    for e in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        if e.type == pafs.FileType.File:
            out[e.path[len(root):].lstrip("/")] = e.size
    return out


def list_index(fs: pafs.FileSystem, root: str) -> tuple[list[str], list[str]]:
    """Index file names in name order, and other files of ``index/``.

    ``IndexService.load`` sorts the folder's files and skips names that are not numbers
    (``MappedFile`` parses the name as the file's offset and the NumberFormatException is caught)."""
    names = sorted(list_tree(fs, root))
    files = [n for n in names if "/" not in n and n.isdigit()]
    return files, [n for n in names if n not in files]


def cq_units(data: bytes | memoryview) -> np.ndarray:
    """A consume queue file's 20-byte units as a structured array (a partial last unit left out)."""
    n = len(data) // CQ_UNIT_SIZE
    return np.frombuffer(data, dtype=CQ_UNIT_DTYPE, count=n)


def queue_files(fs: pafs.FileSystem, folder: str) -> list[tuple[str, bytes]]:
    """The files of one queue folder that its MappedFileQueue maps (20-digit names), with their bytes."""
    return [(n, read_all(fs, f"{folder}/{n}")) for n in sorted(list_tree(fs, folder)) if SEGMENT_NAME_RE.match(n)]


def end_of_data(st: StoreLocation, data_end: int | None) -> int:
    """Where the store's commitlog data ends as the rebuild read it: its ``data_end``, else the last segment's end."""
    return data_end if data_end is not None else st.segments[-1].end


def checkpoint_index_ts(fs: pafs.FileSystem, root: str) -> int | None:
    """``StoreCheckpoint.indexMsgTimestamp``: the long at byte 16 of ``checkpoint``."""
    path = f"{root}/checkpoint"
    if fs.get_file_info(path).type != pafs.FileType.File:
        return None
    data = read_all(fs, path)
    return int.from_bytes(data[16:24], "big", signed=True) if len(data) >= 24 else None
