"""Decode any store file of a broker, read-only, into items (plain dicts), in bounded memory.

What a file is comes from its path, size and first bytes (:func:`detect_kind`):

=================  ============================================  =============================================
kind               path                                          items
=================  ============================================  =============================================
``commitlog``      ``commitlog/<20-digit base offset>``          records, walked as the reput walks them
``dledger``        ``dledger-<selfId>/data/<20 digits>``          records behind their DLedger entry headers
``dledger_index``  ``dledger-<selfId>/index/<20 digits>``         units ``(magic, pos, size, index, term)``
``consume_queue``  ``consumequeue/<topic>/<queueId>/<20 digits>``  units ``(commitlogOffset, size, tagsCode)``
``index``          ``index/<yyyyMMddHHmmssSSS>``                 entries, then the non-empty slots and chains
``checkpoint``     ``checkpoint``                                the ``StoreCheckpoint`` fields
``config``         ``config/*.json`` (and ``*.json.bak``)          one field per leaf of the JSON document
=================  ============================================  =============================================

Every iterator yields a ``{"type": "file", ...}`` header first, then items (``record``, ``unit``,
``entry``, ``slot``, ``field``, ``checkpoint``), ``event`` objects where the file says something
about itself (a blank record, the end of the data, an unreadable record), and a ``summary`` last.
``start``/``count`` select items by their number (from 0, in file order); events are yielded while
the selection is open.

Each kind has its module: :mod:`.commitlog` (DLedger data files too), :mod:`.dledger_index`,
:mod:`.consume_queue`, :mod:`.index`, :mod:`.checkpoint`, :mod:`.config_json`; :mod:`.items` and
:mod:`.reading` are what they share.  This package's own part opens a file and decides what it is.
A DLedger data file is also recognized out of its folder (``storePathDLedgerCommitLog``, a copy) by
its first entry: DLedger's magic, its own position as ``pos``, its size the body size plus the header
(:func:`store_format.walkkernel.find_entry_start`, the rule the rebuild's scan finds entries by).
"""
from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterator

import numpy as np
import pyarrow.fs as pafs

from ..config import BrokerConfig
from ..dledger import find_dledger_log
from ..errors import StoreError, StoreLayoutError
from ..layout import CHECKPOINT_SIZE, MAGIC_V1, MAGIC_V2, OFF_MAGIC, SEGMENT_NAME_RE
from ..store import Reader, resolve
from ..walkkernel import find_entry_start
from .checkpoint import iter_checkpoint
from .commitlog import DLedgerFile, iter_commitlog, resolve_version_of_segment
from .config_json import iter_config_json
from .consume_queue import iter_consume_queue, topic_and_queue
from .dledger_index import iter_dledger_index
from .index import iter_index
from .items import (
    KIND_CHECKPOINT,
    KIND_COMMITLOG,
    KIND_CONFIG,
    KIND_CONSUME_QUEUE,
    KIND_DLEDGER,
    KIND_DLEDGER_INDEX,
    KIND_INDEX,
    KINDS,
    Item,
)
from .reading import DEFAULT_WINDOW, WindowReader

__all__ = ["KINDS", "DEFAULT_WINDOW", "Item", "FileDump", "open_dump", "detect_kind", "iter_commitlog",
           "iter_dledger_index", "iter_consume_queue", "iter_index", "iter_checkpoint", "iter_config_json"]

log = logging.getLogger(__name__)

_DIGITS17 = re.compile(r"^\d{17}$")


@dataclasses.dataclass
class FileDump:
    """One file to decode: where it is and what it is (see :func:`open_dump`)."""
    uri: str
    fs: pafs.FileSystem
    path: str
    kind: str
    size: int
    config: BrokerConfig
    window: int = DEFAULT_WINDOW

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def items(self, start: int = 0, count: int | None = None) -> Iterator[Item]:
        """Header, the selected items, events and a summary (see the module docstring)."""
        with Reader(self.fs, self.path) as read:
            if self.kind in (KIND_COMMITLOG, KIND_DLEDGER):
                dledger = self.dledger_file() if self.kind == KIND_DLEDGER else None
                config = resolve_version_of_segment(self.fs, self.path, self.name, self.size, self.config, self.uri,
                                                    dledger=dledger is not None)
                yield from iter_commitlog(WindowReader(read), name=self.name, size=self.size, config=config,
                                          path=self.uri, start=start, count=count, window=self.window,
                                          dledger=dledger)
            elif self.kind == KIND_DLEDGER_INDEX:
                yield from iter_dledger_index(read, name=self.name, size=self.size, path=self.uri, start=start,
                                              count=count, window=self.window)
            elif self.kind == KIND_CONSUME_QUEUE:
                topic, queue_id = topic_and_queue(self.path)
                yield from iter_consume_queue(read, name=self.name, size=self.size, config=self.config,
                                              path=self.uri, topic=topic, queue_id=queue_id, start=start,
                                              count=count, window=self.window)
            elif self.kind == KIND_INDEX:
                yield from iter_index(read, name=self.name, size=self.size, config=self.config, path=self.uri,
                                      start=start, count=count, window=self.window)
            elif self.kind == KIND_CHECKPOINT:
                yield from iter_checkpoint(bytes(read(0, min(self.size, CHECKPOINT_SIZE))), size=self.size,
                                           path=self.uri)
            else:
                data = bytes(read(0, self.size))
                yield from iter_config_json(data, path=self.uri, start=start, count=count)


    def dledger_file(self) -> DLedgerFile:
        """What the DLedger log around this data file says: its committed entry and position, read as a
        rebuild reads them (:func:`store_format.dledger.find_dledger_log`) when the file lies in
        ``dledger-<selfId>/data/``; nothing but a note otherwise, or when the log cannot be read."""
        parts = self.path.replace("\\", "/").rstrip("/").split("/")
        if len(parts) < 3 or parts[-2] != "data" or not parts[-3].startswith("dledger-"):
            return DLedgerFile(note="not in a dledger-<selfId>/data/ folder: the log's committed position is "
                                    "not known (its checkpoint and index/ are not beside the file)")
        log_dir = parts[-3]
        root = "/".join(parts[:-3]) or "/"
        try:
            log = find_dledger_log(self.fs, root, self.uri, self_id=log_dir[len("dledger-"):], data_path="",
                                   file_size=self.config.mappedFileSizeCommitLog)
        except (StoreError, OSError) as e:
            return DLedgerFile(log=log_dir, note=f"the log's committed position is not known: {e}")
        return DLedgerFile(log=log_dir, committed_index=log.committed_index, committed_pos=log.committed_pos)


def open_dump(uri: str, config: BrokerConfig, *, window: int = DEFAULT_WINDOW) -> FileDump:
    """Check that ``uri`` is a readable store file and decide what it is.

    Raises:
        StoreLayoutError: the file does not exist, is a folder, cannot be read, or is none of the
            kinds this module decodes.
    """
    fs, path = resolve(uri)
    try:
        info = fs.get_file_info(path)
    except OSError as e:
        raise StoreLayoutError(f"{uri}: cannot be read ({e})") from None
    if info.type == pafs.FileType.NotFound:
        raise StoreLayoutError(f"{uri}: no such file")
    if info.type == pafs.FileType.Directory:
        raise StoreLayoutError(f"{uri} is a folder: pass the files in it (e.g. {uri.rstrip('/')}/*)")
    size = int(info.size or 0)
    try:
        with Reader(fs, path) as read:
            head = bytes(read(0, min(size, 64))) if size else b""
    except OSError as e:
        raise StoreLayoutError(f"{uri}: cannot be read ({e})") from None
    kind = detect_kind(path, size, head, config)
    return FileDump(uri, fs, path, kind, size, config, window)


def detect_kind(path: str, size: int, head: bytes, config: BrokerConfig) -> str:
    """What a store file is, from its name, its folder, its size and its first bytes.

    Raises:
        StoreLayoutError: not a file this module decodes, or a 20-digit file that could be either a
            commitlog segment or a consume queue file.
    """
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    name = parts[-1] if parts else path
    parent = parts[-2] if len(parts) >= 2 else ""
    dledger_log = len(parts) >= 3 and parts[-3].startswith("dledger-")
    if dledger_log and parent in ("data", "index") and SEGMENT_NAME_RE.match(name):
        return KIND_DLEDGER if parent == "data" else KIND_DLEDGER_INDEX
    if parent.startswith("dledger-") or (dledger_log and parent in ("data", "index")):
        log = next(p for p in parts if p.startswith("dledger-"))
        raise StoreLayoutError(f"{path}: a file of the DLedger log {log}/ that dump does not decode: it reads the "
                               f"log's data/ and index/ files (20-digit names); {log}/checkpoint and currterm are "
                               "text (key=value lines)")
    if name == "checkpoint":
        return KIND_CHECKPOINT
    if name.endswith(".json") or name.endswith(".json.bak"):
        return KIND_CONFIG
    if _DIGITS17.match(name):
        return KIND_INDEX
    if SEGMENT_NAME_RE.match(name):
        if len(parts) >= 4 and parts[-4] in ("batchconsumequeue", "consumequeue_ext"):
            layout = "a BatchCQ consume queue" if parts[-4] == "batchconsumequeue" else "a ConsumeQueueExt"
            raise StoreLayoutError(f"{path}: {layout} file ({parts[-4]}/, topic {parts[-3]}): this tool does not "
                                   "decode that layout (see store_format.store_layouts)")
        if parent == "commitlog":
            return KIND_COMMITLOG
        if len(parts) >= 4 and parts[-4] == "consumequeue":
            return KIND_CONSUME_QUEUE
        if int(name) < 1 << 63 and find_entry_start(np.frombuffer(head, dtype=np.uint8), 0, int(name), 0, 1) == 0:
            return KIND_DLEDGER  # a DLedger data file out of its folder (storePathDLedgerCommitLog, a copy)
        if size == config.mappedFileSizeCommitLog and size != config.cq_file_size:
            return KIND_COMMITLOG
        if size == config.cq_file_size and size != config.mappedFileSizeCommitLog:
            return KIND_CONSUME_QUEUE
        if len(head) >= OFF_MAGIC + 4:
            magic = int.from_bytes(head[OFF_MAGIC:OFF_MAGIC + 4], "big", signed=True)
            if magic in (MAGIC_V1, MAGIC_V2):
                return KIND_COMMITLOG
        raise StoreLayoutError(
            f"{path}: cannot tell whether this is a commitlog segment or a consume queue file; dump it from "
            "its place in the store (commitlog/NAME or consumequeue/TOPIC/QUEUE_ID/NAME) or pass --config with "
            "the store's file sizes")
    raise StoreLayoutError(
        f"{path}: not a store file this tool decodes: expected commitlog/<20 digits>, "
        "dledger-<selfId>/data/<20 digits>, dledger-<selfId>/index/<20 digits>, "
        "consumequeue/<topic>/<queueId>/<20 digits>, index/<17 digits>, checkpoint or config/*.json")
