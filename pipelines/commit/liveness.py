"""Which runs on ``OUT`` are alive: each run's owner record ``OUT/.rebuild-staging-<run>.lock``
(pid, host, boot id, process start, heartbeat) and, on a local file system, the exclusive ``flock``
the run holds on it for its whole life.

* local (and NFS with working locks): a lock that can be taken means the run is dead, however it
  died (the kernel drops the lock with the process); processes forked by the run close their copy
  of the lock (:mod:`pipelines.heldlocks`), so a worker that outlives the run does not keep it
  "alive".
* elsewhere (HDFS, object stores, or no ``flock``): the owner record decides: a run on this host
  whose process is gone is dead, a run on another host is dead once its heartbeat (rewritten every
  30 s) is older than 10 minutes (clocks must roughly agree).
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass

from store_format.errors import StoreLayoutError

from ..heldlocks import HELD_LOCKS
from .journal import FORMAT, LOCK_SUFFIX, LOCK_TMP_PREFIX, STAGING_PREFIX
from .outroot import OutputRoot

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["RunClaim", "Liveness", "liveness", "lock_path", "owner_record", "describe", "dead_by_record",
           "remove_lock_tmp"]

HEARTBEAT_S = 30.0
STALE_AFTER_S = 600.0      # a heartbeat older than this: the owner is gone (non-local file systems)


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def _process_start(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (``/proc/<pid>/stat`` field 22), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: split after the last ')'
    fields = stat[stat.rfind(b")") + 2:].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def owner_record(run_id: str) -> dict:
    """This process's owner record for the run ``run_id``."""
    pid = os.getpid()
    return {"format": FORMAT, "run_id": run_id, "pid": pid, "host": socket.gethostname(), "boot_id": _boot_id(),
            "pid_start": _process_start(pid), "started": time.time(), "heartbeat": time.time()}


def describe(owner: dict | None) -> str:
    """An owner record in a few words, for messages."""
    if not owner:
        return "no owner record"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(owner.get("started", 0)))
    return f"pid {owner.get('pid')} on {owner.get('host')}, started {started}"


def dead_by_record(owner: dict | None, now: float) -> bool | None:
    """Whether an owner record shows a dead run: True/False, or None when it cannot tell."""
    if not owner:
        return None
    if owner.get("host") == socket.gethostname():
        if owner.get("boot_id") and _boot_id() and owner["boot_id"] != _boot_id():
            return True   # the machine restarted since
        pid = owner.get("pid")
        if not isinstance(pid, int):
            return None
        if not os.path.exists("/proc/self/stat"):
            return None   # no /proc: cannot tell
        start = _process_start(pid)
        if start is None:
            return True   # no such process
        return owner.get("pid_start") is not None and start != owner["pid_start"]
    heartbeat = owner.get("heartbeat")
    if isinstance(heartbeat, (int, float)):
        return now - heartbeat > STALE_AFTER_S
    return None


def lock_path(out: OutputRoot, run_id: str) -> str:
    """The owner record of the run ``run_id`` in ``OUT``."""
    return f"{out.root}/{STAGING_PREFIX}{run_id}{LOCK_SUFFIX}"


@dataclass
class Liveness:
    alive: bool
    owner: dict | None
    held_fd: int | None = None   # the dead owner's lock, held by us while we clean up after it

    def release(self) -> None:
        if self.held_fd is not None:
            os.close(self.held_fd)
            self.held_fd = None


def _read_owner(out: OutputRoot, path: str) -> dict | None:
    try:
        return json.loads(out.read(path))
    except (OSError, ValueError):
        return None


def liveness(out: OutputRoot, run_id: str) -> Liveness:
    """Is the run that owns ``.rebuild-staging-<run>`` alive?  Local: its flock decides (taken
    by us if it is dead, and held while we clean up: call :meth:`Liveness.release`); otherwise its
    owner record."""
    path = lock_path(out, run_id)
    if out.local and fcntl is not None:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return Liveness(False, None)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _read_owner(out, path)
            os.close(fd)
            return Liveness(True, owner)
        except OSError:
            os.close(fd)   # no flock on this file system: fall through to the owner record
        else:
            owner = _read_owner(out, path)
            return Liveness(False, owner, fd)
    owner = _read_owner(out, path)
    dead = dead_by_record(owner, time.time())
    if dead is None and owner is None:
        dead = not out.exists(path)
    return Liveness(not dead, owner)


def remove_lock_tmp(out: OutputRoot, path: str) -> None:
    """A temporary owner record that never got its name: delete it unless a live run holds it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        out.delete_file(path)
    except OSError:
        pass
    finally:
        os.close(fd)


class RunClaim:
    """This run's claim on ``OUT``: its owner record, locked (local) or kept fresh by a heartbeat
    thread (elsewhere), until :meth:`release`."""

    def __init__(self, out: OutputRoot, run_id: str) -> None:
        self.out = out
        self.run_id = run_id
        self._lock_fd: int | None = None
        self._heartbeat_stop: threading.Event | None = None

    @property
    def held(self) -> bool:
        return self._lock_fd is not None or self._heartbeat_stop is not None

    def take(self) -> None:
        """Write the owner record and lock it (or start its heartbeat).

        Raises:
            StoreLayoutError: the owner record could not be created.
        """
        record = json.dumps(owner_record(self.run_id)).encode()
        path = lock_path(self.out, self.run_id)
        if not self.out.local or fcntl is None:
            self.out.write(path, record)
            self._start_heartbeat(path)
            return
        for _ in range(10):
            tmp = f"{self.out.root}/{LOCK_TMP_PREFIX}{self.run_id}-{uuid.uuid4().hex[:8]}"
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:   # a cleaner took it for a dead run's: start again
                os.close(fd)
                continue
            except OSError:           # no flock here: the owner record alone tells liveness
                os.close(fd)
                self.out.delete_file(tmp)
                self.out.write(path, record)
                self._start_heartbeat(path)
                return
            os.write(fd, record)
            os.fsync(fd)
            try:
                os.rename(tmp, path)
            except FileNotFoundError:  # a cleaner removed it before we locked it: start again
                os.close(fd)
                continue
            self.out.sync_root()
            self._lock_fd = fd
            HELD_LOCKS.add(fd)
            return
        raise StoreLayoutError(f"{self.out.uri}: could not create the owner record of run {self.run_id}")

    def _start_heartbeat(self, path: str) -> None:
        stop = threading.Event()
        self._heartbeat_stop = stop

        def beat() -> None:
            while not stop.wait(HEARTBEAT_S):
                record = owner_record(self.run_id)
                with contextlib.suppress(Exception):
                    old = json.loads(self.out.read(path))
                    record["started"] = old.get("started", record["started"])
                with contextlib.suppress(Exception):
                    self.out.write(path, json.dumps(record).encode())

        threading.Thread(target=beat, name=f"rebuild-heartbeat-{self.run_id}", daemon=True).start()

    def release(self) -> None:
        """Give up the claim: the owner record goes, then the lock."""
        if self._heartbeat_stop is not None:
            self._heartbeat_stop.set()
            self._heartbeat_stop = None
            self.out.delete_file(lock_path(self.out, self.run_id))
        if self._lock_fd is not None:
            self.out.delete_file(lock_path(self.out, self.run_id))
            HELD_LOCKS.discard(self._lock_fd)
            os.close(self._lock_fd)
            self._lock_fd = None
