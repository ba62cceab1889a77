"""Atomic publication of a rebuild: everything is written under a staging folder beside the target
and moved into place only when complete.  A failed run leaves the target as it was."""
from __future__ import annotations

import uuid

import pyarrow.fs as pafs

from store_format.errors import StoreLayoutError
from store_format.store import resolve

__all__ = ["StagedOutput"]

OUTPUTS = ("consumequeue", "index")


class StagedOutput:
    """``OUT/.rebuild-staging-<run>/{consumequeue,index}`` → ``OUT/{consumequeue,index}``."""

    def __init__(self, out_uri: str, run_id: str | None = None, overwrite: bool = False) -> None:
        self.out_uri = out_uri.rstrip("/")
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.fs, self.root = resolve(self.out_uri)
        self.root = self.root.rstrip("/")
        self.overwrite = overwrite
        self.staging_path = f"{self.root}/.rebuild-staging-{self.run_id}"
        self.staging_uri = f"{self.out_uri}/.rebuild-staging-{self.run_id}"

    def check_target(self) -> None:
        """Refuse early when the target already holds outputs and overwriting was not asked for."""
        existing = [name for name in OUTPUTS
                    if self.fs.get_file_info(f"{self.root}/{name}").type != pafs.FileType.NotFound]
        if existing and not self.overwrite:
            raise StoreLayoutError(
                f"{self.out_uri} already has {', '.join(n + '/' for n in existing)}; choose an empty --out, or pass "
                "--overwrite to replace them once the new files are complete")

    def prepare(self) -> None:
        self.check_target()
        for name in OUTPUTS:
            self.fs.create_dir(f"{self.staging_path}/{name}", recursive=True)

    def rename_staged(self, relative_from: str, relative_to: str) -> None:
        self.fs.move(f"{self.staging_path}/{relative_from}", f"{self.staging_path}/{relative_to}")

    def drop_work(self) -> None:
        """Delete the scan's intermediate files once the outputs are built."""
        work = f"{self.staging_path}/_work"
        if self.fs.get_file_info(work).type != pafs.FileType.NotFound:
            self.fs.delete_dir(work)

    def commit(self) -> None:
        """Move the staged folders into place (replacing old ones only now, when asked to)."""
        self.check_target()
        old = f"{self.root}/.rebuild-old-{self.run_id}"
        moved_old = []
        for name in OUTPUTS:
            if self.fs.get_file_info(f"{self.root}/{name}").type != pafs.FileType.NotFound:
                self.fs.create_dir(old, recursive=True)
                self._move(f"{self.root}/{name}", f"{old}/{name}")
                moved_old.append(name)
        for name in OUTPUTS:
            self._move(f"{self.staging_path}/{name}", f"{self.root}/{name}")
        self.fs.delete_dir(self.staging_path)
        if moved_old:
            self.fs.delete_dir(old)

    def abort(self) -> None:
        if self.fs.get_file_info(self.staging_path).type != pafs.FileType.NotFound:
            self.fs.delete_dir(self.staging_path)

    def _move(self, src: str, dst: str) -> None:
        try:
            self.fs.move(src, dst)
        except (OSError, NotImplementedError):
            # object stores have no directory rename: copy, then delete
            pafs.copy_files(src, dst, source_filesystem=self.fs, destination_filesystem=self.fs)
            self.fs.delete_dir(src)
