"""Is a broker using the store?  The store's ``lock`` and ``abort`` files, read without changing them.

One check for every command that reads a store (:func:`check_broker`): ``repair`` refuses while a
broker may be running; ``verify``, ``dump``, ``tables`` and ``rebuild`` warn (or, with
``--strict``, refuse) through :func:`warn_if_broker_live`, because files a broker writes can change
while they are read.
"""
from __future__ import annotations

import dataclasses
import errno
import fcntl
import logging
import os
import struct
import sys

from store_format.errors import StoreError

__all__ = ["BrokerCheck", "check_broker", "warn_if_broker_live", "LiveBrokerError", "REBUILD_MEANING"]

log = logging.getLogger("pipelines.broker")

# `struct flock` on Linux (l_type, l_whence, l_start, l_len, l_pid, padding), for F_GETLK
_FLOCK = struct.Struct("hhqqi4x")


# what a live broker means for a rebuild (``rebuild`` checks before its JVM starts, run_rebuild for callers)
REBUILD_MEANING = ("the segment it is writing can change under the scan, so the rebuilt files end where the scan "
                   "found the data ending")


class LiveBrokerError(StoreError):
    """``--strict``: a broker may be running on the store."""


@dataclasses.dataclass
class BrokerCheck:
    """What the store's ``lock`` and ``abort`` files say.

    ``DefaultMessageStore.start`` takes ``FileChannel.tryLock(0, 1, false)`` on ``lock`` (opened
    ``rw`` in the constructor) and fails with "Lock failed,MQ already started" when another process
    holds it; on Linux the JVM's FileLock is a POSIX ``fcntl`` record lock on byte 0, which is what
    is tested here (``F_GETLK`` names the holder's pid).  ``abort`` is created at the end of
    ``start`` (``createTempFile``; 5.x writes the pid into it) and deleted by a clean ``shutdown``:
    while it exists a broker runs, or the last one did not shut down cleanly."""
    store: str
    lock_file: bool
    lock_holder_pid: int | None = None
    lock_check_error: str | None = None
    abort_file: bool = False
    abort_pid: int | None = None
    abort_pid_alive: bool | None = None

    @property
    def broker_may_be_running(self) -> bool:
        return self.lock_holder_pid is not None or self.abort_file

    def describe(self) -> str:
        bits = []
        if self.lock_holder_pid is not None:
            bits.append(f"process {self.lock_holder_pid} holds the lock on {self.store}/lock (a running broker takes "
                        "it in DefaultMessageStore.start)")
        elif not self.lock_file:
            bits.append("no lock file")
        elif self.lock_check_error:
            bits.append(f"could not test {self.store}/lock: {self.lock_check_error}")
        else:
            bits.append("lock file not locked")
        if self.abort_file:
            who = ""
            if self.abort_pid is not None:
                who = (f" (it names pid {self.abort_pid}, "
                       f"{'a running process here' if self.abort_pid_alive else 'not running here'})")
            bits.append(f"{self.store}/abort exists{who}: a broker is running, or the last one did not shut down "
                        "cleanly")
        else:
            bits.append("no abort file")
        return "; ".join(bits)


def _lock_holder(path: str) -> int | None:
    """Pid of a process holding a POSIX lock that conflicts with a write lock on byte 0, or None."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if sys.platform.startswith("linux"):
            req = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
            l_type, _, _, _, pid = _FLOCK.unpack(fcntl.fcntl(fd, fcntl.F_GETLK, req))
            return None if l_type == fcntl.F_UNLCK else pid
    finally:
        os.close(fd)
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        return None
    except OSError as e:
        if e.errno in (errno.EACCES, errno.EAGAIN):
            return -1
        raise
    finally:
        os.close(fd)


def check_broker(store_root: str) -> BrokerCheck:
    """Read the store's ``lock`` and ``abort`` files without changing them (see :class:`BrokerCheck`)."""
    lock = os.path.join(store_root, "lock")
    abort = os.path.join(store_root, "abort")
    c = BrokerCheck(store_root, os.path.isfile(lock), abort_file=os.path.exists(abort))
    if c.lock_file:
        try:
            c.lock_holder_pid = _lock_holder(lock)
        except OSError as e:
            c.lock_check_error = str(e)
    if c.abort_file:
        try:
            with open(abort, "rb") as f:
                text = f.read(64).decode("ascii", "replace").strip()
            if text.isdigit():
                c.abort_pid = int(text)
                try:
                    os.kill(c.abort_pid, 0)
                    c.abort_pid_alive = True
                except ProcessLookupError:
                    c.abort_pid_alive = False
                except PermissionError:
                    c.abort_pid_alive = True
        except OSError:
            pass
    return c



def warn_if_broker_live(store: str, *, strict: bool, meaning: str) -> BrokerCheck | None:
    """Warn (one line on stderr, logger ``pipelines.broker``) when a broker may be running on the
    local store ``store`` (its ``lock`` held, or ``abort`` present), saying what that means for this
    command's result (``meaning``); with ``strict``, refuse instead.

    Stores given as ``hdfs://``/``s3://`` URIs are not checked (a broker writes local files).

    Returns:
        The check, or None for a store that is not local.
    Raises:
        LiveBrokerError: ``strict`` and a broker may be running.
    """
    if "://" in store and not store.startswith("file://"):
        return None
    root = store[len("file://"):] if store.startswith("file://") else store
    if not os.path.isdir(root):
        return None
    check = check_broker(root)
    if not check.broker_may_be_running:
        return check
    if strict:
        raise LiveBrokerError(f"{root}: a broker may be running on this store ({check.describe()}); --strict refuses "
                              f"a store whose files may be changing. Stop the broker, or leave out --strict")
    log.warning("warning: a broker may be running on %s (%s): %s (--strict makes this an error)",
                root, check.describe(), meaning)
    return check
