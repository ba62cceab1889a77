"""``repair``: verify a local store (holding the broker's ``lock`` file the way
``DefaultMessageStore.start`` does), plan (:func:`~pipelines.verify.repair_plan.plan_repair`) and
apply (:func:`apply_repair`): each old file goes to a backup folder first, each new file is staged
under a temporary name in its target folder, fsynced and renamed into place (``os.replace``), so
that an interrupted repair leaves every file old or new, never half written; a manifest in the
backup folder records each change with sha256 before/after."""
from __future__ import annotations

import dataclasses
import datetime as _dt
import errno
import fcntl
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from store_format.config import BrokerConfig
from store_format.errors import StoreError
from store_format.store import open_store

from ..brokerlock import BrokerCheck, check_broker
from ..durable import copy_durably, fsync_dir, replace_json, sha256_file
from .compare_store import verify_store
from .repair_database import copy_tree_durably, remove_leftovers, staged_name, swap_folders, tree_sha256
from .repair_plan import RepairAction, RepairPlan, plan_repair
from .storefiles import QUEUE_DIRS

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
JOURNAL = "manifest.journal"


class _StoreLock:
    """Hold the broker's own lock (a POSIX write lock on byte 0 of ``lock``) while repairing, so a
    broker cannot start meanwhile (its ``tryLock`` fails)."""

    def __init__(self, store_root: str) -> None:
        self.path = os.path.join(store_root, "lock")
        self.fd: int | None = None

    def acquire(self) -> bool:
        if not os.path.isfile(self.path):
            return False
        fd = os.open(self.path, os.O_RDWR)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EACCES, errno.EAGAIN):
                return False
            raise
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the POSIX lock
            self.fd = None


@dataclasses.dataclass
class RepairResult:
    store: str
    dry_run: bool
    broker_check: BrokerCheck
    verify_summary: str
    plan: RepairPlan
    backup: str | None = None
    manifest: str | None = None
    applied: int = 0
    seconds: float = 0.0
    notes: list[str] = dataclasses.field(default_factory=list)

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["broker_check"]["description"] = self.broker_check.describe()
        return d

    def render(self) -> str:
        lines = [self.verify_summary, f"broker check: {self.broker_check.describe()}", self.plan.render()]
        if self.dry_run:
            lines.append("dry run: nothing was changed")
        elif self.plan.actions:
            lines.append(f"repaired: {self.applied} of {len(self.plan.actions)} actions done; old files and the "
                         f"manifest are in {self.backup}")
        lines += [f"note: {n}" for n in self.notes]
        lines.append(f"time: {self.seconds:.2f}s")
        return "\n".join(lines)


Hook = Callable[[str, int, RepairAction], None]


def _keep_old(target: str, backup_path: str, move: bool) -> None:
    """Put the old file in the backup folder: a hard link (or a rename, for ``move``) on the same
    filesystem, else a durable copy (then, for ``move``, the original is deleted)."""
    os.makedirs(os.path.dirname(backup_path), exist_ok=True)
    if os.path.lexists(backup_path):
        os.unlink(backup_path)
    try:
        if move:
            os.rename(target, backup_path)
        else:
            os.link(target, backup_path)
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK):
            raise
        copy_durably(target, backup_path)
        if move:
            os.unlink(target)
    fsync_dir(os.path.dirname(backup_path), strict=True)


def _manifest(plan: RepairPlan, store_root: str, backup: str, status: str, started: str, removed_dirs: list[str],
              extra: dict | None = None) -> dict:
    actions = []
    for a in plan.actions:
        d = dataclasses.asdict(a)
        if a.source is not None and plan.reference is not None:
            d["source"] = "rebuild:" + os.path.relpath(a.source, plan.reference)
        actions.append(d)
    return {"store": store_root, "backup": backup, "status": status, "started_at": started,
            "finished_at": _utc_now() if status == "complete" else None,
            "new_files_from": "a rebuild of the store's commitlog (deleted after the repair)",
            "index_mode": plan.index_mode, "notes": plan.notes, "actions": actions, "removed_dirs": removed_dirs,
            **(extra or {})}


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def apply_repair(plan: RepairPlan, store_root: str, backup: str, *, hook: Hook | None = None,
                 extra: dict | None = None) -> int:
    """Carry out a plan on a local store; returns the number of actions done.

    For each action, in order: the old file (replace, remove) goes to ``backup`` first (hard link
    or rename on the same filesystem, else a fsynced copy); a new file (replace, add) is copied to
    ``.<name>.repair-<token>.tmp`` in its target folder, fsynced, and renamed over the target with
    ``os.replace``, then the folder is fsynced.  An interruption leaves each file old or new; a
    temporary file may be left, which the next verify reports and the next repair deletes.  The
    manifest (``manifest.json``: the plan, then each action with sha256 before/after) is written
    before the first change and at the end; ``manifest.journal`` gets one JSON line per action done.

    ``hook(event, i, action)`` is called after each step (``backed_up``, ``staged``, ``replaced``,
    ``removed``): tests use it to stop the process between steps.
    """
    started = _utc_now()
    os.makedirs(backup, exist_ok=True)
    manifest_path = os.path.join(backup, MANIFEST)
    if os.path.exists(manifest_path):
        raise StoreError(f"{backup} already holds a repair manifest: choose another --backup folder")
    replace_json(manifest_path, _manifest(plan, store_root, backup, "in_progress", started, [], extra))
    journal = open(os.path.join(backup, JOURNAL), "a", encoding="utf-8")
    removed_dirs: list[str] = []
    done = 0
    try:
        for i, a in enumerate(plan.actions):
            target = os.path.join(store_root, a.path)
            folder = os.path.dirname(target)
            if a.action == "replace_database":
                _replace_database(plan, store_root, backup, i, a, hook)
            elif a.action == "drop_leftover":
                if os.path.exists(target):
                    a.sha256_before = sha256_file(target)
                    os.unlink(target)
                    fsync_dir(folder, strict=True)
                if hook:
                    hook("removed", i, a)
            elif a.action == "remove":
                a.sha256_before = sha256_file(target)
                a.backup = a.path
                _keep_old(target, os.path.join(backup, a.path), move=True)
                fsync_dir(folder, strict=True)
                if hook:
                    hook("removed", i, a)
                top = a.path.split("/", 1)[0]   # a queue's folder, then its topic's, once empty
                for d in (folder, os.path.dirname(folder)):
                    if top in QUEUE_DIRS and d != os.path.join(store_root, top):
                        try:
                            os.rmdir(d)
                            removed_dirs.append(os.path.relpath(d, store_root))
                        except OSError:
                            break
            else:
                assert a.source is not None
                if a.action == "replace":
                    a.sha256_before = sha256_file(target)
                    a.backup = a.path
                    _keep_old(target, os.path.join(backup, a.path), move=False)
                    if hook:
                        hook("backed_up", i, a)
                os.makedirs(folder, exist_ok=True)
                tmp = os.path.join(folder, f".{os.path.basename(target)}.repair-{uuid.uuid4().hex[:12]}.tmp")
                a.sha256_after = copy_durably(a.source, tmp)
                if hook:
                    hook("staged", i, a)
                os.replace(tmp, target)
                fsync_dir(folder, strict=True)
                if hook:
                    hook("replaced", i, a)
            a.done = True
            done += 1
            journal.write(json.dumps({k: v for k, v in dataclasses.asdict(a).items() if k != "source"}) + "\n")
            journal.flush()
            os.fsync(journal.fileno())
    finally:
        journal.close()
    replace_json(manifest_path, _manifest(plan, store_root, backup, "complete", started, removed_dirs, extra))
    return done


def _replace_database(plan: RepairPlan, store_root: str, backup: str, i: int, a: RepairAction,
                      hook: Hook | None) -> None:
    """A ``replace_database`` action (:mod:`.repair_database`): the old database copied to the backup,
    the rebuilt one staged beside it and exchanged with it, the old one then deleted from the store."""
    assert a.source is not None
    target = os.path.join(store_root, a.path)
    if os.path.isdir(target):
        a.sha256_before = tree_sha256(target)
        a.backup = a.path
        copy_tree_durably(target, os.path.join(backup, a.path))
        fsync_dir(backup, strict=True)
        if hook:
            hook("backed_up", i, a)
    staged = staged_name(store_root, a.path)
    a.sha256_after = copy_tree_durably(a.source, staged)
    if hook:
        hook("staged", i, a)
    if os.path.isdir(target):
        if not swap_folders(staged, target):
            plan.notes.append(f"{a.path}/ was swapped by two renames (this file system cannot exchange folders)")
        shutil.rmtree(staged)
    else:
        os.rename(staged, target)
        fsync_dir(store_root, strict=True)
    if hook:
        hook("replaced", i, a)


def _local_root(store: str) -> str:
    if "://" in store and not store.startswith("file://"):
        raise StoreError(f"{store}: repair works on a local store only (it renames files in place); copy the store "
                         "to a local disk, or use verify for a remote one")
    return os.path.abspath(store[len("file://"):] if store.startswith("file://") else store)


def _stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _unique(path: str) -> str:
    out, n = path, 1
    while os.path.exists(out):
        n += 1
        out = f"{path}-{n}"
    return out


def repair_store(store: str, config: BrokerConfig, *, backup: str | None = None, dry_run: bool = False,
                 force: bool = False, engine: str = "spark", master: str | None = None,
                 split_size: int | None = None, processes: int | None = None, spark: Any = None,
                 hook: Hook | None = None) -> RepairResult:
    """Verify a local store, then replace only its damaged, missing or extra files (of
    ``consumequeue/``, ``index/``, and ``consumequeue_ext/`` and ``batchconsumequeue/`` where the
    store has those layouts; a RocksDB consume queue as a whole database, over a DLedger commitlog too).

    Refuses (``StoreError``) while a broker may be using the store (:func:`check_broker`) unless
    ``force``; holds the broker's lock while it works.  The rebuild goes to
    ``STORE/.repair-work-<time>`` (same disk as the store; deleted at the end), or to a temporary
    folder for a dry run, which changes nothing in the store.

    Args:
        backup: folder for the old files and the manifest (default ``STORE/.repair-backup-<UTC time>``).
        dry_run: plan only.
        force: repair even when the lock is held or ``abort`` exists.
        hook: see :func:`apply_repair`.
    """
    t0 = time.monotonic()
    root = _local_root(store)
    open_store(root, config)  # layout errors before anything else
    check = check_broker(root)
    notes = []
    if check.broker_may_be_running and not dry_run:
        if not force:
            raise StoreError(f"refusing to repair {root}: {check.describe()}. Stop the broker (a clean shutdown "
                             "deletes abort); if none runs and it crashed, start and stop it once, or pass --force")
        notes.append(f"--force: repairing although {check.describe()}")
    lock = _StoreLock(root)
    work = (tempfile.mkdtemp(prefix="rocketmq-repair-") if dry_run
            else _unique(os.path.join(root, f".repair-work-{_stamp()}")))
    try:
        if not dry_run:
            if lock.acquire():
                notes.append("held the broker's lock file while repairing")
            elif check.lock_file:
                if not force:
                    raise StoreError(f"refusing to repair {root}: another process took {root}/lock just now; stop the "
                                     "broker or pass --force")
                notes.append("--force: the lock file is held by another process")
            else:
                notes.append("no lock file: a broker started during the repair would not be kept out")
            for name in os.listdir(root):
                if name.startswith(".repair-work-") and os.path.join(root, name) != work:
                    shutil.rmtree(os.path.join(root, name), ignore_errors=True)
                    notes.append(f"deleted {name}, left by an interrupted repair")
            notes += [f"deleted {name}, left by an interrupted repair" for name in remove_leftovers(root)]
        report = verify_store(root, config, work=os.path.join(work, "reference"), engine=engine, master=master,
                              split_size=split_size, processes=processes, spark=spark)
        plan = plan_repair(report)
        index = report.rocksdb_index
        if index is not None and index.status != "identical":
            notes.append(f"rocksdbstore/: the RocksDB message index {index.status} from the rebuild's "
                         f"({index.missing:,} missing, {index.differing:,} with another value, {index.unexpected:,} "
                         "not derived); repair leaves the database alone (it also holds the broker's timer and "
                         "transaction state)")
        result = RepairResult(root, dry_run, check, report.summary_line(), plan, notes=notes)
        if dry_run or not plan.actions:
            result.seconds = round(time.monotonic() - t0, 3)
            return result
        backup_dir = os.path.abspath(backup) if backup else _unique(os.path.join(root, f".repair-backup-{_stamp()}"))
        result.backup = backup_dir
        result.manifest = os.path.join(backup_dir, MANIFEST)
        log.info("repairing %s: %d actions, old files to %s", root, len(plan.actions), backup_dir)
        result.applied = apply_repair(plan, root, backup_dir, hook=hook,
                                      extra={"verify": report.summary_line(), "broker_check": check.describe()})
        result.plan.reference = None
        result.seconds = round(time.monotonic() - t0, 3)
        return result
    finally:
        lock.release()
        shutil.rmtree(work, ignore_errors=True)
