"""Publication of a rebuild that survives crashes: build beside the target, then move into place
under a journal that the next run completes.

Everything a run writes goes under ``OUT/.rebuild-staging-<run>/``; the commit then moves the
previous ``consumequeue/`` and ``index/`` (if any) aside and the new ones into place.  Two folders
cannot be replaced in one atomic step, so the commit is journaled:

``OUT/.rebuild-staging-<run>/``
    the run's outputs while they are built (``consumequeue/``, ``index/``, ``_work/``).
``OUT/.rebuild-staging-<run>.lock``
    the run's owner record (pid, host, boot id, process start, heartbeat).  On a local file system
    the run holds an exclusive ``flock`` on it for its whole life: a lock that can be taken means
    the run is dead, however it died (the kernel drops the lock with the process).
``OUT/.rebuild-commit-<run>.json``
    the commit plan: the list of moves (``consumequeue/`` → ``.rebuild-old-<run>/consumequeue``,
    staged ``consumequeue/`` → ``consumequeue/``, the same for ``index/``), written once and made
    durable (temporary file, fsync, hard link to its name, fsync of ``OUT``) before the first move.
``OUT/.rebuild-commit-<run>.done-<k>``
    empty markers: the first ``k`` moves are done and durable (``done-<n>``: all of them; only the
    old folders and the staging folder are left to delete).
``OUT/.rebuild-old-<run>/``
    the previous outputs while the commit runs.

Before it does anything else, a run (:meth:`StagedOutput.check_target`, which :meth:`prepare` and
:meth:`commit` call) completes every commit whose owner is dead: it redoes the moves not marked
done (each is a rename whose before and after states cannot be confused), then deletes the old
folders and the journal, so ``OUT`` holds the new pair complete; only if the staged files a plan
names have vanished does it roll the moves back, so ``OUT`` holds the old pair complete.  Either
way ``OUT`` never stays half-committed: between a crash and the next run, the journal files beside
``consumequeue/`` say that ``OUT`` is mid-commit and what to do.  Stale staging folders of dead
runs are deleted with a log line; a live run's are left alone (with a log line).

Guarantees by file system:

* local (and NFS with working locks): liveness from ``flock`` (processes forked by the run close
  their copy of the lock, so a worker that outlives the run does not keep it "alive"); renames are
  atomic; staged files are flushed (``syncfs``) before the plan is written and the folders are
  fsynced after every move (best effort: a folder that cannot be fsynced is not an error, see
  :mod:`pipelines.durable`), so the guarantee holds across power loss too.
* HDFS (``pyarrow.fs.HadoopFileSystem``): renames are atomic, nothing to fsync; liveness comes from
  the owner record: a run on this host whose process is gone is dead, a run on another host is
  dead once its heartbeat (rewritten every 30 s) is older than 10 minutes (clocks must roughly
  agree).  Two runs must not commit into one ``OUT`` at the same moment (nothing exclusive there).
* object stores (``s3://``, where a "rename" is a copy then a delete): each move is a copy, an
  ``.copied-<k>`` marker, then the delete of the source; an interrupted copy is redone from the
  intact source, an interrupted delete is finished.  ``OUT`` is complete again only after the next
  run's recovery, and readers listing ``OUT`` during a commit can see partial folders.  A plan whose
  staged files vanished is not rolled back there: the next run stops with instructions.

Long module: the journal, its recovery after a crash at any step, and the liveness locks of runs.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import socket
import threading
import time
import uuid
from dataclasses import dataclass

import pyarrow.fs as pafs

from store_format.errors import StoreLayoutError
from store_format.store import resolve

from .durable import fsync_dir, sync_tree
from .heldlocks import HELD_LOCKS

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["StagedOutput", "OUTPUTS", "KILL_AT_ENV"]

log = logging.getLogger(__name__)

OUTPUTS = ("consumequeue", "index")
STAGING_PREFIX = ".rebuild-staging-"
OLD_PREFIX = ".rebuild-old-"
COMMIT_PREFIX = ".rebuild-commit-"
LOCK_SUFFIX = ".lock"
LOCK_TMP_PREFIX = ".rebuild-lock-tmp-"
PLAN_SUFFIX = ".json"
FORMAT = 1

HEARTBEAT_S = 30.0
STALE_AFTER_S = 600.0      # a heartbeat older than this: the owner is gone (non-local file systems)
LEGACY_GRACE_S = 600.0     # staging without an owner record younger than this is left alone
WAIT_S = 600.0             # how long a run waits for another live run's commit to finish

# Test hook: the name of a step after which the process kills itself with SIGKILL (tests/test_commit.py)
KILL_AT_ENV = "ROCKETMQ_REBUILD_KILL_AT"

_MARK_RE = re.compile(r"^\.rebuild-commit-(?P<run>.+)\.(?P<kind>done|copied)-(?P<k>\d+)$")




def _kill_point(step: str) -> None:
    if os.environ.get(KILL_AT_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# owner records and liveness


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


def _owner_record(run_id: str) -> dict:
    pid = os.getpid()
    return {"format": FORMAT, "run_id": run_id, "pid": pid, "host": socket.gethostname(), "boot_id": _boot_id(),
            "pid_start": _process_start(pid), "started": time.time(), "heartbeat": time.time()}


def _describe(owner: dict | None) -> str:
    if not owner:
        return "no owner record"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(owner.get("started", 0)))
    return f"pid {owner.get('pid')} on {owner.get('host')}, started {started}"


def _dead_by_record(owner: dict | None, now: float) -> bool | None:
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


@dataclass
class _Liveness:
    alive: bool
    owner: dict | None
    held_fd: int | None = None   # the dead owner's lock, held by us while we clean up after it

    def release(self) -> None:
        if self.held_fd is not None:
            os.close(self.held_fd)
            self.held_fd = None


# ---------------------------------------------------------------------------------------------
# file system helpers


class StagedOutput:
    """``OUT/.rebuild-staging-<run>/{consumequeue,index}`` → ``OUT/{consumequeue,index}``, journaled.

    Args:
        out_uri: the output root (local path, ``hdfs://`` or ``s3://`` URI).
        run_id: this run's id (default: a random one); names the staging folder.
        overwrite: replace existing ``consumequeue/`` and ``index/`` at commit.
        durable: flush the staged files to disk before committing (local file systems).

    Example::

        staged = StagedOutput(out, run_id)
        staged.prepare()          # completes interrupted commits, removes debris, claims the run
        ...write under staged.staging_uri...
        staged.commit()           # or staged.abort() on failure
    """

    def __init__(self, out_uri: str, run_id: str | None = None, overwrite: bool = False, *,
                 durable: bool = True) -> None:
        self.out_uri = out_uri.rstrip("/")
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.fs, self.root = resolve(self.out_uri)
        self.root = self.root.rstrip("/")
        self.overwrite = overwrite
        self.durable = durable
        self.staging_path = f"{self.root}/{STAGING_PREFIX}{self.run_id}"
        self.staging_uri = f"{self.out_uri}/{STAGING_PREFIX}{self.run_id}"
        self._local = isinstance(self.fs, pafs.LocalFileSystem)
        # HDFS renames folders atomically; object stores copy then delete
        self._atomic_rename = self._local or self.fs.type_name == "hdfs"
        self._lock_fd: int | None = None
        self._heartbeat_stop: threading.Event | None = None
        self._created_root = False   # prepare() made OUT: an aborted run takes it away again if empty
        self.recovered: list[str] = []   # what the last recovery did, one line per action

    # -- the public steps -------------------------------------------------------------------------

    def check_target(self) -> None:
        """Complete or roll back interrupted commits and remove stale debris in ``OUT``, then refuse
        when ``OUT`` already holds outputs and overwriting was not asked for."""
        self.recover()
        existing = [name for name in OUTPUTS if self._exists(f"{self.root}/{name}")]
        if existing and not self.overwrite:
            raise StoreLayoutError(
                f"{self.out_uri} already has {', '.join(n + '/' for n in existing)}; choose an empty --out, or pass "
                "--overwrite to replace them once the new files are complete")

    def prepare(self) -> None:
        """:meth:`check_target`, then claim the run (owner record and lock) and create the staging
        folders."""
        self.check_target()
        self._created_root = self._created_root or not self._exists(self.root)
        self.fs.create_dir(self.root, recursive=True)
        if self._lock_fd is None and self._heartbeat_stop is None:
            self._claim()
        for name in OUTPUTS:
            self.fs.create_dir(f"{self.staging_path}/{name}", recursive=True)

    def rename_staged(self, relative_from: str, relative_to: str) -> None:
        self.fs.move(f"{self.staging_path}/{relative_from}", f"{self.staging_path}/{relative_to}")

    def drop_work(self) -> None:
        """Delete the scan's intermediate files once the outputs are built."""
        work = f"{self.staging_path}/_work"
        if self._exists(work):
            self.fs.delete_dir(work)

    def commit(self) -> None:
        """Move the staged folders into place (replacing old ones only now, when asked to), under
        the journal described in the module docstring.

        Raises:
            StoreLayoutError: ``OUT`` gained outputs meanwhile and overwriting was not asked for, or
                another live run is committing into ``OUT`` for longer than the wait allows.
        """
        self.check_target()
        for name in OUTPUTS:
            if not self._exists(f"{self.staging_path}/{name}"):
                raise StoreLayoutError(f"{self.staging_uri}/{name} is missing: nothing complete to commit")
        if self._local and self.durable:
            sync_tree(self.staging_path)
        _kill_point("commit:synced")
        old = f"{OLD_PREFIX}{self.run_id}"
        moves: list[tuple[str, str]] = []
        for name in OUTPUTS:
            if self._exists(f"{self.root}/{name}"):
                moves.append((name, f"{old}/{name}"))
            moves.append((f"{STAGING_PREFIX}{self.run_id}/{name}", name))
        self._write_plan({"format": FORMAT, "run_id": self.run_id, "moves": moves, "old": old,
                          "staging": f"{STAGING_PREFIX}{self.run_id}", "owner": _owner_record(self.run_id),
                          "mode": "rename" if self._atomic_rename else "copy"})
        _kill_point("commit:journal")
        try:
            self._run_moves(self.run_id, moves, 0, "commit", self._atomic_rename)
        except BaseException as error:
            self._after_failed_moves(moves, error)
            raise
        _kill_point("commit:moved")
        self._finish(self.run_id, moves, old, f"{STAGING_PREFIX}{self.run_id}", "commit")
        self._release()

    def abort(self) -> None:
        """Delete this run's staging folder and give up its claim.  After a commit that failed
        half-way and could not be rolled back, the staging folder is kept for the journal: the
        next run completes that commit."""
        if self._exists(self._plan_path(self.run_id)):
            log.warning("%s: the commit of run %s was interrupted; the next run on this output completes it",
                        self.out_uri, self.run_id)
        elif self._exists(self.staging_path):
            self._delete_staging()
        self._release()
        if self._created_root:   # OUT as it was: not there
            try:
                if not self.fs.get_file_info(pafs.FileSelector(self.root)):
                    self.fs.delete_dir(self.root)
            except OSError:
                pass

    def _delete_staging(self, patience: float = 5.0) -> None:
        """Remove this run's staging folder; tasks of an interrupted job may still be writing into
        it for a moment, so retry, and leave it to the next run (which removes a dead run's folder)
        if they do not stop."""
        deadline = time.monotonic() + patience
        while True:
            try:
                self.fs.delete_dir(self.staging_path)
                return
            except FileNotFoundError:
                return
            except OSError as err:
                if time.monotonic() >= deadline:
                    log.warning("%s: could not remove %s yet (%s); the next run on this output removes it",
                                self.out_uri, self.staging_uri, err)
                    return
                time.sleep(0.2)

    # -- recovery ---------------------------------------------------------------------------------

    def recover(self) -> list[str]:
        """Complete (or, when its staged files are gone, roll back) every commit in ``OUT`` whose run
        is dead, then delete staging folders, owner records and journal files of dead runs.

        Returns:
            One line per action taken (also logged).
        """
        self.recovered = []
        if not self._exists(self.root):
            return self.recovered
        deadline = time.monotonic() + WAIT_S
        while True:
            plans = self._plans()
            waiting = []
            for run_id in sorted(plans):
                if run_id == self.run_id:
                    continue
                live = self._liveness(run_id)
                try:
                    if live.alive:
                        waiting.append((run_id, live.owner))
                        continue
                    self._recover_plan(run_id, plans[run_id])
                finally:
                    live.release()
            if not waiting:
                break
            if time.monotonic() > deadline:
                run_id, owner = waiting[0]
                raise StoreLayoutError(
                    f"{self.out_uri}: run {run_id} ({_describe(owner)}) is committing into this output; wait "
                    "for it to finish, or choose another --out")
            log.info("%s: waiting for run %s (%s) to finish its commit", self.out_uri, waiting[0][0],
                     _describe(waiting[0][1]))
            time.sleep(0.5)
        self._remove_debris()
        return self.recovered

    def _recover_plan(self, run_id: str, plan: dict) -> None:
        moves = [tuple(m) for m in plan["moves"]]
        done = self._done_count(run_id)
        if done < len(moves):
            try:
                self._run_moves(run_id, moves, done, "recover", plan.get("mode", "rename") == "rename")
            except _StagedMissing as missing:
                if plan.get("mode", "rename") != "rename":
                    raise StoreLayoutError(
                        f"{self.out_uri}: the interrupted commit of run {run_id} cannot be completed: its staged "
                        f"{missing.path} is gone. Its first {missing.index} moves are done (see "
                        f"{COMMIT_PREFIX}{run_id}{PLAN_SUFFIX}); move {plan['old']}/* back by hand, then delete the "
                        f"{COMMIT_PREFIX}{run_id}.* files") from None
                self._roll_back(run_id, moves, missing.index, plan["old"])
                if self._exists(f"{self.root}/{plan['staging']}"):
                    self.fs.delete_dir(f"{self.root}/{plan['staging']}")
                self._delete_file(self._lock_path(run_id))
                self._note(f"rolled back the interrupted commit of run {run_id}: its staged {missing.path} is gone, "
                           f"so {self.out_uri} keeps its previous consumequeue/ and index/")
                return
            self._note(f"completed the interrupted commit of run {run_id} ({len(moves) - done} of {len(moves)} "
                       f"moves were left): {self.out_uri} now holds that run's consumequeue/ and index/")
        else:
            self._note(f"finished the interrupted commit of run {run_id}: its consumequeue/ and index/ were in "
                       "place; removed what it had moved aside and its journal")
        self._finish(run_id, moves, plan["old"], plan["staging"], "recover")
        lock = f"{self.root}/{STAGING_PREFIX}{run_id}{LOCK_SUFFIX}"
        self._delete_file(lock)

    def _remove_debris(self) -> None:
        """Staging folders, owner records and stray journal markers of dead runs."""
        now = time.time()
        names = self._list_root()
        plans = {n[len(COMMIT_PREFIX):-len(PLAN_SUFFIX)] for n in names
                 if n.startswith(COMMIT_PREFIX) and n.endswith(PLAN_SUFFIX)}
        runs: dict[str, set[str]] = {}
        for name, _ in names.items():
            if name.startswith(STAGING_PREFIX):
                run_id = name[len(STAGING_PREFIX):]
                if run_id.endswith(LOCK_SUFFIX):
                    run_id = run_id[:-len(LOCK_SUFFIX)]
                runs.setdefault(run_id, set()).add(name)
            elif name.startswith(LOCK_TMP_PREFIX) and self._local:
                self._remove_lock_tmp(f"{self.root}/{name}")
            else:
                m = _MARK_RE.match(name)
                if m and m.group("run") not in plans:
                    self._delete_file(f"{self.root}/{name}")
            if name.startswith(OLD_PREFIX) and name[len(OLD_PREFIX):] not in plans:
                log.warning("%s/%s holds consumequeue/ or index/ moved aside by an older version of this tool, "
                            "whose commit was interrupted; check it and delete it by hand", self.out_uri, name)
        for run_id, entries in sorted(runs.items()):
            if run_id == self.run_id or run_id in plans:
                continue
            staging = f"{self.root}/{STAGING_PREFIX}{run_id}"
            has_lock = f"{STAGING_PREFIX}{run_id}{LOCK_SUFFIX}" in entries
            if not has_lock:
                info = names.get(f"{STAGING_PREFIX}{run_id}")
                age = now - (info.mtime_ns or 0) / 1e9 if info is not None and info.mtime_ns else LEGACY_GRACE_S + 1
                if age < LEGACY_GRACE_S:
                    log.info("%s: left %s in place: it has no owner record but changed %.0f s ago", self.out_uri,
                             f"{STAGING_PREFIX}{run_id}", age)
                    continue
                size = self._tree_size(staging)
                self.fs.delete_dir(staging)
                self._note(f"removed stale staging folder {STAGING_PREFIX}{run_id} ({size:,} bytes; no owner "
                           "record: left by a run that was killed or by an older version)")
                continue
            live = self._liveness(run_id)
            try:
                if live.alive:
                    if f"{STAGING_PREFIX}{run_id}" in entries:
                        log.info("%s: left %s in place: run %s is alive (%s)", self.out_uri,
                                 f"{STAGING_PREFIX}{run_id}", run_id, _describe(live.owner))
                    continue
                size = self._tree_size(staging) if f"{STAGING_PREFIX}{run_id}" in entries else 0
                if size or f"{STAGING_PREFIX}{run_id}" in entries:
                    self.fs.delete_dir(staging)
                    self._note(f"removed stale staging folder {STAGING_PREFIX}{run_id} of a dead run "
                               f"({_describe(live.owner)}; {size:,} bytes)")
                self._delete_file(f"{self.root}/{STAGING_PREFIX}{run_id}{LOCK_SUFFIX}")
            finally:
                live.release()

    def _note(self, line: str) -> None:
        self.recovered.append(line)
        log.warning("%s: %s", self.out_uri, line)

    # -- moves and journal ------------------------------------------------------------------------

    def _plan_path(self, run_id: str) -> str:
        return f"{self.root}/{COMMIT_PREFIX}{run_id}{PLAN_SUFFIX}"

    def _marker(self, run_id: str, kind: str, k: int) -> str:
        return f"{self.root}/{COMMIT_PREFIX}{run_id}.{kind}-{k}"

    def _plans(self) -> dict[str, dict]:
        plans = {}
        for name in self._list_root():
            if name.startswith(COMMIT_PREFIX) and name.endswith(PLAN_SUFFIX):
                run_id = name[len(COMMIT_PREFIX):-len(PLAN_SUFFIX)]
                try:
                    plans[run_id] = json.loads(self._read(f"{self.root}/{name}"))
                except (OSError, ValueError) as e:
                    raise StoreLayoutError(f"{self.out_uri}/{name}: unreadable commit journal ({e}); if no "
                                           "rebuild is running, check consumequeue/ and index/ and delete it") from e
        return plans

    def _done_count(self, run_id: str) -> int:
        done = 0
        for name in self._list_root():
            m = _MARK_RE.match(name)
            if m and m.group("run") == run_id and m.group("kind") == "done":
                done = max(done, int(m.group("k")))
        return done

    def _write_plan(self, plan: dict) -> None:
        """Write the plan durably and exclusively: no other plan may exist (recovery ran just before;
        a concurrent committer loses the tie by run id)."""
        data = json.dumps(plan, indent=1).encode()
        path = self._plan_path(self.run_id)
        if self._local:
            tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)   # fails if it exists: never overwrite a journal
            finally:
                os.unlink(tmp)
            fsync_dir(self.root, strict=False)
        else:
            with self.fs.open_output_stream(path) as f:
                f.write(data)
        others = [r for r in self._plans() if r != self.run_id]
        if others:
            self._delete_file(path)
            raise StoreLayoutError(f"{self.out_uri}: run {others[0]} started a commit into this output at the same "
                                   "time; run again once it has finished")

    def _mark(self, run_id: str, kind: str, k: int) -> None:
        path = self._marker(run_id, kind, k)
        if self._local:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            os.close(fd)
            fsync_dir(self.root, strict=False)
        else:
            with self.fs.open_output_stream(path):
                pass

    def _run_moves(self, run_id: str, moves: list[tuple[str, str]], start: int, phase: str, atomic: bool) -> None:
        """Moves ``start``.. of a plan, each followed by its ``done`` marker.  A move found already
        made (source gone, destination there) is only marked.  ``atomic``: the plan's moves are
        renames; otherwise copies then deletes, with a ``copied`` marker between."""
        copied = self._copied(run_id)
        for k in range(start, len(moves)):
            src, dst = (f"{self.root}/{p}" for p in moves[k])
            has_src, has_dst = self._exists(src), self._exists(dst)
            if atomic:
                if has_src and has_dst:
                    raise StoreLayoutError(
                        f"{self.out_uri}: both {moves[k][0]} and {moves[k][1]} exist while the commit of run {run_id} "
                        "moves one onto the other; something else changed this output. Check both and delete the "
                        f"wrong one, then run again (journal: {COMMIT_PREFIX}{run_id}{PLAN_SUFFIX})")
                if has_src:
                    self._rename(src, dst)
                elif not has_dst:
                    raise _StagedMissing(k, moves[k][0])
            else:
                if k in copied:
                    if has_src:
                        self.fs.delete_dir(src)
                elif has_src:
                    if has_dst:
                        self.fs.delete_dir(dst)   # a copy cut short: start it again
                    self._copy_tree(src, dst)
                    self._mark(run_id, "copied", k)
                    _kill_point(f"{phase}:copy-{k + 1}")
                    self.fs.delete_dir(src)
                elif not has_dst:
                    raise _StagedMissing(k, moves[k][0])
            self._mark(run_id, "done", k + 1)
            _kill_point(f"{phase}:move-{k + 1}")

    def _copy_tree(self, src: str, dst: str) -> None:
        self.fs.create_dir(dst, recursive=True)
        pafs.copy_files(src, dst, source_filesystem=self.fs, destination_filesystem=self.fs)

    def _copied(self, run_id: str) -> set[int]:
        out = set()
        for name in self._list_root():
            m = _MARK_RE.match(name)
            if m and m.group("run") == run_id and m.group("kind") == "copied":
                out.add(int(m.group("k")))
        return out

    def _rename(self, src: str, dst: str) -> None:
        parent = dst.rsplit("/", 1)[0]
        if self._local:
            os.makedirs(parent, exist_ok=True)
            os.rename(src, dst)
            if self.durable:
                fsync_dir(src.rsplit("/", 1)[0], strict=False)
                fsync_dir(parent, strict=False)
        else:
            self.fs.create_dir(parent, recursive=True)
            self.fs.move(src, dst)

    def _roll_back(self, run_id: str, moves: list[tuple[str, str]], upto: int, old: str) -> None:
        """Rename back the first ``upto`` moves, last first, then remove the (now empty) folder of the
        old outputs and the journal.  Each move's ``done`` marker goes before the move is undone, so
        an interrupted roll-back leaves a journal that the next run simply completes forward."""
        for k in range(upto - 1, -1, -1):
            self._delete_file(self._marker(run_id, "done", k + 1))
            if self._local:
                fsync_dir(self.root, strict=False)
            src, dst = (f"{self.root}/{p}" for p in moves[k])
            if self._exists(dst) and not self._exists(src):
                self._rename(dst, src)
            _kill_point(f"rollback:undo-{k + 1}")
        old_path = f"{self.root}/{old}"
        if self._exists(old_path):
            left = self.fs.get_file_info(pafs.FileSelector(old_path, recursive=True))
            if any(i.type == pafs.FileType.File for i in left):
                raise StoreLayoutError(f"{self.out_uri}/{old} still holds files after rolling back the commit of run "
                                       f"{run_id}; check them against consumequeue/ and index/")
            self.fs.delete_dir(old_path)
        self._drop_journal(run_id)

    def _after_failed_moves(self, moves: list[tuple[str, str]], error: BaseException) -> None:
        """A move of our own commit failed (or we were interrupted).  With atomic renames the moves
        done are undone, so ``OUT`` holds its previous outputs again; where a move is a copy (which
        may have been cut short) the journal stays and the next run completes the commit."""
        if not self._atomic_rename:
            log.warning("%s: commit failed (%s); the next run on this output completes it", self.out_uri, error)
            return
        try:
            self._roll_back(self.run_id, moves, min(self._done_count(self.run_id) + 1, len(moves)),
                            f"{OLD_PREFIX}{self.run_id}")
            log.warning("%s: commit failed (%s); the previous outputs were put back", self.out_uri, error)
        except Exception as e:  # the journal stays: the next run completes the commit
            log.warning("%s: commit failed (%s) and could not be rolled back (%s); the next run on this output "
                        "completes it", self.out_uri, error, e)

    def _finish(self, run_id: str, moves: list[tuple[str, str]], old: str, staging: str, phase: str) -> None:
        """All moves are done: delete the old outputs and the staging folder, then the journal."""
        for folder in (old, staging):
            if self._exists(f"{self.root}/{folder}"):
                self.fs.delete_dir(f"{self.root}/{folder}")
        _kill_point(f"{phase}:cleaned")
        self._drop_journal(run_id, keep_last=len(moves))

    def _drop_journal(self, run_id: str, keep_last: int | None = None) -> None:
        """Delete a run's markers and plan; the ``done-<n>`` marker (all moves done) goes last, so a
        plan is never seen without it once its moves are complete."""
        for name in self._list_root():
            m = _MARK_RE.match(name)
            if m and m.group("run") == run_id and not (m.group("kind") == "done" and int(m.group("k")) == keep_last):
                self._delete_file(f"{self.root}/{name}")
        self._delete_file(self._plan_path(run_id))
        if keep_last is not None:
            self._delete_file(self._marker(run_id, "done", keep_last))
        if self._local:
            fsync_dir(self.root, strict=False)

    # -- claim and liveness -----------------------------------------------------------------------

    def _lock_path(self, run_id: str) -> str:
        return f"{self.root}/{STAGING_PREFIX}{run_id}{LOCK_SUFFIX}"

    def _claim(self) -> None:
        record = json.dumps(_owner_record(self.run_id)).encode()
        path = self._lock_path(self.run_id)
        if not self._local or fcntl is None:
            self._write_record(path, record)
            self._start_heartbeat(path)
            return
        for _ in range(10):
            tmp = f"{self.root}/{LOCK_TMP_PREFIX}{self.run_id}-{uuid.uuid4().hex[:8]}"
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:   # a cleaner took it for a dead run's: start again
                os.close(fd)
                continue
            except OSError:           # no flock here: the owner record alone tells liveness
                os.close(fd)
                self._delete_file(tmp)
                self._write_record(path, record)
                self._start_heartbeat(path)
                return
            os.write(fd, record)
            os.fsync(fd)
            try:
                os.rename(tmp, path)
            except FileNotFoundError:  # a cleaner removed it before we locked it: start again
                os.close(fd)
                continue
            fsync_dir(self.root, strict=False)
            self._lock_fd = fd
            HELD_LOCKS.add(fd)
            return
        raise StoreLayoutError(f"{self.out_uri}: could not create the owner record of run {self.run_id}")

    def _write_record(self, path: str, record: bytes) -> None:
        with self.fs.open_output_stream(path) as f:
            f.write(record)

    def _start_heartbeat(self, path: str) -> None:
        stop = threading.Event()
        self._heartbeat_stop = stop

        def beat() -> None:
            while not stop.wait(HEARTBEAT_S):
                record = _owner_record(self.run_id)
                with contextlib.suppress(Exception):
                    old = json.loads(self._read(path))
                    record["started"] = old.get("started", record["started"])
                with contextlib.suppress(Exception):
                    self._write_record(path, json.dumps(record).encode())

        threading.Thread(target=beat, name=f"rebuild-heartbeat-{self.run_id}", daemon=True).start()

    def _release(self) -> None:
        """Give up the claim: the owner record goes (after the staging folder), then the lock."""
        if self._heartbeat_stop is not None:
            self._heartbeat_stop.set()
            self._heartbeat_stop = None
            self._delete_file(self._lock_path(self.run_id))
        if self._lock_fd is not None:
            self._delete_file(self._lock_path(self.run_id))
            HELD_LOCKS.discard(self._lock_fd)
            os.close(self._lock_fd)
            self._lock_fd = None

    def _liveness(self, run_id: str) -> _Liveness:
        """Is the run that owns ``.rebuild-staging-<run>`` alive?  Local: its flock decides (taken
        by us if it is dead, and held while we clean up); otherwise its owner record."""
        path = self._lock_path(run_id)
        if self._local and fcntl is not None:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                return _Liveness(False, None)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = self._read_owner(path)
                os.close(fd)
                return _Liveness(True, owner)
            except OSError:
                os.close(fd)   # no flock on this file system: fall through to the owner record
            else:
                owner = self._read_owner(path)
                return _Liveness(False, owner, fd)
        owner = self._read_owner(path)
        dead = _dead_by_record(owner, time.time())
        if dead is None and owner is None:
            dead = not self._exists(path)
        return _Liveness(not dead, owner)

    def _read_owner(self, path: str) -> dict | None:
        try:
            return json.loads(self._read(path))
        except (OSError, ValueError):
            return None

    def _remove_lock_tmp(self, path: str) -> None:
        """A temporary owner record that never got its name: delete it unless a live run holds it."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._delete_file(path)
        except OSError:
            pass
        finally:
            os.close(fd)

    # -- small file system helpers ----------------------------------------------------------------

    def _exists(self, path: str) -> bool:
        if self._local:
            return os.path.lexists(path)
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def _list_root(self) -> dict[str, pafs.FileInfo]:
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.root, allow_not_found=True))
        except (FileNotFoundError, NotADirectoryError):
            return {}
        return {i.base_name: i for i in infos if i.base_name.startswith(".rebuild-")}

    def _read(self, path: str) -> str:
        with self.fs.open_input_stream(path) as f:
            return f.read().decode()

    def _delete_file(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            if self._local:
                os.unlink(path)
            else:
                self.fs.delete_file(path)

    def _tree_size(self, path: str) -> int:
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
        except OSError:
            return 0
        return sum(i.size or 0 for i in infos if i.type == pafs.FileType.File)


class _StagedMissing(Exception):
    """A move's source and destination are both gone: the plan cannot be completed."""

    def __init__(self, index: int, path: str) -> None:
        super().__init__(path)
        self.index = index
        self.path = path
