"""One run per output at a time: an exclusive ``flock`` on a lock file beside the output.

A rebuild locks ``OUT`` (and its ``TABLES``), a ``tables`` refresh its ``TABLES``, before any work:
the lock file is ``PARENT/.NAME.lock`` for an output ``PARENT/NAME``, holding the owner's host,
pid and start time.  A second run on the same output finds the lock held and refuses at once
(exit 2, naming the holder), ``--overwrite`` or not: two runs committing into one ``OUT`` would
each do all the work and the last would win silently.

The kernel drops a ``flock`` with the process that held it, however it ended; so a lock file that
can be locked but still holds a record is a run that died (killed, power lost): its lock is taken
over with a log line.  A run removes its lock file when it ends (and the parent folders it had to
create for it, when empty).  Lock files are local: outputs on ``hdfs://``/``s3://`` are not
locked (a log line says so); :mod:`pipelines.commit` still refuses a commit racing another there.

Forked children (the local engine's workers) close their copy of the lock right after the fork,
so a worker that outlives its run does not keep the output locked.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import time

from store_format.errors import StoreError, StoreLayoutError

from .heldlocks import HELD_LOCKS

__all__ = ["OutputLock", "OutputInUseError", "lock_path"]

log = logging.getLogger("pipelines.lock")



class OutputInUseError(StoreError):
    """Another live run holds the output's lock."""


def lock_path(target: str) -> str:
    """``PARENT/.NAME.lock`` for a local output ``PARENT/NAME``."""
    path = os.path.abspath(target.rstrip("/") or "/")
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path) or 'root'}.lock")


def _describe(record: dict) -> str:
    started = record.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(started)) if isinstance(started, (int, float)) else "?"
    what = record.get("command", "a run")
    return f"pid {record.get('pid', '?')} on {record.get('host', '?')} ({what}, started {when})"


def _read_record(fd: int) -> dict:
    try:
        data = os.pread(fd, 4096, 0)
        record = json.loads(data.decode("utf-8")) if data.strip() else {}
        return record if isinstance(record, dict) else {}
    except (OSError, ValueError):
        return {"pid": "?", "host": "?"}


class OutputLock:
    """The lock of one output (see the module docstring).

    Args:
        target: the output (local path; URIs are not locked).
        option: how the user named it (``--out``, ``--tables``), for the messages.
        command: what holds it, recorded for the message a second run prints.
    """

    def __init__(self, target: str, option: str, command: str) -> None:
        self.target, self.option, self.command = target, option, command
        self.local = "://" not in target or target.startswith("file://")
        self.path = lock_path(target.removeprefix("file://")) if self.local else None
        self._fd: int | None = None
        self._created: list[str] = []

    def acquire(self) -> OutputLock:
        """Take the lock, or refuse.

        Raises:
            OutputInUseError: another live run holds it.
            OSError: the lock file cannot be created (e.g. the parent folder is not writable).
        """
        if not self.local:
            log.info("%s %s is not locked against concurrent runs (not a local file system)", self.option,
                     self.target)
            return self
        assert self.path is not None
        try:
            return self._acquire(self.path)
        except OSError as e:
            self.release()
            raise StoreLayoutError(f"{self.option} {self.target}: cannot create its lock file {self.path}: "
                                   f"{e.strerror}; choose another {self.option}") from None

    def _acquire(self, path: str) -> OutputLock:
        self._make_parents(os.path.dirname(path))
        for _ in range(20):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_record(fd)
                os.close(fd)
                raise OutputInUseError(
                    f"{self.option} {self.target} is in use by another run: {_describe(holder)} holds {path}; "
                    f"wait for it to end, or choose another {self.option}") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:   # its owner removed it as we opened it: lock the file now there
                os.close(fd)
                continue
            stale = _read_record(fd)
            if stale:
                log.warning("%s %s: took over the lock of a run that is gone (%s)", self.option, self.target,
                            _describe(stale))
            record = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(),
                      "command": self.command}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
            self._fd = fd
            HELD_LOCKS.add(fd)
            return self
        raise OutputInUseError(f"{self.option} {self.target}: could not take {path} (other runs keep "
                               "replacing it)")

    def release(self) -> None:
        """Remove the lock file (while still holding it), then drop the lock; then the parent folders
        created for it, if empty."""
        if self._fd is not None:
            assert self.path is not None
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            HELD_LOCKS.discard(self._fd)
            os.close(self._fd)
            self._fd = None
        for folder in reversed(self._created):
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        self._created = []

    def _make_parents(self, folder: str) -> None:
        missing = []
        while not os.path.isdir(folder):
            missing.append(folder)
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
        for path in reversed(missing):
            try:
                os.mkdir(path)
            except FileExistsError:
                continue
            self._created.append(path)

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
