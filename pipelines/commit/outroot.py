"""The output root ``OUT`` of a journaled commit on its file system (local, HDFS or an object
store): the few file operations the journal, the locks and the moves need, each done the local way
(``os``, with folder fsyncs) or through ``pyarrow.fs``."""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import pyarrow.fs as pafs

from store_format.store import resolve

from ..durable import fsync_dir

__all__ = ["OutputRoot", "JOURNAL_NAME_PREFIX"]

JOURNAL_NAME_PREFIX = ".rebuild-"   # every name the commit keeps in OUT besides the outputs starts so


@dataclass
class OutputRoot:
    """``OUT`` as the commit sees it.

    Attributes:
        uri: the output root as given (local path, ``hdfs://`` or ``s3://`` URI), for messages.
        fs: its file system.
        root: its path in ``fs``.
        local: a local file system: ``os`` calls, ``flock`` and folder fsyncs.
        atomic_rename: folders are renamed in one step (local, HDFS); otherwise (object stores) a
            move is a copy, then a delete.
        durable: fsync the folders around every rename (local file systems).
    """

    uri: str
    fs: pafs.FileSystem
    root: str
    local: bool
    atomic_rename: bool
    durable: bool

    @classmethod
    def of(cls, out_uri: str, *, durable: bool) -> OutputRoot:
        """The output root ``out_uri`` (a trailing ``/`` dropped)."""
        uri = out_uri.rstrip("/")
        fs, root = resolve(uri)
        local = isinstance(fs, pafs.LocalFileSystem)
        # HDFS renames folders atomically; object stores copy then delete
        return cls(uri, fs, root.rstrip("/"), local, local or fs.type_name == "hdfs", durable)

    def exists(self, path: str) -> bool:
        if self.local:
            return os.path.lexists(path)
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def list_root(self) -> dict[str, pafs.FileInfo]:
        """The commit's own entries in ``OUT`` (names starting with ``.rebuild-``), by name."""
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.root, allow_not_found=True))
        except (FileNotFoundError, NotADirectoryError):
            return {}
        return {i.base_name: i for i in infos if i.base_name.startswith(JOURNAL_NAME_PREFIX)}

    def read(self, path: str) -> str:
        with self.fs.open_input_stream(path) as f:
            return f.read().decode()

    def write(self, path: str, data: bytes) -> None:
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    def delete_file(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            if self.local:
                os.unlink(path)
            else:
                self.fs.delete_file(path)

    def sync_root(self) -> None:
        """Make the names created, renamed or deleted in ``OUT`` durable (local; best effort)."""
        if self.local:
            fsync_dir(self.root, strict=False)

    def tree_size(self, path: str) -> int:
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
        except OSError:
            return 0
        return sum(i.size or 0 for i in infos if i.type == pafs.FileType.File)

    def rename(self, src: str, dst: str) -> None:
        parent = dst.rsplit("/", 1)[0]
        if self.local:
            os.makedirs(parent, exist_ok=True)
            os.rename(src, dst)
            if self.durable:
                fsync_dir(src.rsplit("/", 1)[0], strict=False)
                fsync_dir(parent, strict=False)
        else:
            self.fs.create_dir(parent, recursive=True)
            self.fs.move(src, dst)

    def copy_tree(self, src: str, dst: str) -> None:
        self.fs.create_dir(dst, recursive=True)
        pafs.copy_files(src, dst, source_filesystem=self.fs, destination_filesystem=self.fs)
